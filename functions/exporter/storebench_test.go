//go:build !noduckdb

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/azurite"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/minioserver"
	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc/servertest"
	"github.com/daybook-dev/daybook/shared/netguard"
)

// The stores BenchmarkExportStores writes to, the reference first.
var benchStores = []string{"s3", "gcs", "azure"}

// targetStoreOverS3 is the bound on a store's CPU per row and peak
// RSS over S3's.
const targetStoreOverS3 = 1.1

// benchStore is a store the bench child exports to (benchchild.go's
// storeSpec, spelt the same in JSON).
type benchStore struct {
	Destination account.Destination `json:"destination"`
	AccessKey   string              `json:"access_key,omitempty"`
	SecretKey   string              `json:"secret_key,omitempty"`
}

// storeTarget is one store a bench child exports to: the destination and
// the pid of the server holding it (its CPU is read from /proc).
type storeTarget struct {
	spec benchStore
	pid  int
}

// storeRow is one store's figures: the medians of its runs.
type storeRow struct {
	store     string
	res       benchResult
	rss       int64         // the median peak RSS
	serverCPU time.Duration // the median CPU the store's server used during a run
	runs      []benchResult
	// cpuRatios and rssRatios are the run-by-run ratios to S3's run of
	// the same turn.
	cpuRatios, rssRatios []float64
}

// storeRuns is how many turns BenchmarkExportStores runs: each store's
// ratio to S3 is the median of a ratio per turn, so a neighbour's burst
// moves one pair, not a verdict.
const storeRuns = 5

// benchStoreTargets starts the three stores on loopback, MinIO for S3
// (a real S3 implementation in Go: moto, in Python, would take the machine's
// cores from the child at this size), fake-gcs-server and Azurite (in
// memory), with a bucket each, stopped when tb ends.
func benchStoreTargets(tb testing.TB) map[string]storeTarget {
	ctx := context.Background()
	mio := minioserver.ForTest(tb)
	cfg, err := mio.Config(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := awsclient.NewS3(cfg).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: strPtr("bench-s3")}); err != nil {
		tb.Fatal(err)
	}
	fgcs := servertest.ForTest(tb, gcsserver.Start)
	if err := gcsserver.CreateBucket(ctx, fgcs, "bench-gcs"); err != nil {
		tb.Fatal(err)
	}
	azr := servertest.ForTest(tb, azurite.Start)
	if err := azurite.CreateContainer(ctx, azr, "bench-azure"); err != nil {
		tb.Fatal(err)
	}
	return map[string]storeTarget{
		"s3": {spec: benchStore{Destination: account.Destination{Bucket: "bench-s3", Endpoint: mio.URL, Region: minioserver.Region},
			AccessKey: minioserver.AccessKey, SecretKey: minioserver.SecretKey}, pid: mio.Pid},
		"gcs": {spec: benchStore{Destination: account.Destination{StoreKind: account.StoreGCS, Bucket: "bench-gcs", Endpoint: fgcs.URL}}, pid: fgcs.Pid},
		"azure": {spec: benchStore{Destination: account.Destination{StoreKind: account.StoreAzure, Bucket: "bench-azure",
			StorageAccount: azurite.Account, Endpoint: azr.URL}}, pid: azr.Pid},
	}
}

func strPtr(s string) *string { return &s }

// BenchmarkExportStores exports a 1M-row events day from a throwaway
// PostgreSQL server to each store daybook writes to, S3 (MinIO), GCS
// (fake-gcs-server) and Azure Blob Storage (Azurite), through the
// exporter's own drivers, in a child process of the exporter's binary (as
// BenchmarkExportPostgres's, benchchild.go) at GOMAXPROCS 2 with the
// default file size, part size and upload concurrency, the same for every
// store. The stores run in turns, storeRuns turns; the table shows each
// store's median CPU per row and peak RSS (VmHWM), their ratios to S3's
// (the median of the ratios of each turn's runs, paired as they ran, and
// their spread), and the CPU the store's own server used during a run (the
// emulator's cost, not the exporter's).
//
//	go test ./functions/exporter -run '^$' -bench ExportStores -benchtime 1x
//
// DAYBOOK_BENCH_STORE_ROWS=<n> exports a day of n rows instead;
// DAYBOOK_BENCH_CPUPROFILE=<dir> writes a CPU profile of each export, named
// after its store.
func BenchmarkExportStores(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("DAYBOOK_BENCH_STORE_ROWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("DAYBOOK_BENCH_STORE_ROWS=%q: want a number of rows", s)
		}
		n = v
	}
	child := buildChild(b)
	dsn := os.Getenv("DAYBOOK_BENCH_DSN")
	if dsn == "" {
		dsn = pgserver.New(b).DSN
	}
	targets := benchStoreTargets(b)
	var rows []storeRow
	for b.Loop() {
		rows = exportToStores(b, storeBench{child: child, dsn: dsn, n: n, runs: storeRuns}, targets)
	}
	for _, r := range rows {
		b.ReportMetric(medianOf(r.cpuRatios), r.store+"-cpu/s3")
		b.ReportMetric(medianOf(r.rssRatios), r.store+"-rss/s3")
	}
	fmt.Print(storeTable(rows))
}

// storeBench is what exportToStores runs: the bench child (its binary) on
// an n-row day of the server at dsn, runs times per store.
type storeBench struct {
	child, dsn string
	n, runs    int
}

// exportToStores loads an n-row day into the server at dsn (unless there)
// and exports it to every store in turns, runs times each, at GOMAXPROCS 2;
// each store must then hold the file.
func exportToStores(tb testing.TB, sr storeBench, targets map[string]storeTarget) []storeRow {
	child, dsn, n, runs := sr.child, sr.dsn, sr.n, sr.runs
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	createSourceTables(tb, db)
	acct := benchAccount(n)
	loadEvents(tb, dsn, acct, n)
	inDay := dayCount(tb, db, acct)
	all := map[string]*storeRow{}
	for i := range runs {
		for _, store := range benchStores {
			t := targets[store]
			spec := t.spec
			before := procCPU(tb, t.pid)
			res := runExportChild(tb, child, benchChild{DSN: dsn, Account: acct, Day: benchDay.String(), Store: &spec, Label: store + "-" + strconv.Itoa(i)}, 2)
			server := procCPU(tb, t.pid) - before
			if res.Rows != inDay {
				tb.Fatalf("%s: exported %d rows, the day holds %d", store, res.Rows, inDay)
			}
			r := all[store]
			if r == nil {
				r = &storeRow{store: store}
				all[store] = r
			}
			r.runs = append(r.runs, res)
			r.serverCPU += server // summed here, divided below
		}
	}
	var out []storeRow
	clients := &destination.Clients{Endpoints: netguard.Policy{AllowLoopback: true}}
	clients.Base.Region = minioserver.Region
	clients.Base.Credentials = credentials.NewStaticCredentialsProvider(minioserver.AccessKey, minioserver.SecretKey, "")
	for _, store := range benchStores {
		r := all[store]
		// The file is in the store, not in the child's discarding bucket.
		b, err := clients.Open(context.Background(), "bench", targets[store].spec.Destination, bucket.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		objs, err := b.List(context.Background(), "", 100_000)
		if err != nil {
			tb.Fatal(err)
		}
		if !slices.ContainsFunc(objs, func(o bucket.Object) bool { return strings.HasSuffix(o.Key, ".parquet") && o.Size == r.runs[0].Bytes }) {
			tb.Fatalf("%s holds no Parquet file of the export's %d bytes: %v", store, r.runs[0].Bytes, objs)
		}
		r.res = medianResult(tb, r.runs)
		r.rss = int64(median(r.runs, func(b benchResult) float64 { return float64(b.PeakRSS) }))
		r.serverCPU /= time.Duration(len(r.runs))
		ref := all[benchStores[0]].runs
		for i, x := range r.runs {
			r.cpuRatios = append(r.cpuRatios, x.CPU.Seconds()/ref[i].CPU.Seconds())
			r.rssRatios = append(r.rssRatios, float64(x.PeakRSS)/float64(ref[i].PeakRSS))
		}
		out = append(out, *r)
	}
	for _, r := range out[1:] {
		if r.res.Bytes != out[0].res.Bytes || r.res.Files != out[0].res.Files {
			tb.Fatalf("%s wrote %d files of %d bytes, S3 %d of %d: the stores must get the same files", r.store, r.res.Files, r.res.Bytes, out[0].res.Files, out[0].res.Bytes)
		}
	}
	return out
}

// storeTable prints rows as a table, ratios against the first (S3).
func storeTable(rows []storeRow) string {
	var t strings.Builder
	ref := rows[0]
	fmt.Fprintf(&t, "\nExporter from PostgreSQL (pgserver) to each store, events day, GOMAXPROCS=2, default file size, part size and upload concurrency; "+
		"medians of %d runs per store, the stores in turns; S3 is MinIO, GCS fake-gcs-server, Azure Azurite\n", len(ref.runs))
	fmt.Fprintf(&t, "| store | rows | files | bytes | CPU s (runs) | CPU µs/row | ÷ S3, paired (spread) | peak RSS MiB (runs) | ÷ S3, paired (spread) | target | wall s | server CPU s |\n")
	fmt.Fprintf(&t, "|-------|-----:|------:|------:|-------------:|-----------:|----------------------:|--------------------:|----------------------:|-------:|-------:|-------------:|\n")
	for _, r := range rows {
		cpu, rss := medianOf(r.cpuRatios), medianOf(r.rssRatios)
		rssRuns := make([]string, len(r.runs))
		for i, x := range r.runs {
			rssRuns[i] = fmt.Sprintf("%.1f", float64(x.PeakRSS)/(1<<20))
		}
		target := "reference"
		if r.store != ref.store {
			target = fmt.Sprintf("≤%.1fx %s", targetStoreOverS3, verdict(cpu <= targetStoreOverS3 && rss <= targetStoreOverS3))
		}
		fmt.Fprintf(&t, "| %s | %d | %d | %d | %.2f (%s) | %.2f | %.2fx (%s) | %.1f (%s) | %.2fx (%s) | %s | %.2f | %.2f |\n",
			r.store, r.res.Rows, r.res.Files, r.res.Bytes, r.res.CPU.Seconds(), runList(r.runs, func(b benchResult) time.Duration { return b.CPU }),
			float64(r.res.CPU.Microseconds())/float64(r.res.Rows), cpu, spread(r.cpuRatios), float64(r.rss)/(1<<20), strings.Join(rssRuns, " "), rss, spread(r.rssRatios), target,
			r.res.Wall.Seconds(), r.serverCPU.Seconds())
	}
	return t.String()
}

// medianOf is the median of v.
func medianOf(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// spread is the smallest and largest of v.
func spread(v []float64) string {
	return fmt.Sprintf("%.2f–%.2f", slices.Min(v), slices.Max(v))
}

// procCPU is the user + system CPU time process pid has used so far
// (/proc/<pid>/stat, in clock ticks of 1/100 s).
func procCPU(tb testing.TB, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// checkStoresChild: the bench child exports the small day of acct's
// server at dsn to each store as BenchmarkExportStores does, the same file
// to each, so `make bench` cannot break unnoticed (TestBenchChild).
func checkStoresChild(t *testing.T, bin, dsn string, n int) {
	rows := exportToStores(t, storeBench{child: bin, dsn: dsn, n: n, runs: 1}, benchStoreTargets(t))
	for _, r := range rows {
		if r.res.Rows == 0 || r.res.Files != 1 || r.res.Bytes == 0 || r.rss == 0 || r.res.CPU <= 0 {
			t.Errorf("%s: %+v, want the day in one file, with its CPU and peak RSS", r.store, r.res)
		}
	}
	if s := storeTable(rows); !strings.Contains(s, "| gcs | ") || !strings.Contains(s, "| azure | ") {
		t.Errorf("the table names no GCS or Azure row:\n%s", s)
	}
}
