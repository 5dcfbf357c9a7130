package dataset

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeCatalogExample: docs/catalog.md's "Bring your own tables" catalog
// (catalog init's entry for the Citus tutorial's clicks) loads, validates
// against the JSON Schema, and gets the generated queries the page
// describes, the window converted to the column's zone.
func TestReadmeCatalogExample(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/catalog.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Bring your own tables")
	_, block, ok2 := strings.Cut(sec, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/catalog.md: no yaml block under Bring your own tables")
	}
	// The block is indented under a list item.
	var doc strings.Builder
	for _, l := range strings.Split(block, "\n") {
		doc.WriteString(strings.TrimPrefix(l, "   ") + "\n")
	}
	s, err := Parse([]byte(doc.String()))
	if err != nil {
		t.Fatalf("docs/catalog.md catalog: %v\n%s", err, doc.String())
	}
	if err := compileSchema(t).Validate(yamlValue(t, doc.String())); err != nil {
		t.Fatalf("docs/catalog.md catalog against the JSON Schema: %v", err)
	}
	d, _ := s.Get("clicks")
	where := "WHERE company_id = $1 AND clicked_at >= ($2::timestamptz AT TIME ZONE 'UTC') AND clicked_at < ($3::timestamptz AT TIME ZONE 'UTC')"
	if got, want := d.Queries[DialectPostgres], "SELECT id, ad_id, clicked_at, site_url, cost_per_click_usd, user_ip, user_data FROM clicks "+where+" ORDER BY clicked_at, id"; got != want {
		t.Errorf("query\n got %s\nwant %s", got, want)
	}
	if got, want := d.Fingerprint[DialectPostgres], "SELECT count(*) FROM clicks "+where; got != want {
		t.Errorf("fingerprint\n got %s\nwant %s", got, want)
	}
	if d.TenantKind() != TenantInt64 || d.LateData() != LateRows {
		t.Errorf("tenant %s, late data %q", d.TenantKind(), d.LateData())
	}
}
