package parquetcompare

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/cputime"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// cpuRows is the events day BenchmarkEncodeCPUVsDuckDB encodes;
// DAYBOOK_BENCH_ENCODE_ROWS overrides it.
const cpuRows = 2_000_000

// BenchmarkEncodeCPUVsDuckDB encodes the same events day with daybook's
// encoder (compatible profile, batches as a source hands them over) and with
// DuckDB's single-thread COPY ... TO parquet, side by side on one core, and
// prints rows per CPU-second of each as a table. CPU time is the process's
// (getrusage) around each encode only: the rows are generated beforehand,
// and DuckDB reads them from a table in memory. DAYBOOK_BENCH_CPUPROFILE=dir
// writes a CPU profile of each daybook encode there.
//
//	go test ./bench/parquetcompare -run '^$' -bench EncodeCPUVsDuckDB -benchtime 1x
func BenchmarkEncodeCPUVsDuckDB(b *testing.B) {
	rows := cpuRows
	if s := os.Getenv("DAYBOOK_BENCH_ENCODE_ROWS"); s != "" {
		var err error
		if rows, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ds, err := datasettest.Example(b).Get("events")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	db := duckcheck.Open(b)
	src := filepath.Join(dir, "source.parquet")
	writeOurs(b, src, encode.Options{Compression: fileformat.Snappy}, rows)
	for _, q := range []string{`SET threads=1`, `CREATE TABLE events AS SELECT * FROM read_parquet('` + src + `')`} {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	batches := datasettest.NewEventGen(1, day, rows).Batches(ds, rows, 4096)
	type result struct {
		codec               fileformat.Codec
		daybook, duck       time.Duration
		dayBytes, duckBytes int64
	}
	var results []result
	for _, codec := range []fileformat.Codec{fileformat.Snappy, fileformat.Zstd} {
		b.Run(string(codec), func(b *testing.B) {
			var r result
			for b.Loop() {
				r = result{codec: codec}
				path := filepath.Join(dir, "duckdb.parquet")
				runtime.GC()
				d := cputime.Start()
				r.duckBytes = duckdbCopy(b, db, path, codec)
				r.duck = d.Elapsed()
				os.Remove(path)

				stop := profile(b, "encode-"+string(codec))
				runtime.GC()
				c := cputime.Start()
				w := &counter{}
				enc, err := encode.New(fileformat.Parquet, w, ds, encode.Options{Compression: codec})
				if err != nil {
					b.Fatal(err)
				}
				for _, batch := range batches {
					if err := enc.WriteBatch(batch); err != nil {
						b.Fatal(err)
					}
				}
				if err := enc.Close(); err != nil {
					b.Fatal(err)
				}
				r.daybook = c.Elapsed()
				stop()
				r.dayBytes = w.n
			}
			b.ReportMetric(float64(rows)/r.daybook.Seconds(), "daybook-rows/cpu-s")
			b.ReportMetric(float64(rows)/r.duck.Seconds(), "duckdb-rows/cpu-s")
			b.ReportMetric(r.duck.Seconds()/r.daybook.Seconds(), "x-duckdb")
			results = append(results, r)
		})
	}
	if len(results) == 0 {
		return
	}
	var t strings.Builder
	fmt.Fprintf(&t, "\nEncoder CPU, %d-row events day, compatible profile, one core (GOMAXPROCS=1, DuckDB threads=1), %s\n", rows, duckdbVersion(b, db))
	fmt.Fprintf(&t, "| codec  | daybook CPU s | daybook rows/CPU-s | DuckDB CPU s | DuckDB rows/CPU-s | daybook ÷ DuckDB | target |\n")
	fmt.Fprintf(&t, "|--------|--------------:|-------------------:|-------------:|------------------:|-----------------:|-------:|\n")
	for _, r := range results {
		ratio := r.duck.Seconds() / r.daybook.Seconds()
		verdict := "met"
		if ratio < 1 {
			verdict = "MISSED"
		}
		fmt.Fprintf(&t, "| %-6s | %13.2f | %18.0f | %12.2f | %17.0f | %15.2fx | ≥1.0x %s |\n", r.codec,
			r.daybook.Seconds(), float64(rows)/r.daybook.Seconds(), r.duck.Seconds(), float64(rows)/r.duck.Seconds(), ratio, verdict)
	}
	fmt.Print(t.String())
}

// profile starts a CPU profile named name in $DAYBOOK_BENCH_CPUPROFILE, if
// set, and returns its stop.
func profile(tb testing.TB, name string) (stop func()) {
	dir := os.Getenv("DAYBOOK_BENCH_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".prof"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
