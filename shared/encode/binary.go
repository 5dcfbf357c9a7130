package encode

import (
	"encoding/base64"

	"github.com/parquet-go/parquet-go"
)

// binaryNode is a binary column's Parquet type: BYTE_ARRAY with no logical
// type, the bytes as they are (a STRING annotation would tell readers to
// decode them as UTF-8). Written PLAIN, never with a dictionary: bytea
// values are hashes, images and blobs whose repeats are rare.
func binaryNode() parquet.Node { return parquet.Leaf(parquet.ByteArrayType) }

// appendBase64 appends p as a JSON string of its base64 (RFC 4648 standard
// alphabet, padded): the form BigQuery loads into BYTES from JSON, and that
// every language decodes without a library. An empty value is "" (never
// null, which is a NULL).
func appendBase64(b, p []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, '"')
}
