package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset/example"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	_ "modernc.org/sqlite"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
)

// The tests run at a fixed instant; the exported day is closed then.
const (
	testNow   = "2026-03-10T12:00:00Z"
	testStart = "2026-03-01"
	testLease = 20 * time.Minute
	testStage = "test"
)

var testDay = civil.MustParse("2026-03-05")

// envOpts shape one test environment.
type envOpts struct {
	datasets     []string // enabled datasets (default: events)
	format       string   // destination format (default parquet)
	profile      string   // destination parquet_profile (default compatible)
	bucket       string   // an existing bucket to share (default: a new bucket of its own)
	maxFileBytes int64    // default 64 MiB
	rowGroupRows int64
	// relaxed creates the source tables without NOT NULL constraints, as a
	// source that does not enforce them (a view, another database) would be.
	relaxed bool
	// tableFormat is the destination's table_format (default none), and
	// glue its destination.glue (registered through moto's Glue).
	tableFormat string
	glue        *account.GlueTables
	// catalog, if set, edits the example catalog into the deployment's
	// (useCatalog), from the start.
	catalog func(string) string
	// env sets (or, with "", empties) variables of the function's
	// environment over the deployed function's and the test's own.
	env map[string]string
	// ownQueue gives the function a jobs queue of the test's own (its
	// JOBS_QUEUE_URL), standing for the stack's: slices and fanned-out
	// days go there, where the test reads them.
	ownQueue bool
	// aws wraps the function's AWS configuration (a request counter).
	aws func(aws.Config) aws.Config
	// tokens are fakes of the token endpoints GCS and Azure credentials
	// come from: the function's Options.Tokens point at them, and its STS
	// calls go to their AWS STS (GetWebIdentityToken; the rest on to moto).
	tokens *storeTokens
	// without names a statement of the exporter's role the test's policy
	// lacks; denied receives the calls that policy denies (instead of
	// failing the test) and allowed the statements that allowed each call.
	without string
	denied  func(msg string)
	allowed func(action string, statements []string)
}

// env is one test's world: its own account, bucket and SQLite source, on
// the shared deployed stack (ledger table and jobs queue), and the
// exporter as main builds it (build: the deployed function's environment,
// its clients through a proxy that checks every call against the
// exporter's policy in template.yaml).
type env struct {
	t        *testing.T
	ctx      context.Context
	clk      *clock
	led      *ledger.Ledger // the test's own: claims as the sweeper makes them, reads
	s3       *s3.Client
	sqs      *sqs.Client
	queueURL string
	db       *sql.DB
	dbPath   string
	acct     account.Account
	prefix   string
	faults   *buckettest.Faults
	handler  Handler
	fcfg     aws.Config // the function's AWS configuration (checked)
	exp      *Exporter
	svc      *Service
	out      *output // the function's stdout: its logs and metric lines
	builds   int     // how many times the function was built (build)
	opts     envOpts
	msgs     atomic.Int64
	// eventsBefore are events other accounts' own exports recorded before
	// a test planted objects (planted_test.go).
	eventsBefore map[string]bool
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	ctx := t.Context()
	cfg, out := deployed(t)
	clk := at(testNow)
	cat := datasettest.Example(t)
	if o.catalog != nil {
		keepSchemaRecords(t)
		var path string
		path, cat = catalogFile(t, []byte(o.catalog(string(example.YAML()))))
		o.env = maps.Clone(o.env)
		if o.env == nil {
			o.env = map[string]string{}
		}
		o.env[dataset.EnvCatalog] = path
	}
	led, err := ledger.New(dynamoClient(cfg), ledger.Config{Catalog: cat,
		Table: out["LedgerTableName"], Lease: testLease, MaxAttempts: 3, Stage: testStage,
		BackoffBase: time.Minute, BackoffCap: time.Hour, Now: clk.Now, Rand: &lockedReader{r: seeded(t, "ledger")},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := runs.Add(1)
	id, err := account.NewID(seeded(t, fmt.Sprint("id/", n)))
	if err != nil {
		t.Fatal(err)
	}
	bucket := o.bucket
	s3c := awsclient.NewS3(cfg)
	if bucket == "" {
		// A name of the template's DirectBucketPattern (daybook-exports-*),
		// which the exporter's own role may write.
		bucket = fmt.Sprintf("daybook-exports-%d-%s", n, strings.TrimPrefix(id, "acct_"))
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
			t.Fatal(err)
		}
	}
	if len(o.datasets) == 0 {
		o.datasets = []string{"events"}
	}
	a := account.Account{ID: id, Name: t.Name(), Enabled: true, StartDate: civil.MustParse(testStart),
		Datasets: o.datasets, Destination: account.Destination{Bucket: bucket, Format: fileformat.Format(o.format), ParquetProfile: fileformat.ParquetProfile(o.profile), TableFormat: o.tableFormat, Glue: o.glue}}
	if err := led.Accounts().PutAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	prefix, err := a.Prefix(testStage)
	if err != nil {
		t.Fatal(err)
	}
	db, path := sourceDB(t, o.relaxed)
	e := &env{t: t, ctx: ctx, clk: clk, led: led, s3: s3c, sqs: sqs.NewFromConfig(cfg), queueURL: out["JobsQueueUrl"],
		db: db, dbPath: path, acct: a, prefix: prefix, faults: &buckettest.Faults{}}
	if o.ownQueue {
		e.queueURL = samstacktest.OwnQueue(t, cfg, out["JobsQueueUrl"])
	}
	e.opts = o
	e.build(o)
	return e
}

// rebuild builds the env's exporter again, a cold start of a deployment
// whose environment also has vars.
func (e *env) rebuild(vars map[string]string) {
	e.t.Helper()
	o := e.opts
	o.env = maps.Clone(o.env)
	if o.env == nil {
		o.env = map[string]string{}
	}
	maps.Copy(o.env, vars)
	e.opts = o
	e.build(o)
}

// build makes the env's exporter with build, as main does: the deployed
// function's environment (read back from the stack) with the test's
// source, stage and sizes, and an AWS configuration whose every call is
// checked against the exporter's policy. Only the bucket clients are
// wrapped afterwards, with the env's Faults.
func (e *env) build(o envOpts) {
	t := e.t
	cfg, _ := deployed(t)
	route := iamcheck.Route{Function: "ExporterFunction", Upstream: *cfg.BaseEndpoint, Names: iamcheck.Names{Own: samstacktest.Like},
		Report: o.denied, Allowed: o.allowed}
	var tokens destination.TokenEndpoints
	if o.tokens != nil {
		route.Services = map[string]string{"sts": o.tokens.awsSTS}
		tokens = o.tokens.endpoints
	}
	pol := iamcheck.ForStage(t, stackStage, nil)
	if o.without != "" {
		var err error
		if pol, err = pol.Without(route.Function, o.without); err != nil {
			t.Fatal(err)
		}
	}
	fcfg := cfg.Copy()
	fcfg.BaseEndpoint = aws.String(iamcheck.Endpoint(t, pol, route))
	if o.aws != nil {
		fcfg = o.aws(fcfg)
	}
	e.fcfg = fcfg
	var environ []string
	for k, v := range e.functionEnv(o, *fcfg.BaseEndpoint) {
		environ = append(environ, k+"="+v)
	}
	e.out = &output{t: t}
	// Each build is a cold start of its own: its random stream (claim
	// tokens, write ids, run ids) is not an earlier build's.
	e.builds++
	salt := "run"
	if e.builds > 1 {
		salt = fmt.Sprint("run/", e.builds)
	}
	fn, err := build(e.ctx, environ, Options{AWS: fcfg, Now: e.clk.Now, Rand: &lockedReader{r: seeded(t, salt)}, Stdout: e.out, Tokens: tokens})
	if err != nil {
		t.Fatalf("build the exporter: %v", err)
	}
	e.handler = fn.Handler
	e.svc = fn.Handler.Processor.(*Service)
	e.exp = e.svc.Exporter
	e.exp.Config.RowGroupRows = o.rowGroupRows // no variable: an encoder knob of the tests
	e.exp.Buckets = faultyBuckets{e.exp.Buckets, e.faults}
}

// functionEnv is the exporter's environment in the env: the deployed
// function's (read back from the stack) with the test's source, stage,
// sizes and queue, and endpoint as its AWS endpoint.
func (e *env) functionEnv(o envOpts, endpoint string) map[string]string {
	if o.maxFileBytes == 0 {
		o.maxFileBytes = 64 << 20
	}
	vars := samstacktest.FunctionEnv(e.t, srv, stackStage, "ExporterFunction")
	for k, v := range map[string]string{
		// the SDK's endpoint, as on a local stack (custom endpoints may
		// then be loopback: awsclient.Local)
		"AWS_ENDPOINT_URL":      endpoint,
		"DAYBOOK_STAGE":         testStage,
		"SOURCE_DRIVER":         "sqlite",
		"SOURCE_DSN":            "file:" + e.dbPath,
		"MAX_FILE_BYTES":        fmt.Sprint(o.maxFileBytes),
		"PART_SIZE_BYTES":       fmt.Sprint(5 << 20),
		"UPLOAD_CONCURRENCY":    "2",
		"MAX_ATTEMPTS":          "3",
		"RESTATE_LOOKBACK_DAYS": fmt.Sprint(testRestate.LookbackDays),
		"RESTATE_INTERVAL":      testRestate.Interval.String(),
		"JOBS_QUEUE_URL":        e.queueURL,
		"LOG_LEVEL":             "WARN",
	} {
		vars[k] = v
	}
	if testing.Verbose() {
		vars["LOG_LEVEL"] = "DEBUG"
	}
	for k, v := range o.env {
		vars[k] = v
	}
	return vars
}

// fnLedger is the exporter's own ledger, as build made it.
func (e *env) fnLedger() *ledger.Ledger { return e.svc.Ledger.(withSettle).of }

// output is the function's stdout in a test: kept for the test to read
// (logs, metric lines), and shown on the test's output when it fails or
// runs verbose.
type output struct {
	t   *testing.T
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if testing.Verbose() || bytes.Contains(p, []byte(`"level":"ERROR"`)) || bytes.Contains(p, []byte(`"level":"WARN"`)) {
		o.t.Logf("%s", bytes.TrimRight(p, "\n"))
	}
	return o.buf.Write(p)
}

// reset forgets what was written so far.
func (o *output) reset() {
	o.mu.Lock()
	o.buf.Reset()
	o.mu.Unlock()
}

// String is everything written since the last reset.
func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// metrics are the metric lines (embedded metric format) written so far,
// each as its JSON object.
func (o *output) metrics() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(o.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["_aws"] != nil {
			out = append(out, m)
		}
	}
	return out
}

// sourceDB is a SQLite source with the catalog's tables, and its path.
func sourceDB(t *testing.T, relaxed bool) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "source.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ddl, err := dataset.SourceDDL(dataset.DialectSQLite)
	if err != nil {
		t.Fatal(err)
	}
	if relaxed {
		ddl = strings.ReplaceAll(ddl, "NOT NULL", "")
	}
	if _, err := db.Exec(ddl); err != nil {
		t.Fatal(err)
	}
	return db, path
}

// ---- source rows ----

// sqliteValue renders a model value the way the SQLite schema stores it.
func sqliteValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format("2006-01-02T15:04:05.000000Z")
	case bool:
		if x {
			return 1
		}
		return 0
	}
	return v
}

// insert adds rows (in dataset column order) for the env's account.
func (e *env) insert(ds string, rows ...[]any) {
	e.t.Helper()
	d := mustDataset(e.t, ds)
	cols := append([]string{"account_id"}, d.ColumnNames()...)
	table := ds
	switch ds {
	case "events":
		cols = append(cols, "inserted_at")
	case "profiles":
		// The activity feed's source: one row per profile and active day.
		table = "profile_activity"
		cols = append(cols, "activity_date")
	}
	loc, err := e.acct.Location()
	if err != nil {
		e.t.Fatal(err)
	}
	q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, strings.Join(cols, ", "), strings.TrimSuffix(strings.Repeat("?,", len(cols)), ","))
	tx, err := e.db.BeginTx(e.ctx, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer tx.Rollback()
	stmt, err := tx.Prepare(q)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range rows {
		args := []any{e.acct.ID}
		for _, v := range r {
			args = append(args, sqliteValue(v))
		}
		switch ds {
		case "events":
			args = append(args, sqliteValue(r[3]))
		case "profiles":
			// The day of its last_seen_at in the account's zone.
			args = append(args, civil.In(r[2].(time.Time), loc).String())
		}
		if _, err := stmt.Exec(args...); err != nil {
			e.t.Fatalf("insert %s %v: %v", ds, r, err)
		}
	}
	if err := tx.Commit(); err != nil {
		e.t.Fatal(err)
	}
}

var statMetrics = []string{"checkout", "page_views", "revenue", "signups"}

// genRows returns n deterministic rows of ds for day, in the order the
// read-back sorts them (orderBy).
func genRows(ds string, day civil.Date, n int) [][]any {
	start := day.Start(time.UTC)
	step := 86_000 * time.Second / time.Duration(max(n, 1))
	var out [][]any
	for i := range n {
		ts := start.Add(time.Duration(i)*step + time.Duration(i%1000)*time.Microsecond)
		var attrs any = fmt.Sprintf(`{"i":%d,"plan":"p%d","tags":["a","b"]}`, i, i%3)
		if i%5 == 4 {
			attrs = nil
		}
		switch ds {
		case "events":
			var session, user, value, amount any = fmt.Sprintf("s%d", i/3), fmt.Sprintf("u%d", i%7), float64(i) + 0.25, fmt.Sprintf("%d.%02d", i, i%100)
			if i%4 == 3 {
				session, user, value, amount = nil, nil, nil, nil
			}
			out = append(out, []any{fmt.Sprintf("evt_%s_%06d", day, i), []string{"click", "page_view", "purchase"}[i%3],
				ts, ts.Add(1500 * time.Millisecond), session, user, value, amount, i%6 == 0, attrs})
		case "profiles":
			var email, country, plan any = fmt.Sprintf("p%d@example.com", i), []string{"DE", "FR", "US"}[i%3], "pro"
			if i%4 == 3 {
				email, country, plan = nil, nil, nil
			}
			out = append(out, []any{fmt.Sprintf("prof_%s_%06d", day, i), ts.AddDate(0, -1, 0), ts, email, country, plan, int64(i * 10), attrs})
		case "daily_stats":
			out = append(out, []any{day.String(), statMetrics[i%len(statMetrics)], fmt.Sprintf("dim_%06d", i), int64(i + 1), float64(i) * 1.5, attrs})
		}
	}
	if ds == "daily_stats" {
		slices.SortFunc(out, func(a, b []any) int {
			return strings.Compare(a[1].(string)+"|"+a[2].(string), b[1].(string)+"|"+b[2].(string))
		})
	}
	return out
}

// orderBy is the read-back order matching genRows.
var orderBy = map[string]string{"events": "event_id", "profiles": "profile_id", "daily_stats": "metric, dimension"}

func mustDataset(t *testing.T, name string) dataset.Dataset {
	t.Helper()
	ds, err := datasettest.Example(t).Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// ---- ledger and messages ----

func (e *env) key(ds string, day civil.Date) partition.Key {
	return partition.Key{AccountID: e.acct.ID, Dataset: ds, Day: day}
}

// claim materializes the row if needed and claims it as the sweeper does.
func (e *env) claim(ds string, day civil.Date, reason partition.Reason) ledger.Claim {
	e.t.Helper()
	if _, err := e.led.Schedule().Materialize(e.ctx, e.acct.ID, ds, day, day); err != nil {
		e.t.Fatal(err)
	}
	c, err := e.led.Partitions().Claim(e.ctx, e.key(ds, day), reason)
	if err != nil {
		e.t.Fatalf("claim %s %s: %v", ds, day, err)
	}
	return c
}

// jobBody is the sweeper's message for a claim.
func jobBody(t *testing.T, c ledger.Claim) string {
	t.Helper()
	b, err := jobs.Encode(jobs.Job{Kind: jobs.KindJob, AccountID: c.AccountID, Dataset: c.Dataset, Day: c.Day.String(),
		ClaimToken: c.Token, Attempt: c.Attempt, Generation: c.Generation, Reason: string(c.Reason)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func manualBody(t *testing.T, m jobs.Manual) string {
	t.Helper()
	m.Kind = jobs.KindManual
	b, err := jobs.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) process(body string) error {
	return e.svc.Process(e.ctx, fmt.Sprintf("msg-%d", e.msgs.Add(1)), body)
}

// export claims and runs one scheduled job and wants it done.
func (e *env) export(ds string, day civil.Date) ledger.Row {
	e.t.Helper()
	c := e.claim(ds, day, "")
	if err := e.process(jobBody(e.t, c)); err != nil {
		e.t.Fatalf("process job %s %s: %v", ds, day, err)
	}
	return e.row(ds, day)
}

// retry moves the clock past the row's next attempt and runs the retry job.
func (e *env) retry(ds string, day civil.Date) ledger.Row {
	e.t.Helper()
	r := e.row(ds, day)
	if r.State != ledger.StateFailed {
		e.t.Fatalf("retry of a %s row", r.State)
	}
	e.clk.Set(r.NextAttemptAt.Add(time.Second))
	c, err := e.led.Partitions().Claim(e.ctx, e.key(ds, day), partition.ReasonRetry)
	if err != nil {
		e.t.Fatalf("claim retry: %v", err)
	}
	if err := e.process(jobBody(e.t, c)); err != nil {
		e.t.Fatalf("process retry: %v", err)
	}
	return e.row(ds, day)
}

func (e *env) row(ds string, day civil.Date) ledger.Row {
	e.t.Helper()
	r, err := e.led.Partitions().Get(e.ctx, e.key(ds, day))
	if err != nil {
		e.t.Fatalf("ledger row %s %s: %v", ds, day, err)
	}
	return r
}

// ---- bucket ----

func (e *env) partPrefix(ds string, day civil.Date) string {
	return layout.PartitionPrefix(e.prefix, ds, day)
}

// list returns key -> size under prefix.
func (e *env) list(prefix string) map[string]int64 {
	e.t.Helper()
	out := map[string]int64{}
	p := s3.NewListObjectsV2Paginator(e.s3, &s3.ListObjectsV2Input{Bucket: &e.acct.Destination.Bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	return out
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// get returns an object's bytes, or nil when there is none.
func (e *env) get(key string) []byte {
	e.t.Helper()
	out, err := e.s3.GetObject(e.ctx, &s3.GetObjectInput{Bucket: &e.acct.Destination.Bucket, Key: &key})
	if err != nil {
		if strings.Contains(err.Error(), "NoSuchKey") {
			return nil
		}
		e.t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// download copies every object of the account into a fresh directory, keys
// as paths, and returns the directory of the account's prefix.
func (e *env) download() string {
	e.t.Helper()
	root := e.t.TempDir()
	for key := range e.list(e.prefix + "/") {
		path := filepath.Join(root, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(path, e.get(key), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	return filepath.Join(root, filepath.FromSlash(e.prefix))
}

// openUploads lists the bucket's incomplete multipart uploads.
func (e *env) openUploads() []string {
	e.t.Helper()
	out, err := e.s3.ListMultipartUploads(e.ctx, &s3.ListMultipartUploadsInput{Bucket: &e.acct.Destination.Bucket})
	if err != nil {
		e.t.Fatal(err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32cOf(b []byte) string {
	var s [4]byte
	binary.BigEndian.PutUint32(s[:], crc32.Checksum(b, castagnoli))
	return base64.StdEncoding.EncodeToString(s[:])
}

// committed checks the E3 invariant of a committed partition against the
// bytes stored in the bucket and the ledger row, and returns its manifest:
// _SUCCESS names the exact stored manifest (SHA-256) and its generation,
// which is the ledger row's; the data files under the partition are exactly
// the manifest's, with its sizes, CRC32C and SHA-256; nothing else but the
// manifest, the load scripts and _SUCCESS is there.
func (e *env) committed(ds string, day civil.Date) *manifest.Manifest {
	e.t.Helper()
	t := e.t
	pp := e.partPrefix(ds, day)
	marker := e.get(pp + layout.SuccessName)
	if marker == nil {
		t.Fatalf("%s: no _SUCCESS", pp)
	}
	succ, err := manifest.DecodeSuccess(marker)
	if err != nil {
		t.Fatal(err)
	}
	if succ.ManifestKey != pp+layout.ManifestName {
		t.Errorf("_SUCCESS names manifest %s", succ.ManifestKey)
	}
	body := e.get(pp + layout.ManifestName)
	sum := sha256.Sum256(body)
	if succ.ManifestSHA256 != hex.EncodeToString(sum[:]) || !succ.Matches(body) {
		t.Errorf("_SUCCESS manifest_sha256 %s, stored _manifest.json has %x", succ.ManifestSHA256, sum)
	}
	m, err := manifest.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	row := e.row(ds, day)
	if succ.Generation != m.Generation || m.Generation != row.Generation || succ.RunID != m.RunID {
		t.Errorf("generations: _SUCCESS %d (run %s), manifest %d (run %s), ledger %d", succ.Generation, succ.RunID, m.Generation, m.RunID, row.Generation)
	}
	if row.State != ledger.StateCompleted || row.ManifestKey != succ.ManifestKey || row.Rows != m.Totals.Rows ||
		row.Files != m.Totals.Files || row.Bytes != m.Totals.Bytes {
		t.Errorf("ledger row %+v does not match manifest totals %+v", row, m.Totals)
	}
	listed := e.list(pp)
	var data []string
	for _, k := range sortedKeys(listed) {
		rel := strings.TrimPrefix(k, pp)
		switch {
		case layout.IsDataKey(k):
			data = append(data, k)
		case rel == layout.ManifestName, rel == layout.SuccessName, strings.HasPrefix(rel, layout.LoadDir+"/"):
		default:
			t.Errorf("unexpected object %s under the partition", k)
		}
	}
	var want []string
	var rows int64
	for _, f := range m.Files {
		want = append(want, f.Key)
		rows += f.Rows
		stored := e.get(f.Key)
		if stored == nil {
			t.Errorf("manifest lists %s, not in the bucket", f.Key)
			continue
		}
		if int64(len(stored)) != f.Bytes || listed[f.Key] != f.Bytes {
			t.Errorf("%s: manifest says %d bytes, stored %d (listed %d)", f.Key, f.Bytes, len(stored), listed[f.Key])
		}
		if got := crc32cOf(stored); got != f.CRC32C {
			t.Errorf("%s: manifest CRC32C %s, stored bytes have %s", f.Key, f.CRC32C, got)
		}
		if s := sha256.Sum256(stored); hex.EncodeToString(s[:]) != f.SHA256 {
			t.Errorf("%s: manifest SHA-256 %s, stored bytes have %x", f.Key, f.SHA256, s)
		}
	}
	slices.Sort(want)
	if !slices.Equal(data, want) {
		t.Errorf("data files under %s:\n stored  %v\nmanifest %v", pp, data, want)
	}
	if rows != m.Totals.Rows || len(m.Files) != m.Totals.Files || m.Provenance.RowCount != m.Totals.Rows {
		t.Errorf("manifest totals %+v, files sum to %d rows, source read %d", m.Totals, rows, m.Provenance.RowCount)
	}
	if !slices.Contains(sortedKeys(listed), pp+layout.LoadDir+"/duckdb.sql") {
		t.Errorf("no _load/duckdb.sql under %s: %v", pp, sortedKeys(listed))
	}
	return m
}

// notCommitted checks what a failed run leaves: no _SUCCESS, no incomplete
// multipart upload, and a failed ledger row; it returns the row.
func (e *env) notCommitted(ds string, day civil.Date) ledger.Row {
	e.t.Helper()
	pp := e.partPrefix(ds, day)
	if b := e.get(pp + layout.SuccessName); b != nil {
		e.t.Errorf("%s_SUCCESS exists after a failed run: %s", pp, b)
	}
	if open := e.openUploads(); len(open) > 0 {
		e.t.Errorf("incomplete multipart uploads left: %v", open)
	}
	r := e.row(ds, day)
	if r.State != ledger.StateFailed || r.LastError == "" || r.NextAttemptAt.IsZero() {
		e.t.Errorf("ledger row after a failed run: %+v", r)
	}
	return r
}

// delivery reads the account's delivery manifest of day.
func (e *env) delivery(day civil.Date) *manifest.Delivery {
	e.t.Helper()
	b := e.get(layout.DeliveryManifestKey(e.prefix, day))
	if b == nil {
		e.t.Fatalf("no delivery manifest for %s", day)
	}
	d, err := manifest.DecodeDelivery(b)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// ---- fault injection ----

var errInjected = errors.New("injected fault")

// faultyBuckets wraps every client the exporter asks for with the env's
// Faults, so a test can fail (or crash right after) any S3 call of an export.
type faultyBuckets struct {
	b Buckets
	f *buckettest.Faults
}

func (b faultyBuckets) Client(id string, d account.Destination) bucket.API {
	return b.f.Wrap(b.b.Client(id, d))
}

// failOnce fails the first call match accepts, before it reaches S3.
func (e *env) failOnce(match func(buckettest.Call) bool) {
	e.faults.Set(buckettest.Once(errInjected, match), nil)
}

// crashOnceAfter lets the first call match accepts take effect, then fails
// it, as a run that crashed right after the call.
func (e *env) crashOnceAfter(match func(buckettest.Call) bool) {
	e.faults.Set(nil, buckettest.Once(errInjected, match))
}

// putOf matches a PutObject of a key ending in suffix.
func putOf(suffix string) func(buckettest.Call) bool {
	return func(c buckettest.Call) bool { return c.Op == buckettest.OpPut && strings.HasSuffix(c.Key, suffix) }
}

// ---- helpers ----

func contains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s %q does not mention %q", what, s, sub)
		}
	}
}

// putObject writes an object into the account's bucket, as someone with
// write access to it would.
func (e *env) putObject(key string, body []byte) {
	e.t.Helper()
	if _, err := e.s3.PutObject(e.ctx, &s3.PutObjectInput{Bucket: &e.acct.Destination.Bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
		e.t.Fatal(err)
	}
}
