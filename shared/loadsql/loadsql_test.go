package loadsql

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const goldenBucket = "acme-exports"

// syntheticDataset has every supported type and reserved-word names, in a
// dataset called `group`.
func syntheticDataset() dataset.Dataset {
	ty := func(k dataset.Kind) dataset.Type { return dataset.Type{Kind: k} }
	return dataset.Dataset{
		Name: "group", Version: 2, Partition: dataset.PartitionEventTime,
		Mode: dataset.ModeIncrementalAppend, Read: dataset.ReadUnionAllPartitions,
		Columns: []dataset.Column{
			{Name: "id", Type: ty(dataset.KindInt64)},
			{Name: "order", Type: ty(dataset.KindString)},
			{Name: "select", Type: ty(dataset.KindBoolean), Nullable: true},
			{Name: "date", Type: ty(dataset.KindDate)},
			{Name: "user", Type: ty(dataset.KindString), Nullable: true},
			{Name: "timestamp", Type: ty(dataset.KindTimestamp)},
			{Name: "value", Type: ty(dataset.KindDouble), Nullable: true},
			{Name: "amount", Type: dataset.DecimalType(18, 2), Nullable: true},
			{Name: "big", Type: dataset.DecimalType(38, 10), Nullable: true},
			{Name: "attributes", Type: ty(dataset.KindJSON), Nullable: true},
		},
	}
}

func mustDay(t testing.TB, s string) civil.Date {
	t.Helper()
	d, err := civil.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// goldenPartition is a two-file partition of ds on 2026-11-28, generation 3.
func goldenPartition(t testing.TB, ds dataset.Dataset, format fileformat.Format) Partition {
	day := mustDay(t, "2026-11-28")
	prefix := "tenants/acct_7f3a9c/v1/" + ds.Name + "/dt=2026-11-28/"
	ext := format.Extension()
	p := Partition{Dataset: ds, Day: day, Generation: 3, Format: format, Bucket: goldenBucket, PartitionPrefix: prefix,
		Files: []File{
			{Key: prefix + "part-00000" + ext, Rows: 1000, Bytes: 268435456},
			{Key: prefix + "part-00001" + ext, Rows: 250, Bytes: 1048576},
		}}
	if format == fileformat.Parquet {
		p.Compression = fileformat.Snappy
	}
	return p
}

// goldenAccount is the Azure storage account of the golden partitions on
// Azure.
const goldenAccount = "acmedata"

// onStore moves p to store (the bucket is the GCS bucket or Azure
// container of the same name).
func onStore(p Partition, store string) Partition {
	p.Store = store
	if store == StoreAzure {
		p.AzureAccount = goldenAccount
	}
	return p
}

// forEngine returns p on a store engine reads (S3 for all but Fabric and
// Databricks, which read Azure), and whether engine writes a script for
// it at all (Fabric: not for NDJSON or lists).
func forEngine(engine string, p Partition) (Partition, bool) {
	if engine == EngineFabric || engine == EngineDatabricks {
		p = onStore(p, StoreAzure)
	}
	return p, Why(engine, p.Store, p.Format, p.Dataset) == ""
}

func goldenDatasets(t *testing.T) []dataset.Dataset {
	t.Helper()
	cat := datasettest.Example(t).Datasets()
	return append(cat, syntheticDataset())
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	path = filepath.Join("testdata", "golden", path)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./shared/loadsql -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the generated script (review, then go test ./shared/loadsql -update):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff shows the first differing line, enough to find a change.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n golden: %q\n    got: %q", i+1, wl, gl)
		}
	}
	return "(no line differs)"
}

func TestGolden(t *testing.T) {
	for _, ds := range goldenDatasets(t) {
		formats := []fileformat.Format{fileformat.Parquet}
		if ds.Name == "events" || ds.Name == "group" {
			formats = append(formats, fileformat.NDJSON)
		}
		for _, format := range formats {
			p := goldenPartition(t, ds, format)
			name := ds.Name
			if format == fileformat.NDJSON {
				name += ".ndjson"
			}
			for _, engine := range EnginesFor(StoreS3, format, ds) {
				t.Run(engine+"/"+name, func(t *testing.T) {
					got, err := Generate(engine, p)
					if err != nil {
						t.Fatal(err)
					}
					checkGolden(t, filepath.Join(engine, name+".sql"), got)
				})
			}
			t.Run("redshift-manifest/"+name, func(t *testing.T) {
				got, err := RedshiftCopyManifest(p)
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("redshift", name+".manifest"), string(got))
			})
		}
	}
	ds, err := datasettest.Example(t).Get("profiles")
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range EnginesFor(StoreS3, fileformat.Parquet, ds) {
		t.Run(engine+"/profiles.current_state", func(t *testing.T) {
			got, err := CurrentState(engine, goldenPartition(t, ds, fileformat.Parquet))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join(engine, "profiles.current_state.sql"), got)
		})
	}
}

// Every script carries the header the brief and the exporter rely on.
func TestHeader(t *testing.T) {
	for _, ds := range goldenDatasets(t) {
		for _, engine := range Engines {
			p, ok := forEngine(engine, goldenPartition(t, ds, fileformat.Parquet))
			if !ok {
				continue
			}
			s, err := Generate(engine, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"-- daybook load script for " + engine + ": generated by daybook, do not edit.\n",
				"-- dataset:        " + ds.Name + "\n",
				fmt.Sprintf("-- schema version: %d\n", ds.Version),
				"-- day:            2026-11-28",
				"-- generation:     3\n",
				"-- format:         parquet (snappy)\n",
			} {
				if !strings.Contains(s, want) {
					t.Errorf("%s/%s: header lacks %q", engine, ds.Name, want)
				}
			}
			if !strings.HasPrefix(s, "-- daybook load script") {
				t.Errorf("%s/%s: does not start with the header", engine, ds.Name)
			}
			// The script names every manifest file and no glob.
			if engine != EngineAthena && engine != EngineRedshift {
				for _, f := range p.Files {
					name := storeBase(engine, p) + f.Key
					if engine == EngineSnowflake || engine == EngineDatabricks {
						name = strings.TrimPrefix(f.Key, p.PartitionPrefix)
					}
					if !strings.Contains(s, "'"+name) {
						t.Errorf("%s/%s: does not name file %s", engine, ds.Name, name)
					}
				}
			}
			if strings.Contains(s, "*") {
				t.Errorf("%s/%s: script contains a glob", engine, ds.Name)
			}
		}
	}
}

func TestQuoteIdentifiers(t *testing.T) {
	tests := []struct {
		engine, name, want string
	}{
		{EngineAthena, "order", "`order`"},
		{EngineAthena, "event_id", "`event_id`"},
		{EngineAthena, "we`ird", "`we``ird`"},
		{EngineBigQuery, "select", "`select`"},
		{EngineBigQuery, "group", "`group`"},
		{EngineBigQuery, "we`ird", "`we\\`ird`"},
		{EngineSnowflake, "event_id", "event_id"},
		{EngineSnowflake, "order", `"ORDER"`},
		{EngineSnowflake, "select", `"SELECT"`},
		{EngineSnowflake, "date", `"DATE"`},
		{EngineSnowflake, "timestamp", `"TIMESTAMP"`},
		{EngineSnowflake, "user", `"USER"`},
		{EngineSnowflake, "value", `"VALUE"`},
		{EngineSnowflake, "group", `"GROUP"`},
		{EngineSnowflake, "my-project", `"MY-PROJECT"`},
		{EngineSnowflake, "1st", `"1ST"`},
		{EngineRedshift, "user", `"user"`},
		{EngineRedshift, "event_id", `"event_id"`},
		{EngineRedshift, `we"ird`, `"we""ird"`},
		{EngineDuckDB, "order", `"order"`},
		{EngineDuckDB, "date", `"date"`},
	}
	for _, tt := range tests {
		if got := identQuoter(tt.engine)(tt.name); got != tt.want {
			t.Errorf("%s quote(%q) = %s, want %s", tt.engine, tt.name, got, tt.want)
		}
	}
	// Athena DML (the current-state query) uses double quotes.
	ds := syntheticDataset()
	ds.Partition, ds.Read, ds.IDColumn, ds.OrderColumn = dataset.PartitionActivity, dataset.ReadLatestSnapshot, "user", "timestamp"
	q, err := CurrentState(EngineAthena, goldenPartition(t, ds, fileformat.Parquet))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(q, `PARTITION BY "user" ORDER BY "timestamp" DESC`) || !strings.Contains(q, `FROM "group"`) || strings.Contains(q, "`") {
		t.Errorf("athena current state is not double-quoted DML:\n%s", q)
	}
}

func TestQuoteLiterals(t *testing.T) {
	tests := []struct{ engine, in, want string }{
		{EngineDuckDB, `it's \x`, `'it''s \x'`},
		{EngineRedshift, `it's \x`, `'it''s \\x'`},
		{EngineSnowflake, `it's \x`, `'it''s \\x'`},
		{EngineBigQuery, `it's \x`, `'it\'s \\x'`},
		{EngineAthena, `it's \x`, `'it\'s \\x'`},
	}
	for _, tt := range tests {
		if got := literal(tt.engine, tt.in); got != tt.want {
			t.Errorf("%s literal(%q) = %s, want %s", tt.engine, tt.in, got, tt.want)
		}
	}
	// A key with a quote is escaped in the script, never breaking out.
	ds, _ := datasettest.Example(t).Get("events")
	p := goldenPartition(t, ds, fileformat.Parquet)
	p.PartitionPrefix = "o'brien/v1/events/dt=2026-11-28/"
	for i := range p.Files {
		p.Files[i].Key = p.PartitionPrefix + fmt.Sprintf("part-%05d.parquet", i)
	}
	s, err := Generate(EngineDuckDB, p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, `'s3://acme-exports/o''brien/v1/events/dt=2026-11-28/part-00000.parquet'`) {
		t.Errorf("quote not doubled:\n%s", s)
	}
	s, err = Generate(EngineSnowflake, p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, `FROM '@daybook_stage/o''brien/v1/events/dt=2026-11-28/'`) {
		t.Errorf("snowflake stage path with a quote not quoted:\n%s", s)
	}
}

func TestTableName(t *testing.T) {
	ds, _ := datasettest.Example(t).Get("events")
	p := goldenPartition(t, ds, fileformat.Parquet)
	p.TableName = "analytics.events_raw"
	want := map[string]string{
		EngineAthena:     "CREATE EXTERNAL TABLE IF NOT EXISTS `analytics`.`events_raw` (",
		EngineBigQuery:   "CREATE TABLE IF NOT EXISTS `analytics`.`events_raw` (",
		EngineSnowflake:  "CREATE TABLE IF NOT EXISTS analytics.events_raw (",
		EngineRedshift:   `CREATE TABLE IF NOT EXISTS "analytics"."events_raw" (`,
		EngineDuckDB:     `CREATE TABLE IF NOT EXISTS "analytics"."events_raw" (`,
		EngineFabric:     `CREATE TABLE [analytics].[events_raw] (`,
		EngineDatabricks: "CREATE TABLE IF NOT EXISTS `analytics`.`events_raw` (",
	}
	for _, engine := range Engines {
		p, _ := forEngine(engine, p)
		s, err := Generate(engine, p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(s, want[engine]) {
			t.Errorf("%s: want %q in\n%s", engine, want[engine], s)
		}
	}
	s, _ := Generate(EngineRedshift, p)
	if !strings.Contains(s, `CREATE TEMP TABLE "events_raw_daybook_stage"`) {
		t.Errorf("redshift staging table not named after the table:\n%s", s)
	}
}

func TestErrors(t *testing.T) {
	ds, _ := datasettest.Example(t).Get("events")
	good := goldenPartition(t, ds, fileformat.Parquet)
	tests := []struct {
		name   string
		engine string
		edit   func(p *Partition)
		want   string
	}{
		{"unknown engine", "postgres", func(p *Partition) {}, `engine "postgres"`},
		{"unknown format", EngineDuckDB, func(p *Partition) { p.Format = "csv" }, `Format "csv"`},
		{"no format", EngineDuckDB, func(p *Partition) { p.Format = "" }, `Format "": unknown format (want parquet or ndjson)`},
		{"no bucket", EngineDuckDB, func(p *Partition) { p.Bucket = "" }, "Bucket"},
		{"generation", EngineDuckDB, func(p *Partition) { p.Generation = 0 }, "Generation"},
		{"prefix day", EngineDuckDB, func(p *Partition) { p.Day = p.Day.AddDays(1) }, "PartitionPrefix"},
		{"prefix dataset", EngineDuckDB, func(p *Partition) { p.PartitionPrefix = "x/v1/other/dt=2026-11-28/" }, "PartitionPrefix"},
		{"no files", EngineDuckDB, func(p *Partition) { p.Files = nil }, "Files is empty"},
		{"file elsewhere", EngineDuckDB, func(p *Partition) { p.Files[0].Key = "elsewhere/part-00000.parquet" }, "Files[0].Key"},
		{"metadata file", EngineDuckDB, func(p *Partition) { p.Files[1].Key = p.PartitionPrefix + "_manifest.json" }, "Files[1].Key"},
		{"wrong extension", EngineDuckDB, func(p *Partition) { p.Format = fileformat.NDJSON }, "Files[0].Key"},
		{"duplicate file", EngineDuckDB, func(p *Partition) { p.Files[1].Key = p.Files[0].Key }, "listed twice"},
		{"bad table", EngineDuckDB, func(p *Partition) { p.TableName = "a b" }, "TableName"},
		{"dollar quote in table", EngineRedshift, func(p *Partition) { p.TableName = "a$$b" }, "must not contain $$"},
		{"dt column", EngineDuckDB, func(p *Partition) {
			p.Dataset.Columns = append(append([]dataset.Column(nil), p.Dataset.Columns...), dataset.Column{Name: "dt", Type: dataset.Type{Kind: dataset.KindDate}})
		}, `"dt" is reserved`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			p.Files = append([]File(nil), good.Files...)
			tt.edit(&p)
			_, err := Generate(tt.engine, p)
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
		})
	}
	if _, err := CurrentState(EngineDuckDB, good); err == nil || !strings.Contains(err.Error(), "activity") {
		t.Fatalf("CurrentState of an event_time dataset: err = %v", err)
	}
	if _, err := CurrentState("oracle", good); err == nil || !strings.Contains(err.Error(), `engine "oracle"`) {
		t.Fatalf("CurrentState of unknown engine: err = %v", err)
	}
}

func TestBigQueryDecimalTypes(t *testing.T) {
	for _, tt := range []struct {
		ty   dataset.Type
		want string
	}{
		{dataset.DecimalType(18, 2), "NUMERIC(18, 2)"},
		{dataset.DecimalType(38, 9), "NUMERIC(38, 9)"},
		{dataset.DecimalType(31, 2), "NUMERIC(31, 2)"},
		{dataset.DecimalType(32, 2), "BIGNUMERIC(32, 2)"},
		{dataset.DecimalType(38, 10), "BIGNUMERIC(38, 10)"},
	} {
		if got := bigqueryType(tt.ty); got != tt.want {
			t.Errorf("bigqueryType(%s) = %s, want %s", tt.ty, got, tt.want)
		}
	}
}

func TestSnowflakeFileChunks(t *testing.T) {
	ds, _ := datasettest.Example(t).Get("events")
	p := goldenPartition(t, ds, fileformat.Parquet)
	p.Files = nil
	for i := range 1500 {
		p.Files = append(p.Files, File{Key: fmt.Sprintf("%spart-%05d.parquet", p.PartitionPrefix, i), Rows: 1, Bytes: 1})
	}
	s, err := Generate(EngineSnowflake, p)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(s, "COPY INTO events"); n != 2 {
		t.Fatalf("%d COPY statements for 1500 files, want 2", n)
	}
	if strings.Count(s, "BEGIN;") != 1 || strings.Count(s, "DELETE FROM") != 1 {
		t.Fatal("want one transaction with one DELETE")
	}
}

// A dataset at contract v2 is loaded from its v2/ folder by every engine,
// and a partition prefix under v1/ is refused for it (and v2/ for a v1
// dataset): a script never mixes the two trees.
func TestContractRoot(t *testing.T) {
	v1, _ := datasettest.Example(t).Get("events")
	v2 := v1
	v2.Contract = "v2"
	for _, engine := range Engines {
		p, ok := forEngine(engine, goldenPartition(t, v2, fileformat.Parquet))
		if !ok {
			continue
		}
		if _, err := Generate(engine, p); err == nil || !strings.Contains(err.Error(), "must end in v2/events/dt=2026-11-28/") {
			t.Errorf("%s: v2 dataset under v1/: err = %v", engine, err)
		}
		p.PartitionPrefix = strings.Replace(p.PartitionPrefix, "/v1/", "/v2/", 1)
		for i := range p.Files {
			p.Files[i].Key = strings.Replace(p.Files[i].Key, "/v1/", "/v2/", 1)
		}
		sql, err := Generate(engine, p)
		if err != nil {
			t.Fatalf("%s: v2 dataset under v2/: %v", engine, err)
		}
		if strings.Contains(sql, "/v1/") || !strings.Contains(sql, "/v2/events/") {
			t.Errorf("%s: the v2 script does not read only v2/events/:\n%s", engine, sql)
		}
		q, _ := forEngine(engine, goldenPartition(t, v1, fileformat.Parquet))
		q.PartitionPrefix = p.PartitionPrefix
		q.Files = p.Files
		if _, err := Generate(engine, q); err == nil || !strings.Contains(err.Error(), "must end in v1/events/") {
			t.Errorf("%s: v1 dataset under v2/: err = %v", engine, err)
		}
	}
}

// TestGoldenStores: the scripts of a partition in GCS and in Azure, for
// every engine that reads the store (golden files under
// testdata/golden/<store>/), and no script for an engine that cannot: each
// refusal names why. S3's are TestGolden's.
func TestGoldenStores(t *testing.T) {
	profiles, err := datasettest.Example(t).Get("profiles")
	if err != nil {
		t.Fatal(err)
	}
	for _, store := range []string{StoreGCS, StoreAzure} {
		for _, ds := range goldenDatasets(t) {
			formats := []fileformat.Format{fileformat.Parquet}
			if ds.Name == "events" || ds.Name == "group" {
				formats = append(formats, fileformat.NDJSON)
			}
			for _, format := range formats {
				p := onStore(goldenPartition(t, ds, format), store)
				name := ds.Name
				if format == fileformat.NDJSON {
					name += ".ndjson"
				}
				for _, engine := range Engines {
					t.Run(store+"/"+engine+"/"+name, func(t *testing.T) {
						got, err := Generate(engine, p)
						if why := Why(engine, store, format, ds); why != "" {
							if err == nil || !strings.Contains(err.Error(), why) {
								t.Fatalf("Generate = %v, want the refusal %q", err, why)
							}
							return
						}
						if err != nil {
							t.Fatal(err)
						}
						checkGolden(t, filepath.Join(store, engine, name+".sql"), got)
					})
				}
				scripts, err := Scripts(p)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := scripts[RedshiftManifestName]; ok {
					t.Errorf("%s: a Redshift manifest for a partition Redshift cannot read", store)
				}
				if len(scripts) != len(EnginesFor(store, format, ds)) {
					t.Errorf("%s/%s: %d scripts, want one per engine of %v", store, name, len(scripts), EnginesFor(store, format, ds))
				}
			}
		}
		for _, engine := range EnginesFor(store, fileformat.Parquet, profiles) {
			if store == StoreGCS || engine == EngineFabric || engine == EngineDatabricks {
				t.Run(store+"/"+engine+"/profiles.current_state", func(t *testing.T) {
					got, err := CurrentState(engine, onStore(goldenPartition(t, profiles, fileformat.Parquet), store))
					if err != nil {
						t.Fatal(err)
					}
					checkGolden(t, filepath.Join(store, engine, "profiles.current_state.sql"), got)
				})
			}
		}
	}
	want := map[string][]string{
		StoreS3:    {EngineAthena, EngineBigQuery, EngineSnowflake, EngineRedshift, EngineDuckDB},
		StoreGCS:   {EngineBigQuery, EngineSnowflake, EngineDuckDB},
		StoreAzure: {EngineBigQuery, EngineSnowflake, EngineDuckDB, EngineFabric, EngineDatabricks},
	}
	for store, engines := range want {
		if got := EnginesFor(store, fileformat.Parquet, syntheticDataset()); !slices.Equal(got, engines) {
			t.Errorf("EnginesFor(%s) = %v, want %v", store, got, engines)
		}
	}
	if got := EnginesFor(StoreAzure, fileformat.NDJSON, syntheticDataset()); slices.Contains(got, EngineFabric) {
		t.Errorf("a Fabric script for NDJSON: %v", got)
	}
}
