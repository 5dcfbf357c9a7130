package dataset

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeCatalogExample: the README's "Bring your own tables" catalog
// loads, validates against the JSON Schema, and gets the generated queries
// the README describes.
func TestReadmeCatalogExample(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Bring your own tables")
	_, block, ok2 := strings.Cut(sec, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README: no yaml block under Bring your own tables")
	}
	// The block is indented under a list item.
	var doc strings.Builder
	for _, l := range strings.Split(block, "\n") {
		doc.WriteString(strings.TrimPrefix(l, "   ") + "\n")
	}
	s, err := Parse([]byte(doc.String()))
	if err != nil {
		t.Fatalf("README catalog: %v\n%s", err, doc.String())
	}
	if err := compileSchema(t).Validate(yamlValue(t, doc.String())); err != nil {
		t.Fatalf("README catalog against the JSON Schema: %v", err)
	}
	d, _ := s.Get("orders")
	if got, want := d.Queries[DialectPostgres], "SELECT order_id, created_at, total, attributes FROM shop.orders WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3 ORDER BY created_at, order_id"; got != want {
		t.Errorf("query\n got %s\nwant %s", got, want)
	}
	if got, want := d.Fingerprint[DialectPostgres], "SELECT count(*), max(updated_at) FROM shop.orders WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3"; got != want {
		t.Errorf("fingerprint\n got %s\nwant %s", got, want)
	}
}
