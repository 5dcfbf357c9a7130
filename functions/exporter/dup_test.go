package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TestDuplicateDeliveryExportsOnce: SQS delivers the same claimed job twice,
// at the same time; the partition is exported once, as generation 1 (L2).
func TestDuplicateDeliveryExportsOnce(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 10)...)
	// Every export begins by removing the old _SUCCESS.
	successKey := e.partPrefix("events", testDay) + layout.SuccessName
	body := jobBody(t, e.claim("events", testDay, ""))
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			<-start
			errs[i] = e.process(body)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("delivery %d: %v", i+1, err)
		}
	}
	// A third, late delivery after the commit is dropped as well.
	if err := e.process(body); err != nil {
		t.Errorf("late delivery: %v", err)
	}
	if n := e.faults.Calls(buckettest.OpDelete, successKey); n != 1 {
		t.Errorf("%d exports ran, want 1", n)
	}
	m := e.committed("events", testDay)
	if r := e.row("events", testDay); m.Generation != 1 || r.Generation != 1 || r.Attempts != 1 {
		t.Errorf("generation %d, row %+v", m.Generation, r)
	}
}

// TestManualWhileRunningIsNotLost: a second manual request for a partition
// that is being exported does not start a second export; it is recorded and
// the partition is queued again when the first completes, and the next claim
// exports generation 2 (E1, L2).
func TestManualWhileRunningIsNotLost(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 10)...)
	entered, release := make(chan struct{}), make(chan struct{})
	var hold sync.Once
	pp := e.partPrefix("events", testDay)
	// Every export begins by removing the old _SUCCESS.
	exports := func() int { return e.faults.Calls(buckettest.OpDelete, pp+layout.SuccessName) }
	// The first export holds once its data is written, as it lists the
	// partition for stale objects.
	e.faults.Set(func(c buckettest.Call) error {
		if c.Op == buckettest.OpList && c.Key == pp {
			hold.Do(func() { close(entered); <-release })
		}
		return nil
	}, nil)
	body := manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String(), RequestedBy: "test"})
	first := make(chan error, 1)
	go func() { first <- e.process(body) }()
	<-entered

	if err := e.process(body); err != nil {
		t.Fatalf("second manual request: %v", err)
	}
	if r := e.row("events", testDay); r.State != ledger.StateRunning || !r.RerunRequested {
		t.Fatalf("while the first runs, the second is recorded: row %+v", r)
	}
	if n := exports(); n != 1 {
		t.Fatalf("%d exports running, want 1", n)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first manual request: %v", err)
	}
	r := e.row("events", testDay)
	if r.State != ledger.StateQueued || r.Generation != 1 || r.Reason != partition.ReasonManual || r.RerunRequested {
		t.Fatalf("after the first completed, the row is queued for the re-run: %+v", r)
	}
	if m := e.successGeneration(e.partPrefix("events", testDay)); m != 1 {
		t.Errorf("_SUCCESS of generation %d after the first run", m)
	}
	// The sweeper's next claim runs the recorded request.
	c, err := e.led.Partitions().Claim(e.ctx, e.key("events", testDay), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Generation != 2 || c.Reason != partition.ReasonManual {
		t.Errorf("claim %+v", c)
	}
	if err := e.process(jobBody(t, c)); err != nil {
		t.Fatal(err)
	}
	m := e.committed("events", testDay)
	if m.Generation != 2 || m.Reason != "manual" || exports() != 2 {
		t.Errorf("generation %d reason %s after %d exports", m.Generation, m.Reason, exports())
	}
}

// successGeneration returns the generation the partition's _SUCCESS commits (0: none).
func (e *env) successGeneration(partPrefix string) int64 {
	e.t.Helper()
	b := e.get(partPrefix + layout.SuccessName)
	if b == nil {
		return 0
	}
	var s struct {
		Generation int64 `json:"generation"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		e.t.Fatal(err)
	}
	return s.Generation
}

// TestManualRangeFansOut: a manual range becomes one single-day manual
// request per day on the jobs queue, each of the range's request;
// nothing is claimed or exported yet.
func TestManualRangeFansOut(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events", "daily_stats"}})
	// Two batches need more than 10 days: the account starts earlier than
	// testStart, as days before its start date are refused.
	a := e.acct
	a.StartDate = civil.MustParse("2026-02-01")
	if err := e.led.Accounts().PutAccount(e.ctx, a); err != nil {
		t.Fatal(err)
	}
	body := manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "daily_stats", From: "2026-02-25", To: "2026-03-09", RequestedBy: "cli:ops", RequestID: "r-9"})
	if err := e.process(body); err != nil {
		t.Fatal(err)
	}
	want := civil.Range(civil.MustParse("2026-02-25"), civil.MustParse("2026-03-09")) // 13 days: two batches
	var days []string
	for empty := 0; empty < 2; {
		out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: &e.queueURL, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, msg := range out.Messages {
			if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: &e.queueURL, ReceiptHandle: msg.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			parsed, err := jobs.Parse(datasettest.Example(t), aws.ToString(msg.Body))
			if err != nil {
				t.Fatalf("fanned-out message %s: %v", aws.ToString(msg.Body), err)
			}
			m := parsed.Manual
			if m == nil || m.AccountID != e.acct.ID {
				continue // another test's message
			}
			if m.Dataset != "daily_stats" || m.Day == "" || m.From != "" || m.To != "" || m.RequestedBy != "cli:ops" || m.RequestID != "r-9" {
				t.Errorf("fanned-out message %+v", m)
			}
			days = append(days, m.Day)
		}
	}
	slices.Sort(days)
	var wantS []string
	for _, d := range want {
		wantS = append(wantS, d.String())
	}
	if !slices.Equal(days, wantS) {
		t.Errorf("fanned out %v, want %v", days, wantS)
	}
	for _, d := range want {
		if _, err := e.led.Partitions().Get(e.ctx, e.key("daily_stats", d)); err == nil {
			t.Errorf("fan-out claimed %s", d)
		}
	}
	if objs := e.list(""); len(objs) != 0 {
		t.Errorf("fan-out wrote %v", sortedKeys(objs))
	}
	// Each fanned-out day then runs as a single-day request.
	one := manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "daily_stats", Day: "2026-03-01"})
	if err := e.process(one); err != nil {
		t.Fatal(err)
	}
	e.committed("daily_stats", civil.MustParse("2026-03-01"))
}

// TestManualRequestSentTwiceRunsOnce: SQS sends a re-export request's
// message twice; the day is exported once, and the second message is done
// without a claim. A message written by hand (no request id) runs each
// time it arrives.
func TestManualRequestSentTwiceRunsOnce(t *testing.T) {
	e := newEnv(t, envOpts{env: map[string]string{"LOG_LEVEL": "INFO"}})
	e.insert("events", genRows("events", testDay, 10)...)
	successKey := e.partPrefix("events", testDay) + layout.SuccessName
	body := manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String(), RequestedBy: "ops-erin", RequestID: "0123456789abcdef0123456789abcdef"})
	for i := range 2 {
		if err := e.process(body); err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	if n := e.faults.Calls(buckettest.OpDelete, successKey); n != 1 {
		t.Errorf("%d exports ran, want 1", n)
	}
	if m, r := e.committed("events", testDay), e.row("events", testDay); m.Generation != 1 || r.Generation != 1 {
		t.Errorf("generation %d, row generation %d, want 1", m.Generation, r.Generation)
	}
	if h, err := e.led.Partitions().History(e.ctx, e.key("events", testDay)); err != nil || len(h) != 1 {
		t.Errorf("history %+v, %v: want one attempt", h, err)
	}
	// What the operating guide says the second message logs.
	if !strings.Contains(e.out.String(), "the re-export request was served already; nothing to do") {
		t.Errorf("the second message's log lacks the served request:\n%s", e.out.String())
	}
	hand := manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})
	for range 2 {
		if err := e.process(hand); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.row("events", testDay); r.Generation != 3 {
		t.Errorf("after two messages written by hand: generation %d, want 3", r.Generation)
	}
}

// TestServedRequestRewritesTheDeliveryManifest: a re-export request whose
// run recorded its outcome and failed to write the day's delivery manifest
// is sent again by SQS; the copy finds the request served, runs nothing,
// and writes the manifest from the ledger.
func TestServedRequestRewritesTheDeliveryManifest(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 10)...)
	deliveryKey := layout.DeliveryManifestKey(e.prefix, testDay)
	successKey := e.partPrefix("events", testDay) + layout.SuccessName
	e.faults.Set(func(c buckettest.Call) error {
		if c.Op == buckettest.OpPut && c.Key == deliveryKey && c.N == 1 {
			return errors.New("injected: the delivery manifest's write failed")
		}
		return nil
	}, nil)
	body := manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String(), RequestID: "0123456789abcdef0123456789abcdef"})
	if err := e.process(body); err == nil {
		t.Fatal("a run whose delivery manifest was not written returned nil: SQS would not send it again")
	}
	if b := e.get(deliveryKey); b != nil {
		t.Fatalf("delivery manifest written despite the fault: %s", b)
	}
	if err := e.process(body); err != nil {
		t.Fatalf("the request sent again: %v", err)
	}
	if n := e.faults.Calls(buckettest.OpDelete, successKey); n != 1 {
		t.Errorf("%d exports ran, want 1", n)
	}
	if d := e.delivery(testDay); !d.Complete || strings.Join(deliveredNames(d), ",") != "events" {
		t.Errorf("delivery manifest after the request was sent again: %+v", d)
	}
}

// TestManualRecordsWhoAsked: a manual request's requested_by reaches the
// manifest's provenance and the attempt's history; a scheduled export names
// nobody.
func TestManualRecordsWhoAsked(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 10)...)
	if err := e.process(jobBody(t, e.claim("events", testDay, ""))); err != nil {
		t.Fatal(err)
	}
	if m := e.committed("events", testDay); m.Provenance.RequestedBy != "" {
		t.Errorf("a scheduled generation requested by %q", m.Provenance.RequestedBy)
	}
	by := "arn:aws:sts::123456789012:assumed-role/ops/alice"
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String(), RequestedBy: by})); err != nil {
		t.Fatal(err)
	}
	m := e.committed("events", testDay)
	if m.Generation != 2 || m.Provenance.RequestedBy != by || m.Reason != "manual" {
		t.Errorf("re-exported manifest: generation %d, reason %s, requested by %q", m.Generation, m.Reason, m.Provenance.RequestedBy)
	}
	h, err := e.led.Partitions().History(e.ctx, e.key("events", testDay))
	if err != nil || len(h) == 0 || h[len(h)-1].RequestedBy != by {
		t.Errorf("history %+v, %v: the last attempt does not name %q", h, err, by)
	}
}
