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

// TestTypedTenantKey: platforms whose tenant column is a uuid or a bigint.
// catalog init's entry says tenant_type uuid or int64, and catalog check
// passes it (binding a key of that type as the exporter does); an account
// mapped to one tenant by its tenant_key gets that tenant's rows only,
// under its own account id (object keys, manifest), although another
// tenant has rows the same day, whether its key is written canonically or
// (stored before keys were canonical) not; catalog check refuses the entry
// with another tenant_type, naming the column and both types; a key not of
// the type fails the export naming tenant_key and the value, before the
// source is read. On the old code the bigint platform's every export failed
// with "parameter 1 of type int64", after catalog check had passed.
func TestTypedTenantKey(t *testing.T) {
	const mineUUID, theirsUUID = "6f1c2a4e-0d3b-4e5f-8a9b-1c2d3e4f5a6b", "0a0a0a0a-1b1b-4c2c-8d3d-4e4e4e4e4e4e"
	for _, tc := range []struct {
		tenantType, column string
		mine, theirs       any
		keys               []string // the account's key, as written
		wrongTypes         []string
		badKeys            map[string]string // key -> what its refusal says
	}{
		{dataset.TenantUUID, "uuid", mineUUID, theirsUUID, []string{mineUUID, strings.ToUpper(mineUUID)},
			[]string{"", dataset.TenantInt64}, map[string]string{"": "is not a uuid", "not-a-uuid": `"not-a-uuid" is not a uuid`}},
		{dataset.TenantInt64, "bigint", int64(7), int64(8), []string{"7", "0007", "+7"},
			[]string{"", dataset.TenantUUID}, map[string]string{"": "is not a 64-bit integer", "7x": `"7x" is not a 64-bit integer`}},
	} {
		t.Run(tc.tenantType, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			db := platformDB(t, e, "")
			if _, err := db.Exec(`ALTER TABLE invoices ALTER COLUMN org_id TYPE ` + tc.column + ` USING NULL`); err != nil {
				t.Fatal(err)
			}
			rows, _, err := platformsource.Invoices(testDay)
			if err != nil {
				t.Fatal(err)
			}
			if err := platformsource.Insert(e.ctx, db, tc.mine, rows[0].In, rows[1].In); err != nil {
				t.Fatal(err)
			}
			if err := platformsource.Insert(e.ctx, db, tc.theirs, rows[2].In); err != nil {
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
			if entry.TenantType != tc.tenantType {
				t.Fatalf("catalog init's tenant_type %q, want %q", entry.TenantType, tc.tenantType)
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
			fs, err := pgcatalog.CheckDataset(e.ctx, conn, ds)
			if err != nil {
				t.Fatal(err)
			}
			if pgcatalog.HasErrors(fs) {
				t.Errorf("catalog check of init's entry: %+v", fs)
			}
			for _, wrong := range tc.wrongTypes {
				d := ds
				d.TenantType = wrong
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
				if len(tenant) != 1 || tenant[0].Severity != pgcatalog.SeverityError || tenant[0].Found != tc.column ||
					tenant[0].Declared != "tenant_type "+d.TenantKind() || !strings.Contains(tenant[0].Message, "declare tenant_type: "+tc.tenantType) {
					t.Errorf("tenant_type %q: findings %+v; want one error, declared tenant_type %s, found %s", wrong, tenant, d.TenantKind(), tc.column)
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
				return exp.Export(e.ctx, Partition{Account: a, Dataset: ds, Day: testDay, Claim: c, RunID: "run_tenant"}, e.svc.Log)
			}
			for _, key := range tc.keys {
				w, err := export(key)
				if err != nil {
					t.Fatalf("key %q: %v", key, err)
				}
				if w.Manifest.AccountID != e.acct.ID || !strings.Contains(w.ManifestKey, "/"+e.acct.ID+"/") {
					t.Errorf("manifest of account %s at %s, want account %s's", w.Manifest.AccountID, w.ManifestKey, e.acct.ID)
				}
				if len(w.Manifest.Files) != 1 {
					t.Fatalf("key %q: %d files", key, len(w.Manifest.Files))
				}
				p := filepath.Join(t.TempDir(), "part.parquet")
				if err := os.WriteFile(p, e.get(w.Manifest.Files[0].Key), 0o600); err != nil {
					t.Fatal(err)
				}
				got := duckcheck.ReadBack(t, duckcheck.Open(t), duckcheck.Parquet(p, false), ds, "")
				duckcheck.CheckRows(t, ds, got, [][]any{rows[0].Want, rows[1].Want}, false)
			}

			for key, want := range tc.badKeys {
				_, err := export(key)
				if key == "" {
					want = `"` + e.acct.ID + `" ` + want
				}
				if err == nil || !strings.Contains(err.Error(), "tenant_key") || !strings.Contains(err.Error(), want) {
					t.Errorf("export with tenant_key %q: %v; want a refusal naming tenant_key and %s", key, err, want)
				}
				if errors.Is(err, source.ErrNoSource) {
					t.Errorf("classified as a missing source: %v", err)
				}
			}
		})
	}
}
