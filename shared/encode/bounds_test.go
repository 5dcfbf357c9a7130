package encode_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// TestLongValuesKeepTheFooterSmall: a row group holding the longest string
// and the longest JSON value the schema lets through writes a file about as
// large as its values, with a footer of a few hundred KiB at most: the JSON
// column carries no bounds (a bound is a whole value in parquet-go), the
// string's bounds are at most dataset.MaxStringBytes each, and the column
// index keeps encode.ColumnIndexTruncateLength bytes of them.
func TestLongValuesKeepTheFooterSmall(t *testing.T) {
	ds, err := datasettest.Example(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("s", dataset.MaxStringBytes)
	payload := json.RawMessage(`"` + strings.Repeat("j", dataset.MaxJSONBytes-2) + `"`)
	if reason := dataset.CheckJSONText(payload); reason != "" {
		t.Fatal(reason)
	}
	at := time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC)
	rows := make([][]any, 0, len(ds.Columns))
	for i := range 3 {
		row := make([]any, len(ds.Columns))
		for c, col := range ds.Columns {
			switch col.Type.Kind {
			case dataset.KindString:
				row[c] = long[:len(long)-i]
			case dataset.KindJSON:
				row[c] = payload
			case dataset.KindTimestamp:
				row[c] = at
			case dataset.KindInt64:
				row[c] = int64(i)
			case dataset.KindDouble:
				row[c] = float64(i)
			case dataset.KindBoolean:
				row[c] = true
			default:
				if !col.Nullable {
					t.Fatalf("column %s of kind %s: add a value", col.Name, col.Type.Kind)
				}
			}
		}
		rows = append(rows, row)
	}
	var buf bytes.Buffer
	w, err := encode.New(fileformat.Parquet, &buf, ds, encode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if len(b) < 8 || string(b[len(b)-4:]) != "PAR1" {
		t.Fatalf("not a Parquet file: %d bytes", len(b))
	}
	footer := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	strings := 0
	for _, c := range ds.Columns {
		if c.Type.Kind == dataset.KindString {
			strings++
		}
	}
	// Each string column's chunk holds its minimum and maximum whole.
	if limit := strings*2*dataset.MaxStringBytes + 64<<10; footer > limit {
		t.Errorf("footer %d bytes, want at most %d (%d string columns)", footer, limit, strings)
	}
	t.Logf("file %d bytes, footer %d bytes, for 3 rows of a %d-byte JSON value and %d string columns of %d bytes",
		len(b), footer, len(payload), strings, len(long))
}
