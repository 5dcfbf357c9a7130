package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/cputime"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/source"
)

// childEnv carries the export a child process of BenchmarkExportPostgres
// runs (a benchChild as JSON); its result comes back on a line of stdout
// starting with childResult.
const (
	childEnv    = "DAYBOOK_BENCH_EXPORT_CHILD"
	childResult = "DAYBOOK_BENCH_RESULT "
)

var benchDay = civil.FromEpochDays(20785) // 2026-11-28, the generator's day

type benchChild struct {
	DSN     string `json:"dsn"`
	Account string `json:"account"`
}

type benchResult struct {
	Rows    int64         `json:"rows"`
	Bytes   int64         `json:"bytes"`
	Files   int           `json:"files"`
	CPU     time.Duration `json:"cpu"`
	PeakRSS int64         `json:"peak_rss"`
}

// BenchmarkExportPostgres exports a 1M-row events day (and a 10M-row one
// when DAYBOOK_BENCH_10M is set) from a throwaway PostgreSQL server into a
// bucket that discards data files, in a child process on one core
// (GOMAXPROCS=1) with the default file size, part size and upload
// concurrency, and compares its CPU time with (a) the raw read of the same
// rows, COPY (query) TO STDOUT (FORMAT binary) through pgx into a
// discarding sink, and (b) DuckDB's single-thread Parquet encode of the
// same rows with the same codec. It prints the figures and the child's peak
// RSS (the kernel's VmHWM) as a table. DAYBOOK_BENCH_CPUPROFILE=dir writes a
// CPU profile of each export there.
//
//	go test ./functions/exporter -run '^$' -bench ExportPostgres -benchtime 1x
func BenchmarkExportPostgres(b *testing.B) {
	if spec := os.Getenv(childEnv); spec != "" {
		exportChild(b, spec)
		return
	}
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
				res := runExportChild(b, benchChild{DSN: srv.DSN, Account: acct})
				// The generator spreads n rows over about a day: a few may
				// fall past its end, and every measure reads the day's.
				inDay := dayCount(b, db, acct)
				if res.Rows != inDay {
					b.Fatalf("exported %d rows, the day holds %d", res.Rows, inDay)
				}
				r.rows = int(inDay)
				r.daybook, r.peakRSS, r.bytes = res.CPU, res.PeakRSS, res.Bytes
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
	fmt.Fprintf(&t, "\nExporter end to end from PostgreSQL (pgserver), events day, one core, client CPU; default file size, part size and upload concurrency\n")
	fmt.Fprintf(&t, "| rows | raw read CPU s | DuckDB encode CPU s | read + DuckDB s | daybook CPU s | daybook rows/CPU-s | daybook ÷ (read + DuckDB) | target | peak RSS MiB | target |\n")
	fmt.Fprintf(&t, "|-----:|---------------:|--------------------:|----------------:|--------------:|-------------------:|--------------------------:|-------:|-------------:|-------:|\n")
	for _, r := range results {
		ratio := r.daybook.Seconds() / (r.raw + r.duck).Seconds()
		cpuOK, rssOK := verdict(ratio <= 1.5), verdict(r.peakRSS <= 128<<20)
		fmt.Fprintf(&t, "| %d | %.2f | %.2f | %.2f | %.2f | %.0f | %.2fx | ≤1.5x %s | %.1f | ≤128 %s |\n", r.rows, r.raw.Seconds(), r.duck.Seconds(),
			(r.raw + r.duck).Seconds(), r.daybook.Seconds(), float64(r.rows)/r.daybook.Seconds(), ratio, cpuOK, float64(r.peakRSS)/(1<<20), rssOK)
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

// startProfile writes a CPU profile to path until the returned stop.
func startProfile(tb testing.TB, path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
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

// runExportChild runs the export in a fresh process of this test binary on
// one core, so its CPU time and peak RSS are the export's alone.
func runExportChild(tb testing.TB, c benchChild) benchResult {
	spec, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkExportPostgres$", "-test.benchtime=1x")
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

// exportChild is the child's side: one Exporter.Export of the account's
// day from PostgreSQL into a discarding bucket.
func exportChild(b *testing.B, spec string) {
	var c benchChild
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("pgx", c.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	src, err := source.NewSQL(db, dataset.DialectPostgres, "pg")
	if err != nil {
		b.Fatal(err)
	}
	_, q := dayQuery(c.Account)
	a := account.Account{ID: c.Account, Name: "bench", Enabled: true, StartDate: benchDay.AddDays(-1), Datasets: []string{"events"},
		Destination: account.Destination{Bucket: "bench", Format: fileformat.Parquet}}
	e := &Exporter{
		Source:  src,
		Buckets: discardBuckets{buckettest.NewFake("bench")},
		Scripts: loadScripts,
		Config:  ExportConfig{Stage: "bench"},
		Now:     time.Now,
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	stop := func() {}
	if dir := os.Getenv("DAYBOOK_BENCH_CPUPROFILE"); dir != "" {
		stop = startProfile(b, filepath.Join(dir, "export-"+c.Account+".prof"))
	}
	cpu := cputime.Start()
	w, err := e.Export(context.Background(), Partition{Account: a, Dataset: q.Dataset, Day: benchDay,
		Claim: ledger.Claim{Generation: 1, Attempt: 1}, RunID: "bench"}, log)
	elapsed := cpu.Elapsed()
	stop()
	if err != nil {
		b.Fatal(err)
	}
	r := benchResult{Rows: w.Manifest.Totals.Rows, Bytes: w.Bytes, Files: len(w.Manifest.Files), CPU: elapsed, PeakRSS: cputime.PeakRSS()}
	line, _ := json.Marshal(r)
	fmt.Println(childResult + string(line))
}

// discardBuckets hands out a bucket whose multipart uploads (the data
// files) are dropped as they arrive; small objects are kept in the fake.
type discardBuckets struct{ f *buckettest.Fake }

func (d discardBuckets) Client(string, account.Destination) bucket.API { return discardS3{d.f} }

type discardS3 struct{ *buckettest.Fake }

func (discardS3) CreateMultipartUpload(_ context.Context, _ *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	return &s3.CreateMultipartUploadOutput{UploadId: aws.String("discard")}, nil
}

func (discardS3) UploadPart(_ context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	if _, err := io.Copy(io.Discard, in.Body); err != nil {
		return nil, err
	}
	return &s3.UploadPartOutput{ETag: aws.String(fmt.Sprintf(`"part-%d"`, aws.ToInt32(in.PartNumber))), ChecksumCRC32C: in.ChecksumCRC32C}, nil
}

func (discardS3) CompleteMultipartUpload(_ context.Context, in *s3.CompleteMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	return &s3.CompleteMultipartUploadOutput{ETag: aws.String(`"discarded"`), ChecksumCRC32C: in.ChecksumCRC32C}, nil
}

func (discardS3) AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	return &s3.AbortMultipartUploadOutput{}, nil
}
