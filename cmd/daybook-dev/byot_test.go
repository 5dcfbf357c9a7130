//go:build !noduckdb

package main

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
	"github.com/daybook-dev/daybook/shared/devkit/publicschemas"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
	"github.com/daybook-dev/daybook/shared/ops"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
)

// readmeDate and readmeFailed are the days docs/catalog.md's "Bring your own
// tables" names: the account's start date, and the failed days its
// retry line makes due. The test's own days stand in for them.
const readmeDate = "2026-11-30"

var readmeFailed = [2]string{"2026-12-01", "2026-12-02"}

// TestBringYourOwnTablesAsWritten runs docs/catalog.md's "Bring your own tables"
// start to finish, as written, on the schema it names: the Citus
// multi-tenant tutorial's tables (bigint tenants, wall-clock timestamps,
// numeric(20,10), inet, jsonb, text[]) in a real PostgreSQL with rows of
// three companies over six days. Step 1's catalog init lines write
// catalog.yaml, whose clicks entry is the page's YAML; step 2's show and
// check pass; then a migration retypes a column, as happens after a
// catalog is written, so step 5's local stack (template.yaml in moto, the
// real bootstraps under the runtime emulator) fails every impressions day
// as a schema mismatch naming the column and both types; step 6 writes
// the catalog again with step 1's lines and retries the failed days,
// which are then delivered. Then three more public schemas (pagila,
// Northwind, Basejump) are described with catalog init --append into the
// same catalog and delivered to accounts of their own. For every schema,
// every committed partition is verified (daybook verify) and DuckDB reads
// every value back, compared with the rows inserted: the other tenants'
// rows, and rows outside the day, never arrive. The per-schema table is
// logged.
func TestBringYourOwnTablesAsWritten(t *testing.T) {
	work := t.TempDir()
	buildBinaries(t, filepath.Join(work, ".local", "bin"))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	pg := pgserver.New(t)
	db, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Now()
	var runs []*schemaRun
	for i, s := range publicschemas.All() {
		loc, err := time.LoadLocation(s.AccountZone)
		if err != nil {
			t.Fatal(err)
		}
		// Five days back is the start: its first four days are closed at
		// any hour, the day before it and today give rows outside.
		today := civil.In(now, loc)
		start := today.AddDays(-5)
		data, err := s.Load(ctx, db, civil.Range(start.AddDays(-1), today))
		if err != nil {
			t.Fatal(err)
		}
		id := "acct_platformtenantaa"
		if i > 0 {
			id = "acct_" + (s.Name + "tenantaaaaaaaaaa")[:16]
		}
		runs = append(runs, &schemaRun{s: s, data: data, account: id, start: start, loc: loc})
	}
	citus := runs[0]

	t.Chdir(work)
	if err := os.Symlink(filepath.Join(repoRoot, "template.yaml"), "template.yaml"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = newApp(os.Stderr, os.Stderr).execute(context.Background(), []string{"local", "down", "--dir", filepath.Join(work, ".local")})
	})
	sh := &readmeShell{t: t, ctx: ctx, dir: work, env: map[string]string{"SOURCE_DSN": pg.DSN}}
	steps := readmeSteps(t)
	timed := func(line string) string {
		t.Helper()
		start := time.Now()
		out := sh.run(line)
		t.Logf("%s: %v", line, time.Since(start).Round(time.Millisecond))
		return out
	}

	// Step 1: the catalog from the tables; the page's YAML is its first
	// entry, byte for byte.
	for _, line := range steps.init {
		timed(line)
	}
	written, err := os.ReadFile("catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(written), steps.yaml) {
		t.Errorf("catalog.yaml does not begin with the page's YAML:\n%s\n--- docs/catalog.md:\n%s", written, steps.yaml)
	}
	// Step 2: show and check (warnings only: the exit is 0).
	var checkOut string
	for _, line := range steps.check {
		checkOut = timed(line)
	}
	if !strings.Contains(checkOut, "5 dataset(s) checked: 0 error(s)") {
		t.Errorf("catalog check:\n%s", checkOut)
	}

	// A migration after step 1 drops a NOT NULL, and impressions without
	// a site arrive on two days.
	if _, err := db.ExecContext(ctx, `ALTER TABLE impressions ALTER COLUMN site_url DROP NOT NULL`); err != nil {
		t.Fatal(err)
	}
	broken := []civil.Date{citus.start.AddDays(1), citus.start.AddDays(2)}
	for i, day := range broken {
		row := publicschemas.Row{"id": int64(900000 + i), "company_id": int64(1), "ad_id": nil, "seen_at": publicschemas.Wall(day.Start(time.UTC).Add(time.Hour)),
			"site_url": nil, "cost_per_impression_usd": nil, "user_ip": "198.51.100.1", "user_data": publicschemas.JSON(`{"site": null}`)}
		if err := citus.insert(ctx, db, "impressions", row); err != nil {
			t.Fatal(err)
		}
	}

	// Step 5: the local stack.
	acct := strings.Replace(steps.account, `"start_date": "`+readmeDate+`"`, `"start_date": "`+citus.start.String()+`"`, 1)
	if acct == steps.account || !strings.Contains(acct, `"id": "`+citus.account+`"`) || !strings.Contains(acct, `"tenant_key": "`+citus.s.Tenants[0]+`"`) {
		t.Fatalf("docs/catalog.md's account file is not the one this test expects: %s", steps.account)
	}
	if err := os.WriteFile("account.json", []byte(acct), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, line := range steps.local {
		timed(line)
	}
	failed := citus.status(t, sh).in(ops.Failed, ops.Stopped)
	if got, want := fmt.Sprint(failed), fmt.Sprint(map[string][]string{"impressions": {broken[0].String(), broken[1].String()}}); got != want {
		t.Fatalf("after the migration, failed partitions %s; want %s", got, want)
	}
	for _, d := range citus.status(t, sh)["impressions"] {
		if d.State == ops.Failed && (!strings.Contains(d.Error, "site_url") || !strings.Contains(d.Error, "row")) {
			t.Errorf("impressions %s: error %q; want the column and the row named", d.Day, d.Error)
		}
	}

	// Step 6: the catalog fixed as docs/catalog.md says, then the failed days,
	// first to last, queued.
	fixed := regexp.MustCompile(`(?s)(- name: impressions\n    version: )1(\n.*?\{name: site_url, type: string)\}`).ReplaceAllString(string(mustReadFile(t, "catalog.yaml")), "${1}2${2}, nullable: true, nullable_since: 2}")
	if err := os.WriteFile("catalog.yaml", []byte(fixed), 0o600); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fixed, "{name: site_url, type: string, nullable: true, nullable_since: 2}") {
		t.Fatalf("the fix did not apply:\n%s", fixed)
	}
	dates := strings.NewReplacer(readmeDate, citus.start.String(), readmeFailed[0], broken[0].String(), readmeFailed[1], broken[1].String())
	for _, line := range steps.retry {
		timed(dates.Replace(line))
	}

	// The other schemas into the same catalog and stack, as step 1 and
	// step 5 do for yours.
	for _, r := range runs[1:] {
		for _, init := range r.s.Inits {
			sh.daybook(append([]string{"catalog", "init", "--source", pg.DSN, "--append", "catalog.yaml"}, init...)...)
		}
		for _, ref := range r.s.Refused {
			_, stderr, err := sh.try(append([]string{"catalog", "init", "--source", pg.DSN}, ref.Init...)...)
			if err == nil || !strings.Contains(stderr, ref.Why) {
				t.Errorf("%s: catalog init %v: %v %s; want a refusal naming %s", r.s.Name, ref.Init, err, stderr, ref.Why)
			}
			r.refused = append(r.refused, fmt.Sprintf("init refuses %s: %s", ref.Init[3], lastLine(stderr)))
		}
	}
	cat, err := dataset.Load("catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		r.bind(t, cat)
		r.check(t, sh, pg.DSN)
	}
	for _, r := range runs[1:] {
		file := r.account + ".json"
		b, err := json.Marshal(map[string]any{"id": r.account, "name": r.s.Title[:min(len(r.s.Title), 60)], "enabled": true, "start_date": r.start.String(),
			"time_zone": r.s.AccountZone, "tenant_key": r.s.Tenants[0], "datasets": r.names(), "destination": map[string]string{"bucket": localBucket}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		sh.daybook("account", "put", "--file", file, "--env-file", ".local/env.json")
	}
	timed(".local/bin/daybook-dev local drain --sweep")

	// Every schema delivered: no partition failed, every committed one
	// verifies, and DuckDB reads back every value.
	vars, err := samstack.ReadEnvFile(filepath.Join(work, ".local", "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := motoserver.ConfigFor(ctx, vars["ExporterFunction"]["AWS_ENDPOINT_URL"])
	if err != nil {
		t.Fatal(err)
	}
	bucket := &localBucketFiles{t: t, ctx: ctx, api: awsclient.NewS3(cfg), dir: t.TempDir()}
	duck := duckcheck.Open(t)
	for _, r := range runs {
		t.Run(r.s.Name, func(t *testing.T) { r.deliver(t, sh, bucket, duck) })
	}
	var table strings.Builder
	table.WriteString("\n| schema | tables (datasets) | types met | catalog check | partitions exported | values compared | mismatches |\n|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		fmt.Fprintf(&table, "| %s | %s | %s | %s | %d | %d | %d |\n", r.s.Title, strings.Join(r.tables, ", "), strings.Join(r.types, ", "),
			strings.Join(append(r.findings, r.refused...), "; "), r.partitions, r.values, r.mismatches)
	}
	t.Log(table.String())
}

// readmeBlocks are the command lines and documents of docs/catalog.md's "Bring
// your own tables" steps.
type readmeBlocks struct {
	init, check, local, retry []string // steps 1, 2, 5 and 6
	yaml, account             string
}

// readmeSteps reads docs/catalog.md's "Bring your own tables" steps: its code
// blocks in order, continuation lines joined, a list item's indentation
// removed.
func readmeSteps(t *testing.T) readmeBlocks {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, catalogDoc))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## Bring your own tables")
	j := strings.Index(s, "Tables with no day of their own")
	if i < 0 || j < i {
		t.Fatal(catalogDoc + ` has no "Bring your own tables" steps`)
	}
	blocks := regexp.MustCompile("(?s)\n   ```(json|sh|yaml)\n(.*?)   ```").FindAllStringSubmatch(s[i:j], -1)
	var kinds []string
	for _, m := range blocks {
		kinds = append(kinds, m[1])
	}
	if strings.Join(kinds, ",") != "sh,yaml,sh,json,sh,sh" {
		t.Fatalf(catalogDoc+"'s steps have blocks %v; want sh (step 1), yaml, sh (step 2), json and sh (step 5), sh (step 6)", kinds)
	}
	body := func(k int) string {
		var out []string
		for _, l := range strings.Split(blocks[k][2], "\n") {
			out = append(out, strings.TrimPrefix(l, "   "))
		}
		return strings.Join(out, "\n")
	}
	lines := func(k int) []string {
		var out []string
		for _, l := range strings.Split(strings.ReplaceAll(body(k), "\\\n", " "), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				out = append(out, l)
			}
		}
		return out
	}
	return readmeBlocks{init: lines(0), yaml: body(1), check: lines(2), account: body(3), local: lines(4), retry: lines(5)}
}

// schemaRun is one public schema delivered to one account through the
// local stack, and what the test found.
type schemaRun struct {
	s       publicschemas.Schema
	data    *publicschemas.Data
	account string
	start   civil.Date
	loc     *time.Location // the account's zone
	sets    []dataset.Dataset

	tables, types, findings, refused []string
	partitions, values, mismatches   int
}

// bind finds the schema's datasets in the catalog and the types of their
// source columns.
func (r *schemaRun) bind(t *testing.T, cat *dataset.Set) {
	t.Helper()
	for _, d := range cat.Datasets() {
		table := d.Relation[strings.LastIndexByte(d.Relation, '.')+1:]
		if _, ok := r.data.Tables[table]; !ok || r.s.Table(table) != d.Relation {
			continue
		}
		r.sets = append(r.sets, d)
		r.tables = append(r.tables, fmt.Sprintf("%s (%s)", d.Relation, d.Partition))
	}
	if len(r.sets) == 0 {
		t.Fatalf("%s: no dataset of the catalog reads its tables", r.s.Name)
	}
}

func (r *schemaRun) names() []string {
	var out []string
	for _, d := range r.sets {
		out = append(out, d.Name)
	}
	return out
}

// check runs catalog check on the schema's datasets and keeps its
// findings; an error finding fails the test.
func (r *schemaRun) check(t *testing.T, sh *readmeShell, dsn string) {
	t.Helper()
	args := []string{"catalog", "check", "--source", dsn, "--catalog", "catalog.yaml", "-o", "json"}
	for _, d := range r.sets {
		args = append(args, "--dataset", d.Name)
	}
	var rep struct {
		Findings []pgcatalog.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(sh.daybook(args...)), &rep); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, f := range rep.Findings {
		k := fmt.Sprintf("%s %s.%s %s", f.Severity, f.Dataset, cmp.Or(f.Column, "-"), f.Check)
		if seen[k]++; seen[k] == 1 {
			r.findings = append(r.findings, k)
		}
	}
	for i, k := range r.findings {
		if seen[k] > 1 {
			r.findings[i] = fmt.Sprintf("%s (%d partitions)", k, seen[k])
		}
	}
	if len(r.findings) == 0 {
		r.findings = []string{"none"}
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	types := map[string]bool{}
	for _, d := range r.sets {
		tab, err := pgcatalog.ReadTable(t.Context(), db, d.Relation)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range tab.Columns {
			types[c.Type.Display] = true
		}
	}
	for ty := range types {
		r.types = append(r.types, ty)
	}
	slices.Sort(r.types)
}

// accountDays are an account's partitions by dataset, from daybook status.
type accountDays map[string][]ops.Day

// in returns the days in the states, by dataset.
func (a accountDays) in(states ...ops.Phase) map[string][]string {
	out := map[string][]string{}
	for ds, days := range a {
		for _, d := range days {
			if slices.Contains(states, d.State) {
				out[ds] = append(out[ds], d.Day)
			}
		}
	}
	return out
}

func (r *schemaRun) status(t *testing.T, sh *readmeShell) accountDays {
	t.Helper()
	var res ops.AccountDays
	out := sh.daybook("status", "--account", r.account, "--from", r.start.String(), "-o", "json", "--env-file", ".local/env.json")
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	days := accountDays{}
	for _, ds := range res.Datasets {
		days[ds.Dataset] = ds.Days
	}
	return days
}

// deliver checks the schema's account: every partition completed, the
// first four closed days of every dataset (the newest closed day of a
// snapshot) committed and verified, and every value read back by DuckDB.
func (r *schemaRun) deliver(t *testing.T, sh *readmeShell, bucket *localBucketFiles, duck *sql.DB) {
	days := r.status(t, sh)
	for ds, list := range days {
		for _, d := range list {
			if d.State != ops.Completed {
				t.Errorf("%s %s: %s, attempts %d: %s", ds, d.Day, d.State, d.Attempts, d.Error)
			}
		}
	}
	prefix := "daybook/" + r.account + "/v1/"
	zone, _ := time.LoadLocation(cmp.Or(r.s.SourceZone, "UTC"))
	for _, d := range r.sets {
		committed := bucket.committedDays(prefix + d.Name + "/")
		if d.IsSnapshot() {
			if len(committed) != 1 {
				t.Errorf("%s: committed days %v, want the newest closed day", d.Name, committed)
			}
		} else {
			for _, want := range civil.Range(r.start, r.start.AddDays(3)) {
				if !slices.Contains(committed, want.String()) {
					t.Errorf("%s: committed days %v lack %s", d.Name, committed, want)
				}
			}
		}
		for _, day := range committed {
			r.partitions++
			sh.daybook("verify", "--account", r.account, "--dataset", d.Name, "--day", day, "--env-file", ".local/env.json")
			paths := bucket.dataFiles(prefix + d.Name + "/dt=" + day + "/")
			if len(paths) != 1 {
				t.Errorf("%s %s: data files %v, want 1", d.Name, day, paths)
				continue
			}
			want := r.want(d, civil.MustParse(day), zone)
			got := duckcheck.ReadBack(t, duck, duckcheck.Parquet(paths[0], false), d, orderOf(d))
			if len(got) != len(want) {
				t.Errorf("%s %s: DuckDB read %d rows, %d were inserted for the day", d.Name, day, len(got), len(want))
				r.mismatches++
				continue
			}
			for i := range want {
				for j, c := range d.Columns {
					r.values++
					if w := duckcheck.Expect(want[i][j]); !duckcheck.Same(c, got[i][j], w, true) {
						r.mismatches++
						t.Errorf("%s %s row %d column %s: read %#v, inserted %#v", d.Name, day, i+1, c.Name, got[i][j], w)
					}
				}
			}
		}
	}
}

// want are the rows of d's partition of day, as inserted: the account's
// tenant's rows whose partition column lies in the day (every row of the
// tenant for a snapshot), in d's order, in the value model.
func (r *schemaRun) want(d dataset.Dataset, day civil.Date, zone *time.Location) [][]any {
	table := d.Relation[strings.LastIndexByte(d.Relation, '.')+1:]
	var out [][]any
	for _, row := range r.data.Tables[table] {
		if publicschemas.Key(row[d.TenantColumn]) != r.s.Tenants[0] {
			continue
		}
		vals := make([]any, len(d.Columns))
		for i, c := range d.Columns {
			vals[i] = publicschemas.Want(row[c.Name], c, zone)
		}
		if !d.IsSnapshot() {
			p, _ := d.Column(d.PartitionColumn)
			v := publicschemas.Want(row[p.Name], p, zone)
			switch x := v.(type) {
			case time.Time:
				if x.Before(day.Start(r.loc)) || !x.Before(day.AddDays(1).Start(r.loc)) {
					continue
				}
			case civil.Date:
				if x != day {
					continue
				}
			default:
				continue // NULL: in no day
			}
		}
		out = append(out, vals)
	}
	order := d.OrderBy
	if len(order) == 0 {
		order = []string{cmp.Or(d.PartitionColumn, d.Columns[0].Name)}
	}
	slices.SortStableFunc(out, func(a, b []any) int {
		for _, name := range order {
			i := slices.Index(d.ColumnNames(), name)
			if c := compareValues(a[i], b[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

// orderOf is the ORDER BY DuckDB reads a partition with: the export's.
func orderOf(d dataset.Dataset) string {
	order := d.OrderBy
	if len(order) == 0 {
		order = []string{cmp.Or(d.PartitionColumn, d.Columns[0].Name)}
	}
	q := make([]string, len(order))
	for i, c := range order {
		q[i] = `"` + c + `"`
	}
	return strings.Join(q, ", ")
}

// compareValues orders two values of one column as DuckDB orders them.
func compareValues(a, b any) int {
	switch x := a.(type) {
	case time.Time:
		return x.Compare(b.(time.Time))
	case int64:
		return cmp.Compare(x, b.(int64))
	case civil.Date:
		return x.Compare(b.(civil.Date))
	case string:
		return strings.Compare(x, b.(string))
	}
	return 0
}

func mustReadFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// insert adds a row to table, in the database and in what the test
// expects.
func (r *schemaRun) insert(ctx context.Context, db *sql.DB, table string, row publicschemas.Row) error {
	var cols, vals []string
	for c, v := range row {
		cols = append(cols, c)
		vals = append(vals, publicschemas.Literal(v))
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO "+r.s.Table(table)+" ("+strings.Join(cols, ", ")+") VALUES ("+strings.Join(vals, ", ")+")"); err != nil {
		return err
	}
	r.data.Tables[table] = append(r.data.Tables[table], row)
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
