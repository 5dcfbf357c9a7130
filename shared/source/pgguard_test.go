package source

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// frozenContext has a deadline and never says it passed: the context of a
// run whose process was frozen or killed, which can no longer cancel its
// query (pgx cancels a query only when its context's Done fires).
type frozenContext struct {
	context.Context
	deadline time.Time
}

func (c frozenContext) Deadline() (time.Time, bool) { return c.deadline, true }
func (c frozenContext) Done() <-chan struct{}       { return nil }
func (c frozenContext) Err() error                  { return nil }

// activeQueries counts the backends other than db's own running a query
// that reads the events table.
func activeQueries(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND state = 'active' AND query ILIKE '%FROM events%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStatementTimeoutEndsTheQueryOfAFrozenRun: a run whose client can no
// longer act (its context never fires) reads a day while a migration holds
// the table locked. Every query of the read (the fingerprint, the slice
// boundaries, the rows) is ended by the server at the run's deadline, from
// the statement_timeout of its read transaction: each returns
// ErrStatementTimeout, which is the run's deadline exceeded (the exporter's
// timed_out), and pg_stat_activity shows no query of the run left. Before,
// nothing bounded them: each waited for the lock as long as it was held (the
// lock holder here gives up after 10 s, so the old code returned rows then).
func TestStatementTimeoutEndsTheQueryOfAFrozenRun(t *testing.T) {
	db := pgDB(t, false)
	insertPGEvent(t, db, pgEvent{account: "a", id: "e1", typ: "page_view", occurred: utc("2026-11-28T01:00:00Z"),
		received: utc("2026-11-28T01:00:00Z"), in: utc("2026-11-28T01:00:00Z")})
	ctx := t.Context()
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	for _, q := range []string{"SET idle_in_transaction_session_timeout = '10s'", "BEGIN", "LOCK TABLE events IN ACCESS EXCLUSIVE MODE"} {
		if _, err := holder.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	src := newPGSource(t, db)
	q := dayQuery(mustDataset(t, "events"), "a", time.UTC)
	for _, tc := range []struct {
		name string
		read func(ctx context.Context) error
	}{
		{"the rows", func(ctx context.Context) error {
			_, err := src.Batches(ctx, q, func(*dataset.Batch) error { return nil })
			return err
		}},
		{"the fingerprint", func(ctx context.Context) error { _, err := src.Fingerprint(ctx, q); return err }},
		{"the slice boundaries", func(ctx context.Context) error { _, err := src.SliceBounds(ctx, q, 4, 0); return err }},
	} {
		start := time.Now()
		err := tc.read(frozenContext{Context: ctx, deadline: start.Add(time.Second)})
		took := time.Since(start)
		t.Logf("%s: %s", tc.name, took)
		if !errors.Is(err, ErrStatementTimeout) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "statement timeout") {
			t.Errorf("%s: %v after %s; want ErrStatementTimeout, the server's cancel at the deadline", tc.name, err, took)
		}
		if n := activeQueries(t, db); n != 0 {
			t.Errorf("%s: %d queries of the run still active after it", tc.name, n)
		}
	}
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	// A deadline already passed runs no query.
	past := frozenContext{Context: ctx, deadline: time.Now().Add(-time.Second)}
	if _, err := src.Batches(past, q, func(*dataset.Batch) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a read after its deadline: %v", err)
	}
}

// TestMessageCapRefusesAHugeValue: a row whose jsonb value is 20 MB, above
// the 16 MiB daybook accepts, is refused from its message header, before
// its body is read: the read allocates far less than the value, and fails
// naming the row and the column, as a bad row (schema_mismatch). Before,
// pgx read the whole message into memory first, and only then did the JSON
// size check refuse it (a 500 MB value ran the exporter out of memory).
// The largest value accepted reads whole.
func TestMessageCapRefusesAHugeValue(t *testing.T) {
	db := pgDB(t, false)
	at := utc("2026-11-28T01:00:00Z")
	insertPGEvent(t, db, pgEvent{account: "a", id: "e1", typ: "page_view", occurred: at, received: at, in: at, attributes: `{"fine": true}`})
	// The values are built by the server: the test sends none of their bytes.
	pgExec(t, db, `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at, inserted_at, attributes)
		VALUES ('a', 'e2', 'page_view', '2026-11-28T02:00:00Z', '2026-11-28T02:00:00Z', '2026-11-28T02:00:00Z', jsonb_build_object('big', repeat('x', 20000000)))`)
	src := newPGSource(t, db)
	q := dayQuery(mustDataset(t, "events"), "a", time.UTC)
	for _, depth := range []int{-1, 2} { // decoded inline, and on a goroutine of its own
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := src.WithDecodeAhead(depth).Batches(t.Context(), q, func(*dataset.Batch) error { return nil })
		runtime.ReadMemStats(&after)
		var rowErr *dataset.RowError
		if !errors.As(err, &rowErr) || rowErr.Row != 2 || rowErr.Column != "attributes" || !strings.Contains(err.Error(), "refused before it was read") {
			t.Fatalf("decode ahead %d: %v; want row 2's attributes refused before it was read", depth, err)
		}
		if !strings.Contains(err.Error(), "16777217 bytes daybook accepts") || !errors.Is(err, dataset.ErrRowMismatch) {
			t.Errorf("decode ahead %d: %v does not say the limit, or is not a bad row", depth, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
			t.Errorf("decode ahead %d: the read allocated %d bytes for a 20 MB value", depth, alloc)
		}
	}
	pgExec(t, db, `UPDATE events SET attributes = jsonb_build_object('big', repeat('x', $1::int)) WHERE event_id = 'e2'`, dataset.MaxJSONBytes-len(`{"big": ""}`))
	var n int64
	if _, err := src.Batches(t.Context(), q, func(b *dataset.Batch) error { n += int64(b.Len()); return nil }); err != nil || n != 2 {
		t.Fatalf("the largest value accepted: %d rows, %v", n, err)
	}
}
