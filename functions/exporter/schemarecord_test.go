package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/daybook-dev/daybook/shared/ledger"
)

// dropUserIDLine is events' user_id column in the example catalog.
const dropUserIDLine = "      - {name: user_id, type: \"string\", nullable: true, description: \"Identified user, if any.\"}\n"

// countingSchemas counts the ledger requests recordSchema makes.
type countingSchemas struct {
	SchemaLedger
	mu            sync.Mutex
	reads, writes int
}

func (c *countingSchemas) DeliveredSchemaOf(ctx context.Context, ds, contract string) (ledger.DeliveredSchema, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.SchemaLedger.DeliveredSchemaOf(ctx, ds, contract)
}

func (c *countingSchemas) RecordSchema(ctx context.Context, s ledger.DeliveredSchema) (bool, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.SchemaLedger.RecordSchema(ctx, s)
}

// TestDeliveredSchemaRecordedOnce: three commits of events record its
// changed schema in the ledger with one read and one write; a function started
// afresh reads it once and writes nothing; an appended column writes it
// once more; moving to contract v2 records a second item, and the v1 one
// stays as it was.
func TestDeliveredSchemaRecordedOnce(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events"}})
	keepSchemaRecords(t) // the stale records below are this test's
	for d := range 6 {
		e.insert("events", genRows("events", testDay.AddDays(-d), 2)...)
	}
	// The table is the package's: start from a known, stale record of
	// each contract, whatever an earlier test delivered.
	for _, c := range []string{"v1", "v2"} {
		if _, err := e.led.Schemas().RecordSchema(e.ctx, ledger.DeliveredSchema{Dataset: "events", Contract: c, Version: 1, Doc: []byte("{}"), SHA256: "stale"}); err != nil {
			t.Fatal(err)
		}
	}
	cs := &countingSchemas{SchemaLedger: schemaLedgerOf(e.fnLedger())}
	e.exp.Schemas = cs
	want := func(step string, reads, writes int) {
		t.Helper()
		if cs.reads != reads || cs.writes != writes {
			t.Errorf("%s: %d reads, %d writes of the delivered schema; want %d, %d", step, cs.reads, cs.writes, reads, writes)
		}
	}
	for d := range 3 {
		if row := e.export("events", testDay.AddDays(-d)); row.State != ledger.StateCompleted {
			t.Fatalf("export: %+v", row)
		}
	}
	want("three commits", 1, 1)
	e.exp.schemas = &schemasSeen{} // a cold start
	if row := e.export("events", testDay.AddDays(-3)); row.State != ledger.StateCompleted {
		t.Fatalf("export: %+v", row)
	}
	want("a cold start", 2, 1)

	e.useCatalog(func(s string) string {
		s = strings.Replace(s, "  - name: events\n    version: 1\n", "  - name: events\n    version: 2\n", 1)
		return strings.Replace(s, "Per-tenant custom fields as a JSON object.\"}\n", "Per-tenant custom fields as a JSON object.\"}\n      - {name: note, type: \"string\", nullable: true, since: 2}\n", 1)
	})
	if _, err := e.db.ExecContext(e.ctx, `ALTER TABLE events ADD COLUMN note TEXT`); err != nil {
		t.Fatal(err)
	}
	if row := e.export("events", testDay.AddDays(-4)); row.State != ledger.StateCompleted {
		t.Fatalf("export: %+v", row)
	}
	want("an appended column", 3, 2)
	v1, err := e.led.Schemas().DeliveredSchemaOf(e.ctx, "events", "v1")
	if err != nil || v1.Version != 2 || !strings.Contains(string(v1.Doc), `"note"`) {
		t.Fatalf("v1 record: version %d, %v", v1.Version, err)
	}

	e.useCatalog(func(s string) string {
		s = strings.Replace(s, dropUserIDLine, "", 1)
		return strings.Replace(s, "  - name: events\n    version: 1\n", "  - name: events\n    version: 1\n    contract: v2\n", 1)
	})
	if row := e.export("events.v2", testDay.AddDays(-5)); row.State != ledger.StateCompleted {
		t.Fatalf("v2 export: %+v", row)
	}
	want("contract v2", 4, 3)
	all, err := e.led.Schemas().DeliveredSchemas(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ledger.DeliveredSchema{}
	for _, s := range all {
		got[s.Dataset+"#"+s.Contract] = s
	}
	if v2, ok := got["events#v2"]; !ok || strings.Contains(string(v2.Doc), "user_id") || !strings.Contains(string(v2.Doc), `"contract": "v2"`) {
		t.Errorf("v2 record: %+v", got["events#v2"])
	}
	if got["events#v1"].SHA256 != v1.SHA256 {
		t.Errorf("the v1 record changed after the move to v2")
	}
}
