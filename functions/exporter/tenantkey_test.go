//go:build !noduckdb

package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/devkit/platformsource"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
	"github.com/daybook-dev/daybook/shared/source"
)

// TestUUIDTenantKey: a platform whose tenant column is a uuid. catalog
// init's entry says tenant_type uuid; an account mapped to one tenant by
// its tenant_key gets that tenant's rows only, under its own account id
// (object keys, manifest), although another tenant has rows the same day;
// catalog check refuses the entry without its tenant_type, naming the
// column and both types; a key that is not a uuid fails the export naming
// tenant_key and the value, before the source is read.
func TestUUIDTenantKey(t *testing.T) {
	e := newEnv(t, envOpts{})
	db := platformDB(t, e, "")
	if _, err := db.Exec(`ALTER TABLE invoices ALTER COLUMN org_id TYPE uuid USING org_id::uuid`); err != nil {
		t.Fatal(err)
	}
	const mine, theirs = "6f1c2a4e-0d3b-4e5f-8a9b-1c2d3e4f5a6b", "0a0a0a0a-1b1b-4c2c-8d3d-4e4e4e4e4e4e"
	rows, _, err := platformsource.Invoices(testDay)
	if err != nil {
		t.Fatal(err)
	}
	if err := platformsource.Insert(e.ctx, db, mine, rows[0].In, rows[1].In); err != nil {
		t.Fatal(err)
	}
	if err := platformsource.Insert(e.ctx, db, theirs, rows[2].In); err != nil {
		t.Fatal(err)
	}

	tab, err := pgcatalog.ReadTable(e.ctx, db, "invoices")
	if err != nil {
		t.Fatal(err)
	}
	entry, err := pgcatalog.Entry(tab, pgcatalog.EntryOptions{TenantColumn: "org_id", PartitionColumn: "created_at", Partition: dataset.PartitionEventTime, SourceTimeZone: platformsource.Zone})
	if err != nil {
		t.Fatal(err)
	}
	if entry.TenantType != dataset.TenantUUID {
		t.Fatalf("catalog init's tenant_type %q, want %q", entry.TenantType, dataset.TenantUUID)
	}
	doc, err := json.Marshal(map[string]any{"datasets": []dataset.Dataset{entry}})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := dataset.ParseCatalog(doc)
	if err != nil {
		t.Fatal(err)
	}
	ds := cat[0]

	conn, err := db.Conn(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, tc := range []struct {
		tenantType, wantFinding string
	}{{dataset.TenantUUID, ""}, {"", "declare tenant_type: uuid"}, {dataset.TenantInt64, "declare tenant_type: uuid"}} {
		d := ds
		d.TenantType = tc.tenantType
		fs, err := pgcatalog.CheckDataset(e.ctx, conn, d)
		if err != nil {
			t.Fatal(err)
		}
		var tenant []pgcatalog.Finding
		for _, f := range fs {
			if f.Check == "tenant" {
				tenant = append(tenant, f)
			}
		}
		switch {
		case tc.wantFinding == "" && len(tenant) > 0:
			t.Errorf("tenant_type %q: %+v", tc.tenantType, tenant)
		case tc.wantFinding != "" && (len(tenant) != 1 || tenant[0].Severity != pgcatalog.SeverityError || tenant[0].Found != "uuid" ||
			tenant[0].Declared != "tenant_type "+d.TenantKind() || !strings.Contains(tenant[0].Message, tc.wantFinding)):
			t.Errorf("tenant_type %q: findings %+v; want one error, declared tenant_type %s, found uuid", tc.tenantType, tenant, d.TenantKind())
		}
	}

	src, err := source.NewSQL(db, dataset.DialectPostgres, "postgres:platform")
	if err != nil {
		t.Fatal(err)
	}
	exp := *e.exp
	exp.Source = src
	gen := int64(0)
	export := func(key string) (*Written, error) {
		gen++
		a := e.acct
		a.TenantKey = key
		a.Destination.Format = fileformat.Parquet
		c := ledger.Claim{Key: partition.Key{AccountID: a.ID, Dataset: ds.Name, Day: testDay}, Token: "tok", Attempt: 1, Generation: gen, Reason: partition.ReasonScheduled}
		return exp.Export(e.ctx, Partition{Account: a, Dataset: ds, Day: testDay, Claim: c, RunID: "run_uuid"}, e.svc.Log)
	}
	w, err := export(mine)
	if err != nil {
		t.Fatal(err)
	}
	if w.Manifest.AccountID != e.acct.ID || !strings.Contains(w.ManifestKey, "/"+e.acct.ID+"/") {
		t.Errorf("manifest of account %s at %s, want account %s's", w.Manifest.AccountID, w.ManifestKey, e.acct.ID)
	}
	if len(w.Manifest.Files) != 1 {
		t.Fatalf("%d files", len(w.Manifest.Files))
	}
	p := filepath.Join(t.TempDir(), "part.parquet")
	if err := os.WriteFile(p, e.get(w.Manifest.Files[0].Key), 0o600); err != nil {
		t.Fatal(err)
	}
	got := duckcheck.ReadBack(t, duckcheck.Open(t), duckcheck.Parquet(p, false), ds, "")
	duckcheck.CheckRows(t, ds, got, [][]any{rows[0].Want, rows[1].Want}, false)

	for _, key := range []string{"", "not-a-uuid"} {
		_, err := export(key)
		want := `"` + e.acct.ID + `" is not a uuid`
		if key != "" {
			want = `"not-a-uuid" is not a uuid`
		}
		if err == nil || !strings.Contains(err.Error(), "tenant_key") || !strings.Contains(err.Error(), want) {
			t.Errorf("export with tenant_key %q: %v; want a refusal naming tenant_key and %s", key, err, want)
		}
		if errors.Is(err, source.ErrNoSource) {
			t.Errorf("classified as a missing source: %v", err)
		}
	}
}
