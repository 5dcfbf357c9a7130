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

	"github.com/daybook-dev/daybook/shared/devkit/hostbuild"

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

// partHold is how long at most the child's bucket holds a part before it
// acknowledges it: it holds every part until all upload slots are taken
// (or the file's last part came), so the writer holds all its part
// buffers, the worst case of a slow S3 (the benchmark checks it did).
const partHold = 30 * time.Second

var benchDay = civil.FromEpochDays(20785) // 2026-11-28, the generator's day

type benchChild struct {
	DSN      string        `json:"dsn"`
	Account  string        `json:"account"`
	Day      string        `json:"day"`
	PartHold time.Duration `json:"part_hold"`
	// DecodeAhead forces the read's decode-ahead goroutine on (> 0) or
	// off (< 0); RawCopy makes the child run only that raw read; Label
	// ends the child's profile names (benchchild.go).
	DecodeAhead int    `json:"decode_ahead,omitempty"`
	RawCopy     string `json:"raw_copy,omitempty"`
	Label       string `json:"label,omitempty"`
	// Store names a real store to export to (BenchmarkExportStores).
	Store *benchStore `json:"store,omitempty"`
}

type benchResult struct {
	Rows          int64         `json:"rows"`
	Bytes         int64         `json:"bytes"`
	Files         int           `json:"files"`
	CPU           time.Duration `json:"cpu"`
	Wall          time.Duration `json:"wall"`
	PeakRSS       int64         `json:"peak_rss"`
	Parts         int64         `json:"parts"`
	PartsInFlight int64         `json:"parts_in_flight"`
}

// benchRow is one day's figures: the references (the raw read's CPU and
// wall time, DuckDB's encode CPU) and the export at GOMAXPROCS 1 and 2 into
// a bucket that acknowledges parts at once (CPU and wall), and at
// GOMAXPROCS 2 into one that holds every part (peak RSS).
type benchRow struct {
	rows, files    int
	raw, rawWall   time.Duration
	duck           time.Duration
	one, two       benchResult
	peakRSS, bytes int64
	held           int64 // most parts held at once
}

// The targets for an export from PostgreSQL.
const (
	targetTwoOverOne  = 0.6 // wall at GOMAXPROCS 2 ÷ wall at 1
	targetCPUOverRef  = 1.0 // client CPU ÷ (raw read + DuckDB encode)
	targetWallOverRaw = 1.3 // wall at GOMAXPROCS 2 ÷ the raw read's wall
	targetPeakRSS     = 128 << 20
)

// BenchmarkExportPostgres exports a 1M-row events day (and a 10M-row one
// when DAYBOOK_BENCH_10M is set) from a throwaway PostgreSQL server into a
// bucket that discards data files, in child processes with the default
// file size, part size and upload concurrency: at GOMAXPROCS=1 and 2 into
// a bucket that acknowledges each part at once (CPU and wall time), and at
// GOMAXPROCS=2 into one that holds the parts until every upload slot is
// taken (peak RSS, the kernel's VmHWM). It compares them with (a)
// the raw read of the same rows, COPY (query) TO STDOUT (FORMAT binary)
// through pgx into a discarding sink (CPU and wall time), and (b) DuckDB's
// single-thread Parquet encode of the same rows with the same codec, and
// prints the figures and their ratios as a table: each CPU and wall time
// the median of benchRuns runs, GOMAXPROCS 1 and 2 in turns, so a
// neighbour's burst does not decide a verdict. Then it does the same
// from a recording of the server's bytes served from memory, where the
// client and not the server is the bottleneck (replayDay).
//
// The child is the exporter's own binary built with the daybook_benchchild
// tag (benchchild.go), so its RSS holds what the Lambda's does and not
// DuckDB or the test fakes.
// DAYBOOK_BENCH_CPUPROFILE=dir writes a CPU profile of each export there,
// DAYBOOK_BENCH_TRACE=dir an execution trace;
// DAYBOOK_BENCH_MEMPROFILE=dir writes a heap profile at each export's
// highest resident set and its memory over time (see heapWatch).
// DAYBOOK_BENCH_DSN=<pgx DSN> uses that PostgreSQL server instead of a
// throwaway one, and keeps the days it loads there for the next run.
//
//	go test ./functions/exporter -run '^$' -bench ExportPostgres -benchtime 1x
func BenchmarkExportPostgres(b *testing.B) {
	child := buildChild(b)
	sizes := []int{1_000_000}
	if os.Getenv("DAYBOOK_BENCH_10M") != "" {
		sizes = append(sizes, 10_000_000)
	}
	dsn := os.Getenv("DAYBOOK_BENCH_DSN")
	if dsn == "" {
		dsn = pgserver.New(b).DSN
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	createSourceTables(b, db)
	var results []benchRow
	var replays []replayRow
	for _, n := range sizes {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			acct := benchAccount(n)
			loadEvents(b, dsn, acct, n)
			var r benchRow
			var rp replayRow
			for b.Loop() {
				r = exportDay(b, child, db, dsn, acct)
				r.duck = duckEncode(b, n, acct)
				rp = replayDay(b, child, dsn, acct, r) // replay_bench_test.go
			}
			b.ReportMetric(float64(r.rows)/r.one.CPU.Seconds(), "daybook-rows/cpu-s")
			b.ReportMetric(r.one.CPU.Seconds()/(r.raw+r.duck).Seconds(), "x-(read+duckdb)")
			b.ReportMetric(r.two.Wall.Seconds()/r.one.Wall.Seconds(), "wall2/wall1")
			b.ReportMetric(float64(r.peakRSS)/(1<<20), "peak-RSS-MiB")
			b.ReportMetric(rp.two.Wall.Seconds()/rp.one.Wall.Seconds(), "replay-wall2/wall1")
			results, replays = append(results, r), append(replays, rp)
		})
	}
	if len(results) > 0 {
		fmt.Print(benchTable(results) + replayTable(replays))
	}
}

// createSourceTables creates the source's tables in db unless they are
// there (a kept DAYBOOK_BENCH_DSN server has them).
func createSourceTables(tb testing.TB, db *sql.DB) {
	var have bool
	if err := db.QueryRow(`SELECT to_regclass('events') IS NOT NULL`).Scan(&have); err != nil {
		tb.Fatal(err)
	}
	if have {
		return
	}
	ddl, err := dataset.SourceDDL(dataset.DialectPostgres)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Exec(ddl); err != nil {
		tb.Fatal(err)
	}
}

// exportDay measures acct's benchDay: the raw read, then the export at
// GOMAXPROCS 1 and 2 in turns (the medians of benchRuns runs each), then
// at 2 with every upload slot held.
func exportDay(b *testing.B, child string, db *sql.DB, dsn, acct string) benchRow {
	var r benchRow
	var raws []benchResult
	for range benchRuns {
		cpu, wall := rawRead(b, dsn, acct)
		raws = append(raws, benchResult{CPU: cpu, Wall: wall})
	}
	raw := medianResult(b, raws)
	r.raw, r.rawWall = raw.CPU, raw.Wall
	spec := benchChild{DSN: dsn, Account: acct, Day: benchDay.String()}
	r.one, r.two = onesAndTwos(b, func(procs int) benchResult { return runExportChild(b, child, spec, procs) })
	spec.PartHold = partHold
	held := runExportChild(b, child, spec, 2)
	// The generator spreads n rows over about a day: a few may fall past
	// its end, and every measure reads the day's.
	inDay := dayCount(b, db, acct)
	for _, res := range []benchResult{r.one, r.two, held} {
		if res.Rows != inDay {
			b.Fatalf("exported %d rows, the day holds %d", res.Rows, inDay)
		}
	}
	if r.one.Bytes != r.two.Bytes || r.one.Bytes != held.Bytes {
		b.Fatalf("the day's files are %d, %d and %d bytes at GOMAXPROCS 1, 2 and 2 held: want one size", r.one.Bytes, r.two.Bytes, held.Bytes)
	}
	// Every upload slot a file's parts can fill, filled.
	if want := min(upload.DefaultConcurrency, held.Parts/int64(max(1, held.Files))); held.PartsInFlight < want {
		b.Fatalf("the bucket held at most %d of %d parts at once, want %d: raise partHold", held.PartsInFlight, held.Parts, want)
	}
	r.rows, r.files, r.bytes = int(inDay), held.Files, held.Bytes
	r.peakRSS, r.held = held.PeakRSS, held.PartsInFlight
	return r
}

// benchTable prints results as two tables: CPU and memory, and wall time.
func benchTable(results []benchRow) string {
	var t strings.Builder
	fmt.Fprintf(&t, "\nExporter end to end from PostgreSQL (pgserver), events day, client CPU; default file size, part size and upload concurrency; "+
		"peak RSS at GOMAXPROCS=2 with every upload slot held by the bucket; largest day = rows/CPU-s × %d s × %.1f vCPU (the Lambda at %d MB)\n", lambdaTimeout, lambdaVCPU, lambdaMemoryMB)
	fmt.Fprintf(&t, "| rows | files | raw read CPU s | DuckDB encode CPU s | read + DuckDB s | daybook CPU s, GOMAXPROCS 1 | 2 | daybook rows/CPU-s | largest day, M rows | CPU ÷ (read + DuckDB), 1 | 2 | target | parts held at once | peak RSS MiB | target |\n")
	fmt.Fprintf(&t, "|-----:|------:|---------------:|--------------------:|----------------:|----------------------------:|--:|-------------------:|--------------------:|-------------------------:|--:|-------:|-------------------:|-------------:|-------:|\n")
	for _, r := range results {
		ref := (r.raw + r.duck).Seconds()
		one, two := r.one.CPU.Seconds()/ref, r.two.CPU.Seconds()/ref
		perCPU := float64(r.rows) / r.one.CPU.Seconds()
		fmt.Fprintf(&t, "| %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %.2fx | %.2fx | ≤%.1fx %s | %d | %.1f | ≤%d %s |\n",
			r.rows, r.files, r.raw.Seconds(), r.duck.Seconds(), ref, r.one.CPU.Seconds(), r.two.CPU.Seconds(), perCPU, perCPU*lambdaTimeout*lambdaVCPU/1e6,
			one, two, targetCPUOverRef, verdict(max(one, two) <= targetCPUOverRef), r.held, float64(r.peakRSS)/(1<<20), targetPeakRSS>>20, verdict(r.peakRSS <= targetPeakRSS))
	}
	fmt.Fprintf(&t, "\nWall time of the same exports (the bucket acknowledges each part at once) and of the raw read\n")
	fmt.Fprintf(&t, "| rows | raw read wall s | wall s, GOMAXPROCS 1 | 2 | wall 2 ÷ wall 1 | target | wall 2 ÷ raw read | target | rows/s, GOMAXPROCS 2 |\n")
	fmt.Fprintf(&t, "|-----:|----------------:|---------------------:|--:|----------------:|-------:|------------------:|-------:|---------------------:|\n")
	for _, r := range results {
		speedup, floor := r.two.Wall.Seconds()/r.one.Wall.Seconds(), r.two.Wall.Seconds()/r.rawWall.Seconds()
		fmt.Fprintf(&t, "| %d | %.2f | %.2f | %.2f | %.2fx | ≤%.1fx %s | %.2fx | ≤%.1fx %s | %.0f |\n", r.rows, r.rawWall.Seconds(), r.one.Wall.Seconds(), r.two.Wall.Seconds(),
			speedup, targetTwoOverOne, verdict(speedup <= targetTwoOverOne), floor, targetWallOverRaw, verdict(floor <= targetWallOverRaw), float64(r.rows)/r.two.Wall.Seconds())
	}
	return t.String()
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
	ex, _ := dataset.Example()
	ds, _ := ex.Get("events")
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

// rawRead is the CPU and wall time of reading the day's rows with COPY
// (query) TO STDOUT (FORMAT binary) through pgx into a sink that drops them.
func rawRead(tb testing.TB, dsn, acct string) (cpu, wall time.Duration) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	runtime.GC()
	c, start := cputime.Start(), time.Now()
	if _, err := conn.PgConn().CopyTo(ctx, io.Discard, rawCopy(acct)); err != nil {
		tb.Fatal(err)
	}
	return c.Elapsed(), time.Since(start)
}

// rawCopy is the raw read's statement: the day's query, its parameters
// inlined, in COPY (query) TO STDOUT (FORMAT binary).
func rawCopy(acct string) string {
	text, q := dayQuery(acct)
	for i, p := range q.Params(dataset.DialectPostgres) {
		lit := fmt.Sprint(p)
		if ts, ok := p.(time.Time); ok {
			lit = dataset.FormatTimestamp(ts)
		}
		text = strings.Replace(text, "$"+strconv.Itoa(i+1), "'"+strings.ReplaceAll(lit, "'", "''")+"'", 1)
	}
	return "COPY (" + text + ") TO STDOUT (FORMAT binary)"
}

// duckEncode is the CPU time of DuckDB writing the generated rows of the
// day (the ones loaded into PostgreSQL) as Parquet with the exporter's default
// codec, from a table in memory, on one thread.
func duckEncode(tb testing.TB, n int, acct string) time.Duration {
	dir := tb.TempDir()
	ds, _ := datasettest.Example(tb).Get("events")
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
	bin := filepath.Join(tb.TempDir(), "exporter")
	hostbuild.Lambda(tb, bin, "./functions/exporter", "daybook_benchchild")
	return bin
}

// runExportChild runs the export in a fresh process of the exporter binary
// with GOMAXPROCS procs, so its CPU time and peak RSS are the export's alone.
func runExportChild(tb testing.TB, bin string, c benchChild, procs int) benchResult {
	spec, _ := json.Marshal(c)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec), "GOMAXPROCS="+strconv.Itoa(procs))
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
// does, and to each store as BenchmarkExportStores's does, so `make bench`
// cannot break unnoticed.
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
	createSourceTables(t, db)
	acct := benchAccount(3000)
	loadEvents(t, srv.DSN, acct, 3000)
	res := runExportChild(t, bin, benchChild{DSN: srv.DSN, Account: acct, Day: benchDay.String()}, 2)
	if in := dayCount(t, db, acct); res.Rows != in || res.Files != 1 || res.Bytes == 0 || res.PeakRSS == 0 || res.CPU <= 0 || res.Wall <= 0 {
		t.Fatalf("child export %+v, want the day's %d rows in one file, with its CPU, wall time and peak RSS", res, in)
	}
	checkReplay(t, bin, srv.DSN, acct, res)
	checkCaptures(t, bin, benchChild{DSN: srv.DSN, Account: acct, Day: benchDay.String(), Label: "captured"})
	checkStoresChild(t, bin, srv.DSN, 3000) // storebench_test.go
}

// checkCaptures: with DAYBOOK_BENCH_CPUPROFILE and DAYBOOK_BENCH_TRACE
// naming a directory, as docs/performance.md says, the child writes a CPU
// profile (gzip-compressed protobuf) and an execution trace ("go 1.N
// trace" header) of its export there.
func checkCaptures(t *testing.T, bin string, c benchChild) {
	dir := t.TempDir()
	t.Setenv("DAYBOOK_BENCH_CPUPROFILE", dir)
	t.Setenv("DAYBOOK_BENCH_TRACE", dir)
	runExportChild(t, bin, c, 2)
	name := fmt.Sprintf("export-%s-gomaxprocs2-%s", c.Account, c.Label)
	for ext, magic := range map[string]string{".prof": "\x1f\x8b", ".trace": "go 1."} {
		b, err := os.ReadFile(filepath.Join(dir, name+ext))
		if err != nil || !strings.HasPrefix(string(b), magic) {
			t.Errorf("%s%s: %v, %d bytes starting %q, want them to start %q", name, ext, err, len(b), b[:min(len(b), 8)], magic)
		}
	}
}
