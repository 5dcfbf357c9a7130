package manifest

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/source"
)

// TestManifestProvenance: a manifest's provenance is the source's, field
// for field: the kind of source, the relation, the UTC window, the snapshot
// and finish times and the row count, and who asked for a manual generation.
// Nothing else has a place in it, so the source's name (a DSN may carry a
// host, a user and a database), its query and its bound values cannot reach
// the bucket.
func TestManifestProvenance(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 4, 23, 0, 0, 0, time.UTC)
	prov := source.Provenance{Source: "postgres", Relation: "analytics.events",
		WindowStart: start, WindowEnd: start.Add(24 * time.Hour), SnapshotAt: start.Add(25 * time.Hour),
		FinishedAt: start.Add(26 * time.Hour), RowCount: 42}
	m := &Manifest{FormatVersion: FormatVersion, Provenance: Provenance{Provenance: prov}}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Provenance map[string]any `json:"provenance"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(slices.Sorted(maps.Keys(doc.Provenance)), ","); got != "finished_at,relation,row_count,snapshot_at,source,window_end,window_start" {
		t.Errorf("provenance fields %s", got)
	}
	if doc.Provenance["window_start"] != "2026-03-04T23:00:00Z" || doc.Provenance["source"] != "postgres" || doc.Provenance["relation"] != "analytics.events" {
		t.Errorf("provenance %v", doc.Provenance)
	}
	back, err := Decode(b)
	if err != nil || back.Provenance != m.Provenance {
		t.Fatalf("decoded %+v, %v; want %+v", back.Provenance, err, prov)
	}

	m.Provenance.RequestedBy = "arn:aws:iam::123456789012:user/ops"
	if b, err = m.Encode(); err != nil {
		t.Fatal(err)
	}
	doc.Provenance = nil
	if err := json.Unmarshal(b, &doc); err != nil || doc.Provenance["requested_by"] != m.Provenance.RequestedBy || doc.Provenance["source"] != "postgres" {
		t.Errorf("a requested generation's provenance %v (%v)", doc.Provenance, err)
	}
}
