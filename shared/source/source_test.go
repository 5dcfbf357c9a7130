package source

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	_ "modernc.org/sqlite"
)

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "demo.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ddl, err := dataset.SourceDDL("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ddl); err != nil {
		t.Fatal(err)
	}
	return db
}

func mustDataset(t *testing.T, name string) dataset.Dataset {
	t.Helper()
	ds, err := datasettest.Example(t).Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

const acct = "acc_'; DROP TABLE events; --"

var day = civil.FromEpochDays(20785) // 2026-11-28

func dayQuery(ds dataset.Dataset, account string, zone *time.Location) Query {
	start := time.Date(2026, 11, 28, 0, 0, 0, 0, zone)
	return Query{AccountID: account, Dataset: ds, Day: day, Start: start, End: start.AddDate(0, 0, 1)}
}

func insertEvent(t *testing.T, db *sql.DB, account, id, occurred string, extra ...any) {
	t.Helper()
	args := []any{account, id, "page_view", occurred, occurred, occurred, nil, "u1", 1.5, "12.30", 0, `{"k":"v"}`}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(int)] = extra[i+1]
	}
	_, err := db.Exec(`INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at, inserted_at,
		session_id, user_id, value, amount, is_test, attributes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`, args...)
	if err != nil {
		t.Fatal(err)
	}
}

func collect(t *testing.T, src Source, q Query) ([][]any, Provenance, error) {
	t.Helper()
	var out [][]any
	prov, err := Rows(context.Background(), src, q, func(row []any) error {
		out = append(out, append([]any(nil), row...))
		return nil
	})
	return out, prov, err
}

func TestSQLEvents(t *testing.T) {
	db := openDB(t)
	insertEvent(t, db, acct, "e2", "2026-11-28T23:59:59.999999Z")
	insertEvent(t, db, acct, "e1", "2026-11-28T00:00:00.000000Z", 6, "s1", 9, nil, 11, nil, 10, 1)
	insertEvent(t, db, acct, "before", "2026-11-27T23:59:59.999999Z")
	insertEvent(t, db, acct, "after", "2026-11-29T00:00:00.000000Z") // end is exclusive
	insertEvent(t, db, "other", "x", "2026-11-28T12:00:00.000000Z")

	src, err := NewSQL(db, "sqlite", "sqlite:demo.db")
	if err != nil {
		t.Fatal(err)
	}
	rows, prov, err := collect(t, src, dayQuery(mustDataset(t, "events"), acct, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || prov.RowCount != 2 {
		t.Fatalf("got %d rows (prov %d), want 2: %v", len(rows), prov.RowCount, rows)
	}
	first := rows[0]
	if first[0] != "e1" || first[4] != "s1" || first[7] != nil || first[8] != true || first[9] != nil {
		t.Fatalf("first row = %#v", first)
	}
	if ts := first[2].(time.Time); !ts.Equal(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)) || ts.Location() != time.UTC {
		t.Fatalf("occurred_at = %v", ts)
	}
	second := rows[1]
	if d := second[7].(dataset.Decimal); d.String() != "12.30" {
		t.Fatalf("amount = %s", d)
	}
	if j := second[9].(json.RawMessage); string(j) != `{"k":"v"}` {
		t.Fatalf("attributes = %s", j)
	}
	if prov.Source != "sqlite" || prov.Relation != "events" || dataset.FormatTimestamp(prov.WindowStart) != "2026-11-28T00:00:00.000000Z" ||
		dataset.FormatTimestamp(prov.WindowEnd) != "2026-11-29T00:00:00.000000Z" || prov.SnapshotAt.IsZero() || prov.FinishedAt.IsZero() {
		t.Fatalf("provenance = %+v", prov)
	}
	// What reaches the customer's bucket: these fields, and no SQL text,
	// bound values or source name.
	b, err := json.Marshal(prov)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(slices.Sorted(maps.Keys(fields)), ","); got != "finished_at,relation,row_count,snapshot_at,source,window_end,window_start" {
		t.Errorf("provenance fields %s", got)
	}
	for _, internal := range []string{"SELECT", "account_id = ?", "demo.db", acct} {
		if strings.Contains(string(b), internal) {
			t.Errorf("provenance %s holds %q", b, internal)
		}
	}
	// The quote in the account id was bound, not spliced: the table is intact.
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil || n != 5 {
		t.Fatalf("events count = %d, %v", n, err)
	}
}

func TestSQLZoneWindow(t *testing.T) {
	db := openDB(t)
	// 2026-11-28 in Tokyo is [2026-11-27T15:00Z, 2026-11-28T15:00Z).
	insertEvent(t, db, "a", "in", "2026-11-27T15:00:00.000000Z")
	insertEvent(t, db, "a", "out", "2026-11-28T15:00:00.000000Z")
	src, _ := NewSQL(db, "sqlite", "sqlite:demo.db")
	rows, _, err := collect(t, src, dayQuery(mustDataset(t, "events"), "a", time.FixedZone("JST", 9*3600)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0][0] != "in" {
		t.Fatalf("rows = %v", rows)
	}
}

func TestSQLProfilesAndStats(t *testing.T) {
	db := openDB(t)
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(`INSERT INTO profile_activity VALUES ('a','p1','2026-11-28','2026-01-01T00:00:00.000000Z','2026-11-28T08:00:00.000000Z',NULL,'DE','pro',7,NULL)`)
	mustExec(`INSERT INTO profile_activity VALUES ('a','p2','2026-11-29','2026-01-01T00:00:00.000000Z','2026-11-29T08:00:00.000000Z',NULL,NULL,NULL,1,'{}')`)
	mustExec(`INSERT INTO daily_stats VALUES ('a','2026-11-28','views','',10,2.5,NULL)`)
	mustExec(`INSERT INTO daily_stats VALUES ('a','2026-11-29','views','',99,1,NULL)`)
	src, _ := NewSQL(db, "sqlite", "sqlite:demo.db")

	rows, _, err := collect(t, src, dayQuery(mustDataset(t, "profiles"), "a", time.UTC))
	if err != nil || len(rows) != 1 || rows[0][0] != "p1" || rows[0][6] != int64(7) || rows[0][4] != "DE" {
		t.Fatalf("profiles = %v, %v", rows, err)
	}
	// stat_date uses the calendar day even when the zone shifts the window.
	rows, prov, err := collect(t, src, dayQuery(mustDataset(t, "daily_stats"), "a", time.FixedZone("JST", 9*3600)))
	if err != nil || len(rows) != 1 || rows[0][0] != day || rows[0][3] != int64(10) || rows[0][4] != 2.5 {
		t.Fatalf("daily_stats = %v, %v", rows, err)
	}
	if prov.Relation != "daily_stats" || prov.RowCount != 1 {
		t.Fatalf("provenance = %+v", prov)
	}
}

// activityFeed plays the source application maintaining profile_activity:
// it keeps each profile's current state and upserts the row of the day (in
// zone) of every activity, with the statement the DDL documents.
type activityFeed struct {
	t     *testing.T
	db    *sql.DB
	zone  *time.Location
	state map[string]*profileState
}

type profileState struct {
	first  time.Time
	events int64
}

func (f *activityFeed) activity(profile string, at time.Time, plan string) {
	f.t.Helper()
	st := f.state[profile]
	if st == nil {
		st = &profileState{first: at}
		f.state[profile] = st
	}
	st.events++
	_, err := f.db.Exec(`INSERT INTO profile_activity (account_id, profile_id, activity_date, first_seen_at, last_seen_at,
			email, country, plan, event_count, attributes)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'DE', ?7, ?8, json_object('plan', ?7))
		ON CONFLICT (account_id, profile_id, activity_date) DO UPDATE SET
			last_seen_at = max(last_seen_at, excluded.last_seen_at), email = excluded.email, country = excluded.country,
			plan = excluded.plan, event_count = excluded.event_count, attributes = excluded.attributes`,
		"a", profile, at.In(f.zone).Format("2006-01-02"), dataset.FormatTimestamp(st.first), dataset.FormatTimestamp(at),
		profile+"@example.com", plan, st.events)
	if err != nil {
		f.t.Fatal(err)
	}
}

// TestSQLProfilesActivity is D4 for profiles: a profile active on days
// 2 and 5 is in both partitions, the day-2 row holds its day-2 state, and
// day 2 reads the same after day 5's activity (a re-export reproduces it).
func TestSQLProfilesActivity(t *testing.T) {
	db := openDB(t)
	zone := time.FixedZone("JST", 9*3600) // the account's zone
	feed := &activityFeed{t: t, db: db, zone: zone, state: map[string]*profileState{}}
	src, _ := NewSQL(db, "sqlite", "sqlite:demo.db")
	ds := mustDataset(t, "profiles")
	dayStart := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, zone) }
	read := func(d int) [][]any {
		t.Helper()
		q := Query{AccountID: "a", Dataset: ds, Day: civil.FromEpochDays(int32(20785 - 28 + d)), Start: dayStart(d), End: dayStart(d + 1)}
		rows, _, err := collect(t, src, q)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	at := func(d, h int) time.Time { return dayStart(d).Add(time.Duration(h) * time.Hour) }

	// Day 2: p1 signs up and is active twice; p2 once. 23:30 JST is still
	// day 2 in the account's zone although it is day 2 14:30 UTC.
	feed.activity("p1", at(2, 9), "free")
	feed.activity("p1", at(2, 23).Add(30*time.Minute), "free")
	feed.activity("p2", at(2, 10), "pro")
	day2 := read(2)
	if len(day2) != 2 || day2[0][0] != "p2" || day2[1][0] != "p1" {
		t.Fatalf("day 2 = %v", day2)
	}
	p1 := day2[1]
	if !p1[1].(time.Time).Equal(at(2, 9)) || !p1[2].(time.Time).Equal(at(2, 23).Add(30*time.Minute)) ||
		p1[5] != "free" || p1[6] != int64(2) || string(p1[7].(json.RawMessage)) != `{"plan":"free"}` {
		t.Fatalf("p1 on day 2 = %v", p1)
	}

	// Day 5: p1 is back and upgrades; p3 is new. Day 3 and 4 stay empty.
	feed.activity("p1", at(5, 8), "free")
	feed.activity("p1", at(5, 12), "plus")
	feed.activity("p3", at(5, 1), "free")
	day5 := read(5)
	if len(day5) != 2 || day5[0][0] != "p3" || day5[1][0] != "p1" {
		t.Fatalf("day 5 = %v", day5)
	}
	p1 = day5[1]
	if !p1[1].(time.Time).Equal(at(2, 9)) || !p1[2].(time.Time).Equal(at(5, 12)) || p1[5] != "plus" || p1[6] != int64(4) {
		t.Fatalf("p1 on day 5 = %v", p1)
	}
	for _, d := range []int{3, 4} {
		if rows := read(d); len(rows) != 0 {
			t.Errorf("day %d = %v", d, rows)
		}
	}
	if again := read(2); !reflect.DeepEqual(again, day2) {
		t.Errorf("day 2 changed after day 5's activity:\n%v\n%v", again, day2)
	}
}

// TestSQLProfilesIndex: the profiles query is a range scan of the declared
// (account_id, last_seen_at, profile_id) index in its own order, not a
// table scan and a sort.
func TestSQLProfilesIndex(t *testing.T) {
	db := openDB(t)
	q, err := mustDataset(t, "profiles").Query("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q, "a", "2026-11-28T00:00:00.000000Z", "2026-11-29T00:00:00.000000Z")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if got := strings.Join(plan, "; "); !strings.Contains(got, "profile_activity_account_last_seen (account_id=? AND last_seen_at>? AND last_seen_at<?)") ||
		strings.Contains(got, "TEMP B-TREE") {
		t.Errorf("query plan: %s", got)
	}
}

func TestSQLBadRows(t *testing.T) {
	tests := []struct {
		name   string
		extra  []any // column index in the INSERT, value
		column string
		reason string
	}{
		{"null required event_type", []any{2, nil}, "event_type", "null in required column"},
		{"bad timestamp", []any{4, "not a time"}, "received_at", "unparsable timestamp"},
		{"bad decimal", []any{9, "12.345"}, "amount", "unparsable decimal"},
		{"bad boolean", []any{10, 7}, "is_test", "boolean must be 0 or 1"},
		{"bad json", []any{11, "{oops"}, "attributes", "invalid json"},
		{"text in double", []any{8, "abc"}, "value", "unparsable double"},
		{"NaN in double", []any{8, "NaN"}, "value", "NaN is not a number"},
		{"infinity in double", []any{8, math.Inf(-1)}, "value", "infinity is not a number"},
		{"json not UTF-8", []any{11, []byte("{\"k\":\"\xff\"}")}, "attributes", "not valid UTF-8"},
		// SQLite compares the text: this instant sorts inside the day's
		// window but is 04:00 on the next day in UTC.
		{"partition column outside the window", []any{3, "2026-11-28T23:00:00.000000-05:00"}, "occurred_at",
			`outside the partition's day 2026-11-28 [2026-11-28T00:00:00.000000Z, 2026-11-29T00:00:00.000000Z) (value "2026-11-29T04:00:00.000000Z"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openDB(t)
			// The demo table forbids a NULL event_type; rebuild it without
			// constraints to play a source that allows one.
			if tt.column == "event_type" {
				if _, err := db.Exec(`CREATE TABLE events2 AS SELECT * FROM events WHERE 0; DROP TABLE events; ALTER TABLE events2 RENAME TO events`); err != nil {
					t.Fatal(err)
				}
			}
			insertEvent(t, db, "a", "good", "2026-11-28T01:00:00.000000Z")
			insertEvent(t, db, "a", "bad", "2026-11-28T02:00:00.000000Z", tt.extra...)
			src, _ := NewSQL(db, "sqlite", "sqlite:demo.db")
			calls := 0
			prov, err := Rows(context.Background(), src, dayQuery(mustDataset(t, "events"), "a", time.UTC), func([]any) error { calls++; return nil })
			if !errors.Is(err, dataset.ErrRowMismatch) {
				t.Fatalf("want ErrRowMismatch, got %v", err)
			}
			for _, s := range []string{"dataset events", "row 2", "column " + tt.column, tt.reason} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			// The good row was read, but the batch holding it fails with
			// the bad row: nothing of a refused partition is handed on.
			if calls != 0 || prov.RowCount != 1 {
				t.Errorf("fn called %d times, row count %d; want 0 and 1 (the good row read)", calls, prov.RowCount)
			}
		})
	}
}

// TestSQLUnavailable: a source that cannot be read is ErrUnavailable, with
// the driver's text unchanged (for the logs); a bad row is not.
func TestSQLUnavailable(t *testing.T) {
	db := openDB(t)
	insertEvent(t, db, "a", "e1", "2026-11-28T01:00:00.000000Z", 8, "NaN")
	src, _ := NewSQL(db, "sqlite", "sqlite:demo.db")
	q := dayQuery(mustDataset(t, "events"), "a", time.UTC)
	_, err := Rows(context.Background(), src, q, func([]any) error { return nil })
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("a bad row: %v", err)
	}
	db.Close()
	_, err = Rows(context.Background(), src, q, func([]any) error { return nil })
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "database is closed") || strings.Contains(err.Error(), ErrUnavailable.Error()) {
		t.Fatalf("a closed database: %v", err)
	}
}

func TestSQLQueryShape(t *testing.T) {
	db := openDB(t)
	src, _ := NewSQL(db, "sqlite", "sqlite:demo.db")
	ds := mustDataset(t, "events")
	ds.Queries = map[string]string{"sqlite": "SELECT event_id, event_type FROM events WHERE account_id = ? AND occurred_at >= ? AND occurred_at < ?"}
	_, err := Rows(context.Background(), src, dayQuery(ds, "a", time.UTC), func([]any) error { return nil })
	if !errors.Is(err, dataset.ErrRowMismatch) || !strings.Contains(err.Error(), "query returns 2 columns") {
		t.Fatalf("got %v", err)
	}
	ds.Queries["sqlite"] = strings.Replace(mustDataset(t, "events").Queries["sqlite"], "received_at,", "inserted_at,", 1)
	_, err = Rows(context.Background(), src, dayQuery(ds, "a", time.UTC), func([]any) error { return nil })
	if !errors.Is(err, dataset.ErrRowMismatch) || !strings.Contains(err.Error(), `column received_at`) {
		t.Fatalf("got %v", err)
	}
}

func TestSQLCallbackErrorAndCancel(t *testing.T) {
	db := openDB(t)
	insertEvent(t, db, "a", "e1", "2026-11-28T01:00:00.000000Z")
	insertEvent(t, db, "a", "e2", "2026-11-28T02:00:00.000000Z")
	src, _ := NewSQL(db, "sqlite", "sqlite:demo.db")
	stop := errors.New("stop")
	// Both rows fit one batch: both were read when the consumer stopped.
	prov, err := Rows(context.Background(), src, dayQuery(mustDataset(t, "events"), "a", time.UTC), func([]any) error { return stop })
	if !errors.Is(err, stop) || prov.RowCount != 2 {
		t.Fatalf("got %v, rows %d", err, prov.RowCount)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Rows(ctx, src, dayQuery(mustDataset(t, "events"), "a", time.UTC), func([]any) error { return nil }); err == nil {
		t.Fatal("cancelled context: want error")
	}
}

func TestNewSQL(t *testing.T) {
	db := openDB(t)
	if _, err := NewSQL(db, "oracle", "x"); !errors.Is(err, dataset.ErrUnknownDialect) || !strings.Contains(err.Error(), "oracle") {
		t.Fatalf("got %v", err)
	}
	for in, want := range map[string]string{
		"sqlite:demo.db": "sqlite:demo.db",
		"postgres://app:s3cret@db.internal:5432/prod?sslmode=require": "postgres://app@db.internal:5432/prod?sslmode=require",
	} {
		src, err := NewSQL(db, "sqlite", in)
		if err != nil || src.Name() != want {
			t.Errorf("NewSQL(%q).Name() = %q, %v; want %q", in, src.Name(), err, want)
		}
	}
	if _, err := (&SQL{db: db, dialect: "sqlite", now: time.Now}).Batches(context.Background(), Query{AccountID: "a", Dataset: mustDataset(t, "events")}, nil); err == nil {
		t.Fatal("empty window: want error")
	}
}

// TestQueryParams pins the values a dataset query binds: instants for the
// event-time and activity datasets (canonical text in SQLite, UTC times in
// PostgreSQL), calendar days for stat_date datasets whatever the zone.
func TestQueryParams(t *testing.T) {
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	day := civil.MustParse("2026-03-09")
	start, end := day.Start(kolkata), day.AddDays(1).Start(kolkata)
	tests := []struct {
		dataset, dialect string
		want             []any
	}{
		{"events", dataset.DialectSQLite, []any{"acct_a", "2026-03-08T18:30:00.000000Z", "2026-03-09T18:30:00.000000Z"}},
		{"profiles", dataset.DialectSQLite, []any{"acct_a", "2026-03-08T18:30:00.000000Z", "2026-03-09T18:30:00.000000Z"}},
		{"events", dataset.DialectPostgres, []any{"acct_a", start.UTC(), end.UTC()}},
		{"daily_stats", dataset.DialectSQLite, []any{"acct_a", "2026-03-09", "2026-03-10"}},
		{"daily_stats", dataset.DialectPostgres, []any{"acct_a", "2026-03-09", "2026-03-10"}},
	}
	for _, tt := range tests {
		t.Run(tt.dataset+"/"+tt.dialect, func(t *testing.T) {
			q := Query{AccountID: "acct_a", Dataset: mustDataset(t, tt.dataset), Day: day, Start: start, End: end}
			got := q.Params(tt.dialect)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Params(%s) = %#v, want %#v", tt.dialect, got, tt.want)
			}
		})
	}
}

// TestSQLiteEventsPlan: the demo schema's index covers the events query
// (SQLite reads no table row) and its order (no sort step).
func TestSQLiteEventsPlan(t *testing.T) {
	db := openDB(t)
	q, _ := mustDataset(t, "events").Query("sqlite")
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q, "a", "2026-11-28T00:00:00.000000Z", "2026-11-29T00:00:00.000000Z")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if len(plan) != 1 || !strings.Contains(plan[0], "USING COVERING INDEX events_export") {
		t.Fatalf("plan %q, want one covering index search and no sort", plan)
	}
}
