package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset/example"
	"github.com/daybook-dev/daybook/shared/ledger"

	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// writeCatalog writes the example catalog with edit applied.
func writeCatalog(t *testing.T, dir, name string, edit func(string) string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	doc := edit(string(example.YAML()))
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const userIDLine = "      - {name: user_id, type: \"string\", nullable: true, description: \"Identified user, if any.\"}\n"

func same(s string) string { return s }

func dropUserID(s string) string { return strings.Replace(s, userIDLine, "", 1) }

func appendNote(s string) string {
	s = strings.Replace(s, "  - name: events\n    version: 1\n", "  - name: events\n    version: 2\n", 1)
	return strings.Replace(s, `      - {name: attributes, type: "json", nullable: true, description: "Per-tenant custom fields as a JSON object."}`+"\n",
		`      - {name: attributes, type: "json", nullable: true, description: "Per-tenant custom fields as a JSON object."}`+"\n"+
			`      - {name: note, type: "string", nullable: true, since: 2}`+"\n", 1)
}

// TestCatalogShow runs the README's and the help's `catalog show` lines.
func TestCatalogShow(t *testing.T) {
	t.Parallel()
	a, _, _ := testApp(t)
	dir := t.TempDir()
	path := writeCatalog(t, dir, "catalog.yaml", same)
	r := execute(t, a, "catalog", "show", "--catalog", path, "--dataset", "events")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, w := range []string{"events (version 1)", "export postgres (generated):", "WHERE account_id = $1 AND occurred_at >= $2 AND occurred_at < $3 ORDER BY occurred_at, event_id", "SELECT count(*), max(inserted_at) FROM events",
		"  tenant_type string: each account's tenant_key (else its id) is bound to tenant_column account_id\n"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "profiles") {
		t.Errorf("--dataset events printed profiles")
	}
	r = execute(t, a, "catalog", "show", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"daily_stats"`) || !strings.Contains(r.stdout, `"postgres": "SELECT event_id`) {
		t.Fatalf("json: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	bad := writeCatalog(t, dir, "bad.yaml", func(s string) string {
		return strings.ReplaceAll(s, "ORDER BY metric, dimension", "ORDER BY metric, dimension, $4")
	})
	r = execute(t, a, "catalog", "show", "--catalog", bad)
	if r.code != 2 || !strings.Contains(r.stderr, "dataset daily_stats: queries.postgres: unexpected placeholder $4") {
		t.Fatalf("bad catalog: exit %d %s", r.code, r.stderr)
	}
	// DAYBOOK_CATALOG names the CLI's catalog.
	own := filepath.Join(dir, "own.yaml")
	if err := os.WriteFile(own, []byte(strings.Replace(string(example.YAML()), "name: daily_stats", "name: daily_totals", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	a.getenv = func(k string) string {
		if k == dataset.EnvCatalog {
			return own
		}
		return ""
	}
	if r := execute(t, a, "catalog", "show"); r.code != 0 || !strings.Contains(r.stdout, "daily_totals (version 1)") {
		t.Fatalf("DAYBOOK_CATALOG: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	a.getenv = func(string) string { return "" }
	// What a catalog init entry declares is shown: the tenant's type and
	// the zone of a wall-clock column.
	int64s := filepath.Join(dir, "int64.yaml")
	if err := os.WriteFile(int64s, []byte(strings.Replace(mustRead(t, zoned(t, dir, "z.yaml", "Europe/Berlin", "")), "    tenant_column: org\n", "    tenant_column: org\n    tenant_type: int64\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r = execute(t, a, "catalog", "show", "--catalog", int64s)
	for _, w := range []string{"  tenant_type int64: each account's tenant_key (else its id) is bound to tenant_column org\n",
		"  seen_at                  timestamp        required, since 1, source_time_zone Europe/Berlin\n",
		"seen_at >= ($2::timestamptz AT TIME ZONE 'Europe/Berlin')"} {
		if r.code != 0 || !strings.Contains(r.stdout, w) {
			t.Errorf("catalog show: exit %d, output lacks %q:\n%s%s", r.code, w, r.stdout, r.stderr)
		}
	}
	r = execute(t, a, "catalog", "show", "--dataset", "nope")
	if r.code != 2 || !strings.Contains(r.stderr, `--dataset "nope": not in the catalog; valid: events, profiles, daily_stats`) {
		t.Fatalf("unknown dataset: exit %d %s", r.code, r.stderr)
	}
}

// TestCatalogDiff: a catalog that drops a delivered column is refused
// against the old file and against the delivered _schemas/, naming the
// column; appending a nullable column with a version bump is accepted.
func TestCatalogDiff(t *testing.T) {
	t.Parallel()
	a, _, _ := testApp(t)
	dir := t.TempDir()
	old := writeCatalog(t, dir, "old.yaml", same)
	dropped := writeCatalog(t, dir, "dropped.yaml", dropUserID)
	appended := writeCatalog(t, dir, "appended.yaml", appendNote)
	v2 := writeCatalog(t, dir, "v2.yaml", func(s string) string { return toV2(dropUserID(s)) })
	schemas := filepath.Join(dir, "_schemas")
	if err := os.Mkdir(schemas, 0o755); err != nil {
		t.Fatal(err)
	}
	ex, _ := dataset.Example()
	for _, d := range ex.Datasets() {
		b, err := bucketdocs.Schema(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(schemas, d.Name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		old, new string
		code     int
		want     string
	}{
		{"drop against the old file", old, dropped, 1, `dataset events: column "user_id" removed`},
		{"drop against _schemas/", schemas, dropped, 1, `dataset events: column "user_id" removed`},
		{"drop against one schema document", filepath.Join(schemas, "events.json"), dropped, 1, `column "user_id" removed`},
		{"append against _schemas/", schemas, appended, 0, "events: version 1 -> 2, appends note"},
		{"unchanged", old, old, 0, "profiles: unchanged contract"},
		{"drop with contract v2 against the old file", old, v2, 0, "events: new contract v1 -> v2: delivered again from its first day under v2/, v1/events/ stays as it is"},
		{"drop with contract v2 against _schemas/", schemas, v2, 0, "events: new contract v1 -> v2"},
		{"drop at v2 after v2", v2, writeCatalog(t, dir, "v2more.yaml", func(s string) string {
			return strings.Replace(toV2(dropUserID(s)), "      - {name: session_id,", "      - {name: session_idx,", 1)
		}), 1, `dataset events: column "session_id"`},
		{"back to v1 after v2", v2, dropped, 1, "dataset events: contract lowered from v2 to v1"},
		{"a delivered dataset removed", appended, writeCatalog(t, dir, "two.yaml", func(s string) string { return s[:strings.Index(s, "  - name: daily_stats")] }), 1, "dataset daily_stats: removed from the catalog"},
		{"OLD missing", filepath.Join(dir, "nope"), old, 2, `OLD "` + filepath.Join(dir, "nope") + `"`},
		// A hand-written query keeps its own zone when source_time_zone
		// changes: refused, naming both zones. A generated one follows
		// the zone, and diff says the delivered days were read in the
		// old one.
		{"a hand-written query left in the old zone", zoned(t, dir, "utc.yaml", "UTC", "UTC"), zoned(t, dir, "berlin.yaml", "Europe/Berlin", "UTC"), 2,
			`dataset visits: queries.postgres: converts the day window with AT TIME ZONE 'UTC', but partition_column seen_at declares source_time_zone "Europe/Berlin"`},
		{"a generated query follows the zone", zoned(t, dir, "gen-utc.yaml", "UTC", ""), zoned(t, dir, "gen-berlin.yaml", "Europe/Berlin", ""), 0,
			"visits: column seen_at: source_time_zone UTC -> Europe/Berlin: the days delivered so far were read as wall times in UTC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := execute(t, a, "catalog", "diff", tt.old, tt.new)
			if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s%s", r.code, tt.code, tt.want, r.stdout, r.stderr)
			}
		})
	}
}

// toV2 moves events to contract v2.
func toV2(s string) string {
	return strings.Replace(s, "  - name: events\n    version: 1\n", "  - name: events\n    version: 1\n    contract: v2\n", 1)
}

// TestCatalogDiffDeployed: `catalog diff --deployed NEW` compares NEW with
// the schemas the deployment's ledger records as delivered, reading no
// bucket: a dropped column is refused naming it, the same drop with
// contract: v2 is accepted, and once v2 is recorded, going back to v1 is
// refused.
func TestCatalogDiffDeployed(t *testing.T) {
	s := deployed(t)
	l := s.ledgerAt(t, testNow, 3)
	ex, _ := dataset.Example()
	record := func(d dataset.Dataset) {
		t.Helper()
		b, err := bucketdocs.Schema(d)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if _, err := l.Schemas().RecordSchema(t.Context(), ledger.DeliveredSchema{Dataset: d.Name, Contract: d.ContractVersion(), Version: d.Version, Doc: b, SHA256: hex.EncodeToString(sum[:])}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range ex.Datasets() {
		record(d)
	}
	dir := t.TempDir()
	dropped := writeCatalog(t, dir, "dropped.yaml", dropUserID)
	v2 := writeCatalog(t, dir, "v2.yaml", func(s string) string { return toV2(dropUserID(s)) })
	a, _, _ := testApp(t)
	for _, c := range []struct {
		name string
		file string
		code int
		want string
	}{
		{"drop at v1", dropped, 1, `dataset events: column "user_id" removed`},
		{"drop with v2", v2, 0, "events: new contract v1 -> v2"},
		{"no NEW", "", 2, "NEW"},
	} {
		args := []string{"catalog", "diff", "--deployed"}
		if c.file != "" {
			args = append(args, c.file)
		}
		if r := s.run(t, a, args...); r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", c.name, r.code, c.code, c.want, r.stdout, r.stderr)
		}
	}
	if r := execute(t, a, "catalog", "show", "--catalog", v2, "--dataset", "events"); r.code != 0 || !strings.Contains(r.stdout, "  contract v2: delivered under <prefix>/v2/events/") {
		t.Errorf("catalog show of a v2 dataset: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s2, err := dataset.Load(v2)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := s2.Get("events")
	record(events)
	if r := s.run(t, a, "catalog", "diff", "--deployed", dropped); r.code != 1 || !strings.Contains(r.stderr, "dataset events: contract lowered from v2 to v1") {
		t.Errorf("back to v1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := s.run(t, a, "catalog", "diff", "--deployed", v2); r.code != 0 || !strings.Contains(r.stdout, "events: unchanged contract") {
		t.Errorf("v2 against v2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// zoned writes a catalog of one dataset whose partition column holds wall
// times in colZone: its queries hand-written in queryZone, or generated
// when queryZone is "".
func zoned(t *testing.T, dir, name, colZone, queryZone string) string {
	t.Helper()
	doc := `datasets:
  - name: visits
    version: 1
    partition: event_time
    partition_column: seen_at
    relation: app.visits
    mode: incremental_append
    read: union_all_partitions
`
	if queryZone == "" {
		doc += "    tenant_column: org\n"
	}
	doc += "    columns:\n      - {name: seen_at, type: timestamp, source_time_zone: " + colZone + "}\n"
	if queryZone != "" {
		doc += `    queries:
      sqlite: SELECT seen_at FROM app.visits WHERE org = ? AND seen_at >= ? AND seen_at < ?
      postgres: SELECT seen_at FROM app.visits WHERE org = $1 AND seen_at >= ($2::timestamptz AT TIME ZONE '` + queryZone + `') AND seen_at < ($3::timestamptz AT TIME ZONE '` + queryZone + `')
`
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
