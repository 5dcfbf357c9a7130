package loadsql

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// Stores: which engine reads which store, and by which URI.
//
// A script is written only for an engine that can load the partition where
// it is (Why says why not), so a customer never finds a script that cannot
// run. Each engine reads each store by its own URI scheme:
//
//	store  engine      URI of <key>                                                    docs
//	S3     every one   s3://<bucket>/<key>
//	GCS    BigQuery    gs://<bucket>/<key>                                             https://cloud.google.com/bigquery/docs/reference/standard-sql/load-statements
//	GCS    Snowflake   stage URL gcs://<bucket>/                                       https://docs.snowflake.com/en/user-guide/data-load-gcs-config
//	GCS    DuckDB      gs://<bucket>/<key>                                             https://duckdb.org/docs/stable/core_extensions/httpfs/s3api (GCS through its S3 API)
//	Azure  BigQuery    azure://<account>.blob.core.windows.net/<container>/<key>       https://cloud.google.com/bigquery/docs/load-data-using-cross-cloud-transfer (Omni)
//	Azure  Snowflake   stage URL azure://<account>.blob.core.windows.net/<container>/  https://docs.snowflake.com/en/user-guide/data-load-azure-create-stage
//	Azure  DuckDB      az://<account>.blob.core.windows.net/<container>/<key>          https://duckdb.org/docs/stable/core_extensions/azure
//	Azure  Fabric      https://<account>.blob.core.windows.net/<container>/<key>       https://learn.microsoft.com/sql/t-sql/statements/copy-into-transact-sql?view=fabric
//	Azure  Databricks  abfss://<container>@<account>.dfs.core.windows.net/<key>       https://docs.databricks.com/sql/language-manual/delta-copy-into.html
//
// Athena reads Amazon S3 only, and Redshift's COPY reads Amazon S3 (and
// hosts and DynamoDB, not other clouds' stores). Fabric's COPY INTO reads
// Azure storage and OneLake, Parquet and CSV files (not JSON), and cannot
// load a Parquet list into a column. Databricks reads every store; its
// script is written for Azure, where a Fabric or Databricks customer loads
// from, while on S3 and GCS the bucket README's Spark line reads the
// folder.

// Stores of Partition.Store.
const (
	StoreS3    = "s3"
	StoreGCS   = "gcs"
	StoreAzure = "azure"
)

var azureAccountRE = regexp.MustCompile(`^[a-z0-9]{3,24}$`)

func checkStore(p Partition) error {
	switch p.Store {
	case "", StoreS3, StoreGCS:
		return nil
	case StoreAzure:
		if !azureAccountRE.MatchString(p.AzureAccount) {
			return fmt.Errorf("AzureAccount %q: want a storage account name (3 to 24 lowercase letters and digits)", p.AzureAccount)
		}
		return nil
	}
	return fmt.Errorf("Store %q: want %s, %s or %s", p.Store, StoreS3, StoreGCS, StoreAzure)
}

// Why says why a partition of ds in format on store gets no script for
// engine, or "" when it gets one.
func Why(engine, store string, format fileformat.Format, ds dataset.Dataset) string {
	if store == "" {
		store = StoreS3
	}
	switch engine {
	case EngineAthena:
		if store != StoreS3 {
			return "Athena reads Amazon S3 only"
		}
	case EngineRedshift:
		if store != StoreS3 {
			return "Redshift's COPY reads Amazon S3, not another cloud's storage"
		}
	case EngineFabric:
		switch {
		case store != StoreAzure:
			return "Fabric's COPY INTO reads Azure storage and OneLake only"
		case format != fileformat.Parquet:
			return "Fabric's COPY INTO reads Parquet and CSV files, not JSON"
		case slices.ContainsFunc(ds.Columns, func(c dataset.Column) bool { return c.Type.Kind == dataset.KindList }):
			return "Fabric's COPY INTO cannot load a Parquet list into a column"
		}
	case EngineDatabricks:
		if store != StoreAzure {
			return "written for Azure storage; on S3 and GCS, Databricks (Spark) reads the dataset's folder"
		}
	}
	return ""
}

// EnginesFor lists the engines a partition of ds in format on store gets a
// script for, in Engines' order.
func EnginesFor(store string, format fileformat.Format, ds dataset.Dataset) []string {
	var out []string
	for _, e := range Engines {
		if Why(e, store, format, ds) == "" {
			out = append(out, e)
		}
	}
	return out
}

// storeBase is the base URI engine reads p's files under, ending in "/".
func storeBase(engine string, p Partition) string {
	b, a := p.Bucket, p.AzureAccount
	switch p.Store {
	case StoreGCS:
		if engine == EngineSnowflake {
			return "gcs://" + b + "/"
		}
		return "gs://" + b + "/"
	case StoreAzure:
		switch engine {
		case EngineBigQuery, EngineSnowflake:
			return "azure://" + a + ".blob.core.windows.net/" + b + "/"
		case EngineDuckDB:
			return "az://" + a + ".blob.core.windows.net/" + b + "/"
		case EngineDatabricks:
			return "abfss://" + b + "@" + a + ".dfs.core.windows.net/"
		}
		// Fabric, and any engine Why lets read Azure by plain HTTPS.
		return "https://" + a + ".blob.core.windows.net/" + b + "/"
	}
	return "s3://" + b + "/"
}
