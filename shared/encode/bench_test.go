package encode

import (
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// countingDiscard counts bytes and drops them: the file size without the
// cost of keeping the file.
type countingDiscard struct{ n int64 }

func (c *countingDiscard) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countingDiscard)(nil)

// encodeDay encodes rows synthetic events rows and returns the file size and
// the peak heap in use above the starting point, sampled every 16k rows.
func encodeDay(b *testing.B, f fileformat.Format, opts Options, rows int) (size int64, peakHeap uint64) {
	ds, err := datasettest.Example(b).Get("events")
	if err != nil {
		b.Fatal(err)
	}
	gen := datasettest.NewEventGen(1, civil.FromEpochDays(20785), rows)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	out := &countingDiscard{}
	w, err := New(f, out, ds, opts)
	if err != nil {
		b.Fatal(err)
	}
	for i := range rows {
		if err := w.Write(gen.Next()); err != nil {
			b.Fatal(err)
		}
		if i%(16<<10) == 0 {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > peakHeap {
				peakHeap = ms.HeapInuse - base
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return out.n, peakHeap
}

// BenchmarkEncodeEventsDay encodes a whole day of events per iteration.
// Run: go test ./shared/encode -run '^$' -bench EncodeEventsDay -benchtime 1x -benchmem
func BenchmarkEncodeEventsDay(b *testing.B) {
	variants := []struct {
		name   string
		format fileformat.Format
		opts   Options
	}{
		{"parquet/compatible/snappy", fileformat.Parquet, Options{Compression: fileformat.Snappy}},
		{"parquet/compatible/zstd", fileformat.Parquet, Options{Compression: fileformat.Zstd}},
		{"parquet/compact/snappy", fileformat.Parquet, Options{Compression: fileformat.Snappy, Profile: ProfileCompact}},
		{"parquet/compact/zstd", fileformat.Parquet, Options{Compression: fileformat.Zstd, Profile: ProfileCompact}},
		{"ndjson/gzip", fileformat.NDJSON, Options{}},
	}
	for _, rows := range []int{100_000, 1_000_000} {
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/rows=%d", v.name, rows), func(b *testing.B) {
				b.ReportAllocs()
				var size int64
				var peak uint64
				start := time.Now()
				for b.Loop() {
					s, p := encodeDay(b, v.format, v.opts, rows)
					size, peak = s, max(peak, p)
				}
				elapsed := time.Since(start)
				b.ReportMetric(float64(rows)*float64(b.N)/elapsed.Seconds(), "rows/s")
				b.ReportMetric(float64(size)/float64(rows), "bytes/row")
				b.ReportMetric(float64(size)/(1<<20), "file-MiB")
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			})
		}
	}
}

// BenchmarkGenerate measures the synthetic row generator alone, so its
// share of BenchmarkEncodeEventsDay can be subtracted.
func BenchmarkGenerate(b *testing.B) {
	gen := datasettest.NewEventGen(1, civil.FromEpochDays(20785), 1_000_000)
	b.ReportAllocs()
	for b.Loop() {
		gen.Next()
	}
}

// BenchmarkParquetWrite reports per-row cost and allocation of the Parquet
// encoder in steady state (B/op is per row here).
func BenchmarkParquetWrite(b *testing.B) {
	ds, _ := datasettest.Example(b).Get("events")
	gen := datasettest.NewEventGen(1, civil.FromEpochDays(20785), 1_000_000)
	w, err := New(fileformat.Parquet, &countingDiscard{}, ds, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(gen.Next()); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
