package source

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
)

// One PostgreSQL server for the package, started by the first test that
// needs it (the SQLite tests do not pay for it) and stopped by TestMain.
var (
	pgOnce   sync.Once
	pgServer *pgserver.Server
	pgErr    error
	pgLogDir string
	pgSeq    atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pgServer != nil {
		if code != 0 {
			if b, err := os.ReadFile(pgServer.Log); err == nil && len(b) > 0 {
				fmt.Fprintf(os.Stderr, "--- postgres log tail ---\n%s\n", b[max(0, len(b)-4000):])
			}
		}
		if err := pgServer.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if pgLogDir != "" {
		os.RemoveAll(pgLogDir)
	}
	os.Exit(code)
}

func postgres(t *testing.T) *pgserver.Server {
	t.Helper()
	pgOnce.Do(func() {
		if pgLogDir, pgErr = os.MkdirTemp("", "daybook-pg-log-"); pgErr != nil {
			return
		}
		pgServer, pgErr = pgserver.Start(context.Background(), pgLogDir)
		if pgErr == nil {
			t.Logf("postgres: initdb %s, start %s", pgServer.InitDuration, pgServer.StartDuration)
		}
	})
	if pgErr != nil {
		t.Fatal(pgErr) // never skip: the install hint is in the error
	}
	return pgServer
}

var nonIdent = regexp.MustCompile(`[^a-z0-9]+`)

// pgDB returns a connection pool whose search_path is a fresh schema of its
// own, holding the shipped source DDL unless bare. The session time zone is
// deliberately neither UTC nor the account's zone: nothing may depend on it.
func pgDB(t *testing.T, bare bool) *sql.DB {
	t.Helper()
	srv := postgres(t)
	name := nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	name = fmt.Sprintf("t%d_%s", pgSeq.Add(1), name[:min(len(name), 40)])
	admin, err := sql.Open("pgx", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", srv.DSN+" search_path="+name+" timezone=America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if !bare {
		ddl, err := dataset.SourceDDL("postgres")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ddl); err != nil {
			t.Fatalf("postgres source DDL: %v", err)
		}
	}
	return db
}

func pgExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func utc(s string) time.Time {
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return ts
}

// The account zone of the postgres tests: +05:30, so a window that is off
// by the zone, or truncated to whole hours, shows.
var ist = time.FixedZone("IST", 5*3600+1800)

// istDay is 2026-11-28 in IST: [2026-11-27T18:30Z, 2026-11-28T18:30Z).
func istDay(ds dataset.Dataset, account string) Query {
	return dayQuery(ds, account, ist)
}

type pgEvent struct {
	account, id, typ       string
	occurred, received, in time.Time
	session, user          any // string or nil
	value                  any // float64 or nil
	amount                 any // numeric literal or nil
	isTest                 bool
	attributes             any // JSON text or nil
}

func insertPGEvent(t *testing.T, db *sql.DB, e pgEvent) {
	t.Helper()
	pgExec(t, db, `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at, inserted_at,
		session_id, user_id, value, amount, is_test, attributes) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)`,
		e.account, e.id, e.typ, e.occurred, e.received, e.in, e.session, e.user, e.value, e.amount, e.isTest, e.attributes)
}

// sameRows compares read rows with the wanted ones: instants must be UTC
// and equal to the microsecond, decimals exactly equal at their scale, JSON
// semantically equal (jsonb reorders keys and drops white space), the rest
// identical in type and value.
func sameRows(t *testing.T, ds dataset.Dataset, got, want [][]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d rows, want %d:\n%v", ds.Name, len(got), len(want), got)
	}
	for r := range want {
		for c, col := range ds.Columns {
			g, w := got[r][c], want[r][c]
			if msg := sameValue(g, w); msg != "" {
				t.Errorf("%s row %d column %s: got %#v, want %#v: %s", ds.Name, r+1, col.Name, g, w, msg)
			}
		}
	}
}

func sameValue(g, w any) string {
	switch w := w.(type) {
	case time.Time:
		g, ok := g.(time.Time)
		switch {
		case !ok:
			return "not a time.Time"
		case g.Location() != time.UTC:
			return "not in UTC"
		case !g.Equal(w) || g.Nanosecond()%1000 != 0:
			return "different instant"
		}
	case dataset.Decimal:
		g, ok := g.(dataset.Decimal)
		if !ok || !g.Equal(w) || g.String() != w.String() {
			return "different decimal"
		}
	case json.RawMessage:
		g, ok := g.(json.RawMessage)
		if !ok {
			return "not a json.RawMessage"
		}
		var gv, wv any
		if err := json.Unmarshal(g, &gv); err != nil {
			return err.Error()
		}
		if err := json.Unmarshal(w, &wv); err != nil {
			return err.Error()
		}
		if !reflect.DeepEqual(gv, wv) {
			return "different JSON"
		}
	default:
		if g != w {
			return "different value or type"
		}
	}
	return ""
}

func dec(t *testing.T, s string) dataset.Decimal {
	t.Helper()
	d, err := dataset.ParseDecimal(s, 2)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newPGSource(t *testing.T, db *sql.DB) *SQL {
	t.Helper()
	src, err := NewSQL(db, "postgres", "pg")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func checkProvenance(t *testing.T, prov Provenance, ds dataset.Dataset, rows int64, start, end string) {
	t.Helper()
	if prov.Source != "postgres" || prov.Relation != ds.Relation || prov.RowCount != rows ||
		dataset.FormatTimestamp(prov.WindowStart) != start || dataset.FormatTimestamp(prov.WindowEnd) != end ||
		prov.SnapshotAt.IsZero() || prov.FinishedAt.Before(prov.SnapshotAt) {
		t.Errorf("provenance = %+v\nwant %d rows, window %s..%s", prov, rows, start, end)
	}
}

func TestPostgresEvents(t *testing.T) {
	db := pgDB(t, false)
	const other = "acc_other"
	attrs := `{"plan": "pro", "n": 1, "nested": {"list": [1, 2.5, null, true]}, "s": "quote \" and ünïcode"}`
	events := []pgEvent{
		// In the IST day although the UTC day before; first instant of the window.
		{account: acct, id: "e_start", typ: "signup", occurred: utc("2026-11-27T18:30:00Z"), received: utc("2026-11-27T18:30:00.000001Z"),
			in: utc("2026-11-27T18:30:01Z"), isTest: true},
		{account: acct, id: "e_mid", typ: "purchase", occurred: utc("2026-11-28T09:15:42.123456Z"), received: utc("2026-11-28T09:15:42.654321Z"),
			in: utc("2026-11-28T09:15:43Z"), session: "s1", user: "u'1", value: 3.141592653589793, amount: "12.3", attributes: attrs},
		{account: acct, id: "e_big", typ: "purchase", occurred: utc("2026-11-28T09:15:42.123456Z"), received: utc("2026-11-28T09:15:42.123456Z"),
			in: utc("2026-11-28T09:15:43Z"), value: 0.0, amount: "9999999999999999.99", attributes: `{}`},
		// Late: inserted two days after it happened, on the last microsecond of the window.
		{account: acct, id: "e_late", typ: "page_view", occurred: utc("2026-11-28T18:29:59.999999Z"), received: utc("2026-11-30T09:59:59.5Z"),
			in: utc("2026-11-30T10:00:00Z"), user: "u2", amount: "-0.05", attributes: `[1, "two"]`},
		// Outside the window: just before, at the exclusive end, the same UTC day but the next IST day.
		{account: acct, id: "e_before", typ: "page_view", occurred: utc("2026-11-27T18:29:59.999999Z"), received: utc("2026-11-27T18:30:00Z"), in: utc("2026-11-27T18:30:00Z")},
		{account: acct, id: "e_end", typ: "page_view", occurred: utc("2026-11-28T18:30:00Z"), received: utc("2026-11-28T18:30:00Z"), in: utc("2026-11-28T18:30:00Z")},
		{account: acct, id: "e_utc_same_day", typ: "page_view", occurred: utc("2026-11-28T20:00:00Z"), received: utc("2026-11-28T20:00:00Z"), in: utc("2026-11-28T20:00:00Z")},
		// Another account, inside the window.
		{account: other, id: "e_mid", typ: "purchase", occurred: utc("2026-11-28T09:00:00Z"), received: utc("2026-11-28T09:00:00Z"), in: utc("2026-11-28T09:00:00Z"), amount: "1.00"},
	}
	for _, e := range events {
		insertPGEvent(t, db, e)
	}
	ds := mustDataset(t, "events")
	src := newPGSource(t, db)
	rows, prov, err := collect(t, src, istDay(ds, acct))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{"e_start", "signup", utc("2026-11-27T18:30:00Z"), utc("2026-11-27T18:30:00.000001Z"), nil, nil, nil, nil, true, nil},
		{"e_big", "purchase", utc("2026-11-28T09:15:42.123456Z"), utc("2026-11-28T09:15:42.123456Z"), nil, nil, 0.0, dec(t, "9999999999999999.99"), false, json.RawMessage(`{}`)},
		{"e_mid", "purchase", utc("2026-11-28T09:15:42.123456Z"), utc("2026-11-28T09:15:42.654321Z"), "s1", "u'1", 3.141592653589793, dec(t, "12.30"), false, json.RawMessage(attrs)},
		{"e_late", "page_view", utc("2026-11-28T18:29:59.999999Z"), utc("2026-11-30T09:59:59.5Z"), nil, "u2", nil, dec(t, "-0.05"), false, json.RawMessage(`[1,"two"]`)},
	}
	sameRows(t, ds, rows, want)
	checkProvenance(t, prov, ds, 4, "2026-11-27T18:30:00.000000Z", "2026-11-28T18:30:00.000000Z")

	// The other account sees only its own row, in the UTC day.
	rows, _, err = collect(t, src, dayQuery(ds, other, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, ds, rows, [][]any{{"e_mid", "purchase", utc("2026-11-28T09:00:00Z"), utc("2026-11-28T09:00:00Z"), nil, nil, nil, dec(t, "1.00"), false, nil}})
	// The quotes were bound, not spliced: no injection, nothing dropped.
	for _, account := range []string{"acc_' OR '1'='1", "acc_%", acct + " "} {
		rows, prov, err := collect(t, src, istDay(ds, account))
		if err != nil || len(rows) != 0 || prov.RowCount != 0 {
			t.Errorf("account %q: %v, %d rows, %v", account, rows, prov.RowCount, err)
		}
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil || n != len(events) {
		t.Fatalf("events count = %d, %v", n, err)
	}
}

func TestPostgresProfiles(t *testing.T) {
	db := pgDB(t, false)
	ins := func(account, profile, day string, first, last time.Time, email, country, plan any, count int64, attrs any) {
		t.Helper()
		pgExec(t, db, `INSERT INTO profile_activity (account_id, profile_id, activity_date, first_seen_at, last_seen_at,
			email, country, plan, event_count, attributes) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
			account, profile, day, first, last, email, country, plan, count, attrs)
	}
	first := utc("2026-01-02T03:04:05.000006Z")
	// activity_date is the IST day of last_seen_at, as the DDL documents.
	ins(acct, "p1", "2026-11-28", first, utc("2026-11-28T17:00:00.654321Z"), nil, "IN", nil, 42, `{"tier": "gold"}`)
	ins(acct, "p1", "2026-11-29", first, utc("2026-11-28T19:00:00Z"), "p1@example.com", "IN", "pro", 43, nil) // next IST day
	ins(acct, "p2", "2026-11-28", utc("2026-11-27T18:30:00Z"), utc("2026-11-27T18:30:00Z"), "p2@example.com", "DE", "free", 1, `{}`)
	ins(acct, "p3", "2026-11-27", first, utc("2026-11-27T18:29:59.999999Z"), nil, nil, nil, 5, nil) // previous IST day
	ins("acc_other", "p1", "2026-11-28", first, utc("2026-11-28T10:00:00Z"), nil, nil, nil, 9, nil)

	ds := mustDataset(t, "profiles")
	rows, prov, err := collect(t, newPGSource(t, db), istDay(ds, acct))
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, ds, rows, [][]any{
		{"p2", utc("2026-11-27T18:30:00Z"), utc("2026-11-27T18:30:00Z"), "p2@example.com", "DE", "free", int64(1), json.RawMessage(`{}`)},
		{"p1", first, utc("2026-11-28T17:00:00.654321Z"), nil, "IN", nil, int64(42), json.RawMessage(`{"tier":"gold"}`)},
	})
	checkProvenance(t, prov, ds, 2, "2026-11-27T18:30:00.000000Z", "2026-11-28T18:30:00.000000Z")
}

func TestPostgresDailyStats(t *testing.T) {
	db := pgDB(t, false)
	ins := func(account, day, metric, dimension string, count int64, sum float64, attrs any) {
		t.Helper()
		pgExec(t, db, `INSERT INTO daily_stats (account_id, stat_date, metric, dimension, count, sum, attributes)
			VALUES ($1,$2,$3,$4,$5,$6,$7)`, account, day, metric, dimension, count, sum, attrs)
	}
	ins(acct, "2026-11-27", "views", "", 5, 5, nil)
	ins(acct, "2026-11-28", "views", "", 10, 2.5, nil)
	ins(acct, "2026-11-28", "views", "DE", 3, 0.1, `{"src": "x", "w": 1.25}`)
	ins(acct, "2026-11-28", "clicks", "", 7, -7, `{}`)
	ins(acct, "2026-11-29", "views", "", 99, 1, nil)
	ins("acc_other", "2026-11-28", "views", "", 1, 1, nil)

	ds := mustDataset(t, "daily_stats")
	// The IST window starts on the UTC day before; stat_date must not move.
	rows, prov, err := collect(t, newPGSource(t, db), istDay(ds, acct))
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, ds, rows, [][]any{
		{day, "clicks", "", int64(7), -7.0, json.RawMessage(`{}`)},
		{day, "views", "", int64(10), 2.5, nil},
		{day, "views", "DE", int64(3), 0.1, json.RawMessage(`{"w":1.25,"src":"x"}`)},
	})
	checkProvenance(t, prov, ds, 3, "2026-11-27T18:30:00.000000Z", "2026-11-28T18:30:00.000000Z")
}

// TestPostgresBadRows: a value that does not fit the dataset fails the read
// with the dataset, row and column named, after the good rows were handed
// over. Some misfits pass the shipped DDL (PostgreSQL's 'infinity' and
// 'NaN'); the others need a source looser than it (relaxed: a view or
// replica without the constraints, an unscaled numeric).
func TestPostgresBadRows(t *testing.T) {
	tests := []struct {
		name    string
		relaxed bool
		column  string
		set     string // applied to the second row
		reason  string
	}{
		{"infinite received_at", false, "received_at", "received_at = 'infinity'", "unparsable timestamp"},
		{"NaN amount", false, "amount", "amount = 'NaN'", "unparsable decimal at scale 2"},
		{"NaN value", false, "value", "value = 'NaN'", "NaN is not a number"},
		{"infinite value", false, "value", "value = '-Infinity'", "infinity is not a number"},
		{"null event_type", true, "event_type", "event_type = NULL", "null in required column"},
		{"null received_at", true, "received_at", "received_at = NULL", "null in required column"},
		{"amount with 3 places", true, "amount", "amount = 12.345", "unparsable decimal at scale 2"},
		{"amount beyond precision", true, "amount", "amount = 12345678901234567.89", "decimal exceeds precision 18"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := pgDB(t, tt.relaxed)
			if tt.relaxed {
				// The shipped columns, without NOT NULL, key or numeric scale.
				pgExec(t, db, `CREATE TABLE events (account_id text, event_id text, event_type text, occurred_at timestamptz,
				received_at timestamptz, inserted_at timestamptz, session_id text, user_id text, value double precision,
				amount numeric, is_test boolean, attributes jsonb)`)
			}
			for i, id := range []string{"good", "bad"} {
				at := utc("2026-11-28T01:00:00Z").Add(time.Duration(i) * time.Hour)
				insertPGEvent(t, db, pgEvent{account: "a", id: id, typ: "page_view", occurred: at, received: at, in: at, amount: "1.50"})
			}
			pgExec(t, db, "UPDATE events SET "+tt.set+" WHERE event_id = 'bad'")
			calls := 0
			prov, err := Rows(context.Background(), newPGSource(t, db), dayQuery(mustDataset(t, "events"), "a", time.UTC),
				func([]any) error { calls++; return nil })
			var rowErr *dataset.RowError
			if !errors.Is(err, dataset.ErrRowMismatch) || !errors.As(err, &rowErr) {
				t.Fatalf("want a RowError, got %v", err)
			}
			if rowErr.Row != 2 || rowErr.Column != tt.column {
				t.Errorf("row %d column %q, want row 2 column %s", rowErr.Row, rowErr.Column, tt.column)
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

// TestPostgresWindow: a row the query should not have returned (here a
// query that reads an hour too far, as a view or a zone bug could) fails the
// partition on the binary path too, naming the column, row and value.
func TestPostgresWindow(t *testing.T) {
	db := pgDB(t, false)
	for i, id := range []string{"in", "next day"} {
		at := utc("2026-11-28T23:30:00Z").Add(time.Duration(i) * time.Hour) // the second is on the next day
		insertPGEvent(t, db, pgEvent{account: "a", id: id, typ: "page_view", occurred: at, received: at, in: at})
	}
	ds := mustDataset(t, "events")
	ds.Queries = map[string]string{"postgres": strings.Replace(ds.Queries["postgres"], "occurred_at < $3", "occurred_at < $3::timestamptz + interval '1 hour'", 1)}
	calls := 0
	prov, err := Rows(context.Background(), newPGSource(t, db), dayQuery(ds, "a", time.UTC), func([]any) error { calls++; return nil })
	var rowErr *dataset.RowError
	if !errors.As(err, &rowErr) || rowErr.Row != 2 || rowErr.Column != "occurred_at" ||
		!strings.Contains(err.Error(), `outside the partition's day 2026-11-28 [2026-11-28T00:00:00.000000Z, 2026-11-29T00:00:00.000000Z) (value "2026-11-29T00:30:00.000000Z"`) {
		t.Fatalf("want row 2's occurred_at refused, got %v", err)
	}
	if calls != 0 || prov.RowCount != 1 {
		t.Errorf("fn called %d times, row count %d; want 0 and 1", calls, prov.RowCount)
	}
}

// TestPostgresJSONNotUTF8: json and jsonb are trusted unchecked only from a
// server that guarantees UTF-8. A SQL_ASCII database stores any byte inside
// a JSON string; such a value is refused like bad JSON text.
func TestPostgresJSONNotUTF8(t *testing.T) {
	srv := postgres(t)
	name := fmt.Sprintf("ascii%d", pgSeq.Add(1))
	admin, err := sql.Open("pgx", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	pgExec(t, admin, "CREATE DATABASE "+name+" ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
	t.Cleanup(func() { admin.Exec("DROP DATABASE " + name + " WITH (FORCE)") })
	db, err := sql.Open("pgx", srv.DSN+" dbname="+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ddl, err := dataset.SourceDDL("postgres")
	if err != nil {
		t.Fatal(err)
	}
	pgExec(t, db, ddl)
	for i, id := range []string{"good", "bad"} {
		at := utc("2026-11-28T01:00:00Z").Add(time.Duration(i) * time.Hour)
		insertPGEvent(t, db, pgEvent{account: "a", id: id, typ: "page_view", occurred: at, received: at, in: at, attributes: `{"k":"v"}`})
	}
	pgExec(t, db, `UPDATE events SET attributes = E'{"k":"\xff"}'::jsonb WHERE event_id = 'bad'`)
	_, err = Rows(context.Background(), newPGSource(t, db), dayQuery(mustDataset(t, "events"), "a", time.UTC), func([]any) error { return nil })
	var rowErr *dataset.RowError
	if !errors.As(err, &rowErr) || rowErr.Row != 2 || rowErr.Column != "attributes" || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Fatalf("want row 2's attributes refused as not UTF-8, got %v", err)
	}
	// A text value from such a server is checked too (from a UTF8 one only
	// its length is: TestPostgresLongString).
	pgExec(t, db, `UPDATE events SET attributes = NULL, session_id = E'caf\xe9' WHERE event_id = 'bad'`)
	_, err = Rows(context.Background(), newPGSource(t, db), dayQuery(mustDataset(t, "events"), "a", time.UTC), func([]any) error { return nil })
	if !errors.As(err, &rowErr) || rowErr.Row != 2 || rowErr.Column != "session_id" || !strings.Contains(err.Error(), "string is not valid UTF-8") {
		t.Fatalf("want row 2's session_id refused as not UTF-8, got %v", err)
	}
}

// TestPostgresLongString: from a server that guarantees UTF-8 a text value
// is not checked for UTF-8 again, but one longer than a string may hold is
// still refused, naming the row, column and length; one of the longest
// length is read whole.
func TestPostgresLongString(t *testing.T) {
	db := pgDB(t, false)
	for i, id := range []string{"longest", "too long"} {
		at := utc("2026-11-28T01:00:00Z").Add(time.Duration(i) * time.Hour)
		insertPGEvent(t, db, pgEvent{account: "a", id: id, typ: "page_view", occurred: at, received: at, in: at,
			session: strings.Repeat("é", dataset.MaxStringBytes/2) + strings.Repeat("x", i+dataset.MaxStringBytes%2)})
	}
	var got []any
	_, err := Rows(context.Background(), newPGSource(t, db), dayQuery(mustDataset(t, "events"), "a", time.UTC), func(row []any) error {
		got = append(got, row[4])
		return nil
	})
	var rowErr *dataset.RowError
	want := fmt.Sprintf("string of %d bytes is longer than the %d bytes", dataset.MaxStringBytes+1, dataset.MaxStringBytes)
	if !errors.As(err, &rowErr) || rowErr.Row != 2 || rowErr.Column != "session_id" || !strings.Contains(err.Error(), want) {
		t.Fatalf("want row 2's session_id refused as %q, got %v", want, err)
	}
	// The refused row fails its batch: nothing is handed on. The longest
	// value alone reads whole.
	if len(got) != 0 {
		t.Fatalf("%d rows handed on, want 0", len(got))
	}
	pgExec(t, db, `DELETE FROM events WHERE event_id = 'too long'`)
	if _, err := Rows(context.Background(), newPGSource(t, db), dayQuery(mustDataset(t, "events"), "a", time.UTC), func(row []any) error {
		got = append(got, row[4])
		return nil
	}); err != nil || len(got) != 1 || len(got[0].(string)) != dataset.MaxStringBytes {
		t.Fatalf("the longest string: %d rows, %v", len(got), err)
	}
}

// TestPostgresDecodeAhead: decoding on a goroutine of its own (decodeAhead,
// as a process with three CPUs or more reads) hands on the batches the
// one-goroutine path makes, batch for batch and value for value; a refused
// value fails at the same row with the same rows handed on, and an error of
// the batch callback stops the read and is returned. The day holds NULLs,
// empty strings, long values (wireRows that fill by bytes, batches by
// MaxBatchBytes) and more rows than one batch.
func TestPostgresDecodeAhead(t *testing.T) {
	db := pgDB(t, false)
	pgExec(t, db, `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at, inserted_at,
		session_id, user_id, value, amount, is_test, attributes)
		SELECT 'a', 'e' || i, (ARRAY['page_view', 'purchase', 'signup'])[1 + i % 3],
			'2026-11-28T00:00:00Z'::timestamptz + i * interval '1 second', '2026-11-28T00:00:00Z'::timestamptz + i * interval '1 second',
			'2026-11-29T00:00:00Z',
			CASE WHEN i % 7 = 0 THEN NULL WHEN i % 7 = 1 THEN '' ELSE 's' || (i / 10) END,
			CASE WHEN i % 5 = 0 THEN NULL WHEN i % 500 = 3 THEN repeat('u', 40000 + i) ELSE 'u' || (i % 97) END,
			CASE WHEN i % 4 = 0 THEN NULL ELSE i / 3.0 END, CASE WHEN i % 6 = 0 THEN NULL ELSE (i % 1000) / 100.0 END,
			i % 2 = 0, CASE WHEN i % 3 = 0 THEN NULL ELSE ('{"i": ' || i || ', "pad": "' || repeat('p', i % 50) || '"}')::jsonb END
		FROM generate_series(1, 9000) AS i`)
	ds := mustDataset(t, "events")
	q := dayQuery(ds, "a", time.UTC)
	// read returns every batch handed on, as text, and the outcome.
	read := func(ahead int, fail func(n int) error) ([]string, Provenance, error) {
		src := newPGSource(t, db).WithDecodeAhead(ahead)
		var got []string
		prov, err := src.Batches(context.Background(), q, func(b *dataset.Batch) error {
			var text strings.Builder
			fmt.Fprintf(&text, "first row %d, %d rows:\n", b.FirstRow, b.Len())
			row := make([]any, len(b.Cols))
			for i := range b.Len() {
				fmt.Fprintf(&text, "%#v\n", b.Row(i, row))
			}
			got = append(got, text.String())
			if fail != nil {
				return fail(len(got))
			}
			return nil
		})
		return got, prov, err
	}
	want, prov, err := read(-1, nil)
	if err != nil || prov.RowCount != 9000 || len(want) < 3 {
		t.Fatalf("one goroutine: %d batches, %d rows, %v; want 9000 rows in 3 batches or more", len(want), prov.RowCount, err)
	}
	for _, depth := range []int{1, 2} {
		got, prov, err := read(depth, nil)
		if err != nil || prov.RowCount != 9000 {
			t.Fatalf("depth %d: %d rows, %v", depth, prov.RowCount, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("depth %d: %d batches differ from the one-goroutine path's %d", depth, len(got), len(want))
		}
	}

	stop := errors.New("the encoder stopped")
	for _, depth := range []int{-1, 2} {
		got, _, err := read(depth, func(n int) error {
			if n == 2 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || len(got) != 2 {
			t.Errorf("depth %d: a callback failing on batch 2: %d batches, %v; want 2 and its error", depth, len(got), err)
		}
	}

	pgExec(t, db, `UPDATE events SET value = 'NaN' WHERE event_id = 'e6001'`)
	type outcome struct {
		batches int
		read    int64
		err     string
	}
	var outcomes []outcome
	for _, depth := range []int{-1, 2} {
		got, prov, err := read(depth, nil)
		var rowErr *dataset.RowError
		if !errors.As(err, &rowErr) || rowErr.Row != 6001 || rowErr.Column != "value" {
			t.Fatalf("depth %d: want row 6001's value refused, got %v", depth, err)
		}
		outcomes = append(outcomes, outcome{len(got), prov.RowCount, err.Error()})
	}
	if outcomes[0] != outcomes[1] {
		t.Errorf("a refused value: one goroutine %+v, decoding ahead %+v", outcomes[0], outcomes[1])
	}
}
