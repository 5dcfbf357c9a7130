package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// fakeLedger records calls. Start answers ErrClaimLost (a duplicate, whose
// row Get finds running) and ClaimManual ErrBusy (a re-run recorded), so no
// export runs: these tests are about message handling.
type fakeLedger struct {
	SliceLedger // never sliced here: a call panics
	mu          sync.Mutex
	accounts    map[string]account.Account
	calls       []string
	tokens      []string
	startErr    map[string]error // by token
}

func (f *fakeLedger) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeLedger) GetAccount(_ context.Context, id string) (account.Account, error) {
	f.record("GetAccount " + id)
	a, ok := f.accounts[id]
	if !ok {
		return account.Account{}, fmt.Errorf("%w: account %s", ledger.ErrNotFound, id)
	}
	return a, nil
}

func (f *fakeLedger) ClaimManual(_ context.Context, k partition.Key, _ ledger.ManualRequest) (ledger.Claim, error) {
	f.record("ClaimManual " + k.String())
	return ledger.Claim{}, fmt.Errorf("%w: %s", ledger.ErrBusy, k)
}

func (f *fakeLedger) NoteCommitted(_ context.Context, k partition.Key, _ string, g int64) error {
	f.record(fmt.Sprintf("NoteCommitted %s %d", k, g))
	return nil
}

func (f *fakeLedger) Start(_ context.Context, k partition.Key, token string) (ledger.Claim, error) {
	f.record("Start " + k.String())
	f.mu.Lock()
	f.tokens = append(f.tokens, token)
	err := f.startErr[token]
	f.mu.Unlock()
	if err != nil {
		return ledger.Claim{}, err
	}
	return ledger.Claim{}, fmt.Errorf("%w: start %s", ledger.ErrClaimLost, k)
}

func (f *fakeLedger) Complete(context.Context, partition.Key, string, ledger.Result) (ledger.Row, error) {
	f.record("Complete")
	return ledger.Row{}, errors.New("unexpected Complete")
}

func (f *fakeLedger) Fail(context.Context, partition.Key, string, error) (ledger.Row, error) {
	f.record("Fail")
	return ledger.Row{}, errors.New("unexpected Fail")
}

func (f *fakeLedger) Get(_ context.Context, k partition.Key) (ledger.Row, error) {
	f.record("Get " + k.String())
	return ledger.Row{Key: k, State: ledger.StateRunning}, nil
}

// IssuedToken says every token was issued for a job: the refused starts
// here are duplicates.
func (f *fakeLedger) IssuedToken(_ context.Context, k partition.Key, token string) (ledger.Issued, error) {
	f.record("IssuedToken " + k.String())
	return ledger.Issued{Key: k, Token: token, Job: true}, nil
}

func (f *fakeLedger) ClearReexportRequest(_ context.Context, k partition.Key, _ ledger.ReexportNote) error {
	f.record("ClearReexportRequest " + k.String())
	return nil
}

// fakeQueue records fanned-out messages.
type fakeQueue struct {
	mu      sync.Mutex
	batches [][]string
}

func (q *fakeQueue) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(in.Entries) > 10 {
		return nil, fmt.Errorf("batch of %d entries", len(in.Entries))
	}
	var bodies []string
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		bodies = append(bodies, aws.ToString(e.MessageBody))
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id})
	}
	q.batches = append(q.batches, bodies)
	return out, nil
}

const sampleAccount = "acct_localdemoaccount" // the account of the sample events: the local stack's (daybook local up)

func fakeService(t *testing.T) (*Service, *fakeLedger, *fakeQueue) {
	t.Helper()
	led := &fakeLedger{accounts: map[string]account.Account{sampleAccount: {
		ID: sampleAccount, Enabled: true, StartDate: civil.MustParse("2026-01-01"),
		Datasets: []string{"events", "daily_stats"}, Destination: account.Destination{Bucket: "customer-bucket"},
	}}}
	q := &fakeQueue{}
	now := time.Date(2026, 11, 29, 12, 15, 0, 0, time.UTC) // the sample events' time
	return &Service{Catalog: datasettest.Example(t), Ledger: led, Queue: q, QueueURL: "https://sqs.example/jobs", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return now }}, led, q
}

func loadEvent(t *testing.T, path string) events.SQSEvent {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(ev.Records) == 0 {
		t.Fatalf("%s: no records", path)
	}
	return ev
}

func failedIDs(resp events.SQSEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func recordIDs(ev events.SQSEvent) []string {
	var ids []string
	for _, r := range ev.Records {
		ids = append(ids, r.MessageId)
	}
	return ids
}

// TestHandlerSampleEvents runs the Lambda handler on every exporter sample
// event in events/ (what `sam local invoke` sends).
func TestHandlerSampleEvents(t *testing.T) {
	type want struct {
		allFail bool
		calls   []string
		tokens  []string
		fanned  []string // days of the fanned-out messages
	}
	expect := map[string]want{
		// A duplicate: Start refuses, the account and row exist, the row runs.
		"exporter-job.json": {calls: []string{"Start " + sampleAccount + "/events/2026-11-27", "GetAccount " + sampleAccount, "Get " + sampleAccount + "/events/2026-11-27", "IssuedToken " + sampleAccount + "/events/2026-11-27"},
			tokens: []string{"9d6f0c2b7e4a1358c0ffee42deadbeef"}},
		"exporter-malformed.json": {allFail: true},
		"exporter-manual.json":    {calls: []string{"GetAccount " + sampleAccount, "ClaimManual " + sampleAccount + "/events/2026-11-20"}},
		"exporter-manual-range.json": {calls: []string{"GetAccount " + sampleAccount},
			fanned: func() []string {
				var d []string
				for _, x := range civil.Range(civil.MustParse("2026-11-01"), civil.MustParse("2026-11-14")) {
					d = append(d, x.String())
				}
				return d
			}()},
		// fakeService has no Lifecycle, which refuses these; TestLifecycleSampleEvents checks their bodies.
		"exporter-restate-check.json": {allFail: true},
		"exporter-reseed.json":        {allFail: true},
	}
	files, err := filepath.Glob("../../events/exporter-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample events: %v", err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			w, ok := expect[name]
			if !ok {
				t.Fatalf("no expectation for sample event %s: add one here", name)
			}
			svc, led, q := fakeService(t)
			ev := loadEvent(t, path)
			resp, err := Handler{Processor: svc, Log: svc.Log}.Handle(t.Context(), ev)
			if err != nil {
				t.Fatalf("Handle returned %v; a batch never fails as a whole", err)
			}
			var wantFailed []string
			if w.allFail {
				wantFailed = recordIDs(ev)
			}
			if got := failedIDs(resp); !slices.Equal(got, wantFailed) {
				t.Errorf("batch item failures %v, want %v", got, wantFailed)
			}
			if !slices.Equal(led.calls, w.calls) {
				t.Errorf("ledger calls %q, want %q", led.calls, w.calls)
			}
			if !slices.Equal(led.tokens, w.tokens) {
				t.Errorf("Start tokens %q, want %q", led.tokens, w.tokens)
			}
			var days []string
			for _, b := range q.batches {
				for _, body := range b {
					msg, err := jobs.Parse(datasettest.Example(t), body)
					if err != nil || msg.Manual == nil || msg.Manual.AccountID != sampleAccount || msg.Manual.Dataset != "daily_stats" {
						t.Errorf("fanned-out message %s (%v)", body, err)
						continue
					}
					days = append(days, msg.Manual.Day)
				}
			}
			if !slices.Equal(days, w.fanned) {
				t.Errorf("fanned out %v, want %v", days, w.fanned)
			}
			if w.fanned != nil && len(q.batches) != (len(w.fanned)+9)/10 {
				t.Errorf("%d SendMessageBatch calls for %d days", len(q.batches), len(w.fanned))
			}
		})
	}
}

// TestHandlerPartialBatch: one bad message in a batch is reported alone; its
// neighbours are processed once and not repeated (E5).
func TestHandlerPartialBatch(t *testing.T) {
	job := loadEvent(t, "../../events/exporter-job.json").Records[0]
	bad := loadEvent(t, "../../events/exporter-malformed.json").Records[0]
	manual := loadEvent(t, "../../events/exporter-manual.json").Records[0]
	transient := job
	transient.MessageId = "transient"
	transient.Body = strings.Replace(job.Body, "9d6f0c2b7e4a1358c0ffee42deadbeef", "0123456789abcdef0123456789abcdef", 1)
	unknown := manual
	unknown.MessageId = "unknown-account"
	unknown.Body = strings.Replace(manual.Body, sampleAccount, "acct_aaaaaaaaaaaaaaaa", 1)

	for _, tc := range []struct {
		name    string
		records []events.SQSMessage
		want    []string
	}{
		{"malformed between good ones", []events.SQSMessage{job, bad, manual}, []string{bad.MessageId}},
		{"ledger error on one job", []events.SQSMessage{manual, transient, job}, []string{"transient"}},
		{"rejected request", []events.SQSMessage{unknown, manual}, []string{"unknown-account"}},
		{"all good", []events.SQSMessage{job, manual}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, led, _ := fakeService(t)
			led.startErr = map[string]error{"0123456789abcdef0123456789abcdef": errors.New("ProvisionedThroughputExceeded")}
			resp, err := Handler{Processor: svc, Log: svc.Log}.Handle(t.Context(), events.SQSEvent{Records: tc.records})
			if err != nil {
				t.Fatal(err)
			}
			if got := failedIDs(resp); !slices.Equal(got, tc.want) {
				t.Errorf("batch item failures %v, want %v", got, tc.want)
			}
			// Every record was processed exactly once. A manual request
			// reads its account; so does a duplicate job, which then reads
			// its row (Get).
			starts, manuals := 0, 0
			for _, c := range led.calls {
				switch {
				case strings.HasPrefix(c, "Start "):
					starts++
				case strings.HasPrefix(c, "GetAccount "):
					manuals++
				case strings.HasPrefix(c, "Get "):
					manuals--
				}
			}
			wantStarts, wantManuals := 0, 0
			for _, r := range tc.records {
				switch {
				case strings.Contains(r.Body, `"claim_token"`) && r.MessageId != bad.MessageId:
					wantStarts++
				case strings.Contains(r.Body, `"kind":"manual"`):
					wantManuals++
				}
			}
			if starts != wantStarts || manuals != wantManuals {
				t.Errorf("ledger calls %q: %d starts, %d manual requests; want %d, %d", led.calls, starts, manuals, wantStarts, wantManuals)
			}
		})
	}
}

// TestHandlerOutOfTime: once the invocation's context is done, the
// remaining records are handed back to SQS unprocessed.
func TestHandlerOutOfTime(t *testing.T) {
	ev := loadEvent(t, "../../events/exporter-job.json")
	ev.Records = append(ev.Records, loadEvent(t, "../../events/exporter-manual.json").Records...)
	svc, led, _ := fakeService(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	resp, err := Handler{Processor: svc, Log: svc.Log}.Handle(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(resp); !slices.Equal(got, recordIDs(ev)) || len(led.calls) != 0 {
		t.Errorf("failures %v, ledger calls %v", got, led.calls)
	}
}

type panicky struct{ done []string }

func (p *panicky) Process(_ context.Context, id, body string) error {
	if body == "boom" {
		panic("nil map")
	}
	p.done = append(p.done, id)
	return nil
}

func TestHandlerPanicFailsOnlyItsRecord(t *testing.T) {
	p := &panicky{}
	h := Handler{Processor: p, Log: slog.New(slog.DiscardHandler)}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "a", Body: "ok"}, {MessageId: "b", Body: "boom"}, {MessageId: "c", Body: "ok"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "b" {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	if strings.Join(p.done, ",") != "a,c" {
		t.Fatalf("processed %v", p.done)
	}
}

// A record reached with too little invocation time left is handed back
// untouched: starting it would use an attempt it cannot finish.
func TestHandlerHandsBackRecordsItCannotFinish(t *testing.T) {
	p := &panicky{}
	h := Handler{Processor: p, Log: slog.New(slog.DiscardHandler), MinRemaining: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "a", Body: "ok"}, {MessageId: "b", Body: "ok"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 2 || len(p.done) != 0 {
		t.Fatalf("failures %+v, processed %v", resp.BatchItemFailures, p.done)
	}
}
