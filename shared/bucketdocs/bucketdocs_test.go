package bucketdocs

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/leakcheck"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/loadsql"
	"github.com/daybook-dev/daybook/shared/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func catalog(t *testing.T) []dataset.Dataset {
	t.Helper()
	cat := datasettest.Example(t).Datasets()
	return cat
}

// goldenInput is the account the golden READMEs describe.
func goldenInput(t *testing.T, format fileformat.Format) Input {
	return Input{
		Bucket: "acme-exports", Prefix: "tenants/acct_7f3a9c", Format: format,
		TimeZone: "Europe/Berlin", SettleDelay: 2 * time.Hour, Datasets: catalog(t),
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./shared/bucketdocs -update)", err)
	}
	if !bytes.Equal(want, got) {
		w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
		for i := range max(len(w), len(g)) {
			if i >= len(w) || i >= len(g) || w[i] != g[i] {
				t.Fatalf("%s differs from the generated document at line %d (review, then go test ./shared/bucketdocs -update)", path, i+1)
			}
		}
	}
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		input func(t *testing.T) Input
	}{
		{"README.md", func(t *testing.T) Input { return goldenInput(t, fileformat.Parquet) }},
		{"README.ndjson.md", func(t *testing.T) Input {
			in := goldenInput(t, fileformat.NDJSON)
			in.TimeZone, in.SettleDelay, in.MaxFileBytes = "UTC", 90*time.Minute, 64<<20
			in.Datasets = in.Datasets[1:2] // profiles only
			return in
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := README(tc.input(t))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, got)
		})
	}
	for _, ds := range catalog(t) {
		t.Run("schema/"+ds.Name, func(t *testing.T) {
			got, err := Schema(ds)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("schemas", ds.Name+".json"), got)
		})
	}
}

// TestDeterministic: the same input gives the same bytes, and any change a
// customer should see changes them.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	base := goldenInput(t, fileformat.Parquet)
	first, err := Files(base)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again, err := Files(goldenInput(t, fileformat.Parquet))
		if err != nil {
			t.Fatal(err)
		}
		if Hash(again) != Hash(first) || !slices.EqualFunc(again, first, func(a, b File) bool { return a.Key == b.Key && bytes.Equal(a.Body, b.Body) }) {
			t.Fatal("two renderings of the same input differ")
		}
	}
	for _, tc := range []struct {
		name   string
		change func(in *Input)
	}{
		{"format", func(in *Input) { in.Format = fileformat.NDJSON }},
		{"codec", func(in *Input) { in.Compression = fileformat.Zstd }},
		{"time zone", func(in *Input) { in.TimeZone = "UTC" }},
		{"settle delay", func(in *Input) { in.SettleDelay = time.Hour }},
		{"file size", func(in *Input) { in.MaxFileBytes = 128 << 20 }},
		{"one dataset fewer", func(in *Input) { in.Datasets = in.Datasets[:2] }},
		{"dataset order", func(in *Input) { slices.Reverse(in.Datasets) }},
		{"a column appended", func(in *Input) {
			in.Datasets[0].Version++
			in.Datasets[0].Columns = append(in.Datasets[0].Columns, dataset.Column{Name: "channel", Type: dataset.Type{Kind: dataset.KindString},
				Nullable: true, Since: in.Datasets[0].Version, Description: "Marketing channel, if known."})
			for k, q := range in.Datasets[0].Queries { // the queries select the declared columns
				in.Datasets[0].Queries[k] = strings.Replace(q, "attributes FROM", "attributes, channel FROM", 1)
			}
		}},
		{"a description", func(in *Input) { in.Datasets[2].Columns[1].Description += " Reworded." }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := goldenInput(t, fileformat.Parquet)
			tc.change(&in)
			files, err := Files(in)
			if err != nil {
				t.Fatal(err)
			}
			if Hash(files) == Hash(first) {
				t.Error("the change left the documents' hash unchanged")
			}
		})
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	in := goldenInput(t, fileformat.Parquet)
	files, err := Files(in)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range files {
		keys = append(keys, f.Key+" "+f.ContentType)
	}
	want := []string{
		"tenants/acct_7f3a9c/v1/_schemas/events.json application/json",
		"tenants/acct_7f3a9c/v1/_schemas/profiles.json application/json",
		"tenants/acct_7f3a9c/v1/_schemas/daily_stats.json application/json",
		"tenants/acct_7f3a9c/v1/README.md text/markdown; charset=utf-8", // last: it marks the set
	}
	if !slices.Equal(keys, want) {
		t.Errorf("files\n got %q\nwant %q", keys, want)
	}
}

func TestInvalidInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(in *Input)
		want   string
	}{
		{"no bucket", func(in *Input) { in.Bucket = "" }, "Bucket"},
		{"bad prefix", func(in *Input) { in.Prefix = "a/../b" }, `".."`},
		{"no format", func(in *Input) { in.Format = "" }, "Format"},
		{"codec of another format", func(in *Input) { in.Compression = fileformat.Gzip }, "Compression"},
		{"no time zone", func(in *Input) { in.TimeZone = "" }, "TimeZone"},
		{"no datasets", func(in *Input) { in.Datasets = nil }, "no datasets"},
		{"a dataset twice", func(in *Input) { in.Datasets = append(in.Datasets, in.Datasets[0]) }, "twice"},
		{"an invalid dataset", func(in *Input) { in.Datasets[0].Columns = nil }, "no columns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := goldenInput(t, fileformat.Parquet)
			tc.change(&in)
			_, err := Files(in)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Files = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

// TestSchemaDoc checks each schema document against the catalog it
// describes: every column, in order, with its type, nullability, since and
// a description; the partition semantics, mode and read with their meanings.
func TestSchemaDoc(t *testing.T) {
	t.Parallel()
	for _, ds := range catalog(t) {
		t.Run(ds.Name, func(t *testing.T) {
			b, err := Schema(ds)
			if err != nil {
				t.Fatal(err)
			}
			var doc SchemaDoc
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&doc); err != nil {
				t.Fatal(err)
			}
			if doc.FormatVersion != FormatVersion || doc.Contract != "v1" || doc.Dataset != ds.Name || doc.SchemaVersion != ds.Version ||
				doc.Description != ds.Description || doc.Partition.Column != "dt" || doc.Partition.Semantics != ds.Partition ||
				doc.Mode.Value != ds.Mode || doc.Read.Value != ds.Read {
				t.Errorf("header %+v", doc)
			}
			for what, s := range map[string]string{"partition": doc.Partition.Meaning, "mode": doc.Mode.Meaning, "read": doc.Read.Meaning} {
				if s == "" {
					t.Errorf("%s meaning is empty", what)
				}
			}
			if got := doc.CurrentState != nil; got != (ds.Partition == dataset.PartitionActivity) {
				t.Errorf("current_state present = %v for a %s dataset", got, ds.Partition)
			}
			if len(doc.Columns) != len(ds.Columns) {
				t.Fatalf("%d columns, catalog has %d", len(doc.Columns), len(ds.Columns))
			}
			for i, c := range ds.Columns {
				want := SchemaColumn{Name: c.Name, Type: c.Type.String(), Nullable: c.Nullable, Description: c.Description, Since: c.SinceVersion()}
				if doc.Columns[i] != want || want.Description == "" {
					t.Errorf("column %d: %+v, want %+v with a description", i, doc.Columns[i], want)
				}
			}
		})
	}
}

// TestEveryValueDescribed: every enumeration value the catalog accepts and
// every load engine has its sentence, so a new one cannot ship undocumented.
func TestEveryValueDescribed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		what   string
		values []string
		text   map[string]string
	}{
		{"partition", []string{dataset.PartitionEventTime, dataset.PartitionActivity, dataset.PartitionStatDate, dataset.PartitionSnapshot}, partitionMeaning},
		{"mode", []string{dataset.ModeIncrementalAppend, dataset.ModeFullRefresh}, modeMeaning},
		{"read", []string{dataset.ReadUnionAllPartitions, dataset.ReadLatestSnapshot}, readMeaning},
		{"engine", loadsql.Engines, engineText},
	} {
		for _, v := range tc.values {
			if strings.TrimSpace(tc.text[v]) == "" {
				t.Errorf("%s %q has no text", tc.what, v)
			}
		}
		if len(tc.text) != len(tc.values) {
			t.Errorf("%s: %d texts for %d values", tc.what, len(tc.text), len(tc.values))
		}
	}
	var kinds []dataset.Kind
	for _, r := range typeRows {
		kinds = append(kinds, r.kind)
	}
	for _, k := range []dataset.Kind{dataset.KindDate, dataset.KindTimestamp, dataset.KindInt64, dataset.KindDouble,
		dataset.KindDecimal, dataset.KindBoolean, dataset.KindString, dataset.KindJSON} {
		if !slices.Contains(kinds, k) {
			t.Errorf("type %s is not in the README's type table", k)
		}
	}
}

var codeRE = regexp.MustCompile(`^[a-z][a-z_]*[a-z]$`)

// TestMissingReasons: the README documents the delivery manifest's codes
// and sentences from their one home (shared/manifest), every one of them,
// and the fields a missing entry carries.
func TestMissingReasons(t *testing.T) {
	t.Parallel()
	b, err := README(goldenInput(t, fileformat.Parquet))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, c := range manifest.Codes() {
		if !codeRE.MatchString(string(c)) {
			t.Errorf("code %q: want lower snake case", c)
		}
		if row := "| `" + string(c) + "` | " + c.Sentence() + " |"; !strings.Contains(readme, row) {
			t.Errorf("README lacks the row %q", row)
		}
	}
	for _, field := range []string{"`name`", "`state`", "`code`", "`cause`", "`reason`"} {
		if !strings.Contains(readme, field) {
			t.Errorf("README does not document the missing entry's %s", field)
		}
	}
}

func TestDurationLabel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{2 * time.Hour, "2 hours"}, {time.Hour, "1 hour"}, {90 * time.Minute, "1 hour 30 minutes"},
		{time.Minute, "1 minute"}, {45 * time.Minute, "45 minutes"}, {30 * time.Second, "30s"},
	} {
		if got := durationLabel(tc.d); got != tc.want {
			t.Errorf("durationLabel(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	if got := arrival(0); strings.Contains(got, "more") {
		t.Errorf("arrival(0) = %q", got)
	}
	for _, tc := range []struct {
		n    int64
		want string
	}{{256 << 20, "256 MiB"}, {1 << 30, "1 GiB"}, {1536 << 20, "1536 MiB"}, {1000, "1000 bytes"}} {
		if got := sizeLabel(tc.n); got != tc.want {
			t.Errorf("sizeLabel(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestNoInternals scans every document of every shipped dataset, in both
// formats, for details internal to the sender.
func TestNoInternals(t *testing.T) {
	t.Parallel()
	ins, err := leakcheck.Internals()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"inserted_at", "activity_date", "WHERE account_id"} {
		if !slices.Contains(ins, want) {
			t.Fatalf("leakcheck does not refuse %q (it refuses %q)", want, ins)
		}
	}
	// A dataset's declared relation is published in its provenance.
	if slices.Contains(ins, "profile_activity") {
		t.Errorf("leakcheck refuses the relation profile_activity, which provenance names")
	}
	for _, format := range fileformat.Formats() {
		files, err := Files(goldenInput(t, format))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			for _, p := range leakcheck.Scan(f.Key, f.Body) {
				t.Error(p)
			}
		}
	}
	// The scan itself finds what it looks for.
	for _, tc := range []struct{ key, body string }{
		{"p/v1/README.md", "see F7"},
		{"p/v1/README.md", "as F3 requires"},
		{"p/v1/_schemas/events.json", `"from": "inserted_at"`},
		{"p/v1/events/dt=2026-01-01/_manifest.json", `"query": "SELECT 1"`},
		{"p/v1/_manifests/dt=2026-01-01/manifest.json", `"owner": "123456789012"`},
		// A README's sql examples may query; its prose may not carry SQL.
		{"p/v1/README.md", "we run SELECT * FROM events\n```sql\nSELECT 1;\n```\n"},
		{"p/v1/README.md", "```sql\nSELECT day FROM read_json('x') WHERE account_id = 'a'\n```\n"},
	} {
		if len(leakcheck.Scan(tc.key, []byte(tc.body))) == 0 {
			t.Errorf("Scan(%s, %q) found nothing", tc.key, tc.body)
		}
	}
	if p := leakcheck.Scan("p/v1/README.md", []byte("see below:\n```sql\nSELECT dataset FROM read_json('x');\n```\n")); len(p) != 0 {
		t.Errorf("a README's sql example was refused: %v", p)
	}
	if p := leakcheck.Scan("p/v1/events/dt=2026-01-01/_load/duckdb.sql", []byte("INSERT INTO t SELECT * FROM read_parquet('x')")); len(p) != 0 {
		t.Errorf("a load script's own SQL was refused: %v", p)
	}
}

// TestDeliveredRoundTrip: a schema document reads back into the contract
// it was rendered from, so Compatible sees what the customer has.
func TestDeliveredRoundTrip(t *testing.T) {
	t.Parallel()
	cat := datasettest.Example(t).Datasets()
	for _, ds := range cat {
		b, err := Schema(ds)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Delivered(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := dataset.Compatible(got, ds); err != nil {
			t.Errorf("%s: %v", ds.Name, err)
		}
		if got.Version != ds.Version || len(got.Columns) != len(ds.Columns) || got.Partition != ds.Partition || got.IDColumn != ds.IDColumn {
			t.Errorf("%s: read back %+v", ds.Name, got)
		}
	}
	if _, err := Delivered([]byte(`{"dataset":"x"}`)); err == nil {
		t.Fatal("an empty schema document was read")
	}
}

// TestFiftyDatasetDocs: with a 50-dataset catalog the README names every
// dataset and there is one schema document for each.
func TestFiftyDatasetDocs(t *testing.T) {
	t.Parallel()
	s, err := dataset.Parse(datasettest.GeneratedCatalog(50))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files(Input{Bucket: "b", Prefix: "p", Format: "parquet", TimeZone: "UTC", Datasets: s.Datasets()})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 51 {
		t.Fatalf("%d files, want 50 schema documents and the README", len(files))
	}
	readme := string(files[50].Body)
	for _, name := range s.Names() {
		if !strings.Contains(readme, "`"+name+"`") {
			t.Errorf("the README does not name %s", name)
		}
	}
}

// TestReadmeNamesTheStoresEngines: a bucket in GCS or Azure documents the
// scripts its partitions carry, reading the store by its own URIs, and
// says for each engine without one why: a reader never looks for a
// script that is not there.
func TestReadmeNamesTheStoresEngines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		store, account string
		format         fileformat.Format
		has, hasNot    []string
	}{
		{loadsql.StoreGCS, "", fileformat.Parquet,
			[]string{"`_load/bigquery.sql`", "straight from `gs://`", "`_load/snowflake.sql`", "(`gcs://`)", "Reading `gs://`", `spark.read.parquet("gs://acme-exports/`,
				"- Athena / Trino: Athena reads Amazon S3 only.", "- Redshift: Redshift's COPY reads Amazon S3", "- Microsoft Fabric: Fabric's COPY INTO reads Azure storage"},
			[]string{"`_load/athena.sql`", "`_load/redshift.sql`", "`_load/fabric.sql`", "s3://", "s3a://"}},
		{loadsql.StoreAzure, "acmedata", fileformat.Parquet,
			[]string{"`_load/fabric.sql`", "`_load/databricks.sql`", "Omni connection to Azure", "(`azure://`)", "Reading `az://`",
				`spark.read.parquet("abfss://acme-exports@acmedata.dfs.core.windows.net/`, "- Athena / Trino: Athena reads Amazon S3 only."},
			[]string{"`_load/athena.sql`", "`_load/redshift.sql`", "s3://", "s3a://"}},
		{loadsql.StoreAzure, "acmedata", fileformat.NDJSON,
			[]string{"`_load/databricks.sql`", "- Microsoft Fabric: Fabric's COPY INTO reads Parquet and CSV files, not JSON."},
			[]string{"`_load/fabric.sql`"}},
	}
	for _, c := range cases {
		in := goldenInput(t, c.format)
		in.Store, in.AzureAccount = c.store, c.account
		b, err := README(in)
		if err != nil {
			t.Fatal(err)
		}
		// The Loading section (the rest of the README names the bucket's
		// URIs as the stores' drivers give them).
		s := string(b)
		s = s[strings.Index(s, "## Loading"):]
		s = s[:strings.Index(s[3:], "\n## ")+3]
		for _, w := range c.has {
			if !strings.Contains(s, w) {
				t.Errorf("%s %s README lacks %q", c.store, c.format, w)
			}
		}
		for _, w := range c.hasNot {
			if strings.Contains(s, w) {
				t.Errorf("%s %s README has %q", c.store, c.format, w)
			}
		}
	}
}

// TestQuickStartPerStore: a bucket in GCS or Azure gets a Quick start in
// its own CLI and DuckDB secret, whose local copy points the scripts' own
// URIs (gs://, az://) at the copy; nothing of S3 is left in it. (The
// end-to-end test runs each store's local-copy block; this one names the
// commands.)
func TestQuickStartPerStore(t *testing.T) {
	t.Parallel()
	cases := []struct {
		store, account string
		has            []string
	}{
		{loadsql.StoreGCS, "", []string{
			"gcloud storage ls gs://acme-exports/tenants/acct_7f3a9c/v1/_manifests/",
			"gcloud storage cat gs://acme-exports/tenants/acct_7f3a9c/v1/_manifests/dt=$day/manifest.json",
			"gcloud storage cp gs://acme-exports/tenants/acct_7f3a9c/v1/",
			`CREATE SECRET (TYPE gcs, KEY_ID '$GCS_HMAC_ID', SECRET '$GCS_HMAC_SECRET');`,
			"gcloud storage rsync --recursive gs://acme-exports/tenants/acct_7f3a9c ./copy/tenants/acct_7f3a9c",
			"sed 's#gs://acme-exports/#./copy/#g'"}},
		{loadsql.StoreAzure, "acmedata", []string{
			"az storage blob list --account-name acmedata --container-name acme-exports --auth-mode login --prefix tenants/acct_7f3a9c/v1/_manifests/ --delimiter / --num-results '*'",
			"az storage blob download --account-name acmedata --container-name acme-exports --auth-mode login --name tenants/acct_7f3a9c/v1/_manifests/dt=$day/manifest.json --file /dev/stdout -o none",
			`CREATE SECRET (TYPE azure, PROVIDER credential_chain, ACCOUNT_NAME 'acmedata');`,
			"az storage blob download-batch --account-name acmedata --source acme-exports --pattern 'tenants/acct_7f3a9c/*' --destination ./copy --auth-mode login",
			"sed 's#az://acmedata.blob.core.windows.net/acme-exports/#./copy/#g'"}},
	}
	for _, c := range cases {
		in := goldenInput(t, fileformat.Parquet)
		in.Store, in.AzureAccount = c.store, c.account
		b, err := README(in)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		s = s[strings.Index(s, "## Quick start"):]
		s = s[:strings.Index(s[3:], "\n## ")+3]
		for _, w := range c.has {
			if !strings.Contains(s, w) {
				t.Errorf("%s Quick start lacks %q", c.store, w)
			}
		}
		for _, w := range []string{"aws s3", "s3://", "TYPE s3"} {
			if strings.Contains(s, w) {
				t.Errorf("%s Quick start has %q", c.store, w)
			}
		}
	}
}
