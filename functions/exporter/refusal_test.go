//go:build !noduckdb

package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/source"
)

// pgEvents gives e's exporter a PostgreSQL source holding the shipped
// source schema (a server of the test's own) and returns its database.
func (e *env) pgEvents(t *testing.T) *sql.DB {
	t.Helper()
	db := pgDB(t, "")
	ddl, err := dataset.SourceDDL(dataset.DialectPostgres)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(e.ctx, ddl); err != nil {
		t.Fatal(err)
	}
	src, err := source.NewSQL(db, dataset.DialectPostgres, "postgres:test")
	if err != nil {
		t.Fatal(err)
	}
	e.exp.Source = src
	return db
}

// pgInsertEvents adds events rows (genRows' order) of e's account.
func (e *env) pgInsertEvents(t *testing.T, db *sql.DB, rows [][]any) {
	t.Helper()
	for _, r := range rows {
		args := append([]any{e.acct.ID}, r...)
		if _, err := db.ExecContext(e.ctx, `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at, session_id, user_id, value, amount, is_test, attributes, inserted_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $4)`, args...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRefusalBeforeTheFirstRowKeepsTheDay: a day is exported from
// PostgreSQL, then re-exported after each of these, which the export finds
// before it reads a row: a migration retyped a column (value, double
// precision to text), the same on a day the re-export plans in slices, the
// source cannot be reached, and a migration's lock holds the read until the
// run's deadline. Each re-export fails with its cause in the
// ledger, and the committed generation stays: _SUCCESS, manifest, files and
// load scripts byte for byte, and the day's delivery manifest still lists
// the dataset delivered at generation 1. Before, Begin had removed the
// _SUCCESS before the source said no, and the day was missing. Once the
// column is back, the next re-export commits generation 2.
func TestRefusalBeforeTheFirstRowKeepsTheDay(t *testing.T) {
	e, _ := slicedEnv(t, 0) // a queue of its own for the plan's messages, if one were sent
	db := e.pgEvents(t)
	e.pgInsertEvents(t, db, genRows("events", testDay, 5))
	if r := e.export("events", testDay); r.State != ledger.StateCompleted || r.Generation != 1 {
		t.Fatalf("first export: %+v", r)
	}
	pp := e.partPrefix("events", testDay)
	objects := func() map[string]string {
		out := map[string]string{}
		for k := range e.list(pp) {
			out[k] = string(e.get(k))
		}
		return out
	}
	before := objects()
	if len(before) < 4 {
		t.Fatalf("the committed partition: %v", before)
	}
	pg := e.exp.Source
	deadline := time.Duration(0) // the invocation's time, when set
	reexport := func() ledger.Row {
		t.Helper()
		e.clk.Advance(time.Minute)
		ctx := e.ctx
		if deadline > 0 {
			c, cancel := context.WithTimeout(ctx, deadline)
			defer cancel()
			ctx = c
		}
		if err := e.svc.Process(ctx, "msg-refusal", manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
			t.Fatal(err)
		}
		return e.row("events", testDay)
	}
	var lock *sql.Conn
	for _, tc := range []struct {
		name  string
		setup func()
		undo  func()
		cause string // in the ledger's last error
	}{
		{"a column retyped", func() { pgExec(t, db, `ALTER TABLE events ALTER COLUMN value TYPE text`) },
			func() {
				pgExec(t, db, `ALTER TABLE events ALTER COLUMN value TYPE double precision USING value::double precision`)
			},
			"schema_mismatch: "},
		{"a column retyped, the day planned in slices", func() {
			pgExec(t, db, `ALTER TABLE events ALTER COLUMN value TYPE text`)
			e.exp.Config.SliceRows = 2
		}, func() {
			pgExec(t, db, `ALTER TABLE events ALTER COLUMN value TYPE double precision USING value::double precision`)
			e.exp.Config.SliceRows = 0
		}, "schema_mismatch: "},
		{"the source cannot be reached", func() {
			bad, err := sql.Open("pgx", "host=/nonexistent-daybook-socket-dir user=nobody dbname=none connect_timeout=2")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { bad.Close() })
			if e.exp.Source, err = source.NewSQL(bad, dataset.DialectPostgres, "postgres:gone"); err != nil {
				t.Fatal(err)
			}
		}, func() { e.exp.Source = pg }, "source_unavailable: "},
		{"the read runs out of the run's time", func() {
			// A migration holds the table: the read waits until the run's
			// deadline, where its statement_timeout (and the client) end it.
			var err error
			if lock, err = db.Conn(e.ctx); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"BEGIN", "LOCK TABLE events IN ACCESS EXCLUSIVE MODE"} {
				if _, err := lock.ExecContext(e.ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			e.svc.Reserve, deadline = time.Second, 3*time.Second
		}, func() {
			if _, err := lock.ExecContext(e.ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			lock.Close()
			e.svc.Reserve, deadline = 0, 0
		}, "timed_out: "},
	} {
		tc.setup()
		r := reexport()
		tc.undo()
		t.Logf("%s: %s", tc.name, r.LastError)
		if r.State != ledger.StateFailed || r.Generation != 1 || !strings.HasPrefix(r.LastError, tc.cause) {
			t.Errorf("%s: the re-export left row %s generation %d (%s); want failed, 1, %s", tc.name, r.State, r.Generation, r.LastError, tc.cause)
		}
		if tc.cause == "schema_mismatch: " && !strings.Contains(r.LastError, `"value"`) && !strings.Contains(r.LastError, "column value") {
			t.Errorf("%s: the error does not name the column: %s", tc.name, r.LastError)
		}
		after := objects()
		for k, b := range before {
			if after[k] != b {
				t.Errorf("%s: %s changed or was removed", tc.name, strings.TrimPrefix(k, pp))
			}
		}
		if len(after) != len(before) {
			t.Errorf("%s: %d objects under the partition, %d before", tc.name, len(after), len(before))
		}
		d := e.delivery(testDay)
		if len(d.DatasetsDelivered) != 1 || d.DatasetsDelivered[0].Generation != 1 || d.DatasetsDelivered[0].Manifest != pp+layout.ManifestName || !d.Complete {
			t.Errorf("%s: the delivery manifest says delivered %+v, missing %+v; want events delivered at generation 1", tc.name, d.DatasetsDelivered, d.DatasetsMissing)
		}
		e.clk.Set(r.NextAttemptAt.Add(time.Second))
	}
	if r := reexport(); r.State != ledger.StateCompleted || r.Generation != 2 {
		t.Fatalf("the re-export once the column is back: %+v", r)
	}
	if m := e.committed("events", testDay); m.Totals.Rows != 5 {
		t.Errorf("generation 2 holds %d rows", m.Totals.Rows)
	}
	if d := e.delivery(testDay); len(d.DatasetsDelivered) != 1 || d.DatasetsDelivered[0].Generation != 2 {
		t.Errorf("the delivery manifest after generation 2: %+v", d.DatasetsDelivered)
	}
}

func pgExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
