package loadsql

import (
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// A list<T> column is a Parquet LIST and a JSON array in NDJSON. Each
// engine's array type:
//
//	DuckDB T[]:        https://duckdb.org/docs/stable/sql/data_types/list
//	Athena array<T>:   https://docs.aws.amazon.com/athena/latest/ug/data-types.html
//	BigQuery ARRAY<T>: https://cloud.google.com/bigquery/docs/reference/standard-sql/data-types#array_type
//	                   (Parquet lists need enable_list_inference:
//	                   https://cloud.google.com/bigquery/docs/loading-data-cloud-storage-parquet#list_logical_type)
//	Snowflake ARRAY:   https://docs.snowflake.com/en/sql-reference/data-types-semistructured#array
//	Redshift SUPER:    https://docs.aws.amazon.com/redshift/latest/dg/ingest-super.html
//	                   (COPY from Parquet into SUPER needs SERIALIZETOJSON)
//
// BigQuery has no NULL inside an array and no NULL array: a NULL element
// fails the load ("Array cannot have a null element"), and a NULL list
// loads as an empty array. The script's header says so (bigqueryListNote).

// listType is an engine's type for a list column, given its scalar types.
func listType(t dataset.Type, scalar func(dataset.Type) string, pre, post string) string {
	return pre + scalar(t.ElemType()) + post
}

func (g *gen) hasList() bool {
	for _, c := range g.ds.Columns {
		if c.Type.Kind == dataset.KindList {
			return true
		}
	}
	return false
}

// bigqueryListNote is the header line of a BigQuery script with lists.
func (g *gen) bigqueryListNote() []string {
	if !g.hasList() {
		return nil
	}
	return []string{
		"List columns are ARRAY<T>, which in BigQuery holds no NULL element and is never",
		"NULL itself: a NULL list loads as an empty array, and a NULL element fails the load.",
	}
}

// bigqueryNotNull is notNull, but an ARRAY column takes no NOT NULL in
// BigQuery (its mode is REPEATED).
func bigqueryNotNull(c dataset.Column) string {
	if c.Type.Kind == dataset.KindList {
		return ""
	}
	return notNull(c)
}

// redshiftParquetLists is the COPY option that loads a Parquet LIST into
// a SUPER column.
func (g *gen) redshiftParquetLists() string {
	if g.p.Format == fileformat.Parquet && g.hasList() {
		return "SERIALIZETOJSON\n"
	}
	return ""
}
