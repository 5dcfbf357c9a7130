package loadsql

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// TestTableScripts: each table-format script names the table by its
// location, selects the folder's day through the partition column with the
// engine's literals, and keeps semicolons out of comments.
func TestTableScripts(t *testing.T) {
	day := civil.MustParse("2026-03-01")
	for _, tc := range []struct {
		ds   string
		want map[string][]string
	}{
		{"events", map[string][]string{
			TableScriptDuckDB:    {"iceberg_scan('s3://b/p/acct_x/v1/events')", `"occurred_at" >= TIMESTAMPTZ '2026-03-01 00:00:00+00' AND "occurred_at" < TIMESTAMPTZ '2026-03-02 00:00:00+00'`},
			TableScriptSnowflake: {"METADATA_FILE_PATH = 'p/acct_x/v1/events/metadata/v<N>.metadata.json'", "ALTER ICEBERG TABLE events REFRESH", "occurred_at >= TIMESTAMP_TZ '2026-03-01"},
			TableScriptTrino:     {"table_location => 's3://b/p/acct_x/v1/events'", "FROM iceberg.daybook.\"events\""},
			TableScriptSpark:     {"warehouse = s3://b/p/acct_x", "FROM daybook.`v1`.`events`"},
		}},
		{"daily_stats", map[string][]string{
			TableScriptDuckDB: {"iceberg_scan('s3://b/p/acct_x/v1/daily_stats')", `"stat_date" = DATE '2026-03-01'`},
		}},
	} {
		ds, err := datasettest.Example(t).Get(tc.ds)
		if err != nil {
			t.Fatal(err)
		}
		files, err := TableScripts(ds, Partition{Bucket: "b", Day: day}, "p/acct_x/v1/"+tc.ds)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 4 {
			t.Fatalf("%d scripts", len(files))
		}
		for name, wants := range tc.want {
			s := string(files[name])
			for _, w := range wants {
				if !strings.Contains(s, w) {
					t.Errorf("%s %s lacks %q:\n%s", tc.ds, name, w, s)
				}
			}
		}
		for name, b := range files {
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "--") && strings.Contains(line, ";") {
					t.Errorf("%s: a comment holds a semicolon: %s", name, line)
				}
			}
		}
	}
	if _, err := TableScripts(dataset.Dataset{Name: "x", PartitionColumn: "nope"}, Partition{Bucket: "b", Day: day}, "p/v1/x"); err == nil {
		t.Error("a partition column that is no column was accepted")
	}
	ds, _ := datasettest.Example(t).Get("events")
	if _, err := TableScripts(ds, Partition{Bucket: "b", Day: day}, "p'/v1/events"); err == nil {
		t.Error("a location with a quote was accepted")
	}
}

// TestTableScriptsPerStore: on GCS and Azure each table-format script
// names the table by its engine's URI of the store, never s3://: DuckDB
// gs:// and az:// (with the store's secret), Snowflake's external volume
// gcs:// and azure://, Trino and Spark gs:// and abfss://.
func TestTableScriptsPerStore(t *testing.T) {
	ds, err := datasettest.Example(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	day := civil.MustParse("2026-03-01")
	for _, tc := range []struct {
		p    Partition
		want map[string][]string
	}{
		{Partition{Store: StoreGCS, Bucket: "acme-gcs", Day: day}, map[string][]string{
			TableScriptDuckDB:    {"iceberg_scan('gs://acme-gcs/p/acct_x/v1/events')", "CREATE SECRET (TYPE gcs"},
			TableScriptSnowflake: {"storage base URL is gcs://acme-gcs/,"},
			TableScriptTrino:     {"table_location => 'gs://acme-gcs/p/acct_x/v1/events'"},
			TableScriptSpark:     {"warehouse = gs://acme-gcs/p/acct_x"},
		}},
		{Partition{Store: StoreAzure, Bucket: "exports", AzureAccount: "acmedata", Day: day}, map[string][]string{
			TableScriptDuckDB:    {"iceberg_scan('az://acmedata.blob.core.windows.net/exports/p/acct_x/v1/events')", "CREATE SECRET (TYPE azure, PROVIDER credential_chain, ACCOUNT_NAME 'acmedata')"},
			TableScriptSnowflake: {"storage base URL is azure://acmedata.blob.core.windows.net/exports/,"},
			TableScriptTrino:     {"table_location => 'abfss://exports@acmedata.dfs.core.windows.net/p/acct_x/v1/events'"},
			TableScriptSpark:     {"warehouse = abfss://exports@acmedata.dfs.core.windows.net/p/acct_x"},
		}},
	} {
		files, err := TableScripts(ds, tc.p, "p/acct_x/v1/events")
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			s := string(b)
			if strings.Contains(s, "s3://") {
				t.Errorf("%s %s names s3://:\n%s", tc.p.Store, name, s)
			}
			for _, w := range tc.want[name] {
				if !strings.Contains(s, w) {
					t.Errorf("%s %s lacks %q:\n%s", tc.p.Store, name, w, s)
				}
			}
		}
	}
	if _, err := TableScripts(ds, Partition{Store: StoreAzure, Bucket: "exports", Day: day}, "p/v1/events"); err == nil {
		t.Error("an Azure partition without its storage account was accepted")
	}
}
