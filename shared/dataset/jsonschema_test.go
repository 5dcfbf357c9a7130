package dataset

import (
	"os"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset/example"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

const schemaPath = "../../docs/catalog.schema.json"

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	s, err := c.Compile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func yamlValue(t *testing.T, doc string) any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(j)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCatalogJSONSchema: the shipped example and the test catalogs validate
// against docs/catalog.schema.json (the schema editors complete with), and
// the schema refuses what the loader refuses for its shape: a typo'd
// field, an unknown partition, a bad type, queries and tenant_column both.
func TestCatalogJSONSchema(t *testing.T) {
	t.Parallel()
	s := compileSchema(t)
	for name, doc := range map[string]string{"example": string(example.YAML()), "generated": yamlDataset, "snapshot": yamlSnapshot,
		"named source": strings.Replace(yamlSnapshot, "    relation: app.members\n", "    relation: app.members\n    source: billing\n", 1)} {
		if err := s.Validate(yamlValue(t, doc)); err != nil {
			t.Errorf("%s catalog does not validate: %v", name, err)
		}
	}
	for _, tt := range []struct{ doc, name, from, to string }{
		{yamlSnapshot, "snapshot with a partition column", "    relation: app.members\n", "    relation: app.members\n    partition_column: joined_at\n"},
		{yamlSnapshot, "bad source name", "    relation: app.members\n", "    relation: app.members\n    source: Billing\n"},
		{yamlSnapshot, "snapshot read as a union", "read: latest_snapshot", "read: union_all_partitions"},
		{yamlDataset, "event_time as a full refresh", "mode: incremental_append", "mode: full_refresh"},
		{yamlDataset, "no partition column", "    partition_column: created_at\n", ""},
		{"", "typo'd field", "    relation: shop.orders\n", "    relaton: shop.orders\n"},
		{"", "typo'd column field", "{name: order_id, type: string}", "{name: order_id, tpye: string}"},
		{"", "unknown partition", "partition: event_time", "partition: hourly"},
		{"", "bad type", "{name: order_id, type: string}", "{name: order_id, type: varchar}"},
		{"", "no tenant_column and no queries", "    tenant_column: tenant_id\n", ""},
		{"", "reserved column dt", "{name: order_id, type: string}", "{name: dt, type: string}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.doc
			if base == "" {
				base = yamlDataset
			}
			doc := strings.Replace(base, tt.from, tt.to, 1)
			if doc == base {
				t.Fatalf("%q not in the test catalog", tt.from)
			}
			if err := s.Validate(yamlValue(t, doc)); err == nil {
				t.Fatal("the schema accepted it")
			}
			if _, err := Parse([]byte(doc)); err == nil {
				t.Fatal("the loader accepted it")
			}
		})
	}
	if _, err := os.Stat(schemaPath); err != nil {
		t.Fatal(err)
	}
}
