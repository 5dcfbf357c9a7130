package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/dataset/example"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// useCatalog makes the example catalog with edit applied this process's
// catalog until the test ends.
func useCatalog(t *testing.T, edit func(string) string) {
	t.Helper()
	doc := []byte(edit(string(example.YAML())))
	datasettest.Use(t, doc)
	// An exporter built after this (newEnv, rebuild) reads it as a
	// deployment does: DAYBOOK_CATALOG names the file (functionEnv).
	path := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(dataset.EnvCatalog, path)
}

// TestExporterRefusesABrokenContract: after a day was delivered, a catalog
// that drops a delivered column fails the next export before it touches the
// partition (schema_mismatch, the column named in the ledger); one that
// appends a nullable column with a version bump exports, and its schema
// document moves on to the new version.
func TestExporterRefusesABrokenContract(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events"}})
	for d := range 3 {
		e.insert("events", genRows("events", testDay.AddDays(-d), 3)...)
	}
	if row := e.export("events", testDay); row.State != ledger.StateCompleted {
		t.Fatalf("first export: %+v", row)
	}

	useCatalog(t, func(s string) string {
		return strings.Replace(s, "      - {name: user_id, type: \"string\", nullable: true, description: \"Identified user, if any.\"}\n", "", 1)
	})
	row := e.export("events", testDay.AddDays(-1))
	if row.State != ledger.StateFailed {
		t.Fatalf("export with a dropped column: %+v", row)
	}
	contains(t, "ledger error", row.LastError, "schema_mismatch: ", `column "user_id" removed`, "_schemas/events.json")
	if objs := e.list(layout.PartitionPrefix(e.prefix, "events", testDay.AddDays(-1))); len(objs) != 0 {
		t.Errorf("the refused run wrote into its partition: %v", objs)
	}
	if d := e.delivery(testDay.AddDays(-1)); len(d.DatasetsMissing) != 1 || d.DatasetsMissing[0].Cause != manifest.CodeSchemaMismatch {
		t.Errorf("delivery manifest: %+v", d.DatasetsMissing)
	}

	useCatalog(t, func(s string) string {
		s = strings.Replace(s, "  - name: events\n    version: 1\n", "  - name: events\n    version: 2\n", 1)
		return strings.Replace(s, "Per-tenant custom fields as a JSON object.\"}\n", "Per-tenant custom fields as a JSON object.\"}\n      - {name: note, type: \"string\", nullable: true, since: 2}\n", 1)
	})
	if _, err := e.db.ExecContext(e.ctx, `ALTER TABLE events ADD COLUMN note TEXT`); err != nil {
		t.Fatal(err)
	}
	if row := e.export("events", testDay.AddDays(-2)); row.State != ledger.StateCompleted {
		t.Fatalf("export with an appended column: %+v", row)
	}
	if m := e.committed("events", testDay.AddDays(-2)); m.SchemaVersion != 2 {
		t.Errorf("manifest schema version %d, want 2", m.SchemaVersion)
	}
	if doc := string(e.get(layout.SchemaKey(e.prefix, "events"))); !strings.Contains(doc, `"schema_version": 2`) {
		t.Errorf("schema document not moved to version 2:\n%s", doc)
	}
}
