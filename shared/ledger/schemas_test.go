package ledger

import (
	"errors"
	"testing"
)

// TestRecordSchema: the first record of a dataset's schema at a contract
// writes, the same document again does not, a changed one does, another
// contract is an item of its own, and DeliveredSchemas reads them all back.
func TestRecordSchema(t *testing.T) {
	ctx := t.Context()
	l, _ := newTestLedger(t, newClock("2026-03-10T12:00:00Z"))
	v1 := DeliveredSchema{Dataset: "rs_events", Contract: "v1", Version: 1, Doc: []byte(`{"schema_version":1}`), SHA256: "aa"}
	v1b := DeliveredSchema{Dataset: "rs_events", Contract: "v1", Version: 2, Doc: []byte(`{"schema_version":2}`), SHA256: "bb"}
	v2 := DeliveredSchema{Dataset: "rs_events", Contract: "v2", Version: 1, Doc: []byte(`{"schema_version":1,"contract":"v2"}`), SHA256: "cc"}
	for i, c := range []struct {
		s    DeliveredSchema
		want bool
	}{{v1, true}, {v1, false}, {v1b, true}, {v1b, false}, {v2, true}} {
		wrote, err := l.Schemas().RecordSchema(ctx, c.s)
		if err != nil || wrote != c.want {
			t.Fatalf("record %d (%s %s %s): wrote %v, err %v; want %v", i, c.s.Dataset, c.s.Contract, c.s.SHA256, wrote, err, c.want)
		}
	}
	got, err := l.Schemas().DeliveredSchemaOf(ctx, "rs_events", "v1")
	if err != nil || got.SHA256 != "bb" || got.Version != 2 || string(got.Doc) != string(v1b.Doc) || got.UpdatedAt.IsZero() {
		t.Errorf("DeliveredSchemaOf v1 = %+v, %v", got, err)
	}
	if _, err := l.Schemas().DeliveredSchemaOf(ctx, "rs_events", "v3"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeliveredSchemaOf v3: %v, want ErrNotFound", err)
	}
	all, err := l.Schemas().DeliveredSchemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, s := range all {
		if s.Dataset == "rs_events" {
			mine = append(mine, s.Contract+":"+s.SHA256)
		}
	}
	if len(mine) != 2 || mine[0] != "v1:bb" || mine[1] != "v2:cc" {
		t.Errorf("DeliveredSchemas: %v", mine)
	}
	if _, err := l.Schemas().RecordSchema(ctx, DeliveredSchema{Dataset: "rs_events", Contract: "v1"}); !errors.Is(err, ErrSchemaInvalid) {
		t.Errorf("an empty schema: %v, want ErrSchemaInvalid", err)
	}
}
