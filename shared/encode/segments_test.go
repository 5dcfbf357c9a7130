package encode

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// TestSkippedSizeChecksKeepRowGroups: a writer that skips the size checks
// that cannot end a row group (segmentEnd) ends its row groups where one
// making every check does, at byte limits from a few pages to more than the
// file, and writes the same rows; and it does skip (fewer segments), or the
// test would compare a writer with itself.
func TestSkippedSizeChecksKeepRowGroups(t *testing.T) {
	ds := mustGet(t, "events")
	rows := eventRows(40_000)
	for _, maxBytes := range []int64{96 << 10, 256 << 10, 1 << 20, 64 << 20} {
		t.Run(fmt.Sprintf("max %d bytes", maxBytes), func(t *testing.T) {
			opts := Options{Compression: fileformat.Snappy, MaxRowGroupBytes: maxBytes}
			every := opts
			every.tuning.everySizeCheck = true
			skipFile, skipSegments := encodeBatches(t, ds, opts, rows)
			everyFile, everySegments := encodeBatches(t, ds, every, rows)
			got, want := rowGroupRows(t, skipFile), rowGroupRows(t, everyFile)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("row groups of %v rows, checking every %d rows %v", got, sizeCheckRows, want)
			}
			if maxBytes > 1<<20 && skipSegments >= everySegments {
				t.Fatalf("%d segments, %d making every check: none skipped", skipSegments, everySegments)
			}
			t.Logf("%d row groups; %d segments, %d making every check", len(got), skipSegments, everySegments)
		})
	}
}

// encodeBatches writes rows in batches of 4096 (the sources' size) and
// returns the file and the number of segments the writer encoded.
func encodeBatches(t *testing.T, ds dataset.Dataset, opts Options, rows [][]any) ([]byte, int) {
	t.Helper()
	var out bytes.Buffer
	w, err := newParquet(&out, ds, opts)
	if err != nil {
		t.Fatal(err)
	}
	const batch = 4096
	b := dataset.NewBatch(ds, batch)
	for lo := 0; lo < len(rows); lo += batch {
		b.Reset(int64(lo) + 1)
		for _, r := range rows[lo:min(lo+batch, len(rows))] {
			if err := b.AppendRow(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), w.segments
}

func rowGroupRows(t *testing.T, file []byte) []int64 {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	var n []int64
	for _, g := range f.RowGroups() {
		n = append(n, g.NumRows())
	}
	return n
}
