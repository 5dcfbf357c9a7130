//go:build !noduckdb

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
	"github.com/daybook-dev/daybook/shared/devkit/platformsource"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
	"github.com/daybook-dev/daybook/shared/source"
)

// TestExportFromTwoSources exports two datasets of one catalog from two
// PostgreSQL schemas of the platform (the default source, app, and a
// second one, billing, sharded: the account's rows are in billing's eu
// shard), through Exporter.Export into the bucket: each partition holds the
// rows of its own source, and its _manifest.json names the source and
// shard, never a connection string.
func TestExportFromTwoSources(t *testing.T) {
	e := newEnv(t, envOpts{})
	srv := pgserver.New(t)
	admin, err := sql.Open("pgx", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	dbs := map[string]*sql.DB{}
	for _, schema := range []string{"app", "billing_eu", "billing_us"} {
		if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("pgx", srv.DSN+" search_path="+schema)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := platformsource.Create(e.ctx, db); err != nil {
			t.Fatal(err)
		}
		dbs[schema] = db
	}
	org := e.acct.ID
	insertInvoices(t, dbs["app"], org, []any{"00000000-0000-0000-0000-000000000001", "2026-03-05 12:00:00", "1", "EUR", "free",
		nil, nil, nil, "1", nil, nil, "false", nil, nil, nil, nil})
	// The account's one member in the eu shard; the us shard has two rows
	// under the same id, which the export must not read.
	for schema, emails := range map[string][]string{"billing_eu": {"eu@example.com"}, "billing_us": {"us1@example.com", "us2@example.com"}} {
		for _, email := range emails {
			if _, err := dbs[schema].Exec(`INSERT INTO members VALUES ($1, gen_random_uuid(), $2, 'owner', '2026-01-01 00:00:00', NULL)`, org, email); err != nil {
				t.Fatal(err)
			}
		}
	}
	entry := func(db *sql.DB, table, part, kind string) dataset.Dataset {
		tab, err := pgcatalog.ReadTable(e.ctx, db, table)
		if err != nil {
			t.Fatal(err)
		}
		d, err := pgcatalog.Entry(tab, pgcatalog.EntryOptions{TenantColumn: "org_id", PartitionColumn: part, Partition: kind, SourceTimeZone: platformsource.Zone})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	invoices := entry(dbs["app"], "invoices", "created_at", dataset.PartitionEventTime)
	members := entry(dbs["billing_eu"], "members", "", dataset.PartitionSnapshot)
	members.Source = "billing"
	doc, err := json.Marshal(map[string]any{"datasets": []dataset.Dataset{invoices, members}})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := dataset.ParseCatalog(doc)
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[source.Key]*source.SQL{}
	for k, schema := range map[source.Key]string{{Source: dataset.DefaultSource}: "app", {Source: "billing", Shard: "eu"}: "billing_eu", {Source: "billing", Shard: "us"}: "billing_us"} {
		if srcs[k], err = source.NewSQL(dbs[schema], dataset.DialectPostgres, "pgx:"+k.String()); err != nil {
			t.Fatal(err)
		}
	}
	router, err := source.NewRouter(srcs)
	if err != nil {
		t.Fatal(err)
	}
	if err := router.Covers(cat); err != nil {
		t.Fatal(err)
	}
	exp := *e.exp
	exp.Source = router
	a := e.acct
	a.SourceShard = "eu"
	for i, tc := range []struct {
		ds          dataset.Dataset
		name, shard string
	}{{cat[0], "default", ""}, {cat[1], "billing", "eu"}} {
		c := ledger.Claim{Key: partition.Key{AccountID: a.ID, Dataset: tc.ds.Name, Day: testDay}, Token: "tok", Attempt: 1, Generation: int64(i + 1), Reason: partition.ReasonScheduled}
		w, err := exp.Export(e.ctx, Partition{Account: a, Dataset: tc.ds, Day: testDay, Claim: c, RunID: "run_sources"}, e.svc.Log)
		if err != nil {
			t.Fatalf("export %s: %v", tc.ds.Name, err)
		}
		if w.Manifest.Totals.Rows != 1 {
			t.Errorf("%s: %d rows, want 1 (the account's row in its own source)", tc.ds.Name, w.Manifest.Totals.Rows)
		}
		raw := e.get(layout.ManifestKey(e.prefix, tc.ds.Name, testDay))
		var m manifest.Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.Provenance.SourceName != tc.name || m.Provenance.SourceShard != tc.shard || m.Provenance.Source != "postgres" {
			t.Errorf("%s provenance: %+v, want source %s shard %q", tc.ds.Name, m.Provenance, tc.name, tc.shard)
		}
		if s := string(raw); strings.Contains(s, "search_path") || strings.Contains(s, "host=") || strings.Contains(s, "pgx:") {
			t.Errorf("%s: the manifest names the connection:\n%s", tc.ds.Name, s)
		}
	}
	// An account whose shard the deployment has no DSN for fails its
	// partition, naming the variable.
	a.SourceShard = "ap"
	c := ledger.Claim{Key: partition.Key{AccountID: a.ID, Dataset: cat[1].Name, Day: testDay}, Token: "tok", Attempt: 1, Generation: 9, Reason: partition.ReasonScheduled}
	_, err = exp.Export(e.ctx, Partition{Account: a, Dataset: cat[1], Day: testDay, Claim: c, RunID: "run_sources"}, e.svc.Log)
	if !errors.Is(err, source.ErrNoSource) || !strings.Contains(err.Error(), "SOURCE_DSN_BILLING__AP") {
		t.Errorf("export with an unknown shard: %v, want ErrNoSource naming SOURCE_DSN_BILLING__AP", err)
	}
	if code := classify(err); code != manifest.CodeSourceUnavailable {
		t.Errorf("classified %s, want %s", code, manifest.CodeSourceUnavailable)
	}
}

// TestOpenSourcesNamesTheMissingVariable: a deployment whose catalog names
// a source with no connection string does not start, and says which
// variable to set.
func TestOpenSourcesNamesTheMissingVariable(t *testing.T) {
	cat, err := dataset.Example()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{SourceDriver: "sqlite", Catalog: cat, Sources: map[source.Key]source.DSN{{Source: "billing"}: {Value: "file::memory:", Var: "SOURCE_DSN_BILLING"}}}
	_, err = openSources(context.Background(), cfg, nil)
	if !errors.Is(err, source.ErrNoSource) || !strings.Contains(err.Error(), `source "default": set SOURCE_DSN or SOURCE_DSN_PARAMETER`) {
		t.Fatalf("got %v", err)
	}
	cfg.Sources[source.Key{Source: dataset.DefaultSource}] = source.DSN{Value: "file::memory:", Var: "SOURCE_DSN"}
	if _, err := openSources(context.Background(), cfg, nil); err != nil {
		t.Fatalf("every source given: %v", err)
	}
}

// TestSourceDSNsFromSSM: the deployed exporter reads its connection
// strings from the SSM SecureString parameters the template names
// (SOURCE_DSN_PARAMETER, and SOURCE_DSN_PARAMETERS for a further source),
// once at start, with the policy that allows exactly those parameters, and
// exports from them.
func TestSourceDSNsFromSSM(t *testing.T) {
	cfg, _ := deployed(t)
	api := ssm.NewFromConfig(cfg)
	put := func(name, value string) {
		t.Helper()
		if _, err := api.PutParameter(context.Background(), &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value),
			Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	// The default source's parameter is the template's default; the
	// billing one starts with it, as the template requires.
	dir := t.TempDir()
	put("/daybook/source-dsn-billing", "file:"+filepath.Join(dir, "billing.db"))
	put("/daybook/source-dsn", "file:"+filepath.Join(dir, "not-yet.db"))
	e := newEnv(t, envOpts{env: map[string]string{"SOURCE_DSN": "", "SOURCE_DSN_PARAMETERS": "billing=/daybook/source-dsn-billing"}})
	put("/daybook/source-dsn", "file:"+e.dbPath) // the env's source
	e.rebuild(nil)                               // a cold start reads the parameters again
	if vars := e.functionEnv(e.opts, ""); vars["SOURCE_DSN_PARAMETER"] != "/daybook/source-dsn" || vars["SOURCE_DSN"] != "" {
		t.Fatalf("the function's DSN variables: %q %q", vars["SOURCE_DSN_PARAMETER"], vars["SOURCE_DSN"])
	}
	e.insert("events", genRows("events", testDay, 5)...)
	if r := e.export("events", testDay); r.State != ledger.StateCompleted || r.Rows != 5 {
		t.Fatalf("export from the parameter's source: %+v", r)
	}
}
