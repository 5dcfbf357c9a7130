package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
	"github.com/daybook-dev/daybook/shared/devkit/platformsource"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// TestCatalogInitThenCheck: catalog init on the platform schema writes
// entries that catalog check accepts; a migration that retypes a column
// makes check exit 1 naming dataset, column and both types.
func TestCatalogInitThenCheck(t *testing.T) {
	t.Parallel()
	srv := pgserver.New(t)
	db, err := sql.Open("pgx", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := platformsource.Create(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	a, _, _ := testApp(t)

	// Two calls append to one file, created by the first.
	file := filepath.Join(t.TempDir(), "catalog.yaml")
	for _, args := range [][]string{
		{"--table", "invoices", "--tenant-column", "org_id", "--partition-column", "created_at", "--source-time-zone", platformsource.Zone},
		// A dimension table as a snapshot (no partition column).
		{"--table", "members", "--tenant-column", "org_id", "--partition", "snapshot", "--source-time-zone", platformsource.Zone},
	} {
		r := execute(t, a, append([]string{"catalog", "init", "--source", srv.DSN, "--append", file}, args...)...)
		if r.code != 0 || r.stdout != "" {
			t.Fatalf("catalog init %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	r := execute(t, a, "catalog", "init", "--source", srv.DSN, "--table", "seat_snapshots", "--tenant-column", "org_id", "--partition-column", "snapshot_date", "--partition", "stat_date")
	if r.code != 0 {
		t.Fatalf("catalog init seat_snapshots: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "datasets:\n  - name: seat_snapshots\n    version: 1\n") || strings.Contains(r.stdout, "SELECT") || strings.Contains(r.stdout, "{\"") {
		t.Errorf("init prints a YAML catalog without queries:\n%s", r.stdout)
	}
	// Printed, it is a catalog file of its own; appended, the same entry.
	if r := execute(t, a, "catalog", "init", "--source", srv.DSN, "--table", "seat_snapshots", "--tenant-column", "org_id", "--partition-column", "snapshot_date", "--partition", "stat_date", "--append", file); r.code != 0 {
		t.Fatalf("catalog init --append: exit %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), strings.TrimPrefix(r.stdout, "datasets:\n")) {
		t.Errorf("the appended entry is not the printed one:\n%s\n---\n%s", b, r.stdout)
	}
	cat, err := dataset.Parse(b)
	if err != nil {
		t.Fatalf("init's entries are not a catalog: %v\n%s", err, b)
	}
	if got := strings.Join(cat.Names(), ","); got != "invoices,members,seat_snapshots" {
		t.Errorf("datasets %s", got)
	}
	inv, _ := cat.Get("invoices")
	if inv.TenantColumn != "org_id" || strings.Join(inv.OrderBy, ",") != "created_at,invoice_id" || inv.ChangedColumn != "" {
		t.Errorf("invoices: tenant %q order_by %v changed %q; want org_id, [created_at invoice_id] (the primary key), none", inv.TenantColumn, inv.OrderBy, inv.ChangedColumn)
	}
	if q := inv.Queries[dataset.DialectPostgres]; !strings.Contains(q, "created_at >= ($2::timestamptz AT TIME ZONE 'Europe/Berlin')") {
		t.Errorf("invoices query %s", q)
	}
	// The same table again is refused, naming it, and the file is left as
	// it was.
	r = execute(t, a, "catalog", "init", "--source", srv.DSN, "--table", "members", "--tenant-column", "org_id", "--partition", "snapshot", "--source-time-zone", platformsource.Zone, "--append", file)
	if after, _ := os.ReadFile(file); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "dataset members is already in the file") || string(after) != string(b) {
		t.Errorf("appending members twice: exit %d %s", r.code, r.stderr)
	}

	type report struct {
		Datasets, Errors, Warnings int
		Findings                   []pgcatalog.Finding
	}
	check := func(wantCode int) report {
		t.Helper()
		r := execute(t, a, "catalog", "check", "--source", srv.DSN, "--catalog", file, "-o", "json")
		if r.code != wantCode {
			t.Fatalf("catalog check: exit %d, want %d\n%s%s", r.code, wantCode, r.stdout, r.stderr)
		}
		var rep report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("catalog check -o json: %v\n%s", err, r.stdout)
		}
		return rep
	}
	if rep := check(0); rep.Datasets != 3 || rep.Errors != 0 || rep.Warnings != 0 {
		t.Fatalf("check of init's entries: %+v", rep)
	}
	text := execute(t, a, "catalog", "check", "--source", srv.DSN, "--catalog", file)
	if text.code != 0 || !strings.Contains(text.stdout, "3 dataset(s) checked: 0 error(s)") {
		t.Errorf("catalog check (table): exit %d\n%s", text.code, text.stdout)
	}

	if r := execute(t, a, "catalog", "check", "--source", srv.DSN, "--catalog", file, "--dataset", "seat_snapshots", "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, `"datasets": 1`) {
		t.Errorf("catalog check --dataset seat_snapshots: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := execute(t, a, "catalog", "check", "--source", srv.DSN, "--catalog", file, "--dataset", "nope"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, `--dataset "nope": not in the catalog; valid: invoices, members, seat_snapshots`) {
		t.Errorf("catalog check --dataset nope: exit %d\n%s", r.code, r.stderr)
	}
	if r := execute(t, a, "catalog", "check", "--source", srv.DSN, "--catalog", filepath.Join(t.TempDir(), "missing.json")); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--catalog") {
		t.Errorf("catalog check --catalog missing.json: exit %d\n%s", r.code, r.stderr)
	}

	if _, err := db.Exec(`ALTER TABLE invoices ALTER COLUMN amount TYPE numeric(30,12)`); err != nil {
		t.Fatal(err)
	}
	rep := check(cli.ExitError)
	found := false
	for _, f := range rep.Findings {
		if f.Severity == pgcatalog.SeverityError && f.Dataset == "invoices" && f.Column == "amount" && f.Declared == "decimal(20,10)" && f.Found == "numeric(30,12)" {
			found = true
		}
	}
	if !found || rep.Errors != 1 {
		t.Errorf("after the migration, findings %+v; want one error naming invoices, amount, decimal(20,10), numeric(30,12)", rep.Findings)
	}
	text = execute(t, a, "catalog", "check", "--source", srv.DSN, "--catalog", file)
	if text.code != cli.ExitError || !strings.Contains(text.stdout, "numeric(30,12)") || !strings.Contains(text.stderr, "1 error(s)") {
		t.Errorf("catalog check (table) after the migration: exit %d\n%s%s", text.code, text.stdout, text.stderr)
	}
}

// TestCatalogInitRefuses: bad flags are usage errors; a table with a type
// that has no catalog type, or wall-clock times without a declared zone,
// is refused naming the column, and nothing is printed.
func TestCatalogInitRefuses(t *testing.T) {
	t.Parallel()
	srv := pgserver.New(t)
	db, err := sql.Open("pgx", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := platformsource.Create(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE odd (org_id text NOT NULL, at timestamptz NOT NULL, span interval, attributes jsonb)`); err != nil {
		t.Fatal(err)
	}
	a, _, _ := testApp(t)
	base := []string{"catalog", "init", "--source", srv.DSN, "--tenant-column", "org_id"}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--table", "invoices", "--partition-column", "created_at", "--partition", "hourly"}, cli.ExitUsage, `--partition "hourly": unknown partition`},
		{[]string{"--table", "invoices", "--partition-column", "created_at", "--source-time-zone", "Mars/Olympus"}, cli.ExitUsage, `--source-time-zone "Mars/Olympus"`},
		{[]string{"--table", "invoices"}, cli.ExitUsage, "--partition-column"},
		{[]string{"--table", "invoices", "--partition-column", "created_at"}, cli.ExitError, "column created_at: timestamp without time zone holds wall-clock times without a zone"},
		{[]string{"--table", "odd", "--partition-column", "at"}, cli.ExitError, "column span: interval has no catalog type"},
		{[]string{"--table", "nope", "--partition-column", "at"}, cli.ExitError, "relation nope: no such relation"},
		{[]string{"--table", "members", "--partition", "snapshot", "--partition-column", "joined_at", "--source-time-zone", platformsource.Zone}, cli.ExitError, `partition column "joined_at": a snapshot has none`},
	} {
		r := execute(t, a, append(base, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.stderr)
		}
	}
}

// TestCatalogCheckSeveralSources: a catalog whose members dataset reads
// the billing source is checked with one --source per source, each
// dataset against its own database (two PostgreSQL schemas here); the
// findings name the source. A source given no DSN is an error finding for
// each of its datasets, not a silent skip; a source given the wrong
// database reports the missing relation under that source.
func TestCatalogCheckSeveralSources(t *testing.T) {
	t.Parallel()
	srv := pgserver.New(t)
	db, err := sql.Open("pgx", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dsn := map[string]string{}
	for _, schema := range []string{"app", "billing"} {
		if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
			t.Fatal(err)
		}
		dsn[schema] = srv.DSN + " search_path=" + schema
		sdb, err := sql.Open("pgx", dsn[schema])
		if err != nil {
			t.Fatal(err)
		}
		err = platformsource.Create(context.Background(), sdb)
		sdb.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec("DROP TABLE app.members"); err != nil { // members live in billing only
		t.Fatal(err)
	}
	a, _, _ := testApp(t)
	init := func(source string, args ...string) map[string]any {
		t.Helper()
		r := execute(t, a, append([]string{"catalog", "init", "--source", dsn[source], "--tenant-column", "org_id", "--source-time-zone", platformsource.Zone}, args...)...)
		if r.code != 0 {
			t.Fatalf("catalog init %v: exit %d\n%s", args, r.code, r.stderr)
		}
		j, err := yaml.YAMLToJSON([]byte(r.stdout))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct{ Datasets []map[string]any }
		if err := json.Unmarshal(j, &doc); err != nil || len(doc.Datasets) != 1 {
			t.Fatalf("%v: %s", err, r.stdout)
		}
		return doc.Datasets[0]
	}
	invoices := init("app", "--table", "invoices", "--partition-column", "created_at")
	members := init("billing", "--table", "members", "--partition", "snapshot")
	members["source"] = "billing"
	doc, err := json.Marshal(map[string]any{"datasets": []any{invoices, members}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(file, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	type finding struct {
		pgcatalog.Finding
		Source string `json:"source"`
	}
	type report struct {
		Datasets, Errors, Warnings int
		Findings                   []finding
	}
	check := func(wantCode int, sources ...string) report {
		t.Helper()
		args := []string{"catalog", "check", "--catalog", file, "-o", "json"}
		for _, s := range sources {
			args = append(args, "--source", s)
		}
		r := execute(t, a, args...)
		if r.code != wantCode {
			t.Fatalf("catalog check %v: exit %d, want %d\n%s%s", sources, r.code, wantCode, r.stdout, r.stderr)
		}
		var rep report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("catalog check -o json: %v\n%s", err, r.stdout)
		}
		return rep
	}
	errorsOf := func(rep report) []finding {
		var out []finding
		for _, f := range rep.Findings {
			if f.Severity == pgcatalog.SeverityError {
				out = append(out, f)
			}
		}
		return out
	}

	if rep := check(0, dsn["app"], "billing="+dsn["billing"]); rep.Datasets != 2 || rep.Errors != 0 {
		t.Errorf("both sources: %+v", rep)
	} else {
		for _, f := range rep.Findings {
			if want := map[string]string{"invoices": "default", "members": "billing"}[f.Dataset]; f.Source != want {
				t.Errorf("finding %+v: source %q, want %q", f, f.Source, want)
			}
		}
	}
	// The default source named as such is the bare DSN.
	if rep := check(0, "default="+dsn["app"], "billing="+dsn["billing"]); rep.Errors != 0 {
		t.Errorf("default= and billing=: %+v", rep)
	}
	if errs := errorsOf(check(1, dsn["app"])); len(errs) != 1 || errs[0].Dataset != "members" || errs[0].Source != "billing" || errs[0].Check != "source" ||
		!strings.Contains(errs[0].Message, "--source billing=DSN") {
		t.Errorf("billing without a DSN: errors %+v; want one naming members and source billing", errs)
	}
	if errs := errorsOf(check(1, dsn["app"], "billing="+dsn["app"])); len(errs) != 1 || errs[0].Dataset != "members" || errs[0].Source != "billing" || errs[0].Check != "relation" {
		t.Errorf("billing pointed at the app schema: errors %+v; want members' relation missing under billing", errs)
	}
	text := execute(t, a, "catalog", "check", "--catalog", file, "--source", dsn["app"], "--source", "billing="+dsn["billing"])
	if text.code != 0 || !strings.Contains(text.stdout, "2 dataset(s) checked: 0 error(s)") {
		t.Errorf("catalog check (table): exit %d\n%s%s", text.code, text.stdout, text.stderr)
	}
	for _, tc := range []struct {
		sources []string
		stderr  string
	}{
		{[]string{"billing="}, `--source "billing=": no connection string`},
		{[]string{dsn["app"], "default=" + dsn["billing"]}, "source default given twice"},
	} {
		args := []string{"catalog", "check", "--catalog", file}
		for _, s := range tc.sources {
			args = append(args, "--source", s)
		}
		if r := execute(t, a, args...); r.code != cli.ExitUsage || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want a usage error %q", tc.sources, r.code, r.stderr, tc.stderr)
		}
	}
}

// TestCatalogInitTablesAsTheyAre: tables without a json column (and a
// bigint tenant, a nullable partition column, an updated_at) get entries
// of exactly their columns; several --table at once print one catalog
// file, which validates against docs/catalog.schema.json, loads, and
// passes catalog check; init says on stderr what it chose.
func TestCatalogInitTablesAsTheyAre(t *testing.T) {
	t.Parallel()
	srv := pgserver.New(t)
	db, err := sql.Open("pgx", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE visits (site_id bigint NOT NULL, id bigint NOT NULL, created_at timestamp NOT NULL, path text NOT NULL,
			updated_at timestamp NOT NULL, PRIMARY KEY (site_id, id))`,
		`CREATE INDEX visits_site_created ON visits (site_id, created_at)`,
		`CREATE TABLE signups (site_id bigint, id bigint NOT NULL, created_at timestamp, email text, tags text[], PRIMARY KEY (site_id, id))`,
		`CREATE INDEX signups_site_created ON signups (site_id, created_at)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	a, _, _ := testApp(t)
	r := execute(t, a, "catalog", "init", "--source", srv.DSN, "--table", "visits", "--table", "signups", "--tenant-column", "site_id",
		"--partition-column", "created_at", "--source-time-zone", "America/Sao_Paulo")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want := `datasets:
  - name: visits
    version: 1
    partition: event_time
    partition_column: created_at
    relation: visits
    mode: incremental_append
    read: union_all_partitions
    tenant_column: site_id
    tenant_type: int64
    order_by: [created_at, id]
    changed_column: updated_at
    columns:
      - {name: id, type: int64}
      - {name: created_at, type: timestamp, source_time_zone: America/Sao_Paulo}
      - {name: path, type: string}
      - {name: updated_at, type: timestamp, source_time_zone: America/Sao_Paulo}
  - name: signups
    version: 1
    partition: event_time
    partition_column: created_at
    relation: signups
    mode: incremental_append
    read: union_all_partitions
    tenant_column: site_id
    tenant_type: int64
    order_by: [created_at, id]
    columns:
      - {name: id, type: int64}
      - {name: created_at, type: timestamp, source_time_zone: America/Sao_Paulo}
      - {name: email, type: string, nullable: true}
      - {name: tags, type: json, nullable: true}
`
	if r.stdout != want {
		t.Errorf("init printed\n%s\nwant\n%s", r.stdout, want)
	}
	for _, note := range []string{
		"visits: changed_column updated_at: a day whose rows are updated (a later updated_at) is exported again",
		"signups: no changed_column (no updated_at-like column)",
		"signups: partition column created_at allows NULL: declared required",
	} {
		if !strings.Contains(r.stderr, note) {
			t.Errorf("stderr lacks %q:\n%s", note, r.stderr)
		}
	}
	schema, err := jsonschema.NewCompiler().Compile("../../docs/catalog.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(j)))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(v); err != nil {
		t.Errorf("init's output against docs/catalog.schema.json: %v", err)
	}
	file := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(file, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	c := execute(t, a, "catalog", "check", "--source", srv.DSN, "--catalog", file, "-o", "json")
	var rep struct {
		Errors   int
		Findings []pgcatalog.Finding
	}
	if err := json.Unmarshal([]byte(c.stdout), &rep); c.code != 0 || err != nil || rep.Errors != 0 {
		t.Fatalf("catalog check: exit %d %v\n%s%s", c.code, err, c.stdout, c.stderr)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Dataset != "signups" || rep.Findings[0].Column != "created_at" || rep.Findings[0].Check != "nullability" || rep.Findings[0].Severity != pgcatalog.SeverityWarning {
		t.Errorf("findings %+v; want one warning: signups' created_at allows NULL", rep.Findings)
	}
}

// TestCatalogCommandsWithoutTheProcessCatalog: when DAYBOOK_CATALOG does
// not load (catalog.yaml moved away to be written again, or broken),
// every command that reads it fails with why, but catalog init, show,
// check and diff, which read files of their own, still run, and help
// still helps.
func TestCatalogCommandsWithoutTheProcessCatalog(t *testing.T) {
	t.Parallel()
	a, _, _ := testApp(t)
	a.catalogErr = errors.New(`environment variable DAYBOOK_CATALOG="catalog.yaml": no such file`)
	if r := execute(t, a, "status", "--account", "acct_aaaaaaaaaaaaaaaa"); r.code != cli.ExitError || !strings.Contains(r.stderr, "DAYBOOK_CATALOG") {
		t.Errorf("status: exit %d %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"--help"}, {"help", "status"}, {"status", "--help"}} {
		if r := execute(t, a, args...); r.code != 0 || r.stdout == "" {
			t.Errorf("%v: exit %d %s", args, r.code, r.stderr)
		}
	}
	dir := t.TempDir()
	file := zoned(t, dir, "c.yaml", "UTC", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"catalog", "init", "--table", "x", "--tenant-column", "t", "--partition-column", "p"}, "--source is required"},
		{[]string{"catalog", "show", "--catalog", file}, "visits (version 1)"},
		{[]string{"catalog", "diff", file, file}, "visits: unchanged contract"},
	} {
		r := execute(t, a, tc.args...)
		if !strings.Contains(r.stdout+r.stderr, tc.want) || strings.Contains(r.stderr, "DAYBOOK_CATALOG") {
			t.Errorf("%v: exit %d\n%s%s; want %q", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
	}
}
