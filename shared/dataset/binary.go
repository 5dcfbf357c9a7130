package dataset

import "fmt"

// KindBinary is a column of raw bytes (PostgreSQL bytea): a Parquet
// BYTE_ARRAY without a string annotation, and a base64 string (RFC 4648,
// standard alphabet, padded) in NDJSON. Its model value is []byte; a NULL
// and an empty value are distinct.
const KindBinary Kind = "binary"

// MaxBinaryBytes is the most bytes one binary value may hold: Snowflake's
// BINARY limit (8 MB), the narrowest of the warehouses the load scripts
// target. A longer value is a bad row.
// https://docs.snowflake.com/en/sql-reference/data-types-text#binary
const MaxBinaryBytes = 8 << 20

// CheckBinary is the check of a binary column's value, whatever the
// source: the reason it is refused, or "".
func CheckBinary(p []byte) string {
	if len(p) > MaxBinaryBytes {
		return fmt.Sprintf("binary value of %d bytes is longer than the %d bytes a binary value may hold", len(p), MaxBinaryBytes)
	}
	return ""
}
