package loadsql

import (
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// A binary column is a Parquet BYTE_ARRAY without annotation, which every
// engine loads into its binary type as it is, and a base64 string in NDJSON,
// which each script decodes on load:
//
//	DuckDB BLOB, from_base64:  https://duckdb.org/docs/stable/sql/data_types/blob
//	Snowflake BINARY, BASE64_DECODE_BINARY:
//	                           https://docs.snowflake.com/en/sql-reference/data-types-text#binary
//	                           https://docs.snowflake.com/en/sql-reference/functions/base64_decode_binary
//	BigQuery BYTES (base64 in JSON loads):
//	                           https://cloud.google.com/bigquery/docs/loading-data-cloud-storage-json#limitations
//	Redshift VARBYTE, TO_VARBYTE(s, 'base64'), COPY from Parquet:
//	                           https://docs.aws.amazon.com/redshift/latest/dg/r_VARBYTE_type.html
//	                           https://docs.aws.amazon.com/redshift/latest/dg/r_TO_VARBYTE.html
//	                           https://docs.aws.amazon.com/redshift/latest/dg/copy-usage-varbyte.html
//	Athena BINARY:             https://docs.aws.amazon.com/athena/latest/ug/data-types.html
//
// Athena over NDJSON keeps the base64 text in a STRING column (the OpenX
// JSON SerDe documents no base64 decoding): from_base64(col) reads it.

// ndjsonBinary reports whether c is a binary column of an NDJSON partition.
func (g *gen) ndjsonBinary(t dataset.Type) bool {
	return t.Kind == dataset.KindBinary && g.p.Format == fileformat.NDJSON
}

// athenaColumnType is athenaType, but a binary column over NDJSON is the
// base64 STRING it holds.
func (g *gen) athenaColumnType(t dataset.Type) string {
	if g.ndjsonBinary(t) {
		return "STRING"
	}
	return athenaType(t)
}

// duckdbReadType is the type read_json reads column t as: a binary column's
// base64 text is a VARCHAR.
func (g *gen) duckdbReadType(t dataset.Type) string {
	if g.ndjsonBinary(t) {
		return "VARCHAR"
	}
	return duckdbType(t)
}

// duckdbSelect is the expression that loads column c.
func (g *gen) duckdbSelect(c dataset.Column) string {
	q := quoteDouble(c.Name)
	if g.ndjsonBinary(c.Type) {
		return "from_base64(" + q + ")"
	}
	return "CAST(" + q + " AS " + duckdbType(c.Type) + ")"
}

// redshiftBinaryStage is the staging type of a binary column read from
// NDJSON: its base64 text, which TO_VARBYTE decodes on insert. A VARCHAR
// holds at most 65,535 bytes, so from NDJSON a value longer than 49,149
// bytes fails the COPY; from Parquet any value loads.
const redshiftBinaryStage = "VARCHAR(65535)"

// redshiftBinaryLimits is the header line about binary columns read from
// NDJSON (see redshiftBinaryStage).
func (g *gen) redshiftBinaryLimits() []string {
	var bins []string
	for _, c := range g.ds.Columns {
		if g.ndjsonBinary(c.Type) {
			bins = append(bins, c.Name)
		}
	}
	if len(bins) == 0 {
		return nil
	}
	return []string{
		"Binary columns (" + strings.Join(bins, ", ") + ") arrive as base64 text in a VARCHAR(65535) staging",
		"column, decoded with TO_VARBYTE: a value over 49,149 bytes fails the COPY (Parquet has no such limit).",
	}
}
