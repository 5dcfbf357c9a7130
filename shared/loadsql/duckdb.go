package loadsql

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// duckdbType maps a column type to DuckDB. Instants are TIMESTAMPTZ (the
// Parquet files are UTC-adjusted, which DuckDB reads as TIMESTAMPTZ); JSON is
// the json extension's JSON type.
// https://duckdb.org/docs/stable/sql/data_types/overview
func duckdbType(t dataset.Type) string {
	switch t.Kind {
	case dataset.KindDate:
		return "DATE"
	case dataset.KindTimestamp:
		return "TIMESTAMPTZ"
	case dataset.KindInt64:
		return "BIGINT"
	case dataset.KindDouble:
		return "DOUBLE"
	case dataset.KindDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case dataset.KindBoolean:
		return "BOOLEAN"
	case dataset.KindJSON:
		return "JSON"
	case dataset.KindBinary:
		return "BLOB"
	case dataset.KindList:
		return listType(t, duckdbType, "", "[]")
	default:
		return "VARCHAR"
	}
}

// duckdb: DELETE the day then INSERT ... SELECT from exactly the manifest's
// files, in one transaction.
//
//	read_parquet:  https://duckdb.org/docs/stable/data/parquet/overview
//	read_json:     https://duckdb.org/docs/stable/data/json/loading_json
//	Transactions:  https://duckdb.org/docs/stable/sql/statements/transactions
//	S3 (httpfs):   https://duckdb.org/docs/stable/core_extensions/httpfs/s3api
//	ALTER TABLE:   https://duckdb.org/docs/stable/sql/statements/alter_table
func (g *gen) duckdb() string {
	var b strings.Builder
	b.WriteString(g.header(append(append(g.snapshotHeader(), g.duckdbSecret()...),
		"Docs: https://duckdb.org/docs/stable/data/parquet/overview",
		"      https://duckdb.org/docs/stable/data/json/loading_json",
	)...))
	q := quoteDouble
	table := quoteTable(q, g.table)
	cols := g.ds.Columns
	dayLit := "DATE " + literal(EngineDuckDB, g.day)

	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", table)
	columnList(&b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return q(dtColumn) + " DATE NOT NULL"
		}
		return q(cols[i].Name) + " " + duckdbType(cols[i].Type) + notNull(cols[i])
	})
	b.WriteString(");\n\n")
	g.standardEvolution(&b, q, duckdbType, "https://duckdb.org/docs/stable/sql/statements/alter_table")
	b.WriteString("BEGIN TRANSACTION;\n")
	fmt.Fprintf(&b, "DELETE FROM %s WHERE %s = %s;\n", table, q(dtColumn), dayLit)
	fmt.Fprintf(&b, "INSERT INTO %s (\n", table)
	columnList(&b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return q(dtColumn)
		}
		return q(cols[i].Name)
	})
	b.WriteString(")\nSELECT\n")
	columnList(&b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return dayLit + " AS " + q(dtColumn)
		}
		return g.duckdbSelect(cols[i])
	})
	uris := literalList(EngineDuckDB, "    ", g.fileURIs())
	if g.p.Format == fileformat.Parquet {
		fmt.Fprintf(&b, "FROM read_parquet([\n%s]);\n", uris)
	} else {
		fmt.Fprintf(&b, "FROM read_json(\n    [\n%s    ],\n", literalList(EngineDuckDB, "        ", g.fileURIs()))
		b.WriteString("    format = 'newline_delimited',\n")
		b.WriteString("    compression = 'gzip',\n")
		b.WriteString("    columns = {\n")
		columnList(&b, "        ", len(cols), func(i int) string {
			return literal(EngineDuckDB, cols[i].Name) + ": " + literal(EngineDuckDB, g.duckdbReadType(cols[i].Type))
		})
		b.WriteString("    }\n);\n")
	}
	g.snapshotPrune(&b, q, table)
	b.WriteString("COMMIT;\n")
	g.currentStateComment(&b)
	return b.String()
}

// duckdbSecret is the header's lines on reading the store: the extension
// and the secret its URIs need.
//
//	S3 and GCS (httpfs):  https://duckdb.org/docs/stable/core_extensions/httpfs/s3api
//	Azure (azure):        https://duckdb.org/docs/stable/core_extensions/azure
func (g *gen) duckdbSecret() []string {
	switch g.p.Store {
	case StoreGCS:
		return []string{
			"gs:// URIs need the httpfs extension and an HMAC key of Cloud Storage, e.g.",
			"    CREATE SECRET (TYPE gcs, KEY_ID '<HMAC access id>', SECRET '<HMAC secret>')",
		}
	case StoreAzure:
		return []string{
			"az:// URIs need the azure extension and credentials, e.g.",
			"    CREATE SECRET (TYPE azure, PROVIDER credential_chain, ACCOUNT_NAME " + literal(EngineDuckDB, g.p.AzureAccount) + ")",
		}
	}
	return []string{
		"s3:// URIs need the httpfs extension and credentials, e.g.",
		"    CREATE SECRET (TYPE s3, PROVIDER credential_chain)",
	}
}
