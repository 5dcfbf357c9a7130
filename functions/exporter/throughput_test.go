//go:build !noduckdb

package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/cputime"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/source"
	"github.com/daybook-dev/daybook/shared/upload"
)

// childEnv carries the export the child process of BenchmarkExportPostgres
// runs (a benchChild as JSON); its result comes back on a line of stdout
// starting with childResult. The child is the exporter binary built with
// the daybook_benchchild tag (benchchild.go spells both the same).
const (
	childEnv    = "DAYBOOK_BENCH_EXPORT_CHILD"
	childResult = "DAYBOOK_BENCH_RESULT "
)

// The deployed exporter (template.yaml): its timeout, memory size and the
// vCPU share Lambda gives that size (one full vCPU at 1769 MB).
const (
	lambdaTimeout  = 900
	lambdaMemoryMB = 1769
	lambdaVCPU     = 1.0
)

// partHold is how long the child's bucket holds each part before it
// acknowledges it: longer than encoding Concurrency parts takes, so every
// upload slot fills and the writer holds all its part buffers, the worst
// case of a slow S3 (the benchmark checks it did).
const partHold = 3 * time.Second

var benchDay = civil.FromEpochDays(20785) // 2026-11-28, the generator's day

type benchChild struct {
	DSN      string        `json:"dsn"`
	Account  string        `json:"account"`
	Day      string        `json:"day"`
	PartHold time.Duration `json:"part_hold"`
}

type benchResult struct {
	Rows          int64         `json:"rows"`
	Bytes         int64         `json:"bytes"`
	Files         int           `json:"files"`
	CPU           time.Duration `json:"cpu"`
	PeakRSS       int64         `json:"peak_rss"`
	Parts         int64         `json:"parts"`
	PartsInFlight int64         `json:"parts_in_flight"`
}

// BenchmarkExportPostgres exports a 1M-row events day (and a 10M-row one
// when DAYBOOK_BENCH_10M is set) from a throwaway PostgreSQL server into a
// bucket that discards data files, in a child process on one core
// (GOMAXPROCS=1) with the default file size, part size and upload
// concurrency, and compares its CPU time with (a) the raw read of the same
// rows, COPY (query) TO STDOUT (FORMAT binary) through pgx into a
// discarding sink, and (b) DuckDB's single-thread Parquet encode of the
// same rows with the same codec. It prints the figures and the child's peak
// RSS (the kernel's VmHWM) as a table.
//
// The child is the exporter's own binary built with the daybook_benchchild
// tag (benchchild.go), so its RSS holds what the Lambda's does and not
// DuckDB or the test fakes; its bucket holds each part for partHold, so the
// upload writer holds every part buffer it may (a slow S3).
// DAYBOOK_BENCH_CPUPROFILE=dir writes a CPU profile of each export there;
// DAYBOOK_BENCH_MEMPROFILE=dir writes a heap profile at each export's
// highest resident set and its memory over time (see heapWatch).
//
//	go test ./functions/exporter -run '^$' -bench ExportPostgres -benchtime 1x
func BenchmarkExportPostgres(b *testing.B) {
	child := buildChild(b)
	sizes := []int{1_000_000}
	if os.Getenv("DAYBOOK_BENCH_10M") != "" {
		sizes = append(sizes, 10_000_000)
	}
	srv := pgserver.New(b)
	db, err := sql.Open("pgx", srv.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ddl, err := dataset.SourceDDL(dataset.DialectPostgres)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(ddl); err != nil {
		b.Fatal(err)
	}
	type row struct {
		rows               int
		raw, duck, daybook time.Duration
		peakRSS, bytes     int64
		files              int
		held               int64 // most parts held at once
	}
	var results []row
	for _, n := range sizes {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			acct := benchAccount(n)
			loadEvents(b, srv.DSN, acct, n)
			var r row
			for b.Loop() {
				r = row{rows: n}
				r.raw = rawRead(b, srv.DSN, acct)
				res := runExportChild(b, child, benchChild{DSN: srv.DSN, Account: acct, Day: benchDay.String(), PartHold: partHold})
				// The generator spreads n rows over about a day: a few may
				// fall past its end, and every measure reads the day's.
				inDay := dayCount(b, db, acct)
				if res.Rows != inDay {
					b.Fatalf("exported %d rows, the day holds %d", res.Rows, inDay)
				}
				// Every upload slot a file's parts can fill, filled.
				if want := min(upload.DefaultConcurrency, res.Parts/int64(max(1, res.Files))); res.PartsInFlight < want {
					b.Fatalf("the bucket held at most %d of %d parts at once, want %d: raise partHold", res.PartsInFlight, res.Parts, want)
				}
				r.rows = int(inDay)
				r.daybook, r.peakRSS, r.bytes, r.files, r.held = res.CPU, res.PeakRSS, res.Bytes, res.Files, res.PartsInFlight
				r.duck = duckEncode(b, n, acct)
			}
			ratio := r.daybook.Seconds() / (r.raw + r.duck).Seconds()
			b.ReportMetric(float64(r.rows)/r.daybook.Seconds(), "daybook-rows/cpu-s")
			b.ReportMetric(ratio, "x-(read+duckdb)")
			b.ReportMetric(float64(r.peakRSS)/(1<<20), "peak-RSS-MiB")
			results = append(results, r)
		})
	}
	if len(results) == 0 {
		return
	}
	var t strings.Builder
	fmt.Fprintf(&t, "\nExporter end to end from PostgreSQL (pgserver), events day, one core, client CPU; default file size, part size and upload concurrency; "+
		"each part held %s by the bucket; largest day = rows/CPU-s × %d s × %.1f vCPU (the Lambda at %d MB)\n", partHold, lambdaTimeout, lambdaVCPU, lambdaMemoryMB)
	fmt.Fprintf(&t, "| rows | files | raw read CPU s | DuckDB encode CPU s | read + DuckDB s | daybook CPU s | daybook rows/CPU-s | largest day, M rows | daybook ÷ (read + DuckDB) | target | parts held at once | peak RSS MiB | target |\n")
	fmt.Fprintf(&t, "|-----:|------:|---------------:|--------------------:|----------------:|--------------:|-------------------:|--------------------:|--------------------------:|-------:|-------------------:|-------------:|-------:|\n")
	for _, r := range results {
		ratio := r.daybook.Seconds() / (r.raw + r.duck).Seconds()
		cpuOK, rssOK := verdict(ratio <= 1.5), verdict(r.peakRSS <= 128<<20)
		perCPU := float64(r.rows) / r.daybook.Seconds()
		fmt.Fprintf(&t, "| %d | %d | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %.2fx | ≤1.5x %s | %d | %.1f | ≤128 %s |\n", r.rows, r.files, r.raw.Seconds(), r.duck.Seconds(),
			(r.raw + r.duck).Seconds(), r.daybook.Seconds(), perCPU, perCPU*lambdaTimeout*lambdaVCPU/1e6, ratio, cpuOK, r.held, float64(r.peakRSS)/(1<<20), rssOK)
	}
	fmt.Print(t.String())
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// benchAccount is the account holding the n-row day.
func benchAccount(n int) string {
	s := "bench" + strings.Map(func(r rune) rune { return 'a' + (r - '0') }, strconv.Itoa(n)) // base32 letters only
	return "acct_" + (s + strings.Repeat("z", 16))[:16]
}

// loadEvents inserts n generated events rows of acct for benchDay, unless
// they are there already.
func loadEvents(tb testing.TB, dsn, acct string, n int) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	var have int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE account_id = $1`, acct).Scan(&have); err != nil {
		tb.Fatal(err)
	}
	if have == n {
		return
	}
	gen := datasettest.NewEventGen(1, benchDay, n)
	i := 0
	vals := make([]any, 12)
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		i++
		r := gen.Next()
		vals[0] = acct
		copy(vals[1:5], r[:4])
		vals[5] = r[3]
		copy(vals[6:9], r[4:7])
		vals[9] = nil
		if d, ok := r[7].(dataset.Decimal); ok {
			vals[9] = pgtype.Numeric{Int: d.BigInt(), Exp: int32(-d.Scale()), Valid: true}
		}
		vals[10], vals[11] = r[8], r[9]
		return vals, nil
	})
	cols := []string{"account_id", "event_id", "event_type", "occurred_at", "received_at", "inserted_at",
		"session_id", "user_id", "value", "amount", "is_test", "attributes"}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"events"}, cols, src); err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE events`); err != nil {
		tb.Fatal(err)
	}
}

// dayQuery is the events query of acct's benchDay with its parameters.
func dayQuery(acct string) (text string, q source.Query) {
	ds, _ := dataset.Get("events")
	a := account.Account{ID: acct}
	start, end := a.Window(benchDay)
	q = source.Query{AccountID: acct, Dataset: ds, Day: benchDay, Start: start, End: end}
	text, _ = ds.Query(dataset.DialectPostgres)
	return text, q
}

// dayCount is the number of acct's rows in benchDay.
func dayCount(tb testing.TB, db *sql.DB, acct string) int64 {
	_, q := dayQuery(acct)
	var n int64
	if err := db.QueryRow(`SELECT count(*) FROM events WHERE account_id = $1 AND occurred_at >= $2 AND occurred_at < $3`,
		acct, q.Start, q.End).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// rawRead is the CPU time of reading the day's rows with COPY (query) TO
// STDOUT (FORMAT binary) through pgx into a sink that drops them.
func rawRead(tb testing.TB, dsn, acct string) time.Duration {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	text, q := dayQuery(acct)
	for i, p := range q.Params(dataset.DialectPostgres) {
		lit := fmt.Sprint(p)
		if ts, ok := p.(time.Time); ok {
			lit = dataset.FormatTimestamp(ts)
		}
		text = strings.Replace(text, "$"+strconv.Itoa(i+1), "'"+strings.ReplaceAll(lit, "'", "''")+"'", 1)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	runtime.GC()
	c := cputime.Start()
	if _, err := conn.PgConn().CopyTo(ctx, io.Discard, "COPY ("+text+") TO STDOUT (FORMAT binary)"); err != nil {
		tb.Fatal(err)
	}
	return c.Elapsed()
}

// duckEncode is the CPU time of DuckDB writing the generated rows of the
// day (the ones loaded into PostgreSQL) as Parquet with the exporter's default
// codec, from a table in memory, on one thread.
func duckEncode(tb testing.TB, n int, acct string) time.Duration {
	dir := tb.TempDir()
	ds, _ := dataset.Get("events")
	src := filepath.Join(dir, "rows.parquet")
	f, err := os.Create(src)
	if err != nil {
		tb.Fatal(err)
	}
	enc, err := encode.New(fileformat.Parquet, f, ds, encode.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	gen := datasettest.NewEventGen(1, benchDay, n)
	for range n {
		if err := enc.Write(gen.Next()); err != nil {
			tb.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
	db := duckcheck.Open(tb)
	_, q := dayQuery(acct)
	inDay := fmt.Sprintf(`WHERE occurred_at >= '%s' AND occurred_at < '%s'`, dataset.FormatTimestamp(q.Start), dataset.FormatTimestamp(q.End))
	for _, q := range []string{`SET threads=1`, `CREATE TABLE events AS SELECT * FROM read_parquet('` + src + `') ` + inDay} {
		if _, err := db.Exec(q); err != nil {
			tb.Fatal(err)
		}
	}
	os.Remove(src)
	runtime.GC()
	c := cputime.Start()
	if _, err := db.Exec(fmt.Sprintf(`COPY events TO '%s' (FORMAT parquet, COMPRESSION %s)`, filepath.Join(dir, "duck.parquet"), fileformat.Parquet.DefaultCodec())); err != nil {
		tb.Fatal(err)
	}
	cpu := c.Elapsed()
	if _, err := db.Exec(`DROP TABLE events`); err != nil {
		tb.Fatal(err)
	}
	return cpu
}

// buildChild builds the exporter binary with the benchmark's hook
// (benchchild.go), with the Lambda build's flags.
func buildChild(tb testing.TB) string {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(tb.TempDir(), "exporter")
	cmd := exec.Command(goTool, "build", "-tags", "lambda.norpc,daybook_benchchild", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build the exporter child: %v\n%s", err, out)
	}
	return bin
}

// runExportChild runs the export in a fresh process of the exporter binary
// on one core, so its CPU time and peak RSS are the export's alone.
func runExportChild(tb testing.TB, bin string, c benchChild) benchResult {
	spec, _ := json.Marshal(c)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec), "GOMAXPROCS=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		tb.Fatalf("export child: %v\n%s", err, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if s, ok := strings.CutPrefix(line, childResult); ok {
			var r benchResult
			if err := json.Unmarshal([]byte(s), &r); err != nil {
				tb.Fatal(err)
			}
			return r
		}
	}
	tb.Fatalf("export child printed no result:\n%s", out.String())
	return benchResult{}
}

// TestBenchChild: the exporter binary with the benchmark's hook
// (benchchild.go, built only with its tag) still builds, the hook takes the
// process over when its variable is set, before the Lambda runtime would
// start, and it exports a small day from PostgreSQL as the benchmark's
// does, so `make bench` cannot break unnoticed.
func TestBenchChild(t *testing.T) {
	bin := buildChild(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), childEnv+"={not json")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "bench child:") {
		t.Fatalf("child with a bad spec: %v\n%s", err, out)
	}

	srv := pgserver.New(t)
	db, err := sql.Open("pgx", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ddl, err := dataset.SourceDDL(dataset.DialectPostgres)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ddl); err != nil {
		t.Fatal(err)
	}
	acct := benchAccount(3000)
	loadEvents(t, srv.DSN, acct, 3000)
	res := runExportChild(t, bin, benchChild{DSN: srv.DSN, Account: acct, Day: benchDay.String()})
	if in := dayCount(t, db, acct); res.Rows != in || res.Files != 1 || res.Bytes == 0 || res.PeakRSS == 0 || res.CPU <= 0 {
		t.Fatalf("child export %+v, want the day's %d rows in one file, with its CPU and peak RSS", res, in)
	}
}
