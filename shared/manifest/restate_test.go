package manifest

import (
	"strings"
	"testing"
	"time"
)

// TestRestatementInManifests: a restated generation says what it replaced
// in `_manifest.json` and in the delivery manifest; any other generation
// says nothing about restatements, so existing documents do not change.
func TestRestatementInManifests(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	r := &Restatement{PreviousGeneration: 1, PreviousRows: 10, Rows: 13}
	m := Manifest{FormatVersion: FormatVersion, Generation: 2, Reason: ReasonRestatement, Restatement: r}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil || back.Restatement == nil || *back.Restatement != *r {
		t.Fatalf("manifest round trip: %+v %v\n%s", back.Restatement, err, b)
	}
	if !strings.Contains(string(b), `"previous_generation": 1`) || !strings.Contains(string(b), `"previous_rows": 10`) {
		t.Fatalf("manifest %s", b)
	}
	m.Restatement = nil
	if b, _ := m.Encode(); strings.Contains(string(b), "restatement\":") {
		t.Fatalf("a generation that restates nothing mentions it: %s", b)
	}

	st := PartitionStatus{Name: "events", Dataset: mustDS(t, "events"), Exists: true, State: "completed", Generation: 2, Rows: 13,
		Reason: ReasonRestatement, Restatement: r, SeedEpoch: 0}
	d := NewDelivery("a", "2026-03-09", []PartitionStatus{st}, now)
	if got := d.DatasetsDelivered[0].Restatement; got == nil || *got != *r {
		t.Fatalf("delivered restatement %+v", got)
	}
	b, _ = d.Encode()
	if !strings.Contains(string(b), `"restatement": {`) || strings.Contains(string(b), "seed_epoch") {
		t.Fatalf("delivery manifest %s", b)
	}
	st.Restatement, st.SeedEpoch = nil, 2
	b, _ = NewDelivery("a", "2026-03-09", []PartitionStatus{st}, now).Encode()
	if strings.Contains(string(b), "restatement\":") || !strings.Contains(string(b), `"seed_epoch": 2`) {
		t.Fatalf("delivery manifest %s", b)
	}
}
