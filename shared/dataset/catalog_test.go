package dataset

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset/example"
)

const yamlDataset = `
datasets:
  - name: orders
    version: 1
    partition: event_time
    partition_column: created_at
    relation: shop.orders
    mode: incremental_append
    read: union_all_partitions
    tenant_column: tenant_id
    changed_column: updated_at
    order_by: [created_at, order_id]
    columns:
      - {name: order_id, type: string}
      - {name: created_at, type: timestamp}
      - {name: order, type: int64}
      - {name: attributes, type: json, nullable: true}
`

// TestGeneratedQueries: a dataset naming its tenant column gets its export
// and fingerprint queries written for both dialects, bound (account, start,
// end), with a reserved word quoted.
func TestGeneratedQueries(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(yamlDataset))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := s.Get("orders")
	want := map[string][2]string{
		DialectSQLite: {`SELECT order_id, created_at, "order", attributes FROM shop.orders WHERE tenant_id = ? AND created_at >= ? AND created_at < ? ORDER BY created_at, order_id`,
			`SELECT count(*), max(updated_at) FROM shop.orders WHERE tenant_id = ? AND created_at >= ? AND created_at < ?`},
		DialectPostgres: {`SELECT order_id, created_at, "order", attributes FROM shop.orders WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3 ORDER BY created_at, order_id`,
			`SELECT count(*), max(updated_at) FROM shop.orders WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3`},
	}
	for dialect, w := range want {
		if got := d.Queries[dialect]; got != w[0] {
			t.Errorf("%s query\n got %s\nwant %s", dialect, got, w[0])
		}
		if got := d.Fingerprint[dialect]; got != w[1] {
			t.Errorf("%s fingerprint\n got %s\nwant %s", dialect, got, w[1])
		}
	}
}

// TestExampleEventsGenerated: the example's events dataset has its queries
// generated, and they are the queries it declared before generation existed.
func TestExampleEventsGenerated(t *testing.T) {
	t.Parallel()
	ev, err := shipped(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	const cols = "event_id, event_type, occurred_at, received_at, session_id, user_id, value, amount, is_test, attributes"
	if got, want := ev.Queries[DialectPostgres], "SELECT "+cols+" FROM events WHERE account_id = $1 AND occurred_at >= $2 AND occurred_at < $3 ORDER BY occurred_at, event_id"; got != want {
		t.Errorf("events postgres query\n got %s\nwant %s", got, want)
	}
	if got, want := ev.Fingerprint[DialectSQLite], "SELECT count(*), max(inserted_at) FROM events WHERE account_id = ? AND occurred_at >= ? AND occurred_at < ?"; got != want {
		t.Errorf("events sqlite fingerprint\n got %s\nwant %s", got, want)
	}
}

// TestCatalogLoadRefuses: what a catalog file gets wrong is refused at load,
// naming the dataset's position, the dataset and the query.
func TestCatalogLoadRefuses(t *testing.T) {
	t.Parallel()
	explicit := strings.Replace(strings.Replace(strings.Replace(yamlDataset,
		"    tenant_column: tenant_id\n", "", 1),
		"    changed_column: updated_at\n", "", 1),
		"    order_by: [created_at, order_id]\n", `    queries:
      sqlite: SELECT order_id, created_at, "order", attributes FROM shop.orders WHERE tenant_id = ? AND created_at >= ? AND created_at < ?
      postgres: SELECT o.order_id, created_at, o."order" AS "order", attributes::text AS attributes FROM shop.orders o WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3
`, 1)
	second := yamlDataset + "  - {name: second, version: 1}\n"
	tests := []struct{ name, doc, want string }{
		{"explicit queries", explicit, ""},
		{"select star", strings.Replace(explicit, `SELECT order_id, created_at, "order", attributes FROM`, `SELECT * FROM`, 1), `datasets[0]: dataset orders: queries.sqlite: SELECT *: list the columns instead`},
		{"qualified star", strings.Replace(explicit, `SELECT o.order_id, created_at, o."order" AS "order", attributes::text AS attributes`, `SELECT o.*`, 1), `queries.postgres: SELECT o.*`},
		{"undeclared column", strings.Replace(explicit, `SELECT order_id,`, `SELECT order_no,`, 1), `queries.sqlite: select item 1 names column "order_no", which the dataset does not declare`},
		{"expression without a name", strings.Replace(explicit, `attributes::text AS attributes FROM`, `attributes::text FROM`, 1), `queries.postgres: select item 4 (attributes::text) names no column`},
		{"declared column missing", strings.Replace(explicit, `, attributes FROM shop.orders WHERE tenant_id = ?`, ` FROM shop.orders WHERE tenant_id = ?`, 1), `queries.sqlite: selects 3 columns; the dataset declares 4 (first missing: "attributes")`},
		{"out of order", strings.Replace(explicit, `SELECT order_id, created_at,`, `SELECT created_at, order_id,`, 1), `queries.sqlite: select item 1 is "created_at"; the dataset declares "order_id" there`},
		{"extra column", strings.Replace(explicit, `, attributes FROM shop.orders WHERE tenant_id = ?`, `, attributes, order_id AS order_id FROM shop.orders WHERE tenant_id = ?`, 1), `queries.sqlite: selects 5 columns`},
		{"not bound by the account", strings.Replace(explicit, `tenant_id = $1 AND`, ``, 1), `queries.postgres: missing placeholder $1`},
		{"a comma inside a call is not a new item", strings.Replace(explicit, `attributes::text AS attributes`, `coalesce(attributes, '{}') AS attributes`, 1), ""},
		{"a FROM inside a call is not the end", strings.Replace(explicit, `attributes::text AS attributes`, `substring(attributes::text from 1) AS attributes`, 1), ""},
		{"queries and tenant_column", strings.Replace(explicit, "    queries:\n", "    tenant_column: tenant_id\n    queries:\n", 1), "give queries or tenant_column"},
		{"order_by without tenant_column", strings.Replace(yamlDataset, "    tenant_column: tenant_id\n", "", 1), "order_by is only used by generated queries"},
		{"order_by an undeclared column", strings.Replace(yamlDataset, "[created_at, order_id]", "[created_at, ordered]", 1), `order_by[1] "ordered" is not a column`},
		{"changed_column not an identifier", strings.Replace(yamlDataset, "changed_column: updated_at", "changed_column: now()", 1), `changed_column "now()" must match`},
		{"the second dataset is named by position", second, `datasets[1]: dataset second: unknown partition`},
		{"unknown field", strings.Replace(yamlDataset, "    version: 1\n", "    version: 1\n    colour: red\n", 1), `datasets[0]: dataset orders: unknown field "colour"`},
		{"unknown field of the second dataset", strings.Replace(second, "{name: second, version: 1}", "{name: second, version: 1, relaton: x}", 1), `datasets[1]: dataset second: unknown field "relaton"`},
		{"unknown top-level field", "dataset:\n  - name: x\n", `unknown field "dataset"`},
		{"duplicate key", strings.Replace(yamlDataset, "    version: 1\n", "    version: 1\n    version: 2\n", 1), `"version" already set`},
		{"unknown dialect", strings.Replace(explicit, "      sqlite:", "      oracle: SELECT 1\n      sqlite:", 1), `queries: unknown dialect "oracle"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want error containing %q, got %v", tt.want, err)
			}
		})
	}
}

// TestLoad: Load reads YAML and JSON files, FromEnv resolves
// DAYBOOK_CATALOG against the task root, and a loaded catalog answers for
// its own datasets only.
func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(path, []byte(yamlDataset), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	s, err := FromEnv(env(map[string]string{EnvCatalog: "catalog.yaml", "LAMBDA_TASK_ROOT": dir}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Names(), ","); got != "orders" {
		t.Fatalf("names %s", got)
	}
	if _, err := FromEnv(env(map[string]string{EnvCatalog: "nope.yaml", "LAMBDA_TASK_ROOT": dir})); err == nil || !strings.Contains(err.Error(), "DAYBOOK_CATALOG=") || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"datasets":[{"name":"Bad"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `dataset "Bad"`) {
		t.Fatalf("bad file: %v", err)
	}
	ex, err := FromEnv(env(nil))
	if err != nil || len(ex.Names()) != 3 {
		t.Fatalf("example: %v, %v", ex, err)
	}
	if s, err := FromEnv(env(map[string]string{"LAMBDA_TASK_ROOT": t.TempDir()})); err != nil || len(s.Names()) != 3 {
		t.Fatalf("a task root without a bundled catalog: %v, %v", s, err)
	}
	if err := os.Rename(path, filepath.Join(dir, BundledName)); err != nil {
		t.Fatal(err)
	}
	if s, err := FromEnv(env(map[string]string{"LAMBDA_TASK_ROOT": dir})); err != nil || strings.Join(s.Names(), ",") != "orders" {
		t.Fatalf("the bundled catalog: %v, %v", s, err)
	}

	if _, err := s.Get("orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("events"); !errors.Is(err, ErrUnknownDataset) {
		t.Fatalf("events in a catalog without it: %v", err)
	}
}

// TestCheckAgainst: a catalog is refused against a delivered schema it
// breaks, naming the column, and accepted when it only appends.
func TestCheckAgainst(t *testing.T) {
	t.Parallel()
	ex, _ := Example()
	delivered := ex.Datasets()
	dropped := strings.Replace(string(example.YAML()), "      - {name: user_id, type: \"string\", nullable: true, description: \"Identified user, if any.\"}\n", "", 1)
	s, err := Parse([]byte(dropped))
	if err != nil {
		t.Fatal(err)
	}
	err = s.CheckAgainst(delivered)
	if !errors.Is(err, ErrCatalogIncompatible) || !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), `dataset events: column "user_id" removed`) {
		t.Fatalf("dropped column: %v", err)
	}
	if err := ex.CheckAgainst(delivered); err != nil {
		t.Fatal(err)
	}
	only, _ := Parse([]byte(yamlDataset))
	if err := only.CheckAgainst(delivered); err == nil || !strings.Contains(err.Error(), "dataset profiles: removed from the catalog") {
		t.Fatalf("removed datasets: %v", err)
	}
}

// TestGeneratedQueriesFollowTheSourceZone: a wall-clock partition column
// (source_time_zone) is compared with the day window converted to its
// zone in the generated PostgreSQL export and fingerprint queries, so
// changing the zone in the catalog changes the queries with it; SQLite,
// which reads no wall-clock column, is left as it is.
func TestGeneratedQueriesFollowTheSourceZone(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(yamlDataset, "{name: created_at, type: timestamp}", "{name: created_at, type: timestamp, source_time_zone: Europe/Berlin}", 1)
	for _, zone := range []string{"Europe/Berlin", "America/Sao_Paulo"} {
		s, err := Parse([]byte(strings.Replace(doc, "Europe/Berlin", zone, 1)))
		if err != nil {
			t.Fatal(err)
		}
		d, _ := s.Get("orders")
		where := `WHERE tenant_id = $1 AND created_at >= ($2::timestamptz AT TIME ZONE '` + zone + `') AND created_at < ($3::timestamptz AT TIME ZONE '` + zone + `')`
		if got, want := d.Queries[DialectPostgres], `SELECT order_id, created_at, "order", attributes FROM shop.orders `+where+` ORDER BY created_at, order_id`; got != want {
			t.Errorf("%s: postgres query\n got %s\nwant %s", zone, got, want)
		}
		if got, want := d.Fingerprint[DialectPostgres], `SELECT count(*), max(updated_at) FROM shop.orders `+where; got != want {
			t.Errorf("%s: postgres fingerprint\n got %s\nwant %s", zone, got, want)
		}
		if got := d.Queries[DialectSQLite]; strings.Contains(got, "ZONE") {
			t.Errorf("%s: sqlite query %s", zone, got)
		}
	}
}

// TestHandWrittenWindowZone: a hand-written query converting the window to
// a zone other than the partition column's source_time_zone is refused
// when the catalog loads (so by catalog show, check and diff, and by the
// functions at start), naming the dataset, the query and both zones; the
// same zone, or UTC spelt another way, is accepted.
func TestHandWrittenWindowZone(t *testing.T) {
	t.Parallel()
	doc := func(colZone, queryZone string) string {
		return `
datasets:
  - name: visits
    version: 1
    partition: event_time
    partition_column: seen_at
    relation: app.visits
    mode: incremental_append
    read: union_all_partitions
    columns:
      - {name: seen_at, type: timestamp, source_time_zone: ` + colZone + `}
    queries:
      sqlite: SELECT seen_at FROM app.visits WHERE org = ? AND seen_at >= ? AND seen_at < ?
      postgres: SELECT seen_at FROM app.visits WHERE org = $1 AND seen_at >= ($2::timestamptz AT TIME ZONE '` + queryZone + `') AND seen_at < ($3 AT TIME ZONE '` + queryZone + `')
    fingerprint:
      sqlite: SELECT count(*) FROM app.visits WHERE org = ? AND seen_at >= ? AND seen_at < ?
      postgres: SELECT count(*) FROM app.visits WHERE org = $1 AND seen_at >= $2::timestamp with time zone AT TIME ZONE '` + queryZone + `' AND seen_at < $3::timestamptz AT TIME ZONE '` + queryZone + `'
`
	}
	for _, tc := range []struct{ col, query, want string }{
		{"Europe/Berlin", "Europe/Berlin", ""},
		{"UTC", "Etc/UTC", ""},
		{"Europe/Berlin", "UTC", `datasets[0]: dataset visits: queries.postgres: converts the day window with AT TIME ZONE 'UTC', but partition_column seen_at declares source_time_zone "Europe/Berlin"`},
		{"America/Sao_Paulo", "Europe/Berlin", `converts the day window with AT TIME ZONE 'Europe/Berlin', but partition_column seen_at declares source_time_zone "America/Sao_Paulo"`},
	} {
		_, err := Parse([]byte(doc(tc.col, tc.query)))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("column in %s, query in %s: %v, want %q", tc.col, tc.query, err, tc.want)
		}
	}
	// The fingerprint is held to the same zone.
	d := doc("Europe/Berlin", "Europe/Berlin")
	i := strings.Index(d, "    fingerprint:")
	_, err := Parse([]byte(d[:i] + strings.ReplaceAll(d[i:], "'Europe/Berlin'", "'UTC'")))
	if err == nil || !strings.Contains(err.Error(), "fingerprint.postgres: converts the day window with AT TIME ZONE 'UTC'") {
		t.Errorf("fingerprint in UTC: %v", err)
	}
}

// TestYAMLRoundTrip: the catalog's YAML form (catalog init's output) reads
// back to the same datasets: the shipped example's (queries written out),
// a generated entry, a snapshot, and awkward descriptions and names.
func TestYAMLRoundTrip(t *testing.T) {
	t.Parallel()
	ex, err := Example()
	if err != nil {
		t.Fatal(err)
	}
	gen, err := Parse([]byte(yamlDataset))
	if err != nil {
		t.Fatal(err)
	}
	entry := gen.Datasets()[0]
	entry.Queries, entry.Fingerprint = nil, nil // as catalog init writes it
	entry.Description = `Orders: "placed", # not a comment, {braces}, [brackets], yes, 100%, é, tab	here` + "\nand a second line"
	entry.Columns[0].Description = "no"
	entry.Columns[1].SourceTimeZone = "Etc/GMT+3"
	entry.TenantType = TenantInt64
	snap, err := Parse([]byte(yamlSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	s := snap.Datasets()[0]
	s.Queries = nil
	var ds []Dataset
	for _, d := range ex.Datasets() {
		if d.TenantColumn != "" {
			d.Queries, d.Fingerprint = nil, nil // regenerated on load
		}
		ds = append(ds, d)
	}
	ds = append(ds, entry, s)
	doc := CatalogYAML(ds)
	back, err := Parse(doc)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	want, err := json.Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	var again []Dataset
	for _, d := range back.Datasets() {
		if d.TenantColumn != "" {
			d.Queries, d.Fingerprint = nil, nil
		}
		again = append(again, d)
	}
	got, err := json.Marshal(again)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("round trip\n got %s\nwant %s\nyaml:\n%s", got, want, doc)
	}
	// Items indented as the file's own list is.
	flat := AppendYAML([]byte("datasets:\n"), []Dataset{entry}, 0)
	if !strings.HasPrefix(string(flat), "datasets:\n- name: orders\n  version: 1\n") {
		t.Errorf("indent 0:\n%s", flat)
	}
	if _, err := Parse(flat); err != nil {
		t.Errorf("indent 0: %v", err)
	}
}

// shipped is the shipped example catalog.
func shipped(t testing.TB) *Set {
	t.Helper()
	s, err := Example()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
