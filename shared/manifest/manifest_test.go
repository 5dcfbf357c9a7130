package manifest

import (
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/source"
)

// TestProvenanceOf: a manifest keeps the kind of source, the window and the
// row count, and never the source's name (a DSN may carry a host, a user and
// a database), its query or its bound values.
func TestProvenanceOf(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	start := time.Date(2026, 3, 5, 0, 0, 0, 0, paris)
	for _, tc := range []struct {
		name string
		in   source.Provenance
		want Provenance
	}{
		{"postgres", source.Provenance{
			Source: "postgres://exporter@db-7.internal.example:5432/analytics_prod", Dialect: "postgres",
			Query: "SELECT event_id FROM events WHERE account_id = $1 AND occurred_at >= $2 AND occurred_at < $3", Params: []string{"acct_x", "a", "b"},
			WindowStart: start, WindowEnd: start.Add(24 * time.Hour), RowCount: 42, StartedAt: start.Add(25 * time.Hour), FinishedAt: start.Add(26 * time.Hour),
		}, Provenance{SourceKind: "postgres", WindowStart: start.UTC(), WindowEnd: start.Add(24 * time.Hour).UTC(), RowCount: 42,
			StartedAt: start.Add(25 * time.Hour).UTC(), FinishedAt: start.Add(26 * time.Hour).UTC()}},
		{"empty day", source.Provenance{Source: "sqlite:demo.db", Dialect: "sqlite", WindowStart: start, WindowEnd: start.Add(23 * time.Hour)},
			Provenance{SourceKind: "sqlite", WindowStart: start.UTC(), WindowEnd: start.Add(23 * time.Hour).UTC()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ProvenanceOf(tc.in)
			if got != tc.want || got.WindowStart.Location() != time.UTC {
				t.Fatalf("ProvenanceOf = %+v, want %+v", got, tc.want)
			}
			m := &Manifest{FormatVersion: FormatVersion, Provenance: got}
			b, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}
			for _, leak := range []string{tc.in.Source, "SELECT", "db-7", "exporter@", "demo.db", `"params"`, `"query"`} {
				if strings.Contains(string(b), leak) {
					t.Errorf("manifest carries %q:\n%s", leak, b)
				}
			}
		})
	}
}
