//go:build !noduckdb

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/parquetreaders"
	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
	"github.com/daybook-dev/daybook/shared/devkit/platformsource"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
)

// platformTenant is the account id docs/catalog.md's "Bring your own tables"
// account file gives, and platformOrg its tenant_key: the org_id of its
// rows.
const (
	platformTenant = "acct_platformtenantaa"
	platformOrg    = "org-acme"
)

// TestPlatformCatalogThroughTheDeployedFunctions is the second catalog
// through the real binaries: the platform schema (org_id tenants, Berlin
// wall-clock timestamps, numeric(20,10), uuid, an enum, inet, cidr, text[],
// jsonb, a daily table and a snapshot table) on real PostgreSQL, its
// catalog written by `daybook catalog init` and accepted by `catalog
// check`, then docs/catalog.md's "Bring your own tables" local commands run as
// written (the account file's start date and the DSN filled in):
// template.yaml deployed into moto with the catalog and the DSN, the
// account put, the sweeper and exporter bootstraps under the runtime
// emulator. The account's tenant_key names its organisation's org_id.
// Every delivered value is read back from the bucket by DuckDB and Arrow
// (and the JavaScript reader), the snapshot dataset's too; other
// organisations' rows (one whose org_id is the account id) are not
// delivered.
func TestPlatformCatalogThroughTheDeployedFunctions(t *testing.T) {
	work := t.TempDir()
	start := time.Now()
	buildBinaries(t, filepath.Join(work, ".local", "bin")) // before the directory changes: go build needs the module
	t.Logf("built in %v", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pg := pgserver.New(t)
	db, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := platformsource.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	// Two days ago is closed whatever the hour (the settle delay is 2 h).
	day := civil.Of(time.Now().UTC()).AddDays(-2)
	rows, outside, err := platformsource.Invoices(day)
	if err != nil {
		t.Fatal(err)
	}
	var in, want [][]any
	for _, r := range rows {
		in, want = append(in, r.In), append(want, r.Want)
	}
	mustInsert := func(org string, rows ...[]any) {
		t.Helper()
		if err := platformsource.Insert(ctx, db, org, rows...); err != nil {
			t.Fatal(err)
		}
	}
	mustInsert(platformOrg, append(in, outside...)...)
	// Rows of another organisation, and rows whose org_id is the account
	// id: neither is the account's tenant.
	mustInsert("acct_someoneelseaaaaa", rows[0].In)
	mustInsert(platformTenant, rows[1].In)
	exec1 := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec1(`INSERT INTO seat_snapshots VALUES ($1, $2, 'team', 12, 9, '{"region": "eu"}'), ($3, $2, 'free', 1, 1, NULL)`, platformOrg, day.String(), "acct_someoneelseaaaaa")
	seatsWant := [][]any{{day, "team", int64(12), int64(9), json.RawMessage(`{"region": "eu"}`)}}
	exec1(`INSERT INTO members VALUES ($1, '00000000-0000-0000-0000-00000000000a', 'ana@example.com', 'owner', '2019-06-01 09:00:00', '{"sso": true}'),
		($1, '00000000-0000-0000-0000-00000000000b', 'ben@example.com', 'member', '2026-03-05 23:30:00', NULL),
		($2, '00000000-0000-0000-0000-00000000000c', 'cy@example.com', 'owner', '2026-03-05 23:30:00', NULL)`, platformOrg, platformTenant)
	loc, err := time.LoadLocation(platformsource.Zone)
	if err != nil {
		t.Fatal(err)
	}
	wall := func(s string) time.Time {
		ts, err := time.ParseInLocation(time.DateTime, s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return ts.UTC()
	}
	membersWant := [][]any{
		{"00000000-0000-0000-0000-00000000000a", "ana@example.com", "owner", wall("2019-06-01 09:00:00"), json.RawMessage(`{"sso": true}`)},
		{"00000000-0000-0000-0000-00000000000b", "ben@example.com", "member", wall("2026-03-05 23:30:00"), nil},
	}

	// The user's working directory: template.yaml, .local/bin from make build.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	if err := os.Symlink(filepath.Join(repoRoot, "template.yaml"), "template.yaml"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = newApp(io.Discard, io.Discard).execute(context.Background(), []string{"local", "down", "--dir", filepath.Join(work, ".local")})
	})
	sh := &readmeShell{t: t, ctx: ctx, dir: work, env: map[string]string{}}
	iamcheck.Recorded(t) // make local-up's moto records the functions' calls

	// Steps 1 and 2: the entries from the tables, the catalog checked.
	for _, args := range [][]string{
		{"--table", "invoices", "--tenant-column", "org_id", "--partition-column", "created_at", "--source-time-zone", platformsource.Zone},
		{"--table", "seat_snapshots", "--tenant-column", "org_id", "--partition-column", "snapshot_date", "--partition", "stat_date"},
		{"--table", "members", "--tenant-column", "org_id", "--partition", "snapshot", "--source-time-zone", platformsource.Zone},
	} {
		sh.daybook(append([]string{"catalog", "init", "--source", pg.DSN, "--append", "catalog.yaml"}, args...)...)
	}
	if out := sh.daybook("catalog", "check", "--source", pg.DSN, "--catalog", "catalog.yaml"); !strings.Contains(out, "3 dataset(s) checked: 0 error(s)") {
		t.Fatalf("catalog check:\n%s", out)
	}
	cat, err := dataset.Load("catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}

	// Step 5's commands, as written, with this schema's account file.
	_, commands := readmeLocalTry(t)
	acctFile := `{"id": "` + platformTenant + `", "name": "First tenant", "enabled": true, "start_date": "` + day.String() + `",
	 "tenant_key": "` + platformOrg + `", "datasets": ["invoices", "seat_snapshots", "members"],
	 "destination": {"bucket": "daybook-exports-local"}}`
	if err := os.WriteFile("account.json", []byte(acctFile), 0o600); err != nil {
		t.Fatal(err)
	}
	sh.env["SOURCE_DSN"] = pg.DSN
	var status string
	for _, line := range commands {
		start := time.Now()
		status = sh.run(line)
		t.Logf("%s: %v", line, time.Since(start).Round(time.Millisecond))
	}
	if err := os.Chdir(wd); err != nil { // the JavaScript reader is found from the module
		t.Fatal(err)
	}
	if !strings.Contains(status, "invoices") || !strings.Contains(status, "members") {
		t.Errorf("status after the drain:\n%s", status)
	}
	// Every call the bootstraps made is one their policies in the
	// template (deployed as README's local stack) allow.
	motoURL, err := os.ReadFile(localDir(filepath.Join(work, ".local")).urlFile())
	if err != nil {
		t.Fatal(err)
	}
	iamcheck.CheckRecorded(t, iamcheck.ForStage(t, "local", nil), strings.TrimSpace(string(motoURL)))

	// Every delivered value, read back from the bucket.
	vars, err := samstack.ReadEnvFile(filepath.Join(work, ".local", "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := vars["ExporterFunction"][dataset.EnvCatalog]; got != filepath.Join(work, "catalog.yaml") {
		t.Errorf("the exporter's %s is %q", dataset.EnvCatalog, got)
	}
	cfg, err := motoserver.ConfigFor(ctx, vars["ExporterFunction"]["AWS_ENDPOINT_URL"])
	if err != nil {
		t.Fatal(err)
	}
	bucket := &localBucketFiles{t: t, ctx: ctx, api: awsclient.NewS3(cfg), dir: t.TempDir()}
	prefix := "daybook/" + platformTenant + "/v1/"
	duck := duckcheck.Open(t)
	var files []string
	var sets [][][]any
	var dss []dataset.Dataset
	for _, tc := range []struct {
		name string
		want [][]any
	}{{"invoices", want}, {"seat_snapshots", seatsWant}, {"members", membersWant}} {
		ds, err := cat.Get(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		days := bucket.committedDays(prefix + tc.name + "/")
		d := day.String()
		if ds.IsSnapshot() {
			// One copy, of the newest closed day.
			if len(days) != 1 {
				t.Fatalf("%s: committed days %v, want the newest closed day only", tc.name, days)
			}
			d = days[0]
		} else if !slices.Contains(days, d) {
			t.Fatalf("%s: committed days %v lack %s", tc.name, days, d)
		}
		paths := bucket.dataFiles(prefix + tc.name + "/dt=" + d + "/")
		if len(paths) != 1 {
			t.Fatalf("%s %s: data files %v, want 1", tc.name, d, paths)
		}
		t.Run(tc.name+"/duckdb", func(t *testing.T) {
			got := duckcheck.ReadBack(t, duck, duckcheck.Parquet(paths[0], false), ds, "")
			duckcheck.CheckRows(t, ds, got, tc.want, false)
		})
		t.Run(tc.name+"/arrow", func(t *testing.T) {
			got, err := parquetreaders.ReadArrow(paths[0])
			if err != nil {
				t.Fatal(err)
			}
			checkReadBack(t, ds, tc.want, got)
		})
		files, sets, dss = append(files, paths[0]), append(sets, tc.want), append(dss, ds)
	}
	js, err := parquetreaders.ReadHyparquet(files...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		t.Run(dss[i].Name+"/hyparquet", func(t *testing.T) { checkReadBack(t, dss[i], sets[i], js[i]) })
	}
}

// localBucketFiles reads the local bucket's partitions.
type localBucketFiles struct {
	t   *testing.T
	ctx context.Context
	api *s3.Client
	dir string
}

func (b *localBucketFiles) keys(prefix string) []string {
	b.t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(b.api, &s3.ListObjectsV2Input{Bucket: aws.String(localBucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(b.ctx)
		if err != nil {
			b.t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// committedDays are the days under prefix (<dataset>/) with _SUCCESS.
func (b *localBucketFiles) committedDays(prefix string) []string {
	var days []string
	for _, k := range b.keys(prefix) {
		if d, ok := strings.CutSuffix(strings.TrimPrefix(k, prefix), "/_SUCCESS"); ok {
			days = append(days, strings.TrimPrefix(d, "dt="))
		}
	}
	return days
}

// dataFiles downloads the Parquet files under prefix (one partition).
func (b *localBucketFiles) dataFiles(prefix string) []string {
	b.t.Helper()
	var paths []string
	for _, k := range b.keys(prefix) {
		name := k[strings.LastIndexByte(k, '/')+1:]
		if !strings.HasPrefix(name, "part-") || !strings.HasSuffix(name, ".parquet") {
			continue
		}
		out, err := b.api.GetObject(b.ctx, &s3.GetObjectInput{Bucket: aws.String(localBucket), Key: aws.String(k)})
		if err != nil {
			b.t.Fatal(err)
		}
		body, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil {
			b.t.Fatal(err)
		}
		p := filepath.Join(b.dir, strings.NewReplacer("/", "_", "=", "_").Replace(k))
		if err := os.WriteFile(p, body, 0o600); err != nil {
			b.t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// checkReadBack compares what a Parquet reader decoded with the declared
// columns and every value written.
func checkReadBack(t *testing.T, ds dataset.Dataset, rows [][]any, got *parquetreaders.Table) {
	t.Helper()
	wantCols := parquetreaders.WantColumns(ds)
	if len(got.Columns) != len(wantCols) {
		t.Fatalf("%d columns, want %d", len(got.Columns), len(wantCols))
	}
	for i, w := range wantCols {
		g := got.Columns[i]
		g.Engine, w.Engine = "", ""
		if g != w {
			t.Errorf("column %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if len(got.Rows) != len(rows) {
		t.Fatalf("read %d rows, wrote %d", len(got.Rows), len(rows))
	}
	for r, row := range rows {
		for c, v := range row {
			if w := parquetreaders.Canonical(v); got.Rows[r][c] != w {
				t.Errorf("row %d column %s: read %v, want %v", r+1, ds.Columns[c].Name, got.Rows[r][c], w)
			}
		}
	}
}
