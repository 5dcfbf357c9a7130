package bucketdocs

import (
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/loadsql"
)

// engineText is the README's paragraph for each engine a load script is
// generated for, keyed by loadsql engine name; every loadsql.Engines entry
// has one (the tests check it).
var engineText = map[string]string{
	loadsql.EngineAthena: "**Athena / Trino**: `_load/athena.sql` creates an external table over the dataset's folder, " +
		"partitioned by `dt`, and adds the day's partition. Nothing is copied: Athena reads the files in place, so add a " +
		"day only once its `_SUCCESS` exists. (`MSCK REPAIR TABLE` registers every `dt=` folder at once, including a day " +
		"being written.) Athena shows timestamps with millisecond precision.",
	loadsql.EngineBigQuery: "**BigQuery**: `_load/bigquery.sql` creates a table partitioned by `dt` and loads the day " +
		"with `LOAD DATA ... OVERWRITE PARTITIONS`, reading the bucket through a BigQuery Omni connection to AWS. " +
		"Replace the connection placeholder in the script.",
	loadsql.EngineSnowflake: "**Snowflake**: `_load/snowflake.sql` deletes the day and copies it in (`COPY INTO` " +
		"with the exact list of files) in one transaction, from an external stage named `" + loadsql.SnowflakeStage +
		"` that points at the bucket root; the script's header shows how to create it once.",
	loadsql.EngineRedshift: "**Redshift**: `_load/redshift.sql` deletes the day and loads it with `COPY` from `_load/" +
		loadsql.RedshiftManifestName + "`, which lists exactly the partition's files, in one transaction. Replace the " +
		"IAM role placeholder with a role Redshift can assume to read the bucket.",
	loadsql.EngineDuckDB: "**DuckDB**: `_load/duckdb.sql` deletes the day and inserts it from the exact list of files " +
		"in one transaction. Reading `s3://` needs the httpfs extension and credentials (`CREATE SECRET`); the script " +
		"reads a local copy as well once its URIs are edited.",
	loadsql.EngineFabric: "**Microsoft Fabric** (Warehouse; the same statement loads a Synapse dedicated SQL pool): " +
		"`_load/fabric.sql` deletes the day and copies it in with `COPY INTO` from the files' blob URLs, in one " +
		"transaction. Replace the SAS placeholder, or remove the credential to read as your Entra ID identity. " +
		"Written for Parquet datasets without list columns, which `COPY INTO` cannot load.",
	loadsql.EngineDatabricks: "**Databricks**: `_load/databricks.sql` creates a Delta table partitioned by `dt`, deletes " +
		"the day and loads it with `COPY INTO` from `abfss://`, exactly the manifest's files. The two statements commit " +
		"one after the other: run the script again if it stops between them.",
}

// storeEngineText replaces engineText's paragraph of an engine for a
// store other than S3, where it reads the store another way.
var storeEngineText = map[string]map[string]string{
	loadsql.StoreGCS: {
		loadsql.EngineBigQuery: "**BigQuery**: `_load/bigquery.sql` creates a table partitioned by `dt` and loads the day " +
			"with `LOAD DATA ... OVERWRITE PARTITIONS` straight from `gs://`.",
		loadsql.EngineSnowflake: "**Snowflake**: `_load/snowflake.sql` deletes the day and copies it in (`COPY INTO` " +
			"with the exact list of files) in one transaction, from an external stage named `" + loadsql.SnowflakeStage +
			"` whose URL is the bucket root (`gcs://`); the script's header shows how to create it once.",
		loadsql.EngineDuckDB: "**DuckDB**: `_load/duckdb.sql` deletes the day and inserts it from the exact list of files " +
			"in one transaction. Reading `gs://` needs the httpfs extension and an HMAC key of the bucket (`CREATE SECRET " +
			"(TYPE gcs, ...)`); the script reads a local copy as well once its URIs are edited.",
	},
	loadsql.StoreAzure: {
		loadsql.EngineBigQuery: "**BigQuery**: `_load/bigquery.sql` creates a table partitioned by `dt` and loads the day " +
			"with `LOAD DATA ... OVERWRITE PARTITIONS`, reading the container through a BigQuery Omni connection to Azure. " +
			"Replace the connection placeholder in the script.",
		loadsql.EngineSnowflake: "**Snowflake**: `_load/snowflake.sql` deletes the day and copies it in (`COPY INTO` " +
			"with the exact list of files) in one transaction, from an external stage named `" + loadsql.SnowflakeStage +
			"` whose URL is the container (`azure://`); the script's header shows how to create it once.",
		loadsql.EngineDuckDB: "**DuckDB**: `_load/duckdb.sql` deletes the day and inserts it from the exact list of files " +
			"in one transaction. Reading `az://` needs the azure extension and credentials (`CREATE SECRET (TYPE azure, ...)`); " +
			"the script reads a local copy as well once its URIs are edited.",
	},
}

func (w *mdWriter) loadSection() {
	w.h2("Loading")
	w.p("Beside every partition, `_load/` holds a ready-to-run script per engine. Each is generated from the",
		"schema the partition's files were written with (explicit column types, nothing autodetected) and",
		"names exactly the files of `_manifest.json`, never a folder or a glob. A script first creates the",
		"table if it does not exist and brings a table created by an earlier schema version up to date",
		"(appended columns, loosened `NOT NULL`), then loads the day. Scripts that load into a table replace",
		"the day (delete and insert in one transaction, or an overwrite of the day's partition): running one",
		"twice, or a later generation's script after an earlier one, leaves each row of the day once.",
		"Each script's header says which placeholder, if any, to replace.")
	engines, absent := w.engines()
	items := make([]string, 0, len(engines)+1)
	for _, e := range engines {
		text := engineText[e]
		if t, ok := storeEngineText[w.in.Store][e]; ok {
			text = t
		}
		items = append(items, "- "+text)
	}
	spark := "- **Spark** (no script): read the dataset's folder, e.g. `spark.read.parquet(\"" + w.sparkRoot() + w.root + "events/\")`; Spark finds `dt` in the folder names, as a DATE, and skips the " +
		"`_` files. Filter to days whose `_SUCCESS` exists."
	if w.in.Format == fileformat.NDJSON {
		spark = strings.Replace(spark, "spark.read.parquet", "spark.read.json", 1)
	}
	if len(w.in.Datasets) > 0 {
		spark = strings.Replace(spark, "/events/", "/"+w.in.Datasets[0].Name+"/", 1)
	}
	w.p(append(items, spark)...)
	if len(absent) > 0 {
		w.p(append([]string{"There is no script for:"}, absent...)...)
	}
	if w.in.Format == fileformat.NDJSON {
		w.p("With gzipped NDJSON, Athena's JSON SerDes have known limits (each `_load/athena.sql` explains them);",
			"if you query with Athena, ask the sender for Parquet.")
	}
}

func (w *mdWriter) reseedSection() {
	w.h2("Late data")
	w.p("Data can reach the sender after a day was exported. The sender checks recently closed days",
		"for such changes, a few times a day; a day that changed is exported again as its next",
		"generation, with `reason: restatement` in its `_manifest.json`.",
		"Both `_manifest.json` and the day's entry in `datasets_delivered` then carry `restatement`:",
		"the generation it replaces (`previous_generation`), that generation's row count",
		"(`previous_rows`) and the new one (`rows`). Load the day again: the load scripts replace the",
		"day, so nothing is counted twice. Each dataset above says which changes its check notices.")
	w.h2("Reseeds")
	var feeds []string
	for _, ds := range w.in.Datasets {
		if ds.Reseedable() {
			feeds = append(feeds, "`"+ds.Name+"`")
		}
	}
	if len(feeds) == 0 {
		w.p("None of the datasets you receive is ever rebuilt from scratch: each is a union of days",
			"that are replaced one at a time, and `reseed` is always `false`.")
		return
	}
	w.p("An incremental feed of states ("+strings.Join(feeds, ", ")+") is sometimes rebuilt by the sender",
		"from its first day, for example after a correction on its side. Each rebuild has a number,",
		"its seed epoch. From the moment it starts until its last day is delivered, the delivery",
		"manifest of every day it covers says `reseed: true` for the dataset: in `datasets_missing`",
		"while the day waits to be delivered again, in `datasets_delivered` (with `seed_epoch`) once",
		"it is. When the rebuild completes, every one of those delivery manifests is rewritten with",
		"`reseed: false`.")
	w.p("When you first see `reseed: true` for a dataset (or a `seed_epoch` higher than the one you",
		"loaded), drop your copy of that dataset, then load every day again from the bucket as it is",
		"delivered, instead of appending the new rows: appending would keep rows the rebuild removed",
		"and count the others twice. Loading with the scripts is safe for this, since each replaces its",
		"day. Your copy is complete again once `reseed` is `false` everywhere. Datasets read as a union",
		"of days that never change once closed are never rebuilt; a changed day of theirs is simply",
		"delivered again (see Late data).")
}

func (w *mdWriter) changesSection() {
	w.h2("Schema changes")
	w.p("A schema only grows: a new column is appended at the end, nullable, and every column keeps the",
		"schema version that added it (`since` in the tables above and in `_schemas/`). A required column",
		"may become nullable (`nullable_since`). Each partition's `_manifest.json` records the schema",
		"version its files were written with, and the load scripts bring an existing table up to it.",
		"Anything else (renaming, removing, reordering or retyping a column) is a new contract version",
		"under `v2/`, and `v1/` stays as it is.")
}

func (w *mdWriter) verifySection() {
	root := w.root
	bucketARN := "arn:aws:s3:::" + w.in.Bucket
	w.h2("Verify a partition yourself")
	w.p("You can check any partition with read access to the bucket alone, with the `daybook`",
		"command-line tool. Install it with Go (1.27 or later), or take the release binary for your",
		"system from whoever sends you this data:")
	w.block("sh", "go install github.com/daybook-dev/daybook/cmd/daybook@latest")
	w.p("Then, for one day (`--from YYYY-MM-DD --to YYYY-MM-DD` for a range; without `--dataset`, every",
		"dataset under the prefix):")
	w.block("sh",
		"daybook verify --bucket "+w.in.bucketFlag()+" --prefix "+strings.TrimSuffix(w.in.Prefix, "/")+" \\",
		"  --dataset <dataset> --day YYYY-MM-DD [--region <region>] [--endpoint <url>] [--download]")
	w.p("It exits 0 when every partition checked is committed and matches its manifest, and 1 otherwise.")
	w.p("It reads `_SUCCESS` and checks that it names `_manifest.json` by its SHA-256 and generation;",
		"lists the partition and checks that the data files are exactly those of the manifest, with its",
		"sizes; compares each file's CRC32C with the manifest (the checksum S3 stored for the object when",
		"it has a whole-object CRC32C, otherwise by reading the file); counts the rows of each file where",
		"that is cheap (Parquet footers; every file with `--download`, which also recomputes every",
		"checksum from the bytes); and reports what the delivery manifest says about the dataset that day.",
		"Credentials come from the usual AWS chain (environment, profile, instance role).",
		"",
		"It makes only read requests. This policy is enough:")
	w.block("json",
		"{",
		`  "Version": "2012-10-17",`,
		`  "Statement": [`,
		`    {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "`+bucketARN+`",`,
		`     "Condition": {"StringLike": {"s3:prefix": "`+root+`*"}}},`,
		`    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "`+bucketARN+"/"+root+`*"}`,
		"  ]",
		"}")
	w.p("Without the tool, the same checks by hand: the SHA-256 of `_manifest.json` equals `_SUCCESS`'s",
		"`manifest_sha256`; listing the partition shows exactly the manifest's `files`, with its `bytes`;",
		"and each file's SHA-256 equals the manifest's `sha256`.")
}

// engines are the engines whose scripts this bucket's partitions carry
// (some dataset's, in loadsql.Engines' order), and a line for each engine
// that has none here, saying why.
func (w *mdWriter) engines() (have, absent []string) {
	got := map[string]bool{}
	for _, ds := range w.in.Datasets {
		for _, e := range loadsql.EnginesFor(w.in.Store, w.in.Format, ds) {
			got[e] = true
		}
	}
	if len(w.in.Datasets) == 0 {
		for _, e := range loadsql.EnginesFor(w.in.Store, w.in.Format, dataset.Dataset{}) {
			got[e] = true
		}
	}
	for _, e := range loadsql.Engines {
		switch {
		case got[e]:
			have = append(have, e)
		case w.in.Store == "" || w.in.Store == loadsql.StoreS3:
			// S3 names the engines it has only, as it always did.
		default:
			why := loadsql.Why(e, w.in.Store, w.in.Format, dataset.Dataset{})
			if why == "" && len(w.in.Datasets) > 0 {
				why = loadsql.Why(e, w.in.Store, w.in.Format, w.in.Datasets[0])
			}
			absent = append(absent, "- "+engineNames[e]+": "+why+".")
		}
	}
	return have, absent
}

// engineNames are the engines as the README names them.
var engineNames = map[string]string{
	loadsql.EngineAthena: "Athena / Trino", loadsql.EngineBigQuery: "BigQuery", loadsql.EngineSnowflake: "Snowflake",
	loadsql.EngineRedshift: "Redshift", loadsql.EngineDuckDB: "DuckDB", loadsql.EngineFabric: "Microsoft Fabric",
	loadsql.EngineDatabricks: "Databricks",
}

// sparkRoot is the bucket's root as Spark reads it.
func (w *mdWriter) sparkRoot() string {
	switch w.in.Store {
	case loadsql.StoreGCS:
		return "gs://" + w.in.Bucket + "/"
	case loadsql.StoreAzure:
		return "abfss://" + w.in.Bucket + "@" + w.in.AzureAccount + ".dfs.core.windows.net/"
	}
	return "s3a://" + w.in.Bucket + "/"
}
