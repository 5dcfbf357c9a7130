//go:build !noduckdb

package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/azurite"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc/servertest"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/loadsql"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/netguard"
	"github.com/daybook-dev/daybook/shared/verify"
)

// storeExport is what one export to a store left, relative to the
// account's prefix: every key, and each day's manifest.
type storeExport struct {
	keys      []string
	scripts   map[string]string // the first day's _load/ files by name
	readme    string
	manifests map[civil.Date]*manifest.Manifest
	uris      []string // the Iceberg table's data file paths
}

// exportTo exports two days of events (a file of three parts, and a small
// one) with an Iceberg table into dest, through the exporter's own wiring
// for the store (destination.Clients, as main.go builds it), and checks
// every partition with verify as a customer would, and the table with
// iceberg-go.
func exportTo(t *testing.T, rows [][]any, dest func(e *env) account.Destination, attrs func(e *env, keys []string)) storeExport {
	t.Helper()
	e := newEnv(t, envOpts{tableFormat: account.TableFormatIceberg})
	cfg, _ := deployed(t)
	clients := &destination.Clients{Base: cfg, Endpoints: netguard.Policy{AllowLoopback: true}}
	if dest != nil {
		e.acct.Destination = dest(e)
	}
	e.acct.Destination.Tags = exportTags
	switch e.acct.Destination.Kind() {
	case account.StoreS3:
		e.acct.Destination.Encryption = &account.Encryption{KMSKey: s3Key}
	case account.StoreGCS:
		e.acct.Destination.Encryption = &account.Encryption{KMSKey: gcsKey}
	case account.StoreAzure:
		e.acct.Destination.Encryption = &account.Encryption{Scope: azureScope}
	}
	if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
		t.Fatal(err)
	}
	e.exp.Stores = clients
	days := []civil.Date{testDay, testDay.AddDays(1)}
	e.insert("events", rows...)
	for _, d := range days {
		if r := e.export("events", d); r.State != "completed" {
			t.Fatalf("%s: %s (%s)", d, r.State, r.LastError)
		}
	}
	b, err := clients.Open(e.ctx, e.acct.ID, e.acct.Destination, bucket.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := e.acct.Destination.URI("k"); b.URI("k") != want {
		t.Errorf("the bucket names its keys %s, the destination %s", b.URI("k"), want)
	}
	out := storeExport{manifests: map[civil.Date]*manifest.Manifest{}}
	objs, err := b.List(e.ctx, e.prefix+"/")
	if err != nil {
		t.Fatal(err)
	}
	var full []string
	for _, o := range objs {
		out.keys = append(out.keys, strings.TrimPrefix(o.Key, e.prefix+"/"))
		full = append(full, o.Key)
	}
	attrs(e, full)
	for _, d := range days {
		opts := []verify.Options{{Download: true}}
		if dest != nil {
			// moto computes the CRC it keeps of a multipart object as a plain
			// CRC32 (without the python crc32c package): only the other
			// stores' kept checksums are compared with the manifest.
			opts = append(opts, verify.Options{})
		}
		for _, o := range opts {
			r, err := verify.Check(e.ctx, b, verify.Target{Bucket: e.acct.Destination.Bucket, Prefix: e.prefix, Dataset: "events", Day: d}, o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != verify.StatusOK || r.Location != e.acct.Destination.URI(layout.PartitionPrefix(e.prefix, "events", d)) {
				var sb strings.Builder
				_ = r.WriteText(&sb)
				t.Errorf("verify %s (download %v) at %s:\n%s", d, o.Download, r.Location, sb.String())
			}
		}
		body, err := b.Get(e.ctx, layout.ManifestKey(e.prefix, "events", d), manifest.MaxManifestBytes)
		if err != nil {
			t.Fatal(err)
		}
		if out.manifests[d], err = manifest.Decode(body); err != nil {
			t.Fatal(err)
		}
	}
	readme, err := b.Get(e.ctx, layout.ContractPrefix(e.prefix)+"README.md", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	out.readme = string(readme)
	out.scripts = map[string]string{}
	load := layout.PartitionPrefix(e.prefix, "events", days[0]) + layout.LoadDir + "/"
	for _, k := range full {
		if name, ok := strings.CutPrefix(k, load); ok {
			body, err := b.Get(e.ctx, k, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			out.scripts[name] = string(body)
		}
	}
	for _, want := range []string{"**Location**: `" + e.acct.Destination.URI(layout.ContractPrefix(e.prefix)) + "`",
		"daybook verify --bucket " + verifyFlag(e.acct.Destination) + " --prefix " + e.prefix} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("the bucket README does not say %q", want)
		}
	}
	tbl, err := icetable.Load(e.ctx, b, tableLocation(e.prefix, "events"))
	if err != nil {
		t.Fatal(err)
	}
	perDay, err := icetable.RowsPerDay(e.ctx, tbl, mustDataset(t, "events"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range days {
		if perDay[d] != out.manifests[d].Totals.Rows {
			t.Errorf("iceberg-go reads %d rows of %s from the table, the manifest says %d", perDay[d], d, out.manifests[d].Totals.Rows)
		}
	}
	tasks, err := tbl.Scan().PlanFiles(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		out.uris = append(out.uris, task.File.FilePath())
	}
	slices.Sort(out.uris)
	return out
}

// TestExportToEveryStore exports the same rows to S3 (moto), GCS
// (fake-gcs-server) and Azure (Azurite): every store holds the same keys
// under the account's prefix (data, manifests, _SUCCESS, load scripts,
// delivery manifests, the change log, the README and _schemas/, the Iceberg
// table's metadata beside the data) and the same files with the same
// rows, sizes and checksums; each partition verifies from the customer's
// side, and iceberg-go reads each store's table, whose data files are named
// by the store's URIs. Then a day of every dataset of the catalog, as
// Parquet and as NDJSON, goes to each store and every data file is read
// back from it by DuckDB and by a JavaScript reader.
func TestExportToEveryStore(t *testing.T) {
	fgcs := servertest.ForTest(t, gcsserver.Start)
	azr := servertest.ForTest(t, azurite.Start)
	// The exporter reaches each emulator through a recording proxy: the
	// attributes an emulator does not keep are checked in the requests.
	gcsProxy, gcsSent := buckettest.RecordingProxy(t, fgcs.URL)
	azrProxy, azrSent := buckettest.RecordingProxy(t, azr.URL)
	stores := map[string]func(e *env) account.Destination{
		"s3": nil,
		"gcs": func(e *env) account.Destination {
			name := strings.Replace(e.acct.Destination.Bucket, "exp-", "gcs-", 1)
			if err := newGCSBucket(e, fgcs, name); err != nil {
				t.Fatal(err)
			}
			return account.Destination{StoreKind: account.StoreGCS, Bucket: name, Endpoint: gcsProxy.URL, TableFormat: account.TableFormatIceberg}
		},
		"azure": func(e *env) account.Destination {
			name := strings.Replace(e.acct.Destination.Bucket, "exp-", "az-", 1)
			c, err := buckettest.AzuriteClient(azr, name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Create(e.ctx, nil); err != nil {
				t.Fatal(err)
			}
			return account.Destination{StoreKind: account.StoreAzure, Bucket: name, StorageAccount: azurite.Account, Endpoint: azrProxy.URL,
				TableFormat: account.TableFormatIceberg}
		},
	}
	// The same rows for each store: a day of ~11 MiB (a file of three
	// parts) and a small one.
	rows := append(bigRows(t, 8000), genRows("events", testDay.AddDays(1), 50)...)
	checks := map[string]func(e *env, keys []string){
		"s3": func(e *env, keys []string) { s3Encrypted(e, keys) },
		"gcs": func(e *env, keys []string) {
			gcsEncrypted(e, keys, gcsSent, fgcs)
		},
		"azure": func(e *env, keys []string) {
			azureEncrypted(e, keys, azrSent, azr)
		},
	}
	got := map[string]storeExport{}
	for _, name := range []string{"s3", "gcs", "azure"} {
		t.Run(name, func(t *testing.T) { got[name] = exportTo(t, rows, stores[name], checks[name]) })
		// Every dataset in each format, read back from the store by DuckDB
		// and a JavaScript reader (readback_test.go).
		t.Run(name+"/read back", func(t *testing.T) { readBackEveryFormat(t, stores[name]) })
	}
	ref := got["s3"]
	if len(ref.keys) == 0 {
		t.Fatal("nothing exported to S3")
	}
	for _, name := range []string{"gcs", "azure"} {
		g, ok := got[name]
		if !ok {
			continue
		}
		if a, b := layoutOf(ref.keys), layoutOf(g.keys); !slices.Equal(a, b) {
			t.Errorf("%s holds other keys than S3 (but for the load scripts):\n  s3:  %v\n  %s: %v", name, a, name, b)
		}
		checkStoreScripts(t, name, g)
		for d, m := range ref.manifests {
			if fmt.Sprint(files(m)) != fmt.Sprint(files(g.manifests[d])) {
				t.Errorf("%s %s: files %v, S3's %v", name, d, files(g.manifests[d]), files(m))
			}
		}
		scheme := map[string]string{"gcs": "gs://", "azure": "abfss://"}[name]
		for _, u := range g.uris {
			if !strings.HasPrefix(u, scheme) {
				t.Errorf("%s: the table names a data file %s", name, u)
			}
		}
		if len(g.uris) != len(ref.uris) {
			t.Errorf("%s: the table has %d data files, S3's %d", name, len(g.uris), len(ref.uris))
		}
	}
}

// checkStoreScripts: a GCS or Azure partition's _load/ holds the scripts
// of the engines that read the store, each naming the files by its URI of
// the store (never s3://), and none for Athena or Redshift, which read S3
// only; the bucket README says why those are missing.
func checkStoreScripts(t *testing.T, store string, g storeExport) {
	t.Helper()
	want := map[string][]string{
		"gcs":   {"bigquery.sql", "duckdb.sql", "snowflake.sql"},
		"azure": {"bigquery.sql", "databricks.sql", "duckdb.sql", "fabric.sql", "snowflake.sql"},
	}[store]
	uri := map[string]map[string]string{
		"gcs":   {"bigquery.sql": "'gs://", "snowflake.sql": "'gcs://", "duckdb.sql": "'gs://", loadsql.TableScriptTrino: "'gs://"},
		"azure": {"bigquery.sql": "'azure://", "snowflake.sql": "'azure://", "duckdb.sql": "'az://", "databricks.sql": "'abfss://", "fabric.sql": "'https://", loadsql.TableScriptTrino: "'abfss://"},
	}[store]
	for _, w := range append(want, loadsql.TableScriptDuckDB, loadsql.TableScriptSnowflake, loadsql.TableScriptTrino, loadsql.TableScriptSpark) {
		if _, ok := g.scripts[w]; !ok {
			t.Errorf("%s: _load/ lacks %s (has %v)", store, w, slices.Sorted(maps.Keys(g.scripts)))
		}
	}
	for name, body := range g.scripts {
		if strings.HasPrefix(name, "athena") || strings.HasPrefix(name, "redshift") {
			t.Errorf("%s: _load/ holds %s, for an engine that reads S3 only", store, name)
		}
		if strings.Contains(body, "s3://") {
			t.Errorf("%s: %s names s3://:\n%s", store, name, body)
		}
		if u := uri[name]; u != "" && !strings.Contains(body, u) {
			t.Errorf("%s: %s does not read the files by %s...:\n%s", store, name, u, body)
		}
	}
	if !strings.Contains(g.readme, loadsql.Why(loadsql.EngineAthena, store, fileformat.Parquet, dataset.Dataset{})) {
		t.Errorf("%s: the bucket README does not say why there is no Athena script:\n%s", store, g.readme)
	}
}

// layoutOf is keys with the Iceberg metadata files' random names replaced
// by their kind, and the load scripts (which differ by store) left out,
// sorted.
func layoutOf(keys []string) []string {
	var out []string
	for _, k := range keys {
		if strings.Contains(k, "/"+layout.LoadDir+"/") {
			continue
		}
		dir, base, _ := strings.Cut(k, "/metadata/")
		if base != "" && strings.HasSuffix(base, ".avro") {
			k = dir + "/metadata/<" + map[bool]string{true: "manifest list", false: "manifest"}[strings.HasPrefix(base, "snap-")] + ">.avro"
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// files is what a manifest says of its files, without the run's own ids.
func files(m *manifest.Manifest) []string {
	var out []string
	for _, f := range m.Files {
		out = append(out, fmt.Sprintf("%s %d rows %d bytes crc32c %s sha256 %s", underPrefix(f.Key), f.Rows, f.Bytes, f.CRC32C, f.SHA256))
	}
	return out
}

func underPrefix(key string) string { return key[strings.Index(key, "/v1/"):] }

// newGCSBucket creates a bucket on fake-gcs-server srv.
func newGCSBucket(e *env, srv *serverproc.Process, name string) error {
	return buckettest.GCSCreateBucket(e.ctx, srv, name)
}
