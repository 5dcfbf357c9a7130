package parquetcompare

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
	xparquet "github.com/xitongsys/parquet-go/parquet"
	xwriter "github.com/xitongsys/parquet-go/writer"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// xEvent is the one-struct-per-dataset shape xitongsys needs; it is exactly
// what daybook no longer has to maintain by hand.
type xEvent struct {
	EventID    string   `parquet:"name=event_id, type=BYTE_ARRAY, convertedtype=UTF8, encoding=PLAIN"`
	EventType  string   `parquet:"name=event_type, type=BYTE_ARRAY, convertedtype=UTF8, encoding=PLAIN_DICTIONARY"`
	OccurredAt int64    `parquet:"name=occurred_at, type=INT64, logicaltype=TIMESTAMP, logicaltype.isadjustedtoutc=true, logicaltype.unit=MICROS"`
	ReceivedAt int64    `parquet:"name=received_at, type=INT64, logicaltype=TIMESTAMP, logicaltype.isadjustedtoutc=true, logicaltype.unit=MICROS"`
	SessionID  *string  `parquet:"name=session_id, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	UserID     *string  `parquet:"name=user_id, type=BYTE_ARRAY, convertedtype=UTF8, repetitiontype=OPTIONAL"`
	Value      *float64 `parquet:"name=value, type=DOUBLE, repetitiontype=OPTIONAL"`
	Amount     *int64   `parquet:"name=amount, type=INT64, convertedtype=DECIMAL, scale=2, precision=18, repetitiontype=OPTIONAL"`
	IsTest     bool     `parquet:"name=is_test, type=BOOLEAN"`
	Attributes *string  `parquet:"name=attributes, type=BYTE_ARRAY, convertedtype=JSON, repetitiontype=OPTIONAL"`
}

// toX converts one value-model row, as the old exporter had to.
func toX(row []any) *xEvent {
	e := &xEvent{
		EventID:    row[0].(string),
		EventType:  row[1].(string),
		OccurredAt: row[2].(time.Time).UnixMicro(),
		ReceivedAt: row[3].(time.Time).UnixMicro(),
		IsTest:     row[8].(bool),
	}
	if s, ok := row[4].(string); ok {
		e.SessionID = &s
	}
	if s, ok := row[5].(string); ok {
		e.UserID = &s
	}
	if f, ok := row[6].(float64); ok {
		e.Value = &f
	}
	if d, ok := row[7].(dataset.Decimal); ok {
		n, _ := d.Int64()
		e.Amount = &n
	}
	if j, ok := row[9].(json.RawMessage); ok {
		s := string(j)
		e.Attributes = &s
	}
	return e
}

type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var day = civil.FromEpochDays(20785)

func encodeX(tb testing.TB, w *counter, codec xparquet.CompressionCodec, rows int) {
	pw, err := xwriter.NewParquetWriterFromWriter(w, new(xEvent), 2)
	if err != nil {
		tb.Fatal(err)
	}
	pw.CompressionType = codec
	gen := datasettest.NewEventGen(1, day, rows)
	for range rows {
		if err := pw.Write(toX(gen.Next())); err != nil {
			tb.Fatal(err)
		}
	}
	if err := pw.WriteStop(); err != nil {
		tb.Fatal(err)
	}
}

func encodeOurs(tb testing.TB, w *counter, codec fileformat.Codec, rows int) {
	encodeOursOpts(tb, w, encode.Options{Compression: codec}, rows)
}

// writeOurs writes rows synthetic events rows to a file at path.
func writeOurs(tb testing.TB, path string, opts encode.Options, rows int) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	encodeOursOpts(tb, bw, opts, rows)
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

func encodeOursOpts(tb testing.TB, w io.Writer, opts encode.Options, rows int) {
	ds, err := datasettest.Example(tb).Get("events")
	if err != nil {
		tb.Fatal(err)
	}
	enc, err := encode.New(fileformat.Parquet, w, ds, opts)
	if err != nil {
		tb.Fatal(err)
	}
	gen := datasettest.NewEventGen(1, day, rows)
	for range rows {
		if err := enc.Write(gen.Next()); err != nil {
			tb.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		tb.Fatal(err)
	}
}

const benchRows = 1_000_000

func report(b *testing.B, start time.Time, size int64, peak uint64) {
	b.ReportMetric(float64(benchRows)*float64(b.N)/time.Since(start).Seconds(), "rows/s")
	b.ReportMetric(float64(size)/(1<<20), "file-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// peakSampler polls HeapInuse while an encode runs.
func peakSampler() (stop func() uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	done := make(chan struct{})
	res := make(chan uint64)
	go func() {
		var peak uint64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				res <- peak
				return
			case <-t.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > base && m.HeapInuse-base > peak {
					peak = m.HeapInuse - base
				}
			}
		}
	}()
	return func() uint64 { close(done); return <-res }
}

func BenchmarkEvents1M(b *testing.B) {
	for _, c := range []struct {
		name string
		x    xparquet.CompressionCodec
		ours fileformat.Codec
	}{
		{"snappy", xparquet.CompressionCodec_SNAPPY, fileformat.Snappy},
		{"zstd", xparquet.CompressionCodec_ZSTD, fileformat.Zstd},
	} {
		b.Run("xitongsys/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int64
			var peak uint64
			start := time.Now()
			for b.Loop() {
				stop := peakSampler()
				w := &counter{}
				encodeX(b, w, c.x, benchRows)
				size, peak = w.n, max(peak, stop())
			}
			report(b, start, size, peak)
		})
		b.Run("daybook/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int64
			var peak uint64
			start := time.Now()
			for b.Loop() {
				stop := peakSampler()
				w := &counter{}
				encodeOurs(b, w, c.ours, benchRows)
				size, peak = w.n, max(peak, stop())
			}
			report(b, start, size, peak)
		})
	}
}

// TestBothReadable checks that both files of the comparison hold the same
// data as DuckDB reads it, so the benchmark compares like with like; it also
// records what the xitongsys struct path does to the optional JSON column.
func TestBothReadable(t *testing.T) {
	const rows = 2000
	dir := t.TempDir()
	write := func(name string, fn func(w *bytes.Buffer)) string {
		var buf bytes.Buffer
		fn(&buf)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ours := write("ours.parquet", func(w *bytes.Buffer) {
		ds, _ := datasettest.Example(t).Get("events")
		enc, _ := encode.New(fileformat.Parquet, w, ds, encode.Options{})
		gen := datasettest.NewEventGen(1, day, rows)
		for range rows {
			if err := enc.Write(gen.Next()); err != nil {
				t.Fatal(err)
			}
		}
		enc.Close()
	})
	theirs := write("xitongsys.parquet", func(w *bytes.Buffer) {
		pw, err := xwriter.NewParquetWriterFromWriter(w, new(xEvent), 2)
		if err != nil {
			t.Fatal(err)
		}
		gen := datasettest.NewEventGen(1, day, rows)
		for range rows {
			if err := pw.Write(toX(gen.Next())); err != nil {
				t.Fatal(err)
			}
		}
		if err := pw.WriteStop(); err != nil {
			t.Fatal(err)
		}
	})
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, p := range []string{ours, theirs} {
		var n, attrs, amounts int
		var minAt string
		q := fmt.Sprintf(`SELECT count(*), count(attributes), count(amount), CAST(min(occurred_at) AS VARCHAR) FROM read_parquet('%s')`, p)
		if err := db.QueryRow(q).Scan(&n, &attrs, &amounts, &minAt); err != nil {
			t.Fatalf("%s: %v", filepath.Base(p), err)
		}
		t.Logf("%s: rows=%d non-null attributes=%d amounts=%d min(occurred_at)=%s", filepath.Base(p), n, attrs, amounts, minAt)
		if n != rows || attrs == 0 || amounts == 0 {
			t.Errorf("%s: rows=%d attributes=%d amounts=%d", filepath.Base(p), n, attrs, amounts)
		}
	}
}
