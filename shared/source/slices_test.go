package source

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// skewedDay is n instants of the day of q: 80% of them inside one hour
// (10:00 to 11:00 of the window), the rest spread over the whole day, plus
// ties rows on one instant of the busy hour. Deterministic.
func skewedDay(q Query, n, ties int) []time.Time {
	hot := q.Start.Add(10 * time.Hour)
	tie := hot.Add(17*time.Minute + 123456*time.Microsecond)
	out := make([]time.Time, 0, n+ties)
	for i := range n {
		if i%5 != 0 {
			out = append(out, hot.Add(time.Duration(int64(i)*2654435761%3_600_000_000)*time.Microsecond))
			continue
		}
		out = append(out, q.Start.Add(time.Duration(int64(i)*2654435761%86_400_000_000)*time.Microsecond))
	}
	for range ties {
		out = append(out, tie)
	}
	return out
}

// insertEventsAt inserts one minimal event per instant for account.
func insertEventsAt(t *testing.T, db *sql.DB, dialect, account string, ts []time.Time) {
	t.Helper()
	if dialect == dataset.DialectPostgres {
		for i := 0; i < len(ts); i += 100_000 {
			chunk := ts[i:min(i+100_000, len(ts))]
			pgExec(t, db, `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at)
				SELECT $1, $2 || u.i, 'page_view', u.t, u.t FROM unnest($3::timestamptz[]) WITH ORDINALITY AS u(t, i)`,
				account, fmt.Sprintf("e%d_", i), chunk)
		}
		pgExec(t, db, "VACUUM ANALYZE events")
		return
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at, inserted_at, is_test) VALUES (?,?,?,?,?,?,0)`)
	if err != nil {
		t.Fatal(err)
	}
	for i, at := range ts {
		s := dataset.FormatTimestamp(at)
		if _, err := st.Exec(account, "e"+strconv.Itoa(i), "page_view", s, s, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// sliceCounts reads every slice of q that bounds cut through the source
// and returns each slice's rows; it fails on a row read twice or a range
// that is not increasing.
func sliceCounts(t *testing.T, src Source, q Query, bounds []time.Time) []int64 {
	t.Helper()
	edges := append(append([]time.Time{q.Start}, bounds...), q.End)
	seen := map[string]int{}
	var counts []int64
	for i := range len(edges) - 1 {
		if !edges[i].Before(edges[i+1]) {
			t.Fatalf("slice %d: [%s, %s) is empty or reversed (bounds %v)", i, edges[i], edges[i+1], bounds)
		}
		sq := q
		sq.Start, sq.End = edges[i], edges[i+1]
		rows, _, err := collect(t, src, sq)
		if err != nil {
			t.Fatalf("slice %d: %v", i, err)
		}
		for _, r := range rows {
			id := r[0].(string)
			if j, ok := seen[id]; ok {
				t.Fatalf("event %s read in slices %d and %d", id, j, i)
			}
			seen[id] = i
		}
		counts = append(counts, int64(len(rows)))
	}
	return counts
}

// spread is the largest count over the mean.
func spread(counts []int64) float64 {
	var sum, top int64
	for _, c := range counts {
		sum += c
		top = max(top, c)
	}
	if sum == 0 {
		return 0
	}
	return float64(top) * float64(len(counts)) / float64(sum)
}

func equalBounds(q Query, n int) []time.Time {
	var out []time.Time
	lo, hi := q.Start.UnixMicro(), q.End.UnixMicro()
	for k := 1; k < n; k++ {
		out = append(out, time.UnixMicro(lo+(hi-lo)*int64(k)/int64(n)).UTC())
	}
	return out
}

// TestSliceBoundsFollowTheRows (E7, issue 25 §2): a day with 80% of its
// rows in one hour is cut into slices within 1.25x of the mean, where equal
// time ranges put most of the day into one slice; ties on one instant stay
// in one slice; every row is read exactly once; another account's rows in
// the busy hour do not move the bounds. On PostgreSQL and SQLite.
func TestSliceBoundsFollowTheRows(t *testing.T) {
	scale := 20_000
	if s := os.Getenv("DAYBOOK_SLICE_BOUNDS_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			t.Fatalf("DAYBOOK_SLICE_BOUNDS_ROWS=%q: want a number of rows, at least 100", s)
		}
		scale = n
	}
	cases := []struct {
		name       string
		rows, ties int
		slices     int
		expected   int64 // the row count the caller passes; 0: the source counts
		even       bool  // every slice within 1.25x of the mean
		wantSlices int
	}{
		{name: "80% in one hour", rows: scale, slices: 8, expected: int64(scale), even: true, wantSlices: 8},
		{name: "80% in one hour, counted", rows: scale, slices: 5, even: true, wantSlices: 5},
		{name: "ties past a step", rows: 1000, ties: 3000, slices: 4, expected: 4000},
		{name: "fewer rows than slices", rows: 3, slices: 8, expected: 3, wantSlices: 3},
		{name: "empty day", rows: 0, slices: 4, wantSlices: 1},
	}
	for _, dialect := range []string{dataset.DialectPostgres, dataset.DialectSQLite} {
		t.Run(dialect, func(t *testing.T) {
			for i, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					if dialect == dataset.DialectSQLite && tc.rows > 50_000 {
						t.Logf("SQLite: %d rows are inserted one at a time; cut to 50000", tc.rows)
						tc.rows = 50_000
						tc.expected = min(tc.expected, 50_000)
					}
					var db *sql.DB
					if dialect == dataset.DialectPostgres {
						db = pgDB(t, false)
					} else {
						db = openDB(t)
					}
					ds := mustDataset(t, "events")
					q := dayQuery(ds, "acc_skew", ist)
					insertEventsAt(t, db, dialect, "acc_skew", skewedDay(q, tc.rows, tc.ties))
					// Another tenant's rows crowd the same hour.
					insertEventsAt(t, db, dialect, "acc_busy_neighbour", skewedDay(q, 2000, 0)[:1600])
					src, err := NewSQL(db, dialect, "test")
					if err != nil {
						t.Fatal(err)
					}
					began := time.Now()
					bounds, err := src.SliceBounds(context.Background(), q, tc.slices, tc.expected)
					took := time.Since(began)
					if err != nil {
						t.Fatal(err)
					}
					counts := sliceCounts(t, src, q, bounds)
					var sum int64
					for _, c := range counts {
						sum += c
					}
					t.Logf("%d rows in %d slices, counts %v, spread %.3f, bounds found in %s", sum, len(counts), counts, spread(counts), took)
					if want := int64(tc.rows + tc.ties); sum != want {
						t.Errorf("the slices hold %d rows, the day %d", sum, want)
					}
					if tc.wantSlices > 0 && len(counts) != tc.wantSlices {
						t.Errorf("%d slices, want %d", len(counts), tc.wantSlices)
					}
					if tc.even {
						if s := spread(counts); s > 1.25 {
							t.Errorf("the largest slice is %.3fx the mean, want at most 1.25x: %v", s, counts)
						}
						// The day must really be skewed: equal time
						// ranges fail the same check.
						if s := spread(sliceCounts(t, src, q, equalBounds(q, tc.slices))); s <= 1.25 {
							t.Errorf("equal time ranges give %.3fx: the day is not skewed", s)
						}
					}
					if dialect == dataset.DialectPostgres && i == 0 {
						explainBound(t, db, src, q, tc.rows/tc.slices)
					}
				})
			}
		})
	}
}

// explainBound logs the plan of one boundary lookup, for
// docs/architecture.md's note on what a plan costs.
func explainBound(t *testing.T, db *sql.DB, src *SQL, q Query, step int) {
	t.Helper()
	text, err := q.Dataset.SliceBoundQuery(src.dialect)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) "+text, append(q.Params(dataset.DialectPostgres), step)...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(plan, "\n")
	t.Logf("one lookup, OFFSET %d:\n%s", step, joined)
	if !strings.Contains(joined, "Index Only Scan using events_account_occurred") {
		t.Errorf("the lookup does not use the (account_id, occurred_at) index:\n%s", joined)
	}
}

// TestSliceBoundsCannotSay: a partition column that is not an instant
// (a date, or wall-clock time in a declared zone) is ErrNoBounds, and the
// caller slices by equal ranges; a query error is not ErrNoBounds.
func TestSliceBoundsCannotSay(t *testing.T) {
	db := openDB(t)
	src, err := NewSQL(db, dataset.DialectSQLite, "test")
	if err != nil {
		t.Fatal(err)
	}
	stats := dayQuery(mustDataset(t, "daily_stats"), "acc", time.UTC)
	if _, err := src.SliceBounds(context.Background(), stats, 4, 100); !errors.Is(err, ErrNoBounds) {
		t.Errorf("daily_stats: %v, want ErrNoBounds", err)
	}
	ev := dayQuery(mustDataset(t, "events"), "acc", time.UTC)
	wall := ev
	wall.Dataset.Columns = append([]dataset.Column(nil), ev.Dataset.Columns...)
	for i, c := range wall.Dataset.Columns {
		if c.Name == wall.Dataset.PartitionColumn {
			wall.Dataset.Columns[i].SourceTimeZone = "Europe/Berlin"
		}
	}
	if _, err := src.SliceBounds(context.Background(), wall, 4, 100); !errors.Is(err, ErrNoBounds) {
		t.Errorf("wall-clock partition column: %v, want ErrNoBounds", err)
	}
	if _, err := src.SliceBounds(context.Background(), ev, 1, 100); err == nil || errors.Is(err, ErrNoBounds) {
		t.Errorf("n = 1: %v, want an error naming n", err)
	}
	if _, err := db.Exec("DROP TABLE events"); err != nil {
		t.Fatal(err)
	}
	_, err = src.SliceBounds(context.Background(), ev, 4, 100)
	if err == nil || errors.Is(err, ErrNoBounds) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("no table: %v, want ErrUnavailable", err)
	}
}

// TestSliceBoundsOfADeclaredQuery: a dataset with declared queries (the
// example's profiles) is sliced through its own export query, wrapped
// (dataset.SliceBoundQuery): a skewed day still gives even slices, every
// row once, on PostgreSQL and SQLite.
func TestSliceBoundsOfADeclaredQuery(t *testing.T) {
	for _, dialect := range []string{dataset.DialectPostgres, dataset.DialectSQLite} {
		t.Run(dialect, func(t *testing.T) {
			var db *sql.DB
			if dialect == dataset.DialectPostgres {
				db = pgDB(t, false)
			} else {
				db = openDB(t)
			}
			ds := mustDataset(t, "profiles")
			if ds.TenantColumn != "" {
				t.Fatalf("the example's profiles now has generated queries: this test needs a dataset with declared ones")
			}
			q := dayQuery(ds, "acc_p", time.UTC)
			ins := "INSERT INTO profile_activity (account_id, profile_id, activity_date, first_seen_at, last_seen_at) VALUES (?, ?, ?, ?, ?)"
			if dialect == dataset.DialectPostgres {
				ins = "INSERT INTO profile_activity (account_id, profile_id, activity_date, first_seen_at, last_seen_at) VALUES ($1, $2, $3, $4, $5)"
			}
			const n = 2000
			for i, at := range skewedDay(q, n, 0) {
				var v any = at
				if dialect == dataset.DialectSQLite {
					v = dataset.FormatTimestamp(at)
				}
				if _, err := db.Exec(ins, "acc_p", fmt.Sprintf("p%05d", i), q.Day.String(), v, v); err != nil {
					t.Fatal(err)
				}
			}
			src, err := NewSQL(db, dialect, "test")
			if err != nil {
				t.Fatal(err)
			}
			bounds, err := src.SliceBounds(context.Background(), q, 4, 0)
			if err != nil {
				t.Fatal(err)
			}
			counts := sliceCounts(t, src, q, bounds)
			var sum int64
			for _, c := range counts {
				sum += c
			}
			if sum != n || len(counts) != 4 || spread(counts) > 1.25 {
				t.Errorf("slices %v (%d rows, spread %.3f): want 4 slices of the %d rows within 1.25x of the mean", counts, sum, spread(counts), n)
			}
		})
	}
}

// TestRouterSlicesFromTheRows: the deployed exporter reads through a
// Router, so the Router must place slice bounds from the rows too, on the
// source (and shard) the dataset and the account route to: two shards
// whose one tenant crowds a different hour give each its own bounds, even
// slices on both; a shard the deployment has no DSN for is the Router's
// routing error (not ErrNoBounds, which would silently slice by time).
func TestRouterSlicesFromTheRows(t *testing.T) {
	ds := mustDataset(t, "events")
	eu, us := openDB(t), openDB(t)
	q := dayQuery(ds, "acc_shard", time.UTC)
	insertEventsAt(t, eu, dataset.DialectSQLite, "acc_shard", skewedDay(q, 2000, 0))
	late := q
	late.Start = q.Start.Add(9 * time.Hour) // the busy hour of the us shard is 19:00
	usRows := skewedDay(late, 2000, 0)[:1500]
	insertEventsAt(t, us, dataset.DialectSQLite, "acc_shard", usRows)
	var usDay int64 // some of them fall past the day
	for _, at := range usRows {
		if at.Before(q.End) {
			usDay++
		}
	}
	open := func(db *sql.DB, name string) *SQL {
		s, err := NewSQL(db, dataset.DialectSQLite, "sqlite:"+name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	srcs := map[string]*SQL{"eu": open(eu, "eu"), "us": open(us, "us")}
	r, err := NewRouter(map[Key]*SQL{{Source: "default", Shard: "eu"}: srcs["eu"], {Source: "default", Shard: "us"}: srcs["us"]})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := any(r).(Slicer)
	if !ok {
		t.Fatal("*source.Router does not implement source.Slicer: the exporter slices every day by equal time ranges")
	}
	for shard, want := range map[string]int64{"eu": 2000, "us": usDay} {
		sq := q
		sq.Shard = shard
		bounds, err := s.SliceBounds(context.Background(), sq, 4, 0)
		if err != nil {
			t.Fatalf("shard %s: %v", shard, err)
		}
		direct, err := srcs[shard].SliceBounds(context.Background(), sq, 4, 0)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(bounds) != fmt.Sprint(direct) {
			t.Errorf("shard %s: the Router's bounds %v, the shard's own %v", shard, bounds, direct)
		}
		counts := sliceCounts(t, srcs[shard], sq, bounds)
		var sum int64
		for _, c := range counts {
			sum += c
		}
		if sum != want || len(counts) != 4 || spread(counts) > 1.25 {
			t.Errorf("shard %s: slices %v (%d rows, want %d in 4 slices within 1.25x of the mean)", shard, counts, sum, want)
		}
	}
	missing := q
	missing.Shard = "ap"
	if _, err := s.SliceBounds(context.Background(), missing, 4, 0); !errors.Is(err, ErrNoSource) || errors.Is(err, ErrNoBounds) {
		t.Errorf("a shard with no DSN: %v, want ErrNoSource and not ErrNoBounds", err)
	}
}
