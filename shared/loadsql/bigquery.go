package loadsql

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// bigqueryType maps a column type to GoogleSQL. A decimal is NUMERIC(P,S)
// when it fits NUMERIC (scale <= 9, integer digits <= 29) and
// BIGNUMERIC(P,S) otherwise (e.g. decimal(38,10)).
// https://cloud.google.com/bigquery/docs/reference/standard-sql/data-types#parameterized_decimal_type
func bigqueryType(t dataset.Type) string {
	switch t.Kind {
	case dataset.KindDate:
		return "DATE"
	case dataset.KindTimestamp:
		return "TIMESTAMP"
	case dataset.KindInt64:
		return "INT64"
	case dataset.KindDouble:
		return "FLOAT64"
	case dataset.KindDecimal:
		if t.Scale <= 9 && t.Precision-t.Scale <= 29 {
			return fmt.Sprintf("NUMERIC(%d, %d)", t.Precision, t.Scale)
		}
		return fmt.Sprintf("BIGNUMERIC(%d, %d)", t.Precision, t.Scale)
	case dataset.KindBoolean:
		return "BOOL"
	case dataset.KindJSON:
		return "JSON"
	case dataset.KindBinary:
		return "BYTES" // base64 in NDJSON, as BigQuery loads BYTES from JSON
	case dataset.KindList:
		return listType(t, bigqueryType, "ARRAY<", ">")
	default:
		return "STRING"
	}
}

// bigquery: a table partitioned by dt, then LOAD DATA that overwrites exactly
// the day's partition from exactly the manifest's files. LOAD DATA is atomic:
// on failure the table is unchanged. dt comes from the Hive path
// (WITH PARTITION COLUMNS), which is the day by construction.
//
//	LOAD DATA:         https://cloud.google.com/bigquery/docs/reference/standard-sql/load-statements
//	Hive partitions:   https://cloud.google.com/bigquery/docs/hive-partitioned-loads-gcs
//	S3 through Omni:   https://cloud.google.com/bigquery/docs/load-data-using-cross-cloud-transfer
//	CREATE TABLE:      https://cloud.google.com/bigquery/docs/reference/standard-sql/data-definition-language#create_table_statement
//	ADD COLUMN:        https://cloud.google.com/bigquery/docs/reference/standard-sql/data-definition-language#alter_table_add_column_statement
//	DROP NOT NULL:     https://cloud.google.com/bigquery/docs/reference/standard-sql/data-definition-language#alter_column_drop_not_null_statement
//
// An appended column is NULLABLE, the only mode BigQuery lets ALTER TABLE
// add (https://cloud.google.com/bigquery/docs/managing-table-schemas#add_an_empty_column),
// and LOAD DATA then names every column of the evolved table.
func (g *gen) bigquery() string {
	var b strings.Builder
	b.WriteString(g.header(append(append(g.snapshotHeader(), g.bigqueryListNote()...), g.bigqueryReach()...)...))
	q := quoteBigQuery
	table := quoteTable(q, g.table)
	cols := g.ds.Columns
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", table)
	columnList(&b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return q(dtColumn) + " DATE NOT NULL"
		}
		return q(cols[i].Name) + " " + bigqueryType(cols[i].Type) + bigqueryNotNull(cols[i])
	})
	fmt.Fprintf(&b, ")\nPARTITION BY %s;\n\n", q(dtColumn))
	g.standardEvolution(&b, q, bigqueryType, "https://cloud.google.com/bigquery/docs/reference/standard-sql/data-definition-language#alter_table_add_column_statement")

	// INTO with OVERWRITE PARTITIONS replaces the one partition (the docs
	// require INTO, not OVERWRITE, with a PARTITIONS clause).
	fmt.Fprintf(&b, "LOAD DATA INTO %s (\n", table)
	columnList(&b, "    ", len(cols), func(i int) string {
		return q(cols[i].Name) + " " + bigqueryType(cols[i].Type) + bigqueryNotNull(cols[i])
	})
	b.WriteString(")\n")
	fmt.Fprintf(&b, "OVERWRITE PARTITIONS (%s = DATE %s)\n", q(dtColumn), literal(EngineBigQuery, g.day))
	fmt.Fprintf(&b, "PARTITION BY %s\n", q(dtColumn))
	b.WriteString("FROM FILES (\n")
	if g.p.Format == fileformat.Parquet {
		b.WriteString("    format = 'PARQUET',\n")
		if g.hasList() {
			b.WriteString("    enable_list_inference = true,\n")
		}
		if g.hasDecimal() {
			b.WriteString("    decimal_target_types = ['NUMERIC', 'BIGNUMERIC'],\n")
		}
	} else {
		b.WriteString("    format = 'NEWLINE_DELIMITED_JSON',\n")
		b.WriteString("    compression = 'GZIP',\n")
	}
	b.WriteString("    uris = [\n")
	b.WriteString(literalList(EngineBigQuery, "        ", g.fileURIs()))
	b.WriteString("    ],\n")
	fmt.Fprintf(&b, "    hive_partition_uri_prefix = %s\n", literal(EngineBigQuery, strings.TrimSuffix(g.uri(g.root), "/")))
	b.WriteString(")\n")
	fmt.Fprintf(&b, "WITH PARTITION COLUMNS (%s DATE)", q(dtColumn))
	if conn := g.bigqueryConnection(); conn != "" {
		fmt.Fprintf(&b, "\nWITH CONNECTION %s", q(conn))
	}
	b.WriteString(";\n")
	if g.ds.IsSnapshot() {
		b.WriteString("\n")
		g.snapshotPrune(&b, q, table)
	}
	g.currentStateComment(&b)
	return b.String()
}

func (g *gen) hasDecimal() bool {
	for _, c := range g.ds.Columns {
		if c.Type.Kind == dataset.KindDecimal {
			return true
		}
	}
	return false
}

// BigQueryAzureConnection stands for the BigQuery Omni (Azure) connection.
const BigQueryAzureConnection = "<PROJECT_ID>.<AZURE_LOCATION e.g. azure-eastus2>.<CONNECTION_ID>"

// bigqueryConnection is the Omni connection the script names: S3 and Azure
// are read through one (cross-cloud transfer), GCS natively.
func (g *gen) bigqueryConnection() string {
	switch g.p.Store {
	case StoreGCS:
		return ""
	case StoreAzure:
		return BigQueryAzureConnection
	}
	return BigQueryConnection
}

// bigqueryReach is the header's lines on how BigQuery reads the store.
func (g *gen) bigqueryReach() []string {
	docs := []string{"Docs: https://cloud.google.com/bigquery/docs/reference/standard-sql/load-statements"}
	switch g.p.Store {
	case StoreGCS:
		return append([]string{
			"BigQuery reads Cloud Storage directly (the caller needs storage.objects.get",
			"and storage.objects.list on the bucket). Qualify the table with its dataset",
			"(or SET @@dataset_id first).",
		}, docs...)
	case StoreAzure:
		return append([]string{
			"BigQuery reads Azure Blob Storage through a BigQuery Omni connection (cross-cloud",
			"transfer). REPLACE the placeholder in WITH CONNECTION below:",
			"    " + BigQueryAzureConnection,
			"and qualify the table with its dataset (or SET @@dataset_id first).",
		}, append(docs, "      https://cloud.google.com/bigquery/docs/load-data-using-cross-cloud-transfer")...)
	}
	return append([]string{
		"BigQuery reads Amazon S3 through a BigQuery Omni connection (cross-cloud",
		"transfer). REPLACE the placeholder in WITH CONNECTION below:",
		"    " + BigQueryConnection,
		"and qualify the table with its dataset (or SET @@dataset_id first).",
	}, append(docs, "      https://cloud.google.com/bigquery/docs/load-data-using-cross-cloud-transfer")...)
}
