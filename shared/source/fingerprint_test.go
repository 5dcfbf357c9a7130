package source

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// fingerprintBase is one day of each dataset for account 'a' on
// 2026-11-28 (UTC), written in SQL both dialects accept.
var fingerprintBase = []string{
	`INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at, inserted_at)
		VALUES ('a', 'e1', 'view', '2026-11-28T08:00:00.000000Z', '2026-11-28T08:00:01.000000Z', '2026-11-28T08:00:02.000000Z'),
		       ('a', 'e2', 'view', '2026-11-28T09:00:00.000000Z', '2026-11-28T09:00:01.000000Z', '2026-11-28T09:00:02.000000Z')`,
	`INSERT INTO profile_activity (account_id, profile_id, activity_date, first_seen_at, last_seen_at, event_count)
		VALUES ('a', 'p1', '2026-11-28', '2026-01-01T00:00:00.000000Z', '2026-11-28T08:00:00.000000Z', 3),
		       ('a', 'p2', '2026-11-28', '2026-01-01T00:00:00.000000Z', '2026-11-28T10:00:00.000000Z', 5)`,
	`INSERT INTO daily_stats (account_id, stat_date, metric, dimension, count, sum)
		VALUES ('a', '2026-11-28', 'views', '', 10, 2.5), ('a', '2026-11-28', 'views', 'DE', 3, 0.1)`,
}

// fingerprintCases change the source after a first fingerprint; changed
// says whether the day's fingerprint must change.
var fingerprintCases = []struct {
	name    string
	dataset string
	change  string
	changed bool
}{
	{"nothing changed", "events", ``, false},
	{"late event in the day", "events", `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at, inserted_at)
		VALUES ('a', 'e3', 'view', '2026-11-28T07:00:00.000000Z', '2026-11-30T07:00:00.000000Z', '2026-11-30T07:00:01.000000Z')`, true},
	{"event deleted", "events", `DELETE FROM events WHERE event_id = 'e1'`, true},
	{"event of another account", "events", `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at, inserted_at)
		VALUES ('b', 'e3', 'view', '2026-11-28T07:00:00.000000Z', '2026-11-30T07:00:00.000000Z', '2026-11-30T07:00:01.000000Z')`, false},
	{"event of the next day", "events", `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at, inserted_at)
		VALUES ('a', 'e3', 'view', '2026-11-29T00:00:00.000000Z', '2026-11-29T00:00:00.000000Z', '2026-11-29T00:00:01.000000Z')`, false},
	{"profile active again that day", "profiles", `UPDATE profile_activity SET last_seen_at = '2026-11-28T11:00:00.000000Z', event_count = 4
		WHERE profile_id = 'p1' AND activity_date = '2026-11-28'`, true},
	{"late event counted on that day", "profiles", `UPDATE profile_activity SET event_count = 6 WHERE profile_id = 'p2'`, true},
	{"profile active the next day", "profiles", `INSERT INTO profile_activity (account_id, profile_id, activity_date, first_seen_at, last_seen_at, event_count)
		VALUES ('a', 'p1', '2026-11-29', '2026-01-01T00:00:00.000000Z', '2026-11-29T08:00:00.000000Z', 9)`, false},
	{"statistic recomputed", "daily_stats", `UPDATE daily_stats SET count = 11 WHERE dimension = ''`, true},
	{"statistic sum corrected", "daily_stats", `UPDATE daily_stats SET sum = 0.2 WHERE dimension = 'DE'`, true},
	{"statistic of another day", "daily_stats", `INSERT INTO daily_stats (account_id, stat_date, metric, dimension, count, sum)
		VALUES ('a', '2026-11-29', 'views', '', 1, 1)`, false},
}

// testFingerprints runs fingerprintCases on fresh databases of a dialect.
func testFingerprints(t *testing.T, open func(t *testing.T) (*sql.DB, *SQL)) {
	for _, tt := range fingerprintCases {
		t.Run(tt.name, func(t *testing.T) {
			db, src := open(t)
			for _, q := range fingerprintBase {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			q := dayQuery(mustDataset(t, tt.dataset), "a", time.UTC)
			before, err := src.Fingerprint(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			again, err := src.Fingerprint(context.Background(), q)
			if err != nil || again != before {
				t.Fatalf("the same day twice: %+v then %+v (%v)", before, again, err)
			}
			if len(before.Hash) != 64 {
				t.Fatalf("fingerprint %q is not a hex SHA-256", before.Hash)
			}
			if want := countWindow(t, db, src, q); before.Rows != want {
				t.Fatalf("fingerprint rows %d, want the window's %d (a sliced export is sized by it)", before.Rows, want)
			}
			if tt.change != "" {
				if _, err := db.Exec(tt.change); err != nil {
					t.Fatalf("%s: %v", tt.change, err)
				}
			}
			after, err := src.Fingerprint(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if changed := after.Hash != before.Hash; changed != tt.changed {
				t.Fatalf("fingerprint changed = %v, want %v (%s -> %s)", changed, tt.changed, before.Hash, after.Hash)
			}
			if want := countWindow(t, db, src, q); after.Rows != want {
				t.Fatalf("fingerprint rows after the change %d, want %d", after.Rows, want)
			}
		})
	}
}

// countWindow counts the query's rows independently of the catalog's
// fingerprint query.
func countWindow(t *testing.T, db *sql.DB, src *SQL, q Query) int64 {
	t.Helper()
	text := fmt.Sprintf("SELECT count(*) FROM %s WHERE account_id = ? AND %s >= ? AND %s < ?", q.Dataset.Relation, q.Dataset.PartitionColumn, q.Dataset.PartitionColumn)
	if src.dialect == dataset.DialectPostgres {
		text = fmt.Sprintf("SELECT count(*) FROM %s WHERE account_id = $1 AND %s >= $2 AND %s < $3", q.Dataset.Relation, q.Dataset.PartitionColumn, q.Dataset.PartitionColumn)
	}
	var n int64
	if err := db.QueryRow(text, q.Params(src.dialect)...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return n
}

func TestSQLiteFingerprint(t *testing.T) {
	testFingerprints(t, func(t *testing.T) (*sql.DB, *SQL) {
		db := openDB(t)
		src, err := NewSQL(db, dataset.DialectSQLite, "sqlite:test.db")
		if err != nil {
			t.Fatal(err)
		}
		return db, src
	})
}

func TestPostgresFingerprint(t *testing.T) {
	testFingerprints(t, func(t *testing.T) (*sql.DB, *SQL) {
		db := pgDB(t, false)
		return db, newPGSource(t, db)
	})
}

func TestFingerprintRefusals(t *testing.T) {
	db := openDB(t)
	src, err := NewSQL(db, dataset.DialectSQLite, "sqlite:test.db")
	if err != nil {
		t.Fatal(err)
	}
	ds := mustDataset(t, "events")
	noFP := ds
	noFP.Fingerprint = nil
	twoRows := ds
	twoRows.Fingerprint = map[string]string{"sqlite": "SELECT account_id FROM events WHERE account_id <> ? OR occurred_at >= ? OR occurred_at < ?"}
	noRow := ds
	noRow.Fingerprint = map[string]string{"sqlite": "SELECT 1 WHERE ? IS NULL AND ? IS NULL AND ? IS NULL"}
	if _, err := db.Exec(fingerprintBase[0]); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		q    Query
		want string
	}{
		{"no fingerprint query", dayQuery(noFP, "a", time.UTC), "no fingerprint query"},
		{"more than one row", dayQuery(twoRows, "zz", time.UTC), "more than one row"},
		{"no row", dayQuery(noRow, "a", time.UTC), "returned no row"},
		{"empty window", Query{AccountID: "a", Dataset: ds, Day: day}, "window start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := src.Fingerprint(context.Background(), tt.q)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Fingerprint = %v, want an error containing %q", err, tt.want)
			}
			if tt.name == "no fingerprint query" && !errors.Is(err, dataset.ErrNoFingerprint) {
				t.Fatalf("%v does not wrap dataset.ErrNoFingerprint", err)
			}
		})
	}
}

func TestFingerprintOf(t *testing.T) {
	at := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	same := [][2][]any{
		{{int64(1), at}, {int64(1), at.In(time.FixedZone("X", 3600))}},
		{{"x"}, {[]byte("x")}},
	}
	for _, p := range same {
		if FingerprintOf(p[0]) != FingerprintOf(p[1]) {
			t.Errorf("%v and %v fingerprint differently", p[0], p[1])
		}
	}
	differ := [][2][]any{
		{{int64(1)}, {"1"}},
		{{nil}, {"n"}},
		{{"a", "b"}, {"a\x1fb"}},
		{{int64(1), int64(2)}, {int64(2), int64(1)}},
	}
	for _, p := range differ {
		if FingerprintOf(p[0]) == FingerprintOf(p[1]) {
			t.Errorf("%v and %v fingerprint the same", p[0], p[1])
		}
	}
}
