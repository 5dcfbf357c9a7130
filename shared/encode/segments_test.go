package encode

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// TestSkippedSizeChecksKeepRowGroups: a writer that skips the size checks
// that cannot end a row group (segmentEnd) writes the file one making
// every check writes, byte for byte, at byte limits from a few pages to
// more than the file: on a day of events, and on rows of every type with a
// tiny dictionary limit and page size, where pages of one long value (whose
// header holds it twice more) test the growth bound. It does skip (fewer
// segments), or the test would compare a writer with itself, and the row
// groups end by their byte limit, next to the checks skipped.
func TestSkippedSizeChecksKeepRowGroups(t *testing.T) {
	// Every type but lists: a dataset with a list column makes every check.
	allTypes := datasettest.AllTypes()
	allTypes.Columns = slices.DeleteFunc(slices.Clone(allTypes.Columns), func(c dataset.Column) bool { return c.Type.Kind == dataset.KindList })
	cases := []struct {
		name      string
		ds        dataset.Dataset
		rows      [][]any
		dictLimit int64
		pageBytes int
	}{
		{"events", mustGet(t, "events"), eventRows(40_000), 0, 0},
		{"events, tiny dictionary and pages", mustGet(t, "events"), eventRows(40_000), 2 << 10, 1 << 10},
		{"all types, tiny dictionary and pages", allTypes, datasettest.Varied(allTypes, 20_000), 1 << 10, 512},
	}
	for _, c := range cases {
		skippedNearCuts := false
		for _, maxBytes := range []int64{96 << 10, 256 << 10, 1 << 20, 2 << 20, 3 << 20, 4 << 20, 64 << 20} {
			t.Run(fmt.Sprintf("%s/max %d bytes", c.name, maxBytes), func(t *testing.T) {
				opts := Tuned(Options{Compression: fileformat.Snappy, MaxRowGroupBytes: maxBytes}, c.dictLimit, c.pageBytes)
				every := opts
				every.tuning.everySizeCheck = true
				skipFile, skipSegments := encodeBatches(t, c.ds, opts, c.rows)
				everyFile, everySegments := encodeBatches(t, c.ds, every, c.rows)
				groups := rowGroupRows(t, everyFile)
				if !bytes.Equal(skipFile, everyFile) {
					t.Fatalf("skipping checks wrote %d bytes in row groups of %v rows; every check %d bytes, %v", len(skipFile), rowGroupRows(t, skipFile), len(everyFile), groups)
				}
				skippedNearCuts = skippedNearCuts || (skipSegments < everySegments && len(groups) > 1)
				t.Logf("%d bytes, row groups of %v rows; %d segments, %d making every check", len(everyFile), groups, skipSegments, everySegments)
			})
		}
		if !skippedNearCuts {
			t.Errorf("%s: at no byte limit did the writer skip a check in a file of several row groups: the test compares a writer with itself", c.name)
		}
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
	writeBatches(t, w, ds, rows, 4096)
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
