//go:build daybook_benchchild

// This file is only in the exporter binary BenchmarkExportPostgres builds
// (go build -tags daybook_benchchild): the Lambda's own code and
// dependencies plus this hook, so the CPU time and peak RSS it reports are
// the exporter's, not those of a test binary that also links DuckDB, SQLite
// and the test fakes. Lambda builds never include it.

package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/cputime"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/netguard"
	"github.com/daybook-dev/daybook/shared/source"
	"github.com/daybook-dev/daybook/shared/upload"
)

// benchChildEnv carries the export to run (a childSpec as JSON); the result
// is printed on a line of stdout starting with benchChildResult. The test
// side (throughput_test.go) spells both the same.
const (
	benchChildEnv    = "DAYBOOK_BENCH_EXPORT_CHILD"
	benchChildResult = "DAYBOOK_BENCH_RESULT "
)

type childSpec struct {
	DSN     string `json:"dsn"`
	Account string `json:"account"`
	Day     string `json:"day"`
	// PartHold, when set, makes the bucket a slow S3 that holds every part
	// until upload.DefaultConcurrency parts are held at once, so every
	// upload slot is taken however fast or slow the encoder runs, or until
	// the file's last part arrives (its earlier parts cannot fill the
	// slots), or for PartHold at most: see holdCount.
	PartHold time.Duration `json:"part_hold"`
	// DecodeAhead, when not 0, forces the PostgreSQL read's decode-ahead
	// goroutine on (> 0, that depth) or off (< 0): source.SQL.WithDecodeAhead.
	DecodeAhead int `json:"decode_ahead"`
	// RawCopy, when set, makes the child run no export but this COPY ...
	// TO STDOUT statement on a pgx connection into a sink that drops the
	// rows: the raw read, measured in a process of its own (the test
	// process may hold the server, a replay of one).
	RawCopy string `json:"raw_copy"`
	// Label, when set, ends the names of the profiles the child writes,
	// so runs of one account, GOMAXPROCS and hold (a replay's) do not
	// overwrite each other's.
	Label string `json:"label"`
	// Store, when set, is a real store the export writes to through the
	// exporter's own drivers (destination.Clients, as main.go wires them)
	// instead of the discarding bucket: BenchmarkExportStores.
	Store *storeSpec `json:"store,omitempty"`
}

// storeSpec is the destination of a store the child exports to, at a
// custom endpoint on loopback, and daybook's own S3 key for an S3 one (an
// emulator's GCS and Azure destinations need no credentials of ours:
// destination.Clients reaches them as it does in local development).
type storeSpec struct {
	Destination account.Destination `json:"destination"`
	AccessKey   string              `json:"access_key,omitempty"`
	SecretKey   string              `json:"secret_key,omitempty"`
}

type childOutcome struct {
	Rows  int64         `json:"rows"`
	Bytes int64         `json:"bytes"`
	Files int           `json:"files"`
	CPU   time.Duration `json:"cpu"`
	// Wall is the export's elapsed time, from placing the generation to its commit.
	Wall    time.Duration `json:"wall"`
	PeakRSS int64         `json:"peak_rss"`
	// Parts counts the UploadPart calls; PartsInFlight is the most the
	// bucket held at once.
	Parts         int64 `json:"parts"`
	PartsInFlight int64 `json:"parts_in_flight"`
}

func init() {
	spec := os.Getenv(benchChildEnv)
	if spec == "" {
		return
	}
	// Not on this goroutine: during package initialisation the runtime
	// locks the main goroutine to its OS thread, so every hand-off between
	// it and the export's other goroutines would wake a second thread (a
	// futex round trip each time: a tenth of the one-CPU export's CPU in its
	// profile). The Lambda runs the handler on an ordinary goroutine.
	done := make(chan error, 1)
	go func() { done <- runBenchChild(spec) }()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "bench child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runBenchChild(spec string) error {
	var c childSpec
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		return err
	}
	if c.RawCopy != "" {
		return rawCopyChild(c)
	}
	day, err := civil.Parse(c.Day)
	if err != nil {
		return err
	}
	cat, err := dataset.Example() // the benchmark's events
	if err != nil {
		return err
	}
	ds, err := cat.Get("events")
	if err != nil {
		return err
	}
	db, err := sql.Open("pgx", c.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	src, err := source.NewSQL(db, dataset.DialectPostgres, "pg")
	if err != nil {
		return err
	}
	if c.DecodeAhead != 0 {
		src = src.WithDecodeAhead(c.DecodeAhead)
	}
	a := account.Account{ID: c.Account, Name: "bench", Enabled: true, StartDate: day.AddDays(-1), Datasets: []string{"events"},
		Destination: account.Destination{Bucket: "bench", Format: fileformat.Parquet}}
	held := &holdCount{slots: upload.DefaultConcurrency}
	e := &Exporter{
		Catalog: cat,
		Source:  src,
		Buckets: holdBuckets{f: buckettest.NewFake("bench"), hold: c.PartHold, count: held},
		Config:  ExportConfig{Stage: "bench"},
		Now:     time.Now,
		// The fake bucket's owner, as DEPLOYMENT_ACCOUNT_ID is for a bucket
		// written with daybook's own role: no write goes without one.
		DeploymentAccountID: buckettest.Owner,
	}
	if c.Store != nil {
		cfg, err := awsclient.Load(context.Background())
		if err != nil {
			return err
		}
		cfg.Credentials = credentials.NewStaticCredentialsProvider(c.Store.AccessKey, c.Store.SecretKey, "")
		clients := &destination.Clients{Base: cfg, Endpoints: netguard.Policy{AllowLoopback: true}}
		e.Buckets, e.Stores = buckets{clients}, clients
		a.Destination = c.Store.Destination
		a.Destination.Format = fileformat.Parquet
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var stops []func()
	// One profile per account, GOMAXPROCS and hold: the benchmark runs
	// each day several ways.
	name := fmt.Sprintf("export-%s-gomaxprocs%d", c.Account, runtime.GOMAXPROCS(0))
	if c.PartHold > 0 {
		name += "-held"
	}
	if c.Label != "" {
		name += "-" + c.Label
	}
	for _, c := range []capture{
		{env: "DAYBOOK_BENCH_CPUPROFILE", ext: ".prof", start: pprof.StartCPUProfile, stop: pprof.StopCPUProfile},
		{env: "DAYBOOK_BENCH_TRACE", ext: ".trace", start: trace.Start, stop: trace.Stop},
	} {
		stop, err := c.run(name)
		if err != nil {
			return err
		}
		stops = append(stops, stop)
	}
	if dir := os.Getenv("DAYBOOK_BENCH_MEMPROFILE"); dir != "" {
		h, err := startHeapWatch(dir, name)
		if err != nil {
			return err
		}
		stops = append(stops, h.stop)
	}
	cpu, start := cputime.Start(), time.Now()
	g := e.generationOf(Partition{Account: a, Dataset: ds, Day: day, Claim: ledger.Claim{Generation: 1, Attempt: 1}, RunID: "bench"}, log)
	w, err := (*Written)(nil), g.place(context.Background())
	if err == nil {
		w, err = g.write(context.Background())
	}
	elapsed, wall := cpu.Elapsed(), time.Since(start)
	for _, stop := range stops {
		stop()
	}
	if err != nil {
		return err
	}
	line, _ := json.Marshal(childOutcome{Rows: w.Manifest.Totals.Rows, Bytes: w.Bytes, Files: len(w.Manifest.Files),
		CPU: elapsed, Wall: wall, PeakRSS: cputime.PeakRSS(),
		Parts: held.parts.Load(), PartsInFlight: held.max.Load()})
	fmt.Println(benchChildResult + string(line))
	return nil
}

// rawCopyChild runs c.RawCopy into a sink that drops the rows and prints
// its CPU and wall time and the bytes read.
func rawCopyChild(c childSpec) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.DSN)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	runtime.GC()
	cpu, start := cputime.Start(), time.Now()
	var n countWriter
	if _, err := conn.PgConn().CopyTo(ctx, &n, c.RawCopy); err != nil {
		return err
	}
	line, _ := json.Marshal(childOutcome{Bytes: int64(n), CPU: cpu.Elapsed(), Wall: time.Since(start), PeakRSS: cputime.PeakRSS()})
	fmt.Println(benchChildResult + string(line))
	return nil
}

// countWriter counts the bytes written to it and drops them.
type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) {
	*w += countWriter(len(p))
	return len(p), nil
}

// capture is a runtime recording the child writes to a file when its
// variable names a directory: the CPU profile or the execution trace.
type capture struct {
	env, ext string
	start    func(io.Writer) error
	stop     func()
}

// run starts c into <dir>/<name><ext> and returns what ends it (nothing
// to end when c's variable is unset).
func (c capture) run(name string) (func(), error) {
	dir := os.Getenv(c.env)
	if dir == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(dir, name+c.ext))
	if err != nil {
		return nil, err
	}
	if err := c.start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { c.stop(); f.Close() }, nil
}

// holdBuckets hands out a bucket whose multipart uploads (the data files)
// are dropped as they arrive, each part acknowledged only after hold; small
// objects are kept in the fake.
type holdBuckets struct {
	f     *buckettest.Fake
	hold  time.Duration
	count *holdCount
}

func (d holdBuckets) Client(string, account.Destination) bucket.API {
	return holdS3{d.f, d.hold, d.count}
}

type holdS3 struct {
	*buckettest.Fake
	hold  time.Duration
	count *holdCount
}

// holdCount counts the parts, those held now and the most held at once,
// and releases the held parts together once slots are held or a file's
// last part (shorter than the others) arrives.
type holdCount struct {
	parts, max atomic.Int64
	slots      int64
	mu         sync.Mutex
	now        int64
	partLen    int64         // the longest part seen: every part but a file's last
	full       chan struct{} // closed to release the held parts
}

// hold holds one part of n bytes until slots parts are held at once, the
// file's last part arrives, or d passed (a last part as long as the others).
func (h *holdCount) hold(n int64, d time.Duration) {
	h.parts.Add(1)
	h.mu.Lock()
	h.now++
	h.max.Store(max(h.max.Load(), h.now))
	if h.full == nil {
		h.full = make(chan struct{})
	}
	full := h.full
	h.partLen = max(h.partLen, n)
	if h.now >= h.slots || n < h.partLen {
		close(full)
		h.full = nil
	}
	h.mu.Unlock()
	t := time.NewTimer(d)
	select {
	case <-full:
	case <-t.C:
	}
	t.Stop()
	h.mu.Lock()
	h.now--
	h.mu.Unlock()
}

func (holdS3) CreateMultipartUpload(_ context.Context, _ *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	return &s3.CreateMultipartUploadOutput{UploadId: aws.String("discard")}, nil
}

func (h holdS3) UploadPart(_ context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	n, err := io.Copy(io.Discard, in.Body)
	if err != nil {
		return nil, err
	}
	if h.hold > 0 {
		h.count.hold(n, h.hold)
	} else {
		h.count.parts.Add(1)
	}
	return &s3.UploadPartOutput{ETag: aws.String(fmt.Sprintf(`"part-%d"`, aws.ToInt32(in.PartNumber))), ChecksumCRC32C: in.ChecksumCRC32C}, nil
}

func (holdS3) CompleteMultipartUpload(_ context.Context, in *s3.CompleteMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	return &s3.CompleteMultipartUploadOutput{ETag: aws.String(`"discarded"`), ChecksumCRC32C: in.ChecksumCRC32C}, nil
}

func (holdS3) AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	return &s3.AbortMultipartUploadOutput{}, nil
}

// heapWatch samples the resident set and the Go heap while the export runs
// (DAYBOOK_BENCH_MEMPROFILE=dir): each time the resident set reaches a new
// high by at least a MiB it writes a heap profile (in-use figures as of the
// last GC: go tool pprof -sample_index=inuse_space) to dir/heap-<name>.prof,
// and it writes every sample to dir/mem-<name>.tsv. It costs a little CPU.
type heapWatch struct{ quit, done chan struct{} }

// memSample names the runtime/metrics a heapWatch records.
var memSample = []string{
	"/gc/heap/live:bytes",                 // live heap marked by the last GC
	"/memory/classes/heap/objects:bytes",  // live objects and garbage not yet swept
	"/memory/classes/heap/free:bytes",     // free spans not returned to the OS
	"/memory/classes/heap/released:bytes", // returned to the OS
	"/memory/classes/total:bytes",         // everything the runtime mapped
	"/gc/cycles/total:gc-cycles",
}

func startHeapWatch(dir, name string) (*heapWatch, error) {
	tsv, err := os.Create(filepath.Join(dir, "mem-"+name+".tsv"))
	if err != nil {
		return nil, err
	}
	h := &heapWatch{quit: make(chan struct{}), done: make(chan struct{})}
	samples := make([]metrics.Sample, len(memSample))
	for i, n := range memSample {
		samples[i].Name = n
	}
	go func() {
		defer close(h.done)
		defer tsv.Close()
		out := bufio.NewWriter(tsv)
		defer out.Flush()
		fmt.Fprint(out, "ms\trss_bytes")
		for _, n := range memSample {
			fmt.Fprintf(out, "\t%s", n)
		}
		fmt.Fprintln(out)
		start := time.Now()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var peak int64
		for {
			select {
			case <-h.quit:
				return
			case <-tick.C:
			}
			rss := residentBytes()
			metrics.Read(samples)
			fmt.Fprintf(out, "%d\t%d", time.Since(start).Milliseconds(), rss)
			for _, s := range samples {
				fmt.Fprintf(out, "\t%d", s.Value.Uint64())
			}
			fmt.Fprintln(out)
			if rss >= peak+(1<<20) {
				peak = rss
				writeHeapProfile(filepath.Join(dir, "heap-"+name+".prof"))
			}
		}
	}()
	return h, nil
}

func (h *heapWatch) stop() {
	close(h.quit)
	<-h.done
}

func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	pprof.Lookup("heap").WriteTo(f, 0)
}

// residentBytes is the process's current resident set (VmRSS).
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return pages * int64(os.Getpagesize())
}
