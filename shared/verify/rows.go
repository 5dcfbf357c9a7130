package verify

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"

	"github.com/parquet-go/parquet-go"

	"github.com/daybook-dev/daybook/shared/fileformat"
)

// CountRows counts the rows of a data file from its bytes: the Parquet
// footer's row count (after checking the footer parses), or the lines of a
// gzipped NDJSON file; the format is the one the key's extension names.
func CountRows(key string, data []byte) (int64, error) {
	format, _ := fileformat.ByExtension(key)
	switch format {
	case fileformat.Parquet:
		f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return 0, err
		}
		return f.NumRows(), nil
	case fileformat.NDJSON:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		var n int64
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) > 0 {
				n++
			}
		}
		return n, sc.Err()
	}
	return 0, fmt.Errorf("unknown data file type %q", key)
}
