package source

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	ds, err := dataset.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

const acct = "acc_'; DROP TABLE events; --"

var day = dataset.Date(20785) // 2026-11-28

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
	prov, err := src.Rows(context.Background(), q, func(row []any) error {
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
	if prov.Source != "sqlite:demo.db" || !strings.Contains(prov.Query, "FROM events") ||
		prov.Params[0] != acct || prov.Params[1] != "2026-11-28T00:00:00.000000Z" || prov.FinishedAt.IsZero() {
		t.Fatalf("provenance = %+v", prov)
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
	mustExec(`INSERT INTO profiles VALUES ('a','p1','2026-01-01T00:00:00.000000Z','2026-11-28T08:00:00.000000Z',NULL,'DE','pro',7,NULL)`)
	mustExec(`INSERT INTO profiles VALUES ('a','p2','2026-01-01T00:00:00.000000Z','2026-11-29T08:00:00.000000Z',NULL,NULL,NULL,1,'{}')`)
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
	if prov.Params[1] != "2026-11-28" || prov.Params[2] != "2026-11-29" {
		t.Fatalf("params = %v", prov.Params)
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
			_, err := src.Rows(context.Background(), dayQuery(mustDataset(t, "events"), "a", time.UTC), func([]any) error { calls++; return nil })
			if !errors.Is(err, dataset.ErrRowMismatch) {
				t.Fatalf("want ErrRowMismatch, got %v", err)
			}
			for _, s := range []string{"dataset events", "row 2", "column " + tt.column, tt.reason} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if calls != 1 {
				t.Errorf("fn called %d times, want 1 (the good row only)", calls)
			}
		})
	}
}

func TestSQLQueryShape(t *testing.T) {
	db := openDB(t)
	src, _ := NewSQL(db, "sqlite", "sqlite:demo.db")
	ds := mustDataset(t, "events")
	ds.Queries = map[string]string{"sqlite": "SELECT event_id, event_type FROM events WHERE account_id = ? AND occurred_at >= ? AND occurred_at < ?"}
	_, err := src.Rows(context.Background(), dayQuery(ds, "a", time.UTC), func([]any) error { return nil })
	if !errors.Is(err, dataset.ErrRowMismatch) || !strings.Contains(err.Error(), "query returns 2 columns") {
		t.Fatalf("got %v", err)
	}
	ds.Queries["sqlite"] = strings.Replace(mustDataset(t, "events").Queries["sqlite"], "received_at,", "inserted_at,", 1)
	_, err = src.Rows(context.Background(), dayQuery(ds, "a", time.UTC), func([]any) error { return nil })
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
	prov, err := src.Rows(context.Background(), dayQuery(mustDataset(t, "events"), "a", time.UTC), func([]any) error { return stop })
	if !errors.Is(err, stop) || prov.RowCount != 1 {
		t.Fatalf("got %v, rows %d", err, prov.RowCount)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.Rows(ctx, dayQuery(mustDataset(t, "events"), "a", time.UTC), func([]any) error { return nil }); err == nil {
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
	if _, err := (&SQL{db: db, dialect: "sqlite", now: time.Now}).Rows(context.Background(), Query{AccountID: "a", Dataset: mustDataset(t, "events")}, nil); err == nil {
		t.Fatal("empty window: want error")
	}
}
