package loadsql

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Table-format scripts: written beside the load scripts when the account
// keeps an Iceberg table of the dataset (shared/icetable). They query the
// table in place instead of loading the folder: the table's location is
// the dataset's folder, <prefix>/<contract>/<dataset>, its metadata in metadata/
// (vN.metadata.json and version-hint.text), so no catalog is needed.
// Each selects the partition's day through the partition column; drop the
// WHERE clause to query every day.
//
//	DuckDB iceberg_scan:      https://duckdb.org/docs/stable/core_extensions/iceberg/overview
//	Snowflake object store:   https://docs.snowflake.com/en/user-guide/tables-iceberg-create#create-an-iceberg-table-from-iceberg-files-in-object-storage
//	Trino register_table:     https://trino.io/docs/current/connector/iceberg.html#register-table
//	Spark Hadoop catalog:     https://iceberg.apache.org/docs/latest/spark-configuration/
const (
	TableScriptDuckDB    = "duckdb_iceberg.sql"
	TableScriptSnowflake = "snowflake_iceberg.sql"
	TableScriptTrino     = "trino_iceberg.sql"
	TableScriptSpark     = "spark_iceberg.sql"
)

// Placeholders of the table-format scripts.
const (
	// SnowflakeExternalVolume is an external volume whose storage base URL
	// is the bucket root (s3://<bucket>/, gcs://<bucket>/ or
	// azure://<account>.blob.core.windows.net/<container>/).
	SnowflakeExternalVolume = "<EXTERNAL_VOLUME>"
	// MetadataVersion is the number in metadata/version-hint.text when the
	// script runs (the table's latest metadata version).
	MetadataVersion = "<N>"
)

// TableScripts renders the table-format scripts of one partition: ds's
// table at location (a key, no trailing slash) in the partition's bucket
// on its store (p's Store, Bucket and AzureAccount), filtered to p's Day.
// Each engine names the table by its own URI of the store (storeBase):
// DuckDB gs:// or az://, Snowflake's external volume gcs:// or azure://,
// Trino and Spark gs:// or abfss://.
func TableScripts(ds dataset.Dataset, p Partition, location string) (map[string][]byte, error) {
	col, ok := ds.Column(ds.PartitionColumn)
	if !ok {
		return nil, fmt.Errorf("%w: dataset %s: partition_column %q is not a column", ErrInvalid, ds.Name, ds.PartitionColumn)
	}
	if err := checkStore(p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	bucket, day := p.Bucket, p.Day
	if strings.ContainsAny(location, "'\\;") || strings.ContainsAny(bucket, "'\\;") {
		return nil, fmt.Errorf("%w: table location %s%s has a quote, backslash or semicolon", ErrInvalid, storeBase(EngineDuckDB, p), location)
	}
	// Trino and Spark read S3 by s3://, GCS by gs:// and Azure by abfss://,
	// as Databricks does.
	uri, hadoop := storeBase(EngineDuckDB, p)+location, storeBase(EngineDatabricks, p)+location
	next := day.AddDays(1)
	// The day's window on the partition column, per engine's literals.
	where := func(quote func(string) string, ts, date string) string {
		c := quote(col.Name)
		if col.Type.Kind == dataset.KindDate {
			return fmt.Sprintf("%s = %s '%s'", c, date, day)
		}
		return fmt.Sprintf("%s >= %s '%s 00:00:00+00' AND %s < %s '%s 00:00:00+00'", c, ts, day, c, ts, next)
	}
	cols := func(quote func(string) string) string {
		names := make([]string, len(ds.Columns))
		for i, c := range ds.Columns {
			names[i] = quote(c.Name)
		}
		return strings.Join(names, ", ")
	}
	ns, table := location[:max(0, strings.LastIndexByte(location, '/'))], ds.Name
	warehouse := ns[:max(0, strings.LastIndexByte(ns, '/'))]
	metaPath := location + "/metadata/v" + MetadataVersion + ".metadata.json"
	header := func(engine string) string {
		return fmt.Sprintf("-- daybook: query the %s Iceberg table in place with %s (no load step).\n"+
			"-- Table: %s (metadata in metadata/, the latest version named by metadata/version-hint.text).\n"+
			"-- This selects %s, the day of this folder: drop the WHERE clause for every day.\n", ds.Name, engine, hadoop, day)
	}
	out := map[string][]byte{}
	out[TableScriptDuckDB] = []byte(header("DuckDB") +
		"INSTALL iceberg;\nLOAD iceberg;\n" +
		"-- Credentials: " + (&gen{p: p}).duckdbSecret()[1][4:] + " or your own secret.\n" +
		fmt.Sprintf("SELECT %s\nFROM iceberg_scan('%s')\nWHERE %s;\n", cols(quoteDouble), uri, where(quoteDouble, "TIMESTAMPTZ", "DATE")))
	out[TableScriptSnowflake] = []byte(header("Snowflake") +
		"-- Replace " + SnowflakeExternalVolume + " by an external volume whose storage base URL is " + storeBase(EngineSnowflake, p) + ",\n" +
		"-- and " + MetadataVersion + " by the number in metadata/version-hint.text. Run the REFRESH again to see newer days.\n" +
		"CREATE CATALOG INTEGRATION IF NOT EXISTS daybook_object_store CATALOG_SOURCE = OBJECT_STORE TABLE_FORMAT = ICEBERG ENABLED = TRUE;\n" +
		fmt.Sprintf("CREATE ICEBERG TABLE IF NOT EXISTS %s\n  EXTERNAL_VOLUME = '%s'\n  CATALOG = 'daybook_object_store'\n  METADATA_FILE_PATH = '%s';\n",
			quoteSnowflake(table), SnowflakeExternalVolume, metaPath) +
		fmt.Sprintf("ALTER ICEBERG TABLE %s REFRESH '%s';\n", quoteSnowflake(table), metaPath) +
		fmt.Sprintf("SELECT %s\nFROM %s\nWHERE %s;\n", cols(quoteSnowflake), quoteSnowflake(table), where(quoteSnowflake, "TIMESTAMP_TZ", "DATE")))
	out[TableScriptTrino] = []byte(header("Trino") +
		"-- The iceberg catalog is Trino's Iceberg connector. register_table records the latest metadata file:\n" +
		"-- after newer days arrive, unregister_table and register_table again.\n" +
		fmt.Sprintf("CALL iceberg.system.register_table(schema_name => 'daybook', table_name => '%s', table_location => '%s');\n", table, hadoop) +
		fmt.Sprintf("SELECT %s\nFROM iceberg.daybook.%s\nWHERE %s;\n", cols(quoteDouble), quoteDouble(table), where(quoteDouble, "TIMESTAMP", "DATE")))
	out[TableScriptSpark] = []byte(header("Spark SQL") +
		"-- A Hadoop catalog reads the table by its path, as it is:\n" +
		"--   spark.sql.catalog.daybook = org.apache.iceberg.spark.SparkCatalog\n" +
		"--   spark.sql.catalog.daybook.type = hadoop\n" +
		fmt.Sprintf("--   spark.sql.catalog.daybook.warehouse = %s%s\n", storeBase(EngineDatabricks, p), warehouse) +
		"-- Only read through it: daybook is the table's one writer.\n" +
		fmt.Sprintf("SELECT %s\nFROM daybook.%s.%s\nWHERE %s;\n", cols(quoteAthenaDDL), quoteAthenaDDL(ns[len(warehouse)+1:]), quoteAthenaDDL(table),
			where(quoteAthenaDDL, "TIMESTAMP", "DATE")))
	return out, nil
}
