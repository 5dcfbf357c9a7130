//go:build !noduckdb

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

func init() { e2eQuickStart = runQuickStarts }

// runQuickStarts runs the Quick start of each demo account's bucket README
// (the README in the bucket, as the customer reads it), on a copy of the
// bucket, as written, on every store (moto's S3, fake-gcs-server,
// Azurite): its local-copy block, whose first line (aws s3 sync, gcloud
// storage rsync or az storage blob download-batch, by the store; no cloud
// CLI is installed here) is checked as written and replaced by the copy the
// test makes from the demo's mirror of the bucket, and then every other
// line with bash and DuckDB, unchanged (on GCS and Azure, their sed points
// the scripts' gs:// and az:// paths at the copy; with the S3-only Quick
// start they did not, and DuckDB refused the gs:// paths). DuckDB is the Go binding's,
// as the `duckdb` command (shared/devkit/duckcheck/duckdbcli): no DuckDB
// CLI is installed here. It checks the day found is the newest complete
// one, that the day and then every day loaded, and, for the account with
// Iceberg tables, that the README's table-from-a-copy lines name a
// metadata file that exists (reading it needs DuckDB's iceberg extension,
// a download). On the old README the fixed day 2026-11-20 did not exist for
// two accounts (sed: can't read) and was empty for the third.
func runQuickStarts(t *testing.T, res *demoResult) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "duckdb"), "./shared/devkit/duckcheck/duckdbcli")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the duckdb command: %v\n%s", err, out)
	}
	for _, a := range res.Accounts {
		t.Run(a.ID, func(t *testing.T) {
			prefix, _ := a.Prefix(res.Stage)
			mirror := filepath.Join(res.Mirror, mirrorName(a.Destination))
			readme, err := os.ReadFile(filepath.Join(mirror, filepath.FromSlash(layout.ReadmeKey(prefix))))
			if err != nil {
				t.Fatal(err)
			}
			lines := copyBlock(t, string(readme))
			if sync := copyCommand(a.Destination, prefix); lines[0] != sync {
				t.Fatalf("the local-copy block starts with %q, want %q", lines[0], sync)
			}
			work := t.TempDir()
			// The copy command (aws s3 sync, gcloud storage rsync, az
			// storage blob download-batch; no cloud CLI is installed here):
			// the bucket's objects, keys as paths, as the mirror holds them.
			dst := filepath.Join(work, "copy", filepath.FromSlash(prefix))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("cp", "-r", filepath.Join(mirror, filepath.FromSlash(prefix)), dst).CombinedOutput(); err != nil {
				t.Fatalf("copy: %v\n%s", err, out)
			}
			sh := exec.Command("bash", "-c", strings.Join(lines[1:], "\n"))
			sh.Dir = work
			sh.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := sh.CombinedOutput()
			if err != nil {
				t.Fatalf("the Quick start's local-copy lines: %v\n%s", err, out)
			}
			root := filepath.Join(work, "copy", filepath.FromSlash(layout.ContractPrefix(prefix)))
			newest, loaded := completeDays(t, root, a.Datasets[0])
			if got := strings.SplitN(string(out), "\n", 2)[0]; newest == "" || got != newest {
				t.Fatalf("the day found is %q, the newest complete day is %q\n%s", got, newest, out)
			}
			if strings.Contains(string(out), "can't read") || strings.Contains(string(out), "Error") {
				t.Errorf("the Quick start printed an error:\n%s", out)
			}
			var want int64
			for _, n := range loaded {
				want += n
			}
			count, err := exec.Command(filepath.Join(bin, "duckdb"), filepath.Join(work, "exports.duckdb"), "-c",
				fmt.Sprintf(`SELECT count(*), count(DISTINCT dt) FROM %q`, a.Datasets[0])).CombinedOutput()
			if err != nil || strings.TrimSpace(string(count)) != fmt.Sprintf("%d\t%d", want, countNonEmpty(loaded)) {
				t.Errorf("exports.duckdb holds %q (%v); the delivered days hold %d rows in %d days with rows", count, err, want, countNonEmpty(loaded))
			}
			t.Logf("%s: newest complete day %s; %d days loaded, %d rows", a.ID, newest, len(loaded), want)
			if a.Destination.TableFormat != "" {
				tableFromCopy(t, string(readme), work)
			}
		})
	}
}

// copyCommand is the first line of the local-copy block of a README in
// d's bucket: the store's own CLI copying the account's prefix to
// ./copy/<prefix>, objects' keys as paths.
func copyCommand(d account.Destination, prefix string) string {
	switch d.Kind() {
	case account.StoreGCS:
		return "gcloud storage rsync --recursive gs://" + d.Bucket + "/" + prefix + " ./copy/" + prefix
	case account.StoreAzure:
		return "mkdir -p ./copy && az storage blob download-batch --account-name " + d.StorageAccount + " --source " + d.Bucket +
			" --pattern '" + prefix + "/*' --destination ./copy --auth-mode login -o none"
	}
	return "aws s3 sync s3://" + d.Bucket + "/" + prefix + " ./copy/" + prefix
}

// copyBlock is the Quick start's local-copy block: its lines, continuation
// lines kept (bash reads them).
func copyBlock(t *testing.T, readme string) []string {
	t.Helper()
	i := strings.Index(readme, bucketdocs.QuickStartCopyHeading)
	if i < 0 {
		t.Fatalf("the README has no %q", bucketdocs.QuickStartCopyHeading)
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme[i:])
	if m == nil {
		t.Fatal("no block after the local-copy heading")
	}
	return strings.Split(strings.TrimSuffix(m[1], "\n"), "\n")
}

// completeDays reads the copy's delivery manifests: the newest complete
// day, and the rows each day delivered of dataset ds.
func completeDays(t *testing.T, root, ds string) (string, map[string]int64) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "_manifests"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	newest, rows := "", map[string]int64{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(root, "_manifests", n, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := manifest.DecodeDelivery(b)
		if err != nil {
			t.Fatal(err)
		}
		if d.Complete {
			newest = d.Day
		}
		for _, x := range d.DatasetsDelivered {
			if x.Name == ds {
				rows[d.Day] = x.Rows
			}
		}
	}
	return newest, rows
}

func countNonEmpty(rows map[string]int64) int {
	n := 0
	for _, r := range rows {
		if r > 0 {
			n++
		}
	}
	return n
}

// tableFromCopy checks the README's lines that read an Iceberg table from
// the copy: version-hint.text holds N, and v<N>.metadata.json is there.
func tableFromCopy(t *testing.T, readme, work string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^n=\$\(cat (\S+version-hint\.text)\)\nduckdb -c "INSTALL iceberg; LOAD iceberg; SELECT .* FROM iceberg_scan\('(\S+)v\$n\.metadata\.json', allow_moved_paths = true\)`).FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("the README has no lines reading the table from a copy")
	}
	hint, err := os.ReadFile(filepath.Join(work, m[1]))
	if err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(work, m[2], "v"+strings.TrimSpace(string(hint))+".metadata.json")
	b, err := os.ReadFile(meta)
	var doc struct {
		Location string `json:"location"`
	}
	if err != nil || json.Unmarshal(b, &doc) != nil || !strings.HasPrefix(doc.Location, "s3://") {
		t.Errorf("the table's metadata file %s: %v, location %q", meta, err, doc.Location)
	}
}
