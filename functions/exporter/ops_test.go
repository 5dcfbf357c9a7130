package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/ops"
	"github.com/daybook-dev/daybook/shared/source"
)

// emf decodes the EMF lines an emitter wrote into metric name → values;
// other lines (the function's logs) are skipped.
func emf(t *testing.T, b []byte) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("EMF line %q: %v", line, err)
		}
		if m["_aws"] == nil {
			continue
		}
		aws := m["_aws"].(map[string]any)
		for _, d := range aws["CloudWatchMetrics"].([]any)[0].(map[string]any)["Metrics"].([]any) {
			name := d.(map[string]any)["Name"].(string)
			out[name] = append(out[name], m[name].(float64))
		}
	}
	return out
}

func TestMetricsPerOutcome(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 7)...)
	if r := e.export("events", testDay); r.State != ledger.StateCompleted {
		t.Fatalf("row %+v", r)
	}
	got := emf(t, []byte(e.out.String()))
	if v := got["PartitionsExported"]; len(v) != 1 || v[0] != 1 || got["RowsExported"][0] != 7 || got["BytesExported"][0] <= 0 {
		t.Fatalf("metrics after a completed export: %v", got)
	}

	e.out.reset()
	e.failOnce(putOf(layout.ManifestName))
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	got = emf(t, []byte(e.out.String()))
	if v := got["PartitionFailures"]; len(v) != 1 || v[0] != 1 || len(got["PartitionsExported"]) != 0 {
		t.Fatalf("metrics after a failed export: %v", got)
	}
}

// stallingSource streams large events rows until the exporter has opened a
// multipart upload, then holds the export open until its context ends, as a
// slow source query would when the invocation runs out of time. Each row's
// attributes are 4,000 characters that do not compress (seeded random hex),
// so a few thousand rows fill a part: with one repeated blob the encoder
// compressed it away and needed some 200,000 rows, which a loaded machine
// did not write within the export's time, and the test failed.
type stallingSource struct {
	opened func() bool
}

func (s stallingSource) Batches(ctx context.Context, q source.Query, fn func(*dataset.Batch) error) (source.Provenance, error) {
	rnd := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, 2000)
	b := dataset.NewBatch(q.Dataset, 256)
	b.Reset(1)
	for i := 0; ; i++ {
		if s.opened() {
			<-ctx.Done()
			return source.Provenance{}, ctx.Err()
		}
		for j := range raw {
			raw[j] = byte(rnd.Uint32())
		}
		attrs := json.RawMessage(`{"blob":"` + hex.EncodeToString(raw) + `"}`)
		ts := q.Start.Add(time.Duration(i) * time.Millisecond)
		if err := b.AppendRow([]any{fmt.Sprintf("ev-%08d", i), "page_view", ts, ts, nil, nil, nil, nil, false, attrs}); err != nil {
			return source.Provenance{}, err
		}
		if b.Full() {
			if err := fn(b); err != nil {
				return source.Provenance{}, err
			}
			b.Reset(int64(i) + 2)
		}
	}
}

// A run cut short by the invocation's deadline still aborts its multipart
// upload and records its failure: the export stops Reserve before the
// deadline, and the ledger write outlives it.
func TestDeadlineRecordsFailure(t *testing.T) {
	e := newEnv(t, envOpts{maxFileBytes: 24 << 20}) // row groups of 6 MiB: the first flush opens a multipart upload
	e.exp.Source = stallingSource{opened: func() bool { return e.faults.Count(buckettest.OpCreate) > 0 }}
	c := e.claim("events", testDay, "")
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	e.svc.Reserve = time.Minute - 3*time.Second // the export itself gets about 3s
	if err := e.svc.Process(ctx, "msg-deadline", jobBody(t, c)); err != nil {
		t.Fatalf("Process = %v; the failure should be recorded, not redelivered", err)
	}
	if e.faults.Count(buckettest.OpCreate) == 0 {
		t.Fatal("no multipart upload was in flight; the test did not exercise the abort")
	}
	r := e.row("events", testDay)
	if r.State != ledger.StateFailed || !strings.Contains(r.LastError, "deadline") {
		t.Fatalf("row %s: state %s, last error %q", r.Key, r.State, r.LastError)
	}
	if objs := e.list(e.partPrefix("events", testDay)); len(objs) != 0 {
		t.Errorf("objects left: %v", sortedKeys(objs))
	}
	if open := e.openUploads(); len(open) != 0 {
		t.Errorf("open multipart uploads: %v", open)
	}
}

func TestDisabledAccountRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 3)...)
	c := e.claim("events", testDay, "") // claimed by a sweep before the account was disabled
	a := e.acct
	a.Enabled = false
	if err := e.led.Accounts().PutAccount(e.ctx, a); err != nil {
		t.Fatal(err)
	}
	err := e.process(manualBody(t, jobs.Manual{AccountID: a.ID, Dataset: "events", Day: testDay.String()}))
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "disabled") {
		t.Fatalf("Process = %v, want ErrRejected naming the disabled account", err)
	}
	if r := e.row("events", testDay); r.State != ledger.StateRunning {
		t.Fatalf("a refused manual request changed the row: %s", r.State)
	}
	if err := e.process(jobBody(t, c)); err != nil {
		t.Fatal(err)
	}
	if r := e.row("events", testDay); r.State != ledger.StateFailed || !strings.Contains(r.LastError, "disabled") {
		t.Fatalf("job for a disabled account: state %s, error %q", r.State, r.LastError)
	}
	if objs := e.list(""); len(objs) != 0 {
		t.Errorf("a disabled account's job wrote %v", sortedKeys(objs))
	}
}

type spyBuckets struct {
	b    Buckets
	sums map[string]*string // data key -> ChecksumCRC32C sent
}

func (s spyBuckets) Client(id string, d account.Destination) bucket.API {
	return spyAPI{s.b.Client(id, d), s.sums}
}

type spyAPI struct {
	bucket.API
	sums map[string]*string
}

func (a spyAPI) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if layout.IsDataKey(aws.ToString(in.Key)) {
		a.sums[aws.ToString(in.Key)] = in.ChecksumCRC32C
	}
	return a.API.PutObject(ctx, in, opts...)
}

// destination.checksums reaches the uploads: S3-compatible stores that
// reject checksum headers get none, while the manifest keeps daybook's CRC32C.
func TestChecksumModes(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		wantSent bool
	}{{"", true}, {account.ChecksumsFullObject, true}, {account.ChecksumsComposite, true}, {account.ChecksumsNone, false}} {
		t.Run("mode "+tc.mode, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			a := e.acct
			a.Destination.Checksums = tc.mode
			if err := e.led.Accounts().PutAccount(e.ctx, a); err != nil {
				t.Fatal(err)
			}
			spy := spyBuckets{e.exp.Buckets, map[string]*string{}}
			e.exp.Buckets = spy
			e.insert("events", genRows("events", testDay, 4)...)
			e.export("events", testDay)
			m := e.committed("events", testDay)
			sent := spy.sums[m.Files[0].Key]
			if (sent != nil) != tc.wantSent {
				t.Fatalf("checksum header sent = %v, want %v", sent != nil, tc.wantSent)
			}
			if sent != nil && *sent != m.Files[0].CRC32C {
				t.Errorf("header %s, manifest %s", *sent, m.Files[0].CRC32C)
			}
		})
	}
}

// A run that committed _SUCCESS and died before the ledger heard of it must
// not let the next run commit different data under the same generation.
func TestGenerationNeverRepeats(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 3)...)
	if r := e.export("events", testDay); r.Generation != 1 {
		t.Fatalf("first export: generation %d", r.Generation)
	}
	// A manual re-export claims generation 2, commits, and "crashes" before Complete.
	c, err := e.led.Partitions().ClaimManual(e.ctx, e.key("events", testDay), ledger.ManualRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Generation != 2 {
		t.Fatalf("claimed generation %d", c.Generation)
	}
	if _, err := writeDay(e.ctx, e.exp, Partition{Account: e.acct, Dataset: mustDataset(t, "events"), Day: testDay, Claim: c, RunID: "run_crashed"}, e.svc.Log); err != nil {
		t.Fatal(err)
	}
	succ, err := manifest.DecodeSuccess(e.get(layout.SuccessKey(e.prefix, "events", testDay)))
	if err != nil || succ.Generation != 2 {
		t.Fatalf("crashed run committed %+v (%v)", succ, err)
	}
	// Its lease runs out; the next run claims generation 2 again from the
	// ledger, finds 2 committed, notes it, removes that _SUCCESS and fails.
	e.clk.Advance(testLease + time.Minute)
	e.crashOnceAfter(func(c buckettest.Call) bool {
		return c.Op == buckettest.OpDelete && c.Key == layout.SuccessKey(e.prefix, "events", testDay)
	})
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	if r := e.row("events", testDay); r.State != ledger.StateFailed {
		t.Fatalf("second run: %s", r.State)
	}
	// The retry finds no _SUCCESS at all, and still must not reuse 2.
	e.retry("events", testDay)
	m := e.committed("events", testDay)
	if m.Generation != 3 {
		t.Fatalf("generation %d after a crash that committed 2, want 3", m.Generation)
	}
	if r := e.row("events", testDay); r.Generation != m.Generation {
		t.Errorf("ledger generation %d, manifest %d", r.Generation, m.Generation)
	}
}

// TestReexportRequestNoteEnds: a re-export sent as the CLI and the console
// send it (ops.SendReexports) is noted on the day's row, which shows it
// requested; the exporter's claim of the request takes the note (the day
// runs and completes at the next generation), and a request the exporter
// refuses (the account disabled since) takes it too, so no day shows a
// request that will never run.
func TestReexportRequestNoteEnds(t *testing.T) {
	e := newEnv(t, envOpts{ownQueue: true})
	e.insert("events", genRows("events", testDay, 3)...)
	if r := e.export("events", testDay); r.State != ledger.StateCompleted || r.Generation != 1 {
		t.Fatalf("first export: %+v", r)
	}
	send := func() []string {
		t.Helper()
		if _, err := ops.SendReexports(e.ctx, datasettest.Example(t), ops.LedgerOf(e.led), e.sqs, e.queueURL, e.acct.ID, "events", []civil.Date{testDay}, "ops-dan", nil); err != nil {
			t.Fatal(err)
		}
		if r := e.row("events", testDay); ledger.PhaseOf(r) != ledger.PhaseRequested || r.ReexportRequestedBy != "ops-dan" {
			t.Fatalf("after the send: phase %s, %+v", ledger.PhaseOf(r), r)
		}
		var bodies []string
		for {
			out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: &e.queueURL, MaxNumberOfMessages: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Messages) == 0 {
				return bodies
			}
			for _, m := range out.Messages {
				bodies = append(bodies, aws.ToString(m.Body))
			}
		}
	}
	bodies := send()
	if len(bodies) != 1 {
		t.Fatalf("%d messages, want 1", len(bodies))
	}
	if err := e.process(bodies[0]); err != nil {
		t.Fatal(err)
	}
	if r := e.row("events", testDay); r.State != ledger.StateCompleted || r.Generation != 2 || !r.ReexportRequestedAt.IsZero() || ledger.PhaseOf(r) != ledger.PhaseCompleted {
		t.Errorf("after the exporter ran the request: phase %s, %+v", ledger.PhaseOf(r), r)
	}

	bodies = send()
	a := e.acct
	a.Enabled = false
	if err := e.led.Accounts().PutAccount(e.ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := e.process(bodies[0]); !errors.Is(err, ErrRejected) {
		t.Fatalf("Process = %v, want ErrRejected", err)
	}
	if r := e.row("events", testDay); r.Generation != 2 || !r.ReexportRequestedAt.IsZero() || ledger.PhaseOf(r) != ledger.PhaseCompleted {
		t.Errorf("after the exporter refused the request: phase %s, %+v", ledger.PhaseOf(r), r)
	}
}

// TestLedgerFailuresReportedByTheFunction: the ledger reports what fails
// after a recorded transition through the function's own logger and
// metrics, as main wires it (ledger.Reporter), so the template's alarm on
// HistoryWriteFailures sees it: the history item of an export is refused,
// the export completes, and the function's stdout has the warning and the
// count.
func TestLedgerFailuresReportedByTheFunction(t *testing.T) {
	e := newEnv(t, envOpts{aws: func(c aws.Config) aws.Config {
		c = c.Copy()
		c.APIOptions = append(c.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("refuseHistory", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if p, ok := in.Parameters.(*dynamodb.PutItemInput); ok {
					if pk, ok := p.Item[ledger.AttrPK].(*ddbtypes.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, "H#") {
						return middleware.InitializeOutput{}, middleware.Metadata{}, errors.New("throttled (the test refuses history items)")
					}
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
		})
		return c
	}})
	e.insert("events", genRows("events", testDay, 3)...)
	if r := e.export("events", testDay); r.State != ledger.StateCompleted {
		t.Fatalf("row %+v", r)
	}
	if v := emf(t, []byte(e.out.String()))["HistoryWriteFailures"]; len(v) != 1 || v[0] != 1 {
		t.Errorf("HistoryWriteFailures in the function's metrics: %v, want [1]", v)
	}
	if out := e.out.String(); !strings.Contains(out, "attempt history not written; the transition stands") || !strings.Contains(out, "the test refuses history items") {
		t.Errorf("the function's log lacks the history warning:\n%s", out)
	}
}
