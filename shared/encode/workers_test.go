package encode

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// TestWorkersWriteTheSameBytes: a Parquet file encoded with its columns on
// several goroutines (Options.Workers) is byte for byte the file encoded on
// one, in both profiles and both codecs, at limits small enough that the
// file has the cuts a day of millions has: row groups ended by their row
// limit and by their byte limit, several dictionary pages in a chunk, and
// a dictionary that falls back to PLAIN. The test checks the cuts
// happened, so it cannot pass on a file that has none. Run it with -race:
// the workers share the writer.
func TestWorkersWriteTheSameBytes(t *testing.T) {
	cases := []struct {
		name     string
		ds       dataset.Dataset
		rows     [][]any
		maxRows  int64
		maxBytes int64
	}{
		{"events by rows", mustGet(t, "events"), eventRows(6000), 2048, 64 << 20},
		{"events by bytes", mustGet(t, "events"), eventRows(6000), 1 << 20, 96 << 10},
		{"all types", datasettest.AllTypes(), append(datasettest.Edge(datasettest.AllTypes()), datasettest.Varied(datasettest.AllTypes(), 5000)...), 1500, 64 << 20},
	}
	for _, c := range cases {
		for _, profile := range Profiles() {
			for _, codec := range []fileformat.Codec{fileformat.Snappy, fileformat.Zstd} {
				opts := Tuned(Options{Compression: codec, Profile: profile, MaxRowGroupRows: c.maxRows, MaxRowGroupBytes: c.maxBytes}, 16<<10, 8<<10)
				t.Run(fmt.Sprintf("%s/%s/%s", c.name, profile, codec), func(t *testing.T) {
					one := encodeWith(t, c.ds, opts, 1, c.rows)
					checkCuts(t, one)
					for _, workers := range []int{2, 3, len(c.ds.Columns) + 4} {
						if got := encodeWith(t, c.ds, opts, workers, c.rows); !bytes.Equal(got, one) {
							t.Fatalf("%d workers wrote %d bytes, one wrote %d: not the same file", workers, len(got), len(one))
						}
					}
				})
			}
		}
	}
}

// TestAssistWritesTheSameBytes: columns taken by a goroutine calling
// Assist.Help are encoded as the writer's own are, and the writer waits
// for them. "first" offers each segment to a helper that takes every
// column before the writer takes one (the writer waits for it): every
// segment must be helped. "alongside" starts a helper each segment and
// lets the writer go on at once, so the two take columns side by side
// (under -race too). Either way the file is the one-worker file, and once
// the writer is done no segment is left open.
func TestAssistWritesTheSameBytes(t *testing.T) {
	ds := mustGet(t, "events")
	rows := eventRows(6000)
	for _, c := range []struct {
		name     string
		maxBytes int64
		first    bool
	}{{"by rows, first", 64 << 20, true}, {"by bytes, first", 96 << 10, true}, {"by bytes, alongside", 96 << 10, false}} {
		t.Run(c.name, func(t *testing.T) {
			opts := Tuned(Options{MaxRowGroupRows: 2048, MaxRowGroupBytes: c.maxBytes}, 16<<10, 8<<10)
			one := encodeWith(t, ds, opts, 1, rows)
			a := NewAssist()
			var helpers sync.WaitGroup
			helped, segments := 0, 0
			opts.Assist = a
			opts.tuning.segmentOpen = func() {
				segments++
				if !c.first {
					helpers.Go(func() { a.Help() })
					return
				}
				done := make(chan bool)
				go func() { done <- a.Help() }()
				if <-done {
					helped++
				}
			}
			got := encodeWith(t, ds, opts, 2, rows)
			helpers.Wait()
			if !bytes.Equal(got, one) {
				t.Fatalf("helped writer wrote %d bytes, one worker %d: not the same file", len(got), len(one))
			}
			if c.first && (segments == 0 || helped != segments) {
				t.Fatalf("Help encoded columns in %d of %d segments, want all", helped, segments)
			}
			if a.open != nil || a.helping {
				t.Fatal("a segment is still open, or a helper still in, after the file was closed")
			}
		})
	}
	if (*Assist)(nil).Help() || NewAssist().Help() {
		t.Fatal("Help with no segment open encoded a column")
	}
}

func mustGet(t *testing.T, name string) dataset.Dataset {
	t.Helper()
	ds, err := datasettest.Example(t).Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func eventRows(n int) [][]any {
	g := newEventGen(3)
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = g.next()
	}
	return rows
}

// encodeWith writes rows in batches of 1000 with workers goroutines.
func encodeWith(t *testing.T, ds dataset.Dataset, opts Options, workers int, rows [][]any) []byte {
	t.Helper()
	opts.Workers = workers
	var out bytes.Buffer
	w, err := New(fileformat.Parquet, &out, ds, opts)
	if err != nil {
		t.Fatal(err)
	}
	writeBatches(t, w, ds, rows, 1000)
	return out.Bytes()
}

// batchWriter is what writeBatches writes to: an encoder.
type batchWriter interface {
	WriteBatch(*dataset.Batch) error
	Close() error
}

// writeBatches writes rows of ds to w in batches of size rows, then
// closes w.
func writeBatches(t *testing.T, w batchWriter, ds dataset.Dataset, rows [][]any, size int) {
	t.Helper()
	b := dataset.NewBatch(ds, size)
	for lo := 0; lo < len(rows); lo += size {
		b.Reset(int64(lo) + 1)
		for _, r := range rows[lo:min(lo+size, len(rows))] {
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
}

// checkCuts fails unless the file has several row groups (with maxRows
// past the rows, the byte limit cut them), a column chunk with several
// dictionary-indexed pages and one whose dictionary fell back to PLAIN.
func checkCuts(t *testing.T, file []byte) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.RowGroups()); n < 2 {
		t.Fatalf("%d row groups: the test needs several", n)
	}
	several, fallback := false, false
	for _, g := range f.RowGroups() {
		for _, ch := range g.ColumnChunks() {
			indexed, plain := 0, 0
			pages := ch.Pages()
			for {
				p, err := pages.ReadPage()
				if err != nil {
					break
				}
				if p.Dictionary() != nil {
					indexed++
				} else {
					plain++
				}
				parquet.Release(p)
			}
			pages.Close()
			several = several || indexed > 1
			fallback = fallback || (indexed > 0 && plain > 0)
		}
	}
	if !several || !fallback {
		t.Fatalf("several dictionary pages in a chunk: %v, a dictionary fallen back to PLAIN: %v; the test needs both", several, fallback)
	}
}
