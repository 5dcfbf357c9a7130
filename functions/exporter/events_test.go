package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/outbox"
	"github.com/daybook-dev/daybook/shared/partition"
)

// routedEvent is an EventBridge event as a rule delivers it to SQS.
type routedEvent struct {
	Source     string          `json:"source"`
	DetailType string          `json:"detail-type"`
	Detail     json.RawMessage `json:"detail"`
}

// eventQueue creates an SQS queue and a rule on the deployed bus that
// routes the env account's events to it, as a platform's per-account
// forwarding rule would (README), and returns a function that drains it.
func (e *env) eventQueue() func() []routedEvent {
	e.t.Helper()
	cfg, out := deployed(e.t)
	bus := out["EventBusName"]
	if bus == "" || out["EventBusArn"] == "" {
		e.t.Fatalf("the stack has no event bus outputs: %v", out)
	}
	eb := eventbridge.NewFromConfig(cfg)
	name := "events-" + strings.TrimPrefix(e.acct.ID, "acct_")
	q, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		e.t.Fatal(err)
	}
	attrs, err := e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		e.t.Fatal(err)
	}
	pattern := fmt.Sprintf(`{"source":[%q],"detail":{"account":[%q]}}`, events.Source, e.acct.ID)
	if _, err := eb.PutRule(e.ctx, &eventbridge.PutRuleInput{Name: aws.String(name), EventBusName: aws.String(bus), EventPattern: aws.String(pattern)}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := eb.PutTargets(e.ctx, &eventbridge.PutTargetsInput{Rule: aws.String(name), EventBusName: aws.String(bus),
		Targets: []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])}}}); err != nil {
		e.t.Fatal(err)
	}
	return func() []routedEvent {
		e.t.Helper()
		var got []routedEvent
		for {
			out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})
			if err != nil {
				e.t.Fatal(err)
			}
			if len(out.Messages) == 0 {
				return got
			}
			for _, m := range out.Messages {
				var ev routedEvent
				if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev); err != nil {
					e.t.Fatalf("event %s: %v", aws.ToString(m.Body), err)
				}
				got = append(got, ev)
				if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle}); err != nil {
					e.t.Fatal(err)
				}
			}
		}
	}
}

// TestCommittedEvents: on the emulator, a rule on the deployed bus routes
// the account's events to a queue; after two exports of a day (scheduled,
// then manual) and one of another, the queue holds exactly one committed
// event per commit, each with the commit's detail.
func TestCommittedEvents(t *testing.T) {
	e := newEnv(t, envOpts{})
	drain := e.eventQueue()
	other := testDay.AddDays(1)
	e.insert("events", genRows("events", testDay, 12)...)
	e.export("events", testDay)
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	e.export("events", other)
	got := drain()
	if len(got) != 3 {
		t.Fatalf("%d events, want 3: %+v", len(got), got)
	}
	type key struct {
		day        string
		generation int64
	}
	seen := map[key]bool{}
	for _, ev := range got {
		if ev.Source != events.Source || ev.DetailType != events.DetailCommitted {
			t.Errorf("event source %q detail-type %q", ev.Source, ev.DetailType)
		}
		var d events.Committed
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			t.Fatal(err)
		}
		k := key{d.Day, d.Generation}
		if seen[k] {
			t.Errorf("two events for %+v", k)
		}
		seen[k] = true
		pp := layout.PartitionPrefix(e.prefix, "events", civil.MustParse(d.Day))
		m := e.committed("events", civil.MustParse(d.Day))
		wantReason := map[key]string{{testDay.String(), 1}: "scheduled", {testDay.String(), 2}: "manual", {other.String(), 1}: "scheduled"}[k]
		if d.Version != events.DetailVersion || d.Account != e.acct.ID || d.Dataset != "events" || d.Bucket != e.acct.Destination.Bucket ||
			d.ManifestKey != pp+layout.ManifestName || d.Reason != wantReason || d.Restated || d.Restatement != nil || d.Reseed ||
			d.SchemaVersion != 1 || d.RunID == "" || d.CommittedAt.IsZero() || d.ID != events.CommittedID(e.acct.ID, "events", d.Day, d.Generation) {
			t.Errorf("detail %+v", d)
		}
		if d.Day == testDay.String() && d.Generation == m.Generation {
			// The latest generation's counts are the stored manifest's.
			if d.Rows != m.Totals.Rows || d.Bytes != m.Totals.Bytes || d.Files != m.Totals.Files || d.Rows != 12 {
				t.Errorf("detail %+v, manifest totals %+v", d, m.Totals)
			}
		}
	}
	for _, k := range []key{{testDay.String(), 1}, {testDay.String(), 2}, {other.String(), 1}} {
		if !seen[k] {
			t.Errorf("no event for %+v", k)
		}
	}
}

// TestStoppedEvent: a partition that fails on its last attempt publishes
// one stopped event, and its earlier failures publish none.
func TestStoppedEvent(t *testing.T) {
	e := newEnv(t, envOpts{})
	drain := e.eventQueue()
	if _, err := e.db.Exec(`DROP TABLE events`); err != nil { // every read fails
		t.Fatal(err)
	}
	c := e.claim("events", testDay, "")
	if err := e.process(jobBody(t, c)); err != nil {
		t.Fatal(err)
	}
	e.retry("events", testDay)
	if got := drain(); len(got) != 0 {
		t.Fatalf("events after failures with attempts left: %+v", got)
	}
	if r := e.retry("events", testDay); !r.Stopped {
		t.Fatalf("after the last attempt: %+v", r)
	}
	got := drain()
	if len(got) != 1 || got[0].DetailType != events.DetailStopped {
		t.Fatalf("events %+v, want one stopped", got)
	}
	var d events.Stopped
	if err := json.Unmarshal(got[0].Detail, &d); err != nil {
		t.Fatal(err)
	}
	if d.Account != e.acct.ID || d.Dataset != "events" || d.Day != testDay.String() || d.Attempts != 3 || d.Cause != partition.StopFailed ||
		d.Generation != 0 || d.StoppedAt.IsZero() || d.Version != events.DetailVersion || d.ID != events.StoppedID(e.acct.ID, "events", d.Day, 0, d.StoppedAt) {
		t.Fatalf("stopped detail %+v", d)
	}
	if strings.Contains(string(got[0].Detail), "no such table") {
		t.Fatalf("the stopped event carries the source's error: %s", got[0].Detail)
	}
}

// TestStoppedEventSurvivesACrash: the function dies right after the
// transition that stops the partition, before it publishes the stop: the
// event was recorded in that transition's own write, pending, and a
// sweep's republish publishes it once. On the code before, the event was
// recorded only on its way to the bus: none survived.
func TestStoppedEventSurvivesACrash(t *testing.T) {
	e := newEnv(t, envOpts{})
	drain := e.eventQueue()
	// The crash: nothing runs after the transition, so the run publishes
	// nothing itself (no outbox of its own); the ledger still records.
	bus := e.svc.Lifecycle.Outbox.Bus
	e.svc.Lifecycle.Outbox = nil
	if _, err := e.db.Exec(`DROP TABLE events`); err != nil { // every read fails
		t.Fatal(err)
	}
	c := e.claim("events", testDay, "")
	if err := e.process(jobBody(t, c)); err != nil {
		t.Fatal(err)
	}
	e.retry("events", testDay)
	if r := e.retry("events", testDay); !r.Stopped {
		t.Fatalf("after the last attempt: %+v", r)
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("published before any republish: %+v", got)
	}
	key := partition.Key{AccountID: e.acct.ID, Dataset: "events", Day: testDay}
	evs, err := e.led.Outbox().Events(context.Background(), key)
	if err != nil || len(evs) != 1 || evs[0].Kind != ledger.EventStopped || !evs[0].Pending() {
		t.Fatalf("recorded events %+v, %v: want one pending stopped event", evs, err)
	}
	// A sweep publishes it: the sweeper's outbox (the test's ledger plays it).
	sweep := &outbox.Outbox{Store: e.led.Outbox(), Bus: bus, On: true}
	rp, err := sweep.Republish(context.Background(), evs[0].RecordedAt.Add(time.Hour), time.Minute)
	if err != nil || rp.Published != 1 {
		t.Fatalf("republish: %+v, %v", rp, err)
	}
	got := drain()
	if len(got) != 1 || got[0].DetailType != events.DetailStopped || !strings.Contains(string(got[0].Detail), evs[0].ID) {
		t.Fatalf("events %+v, want the stopped one, %s", got, evs[0].ID)
	}
}

// failingEvents fails every publish.
type failingEvents struct{ calls int }

func (f *failingEvents) PutEvents(context.Context, *eventbridge.PutEventsInput, ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	f.calls++
	return nil, errors.New("connection reset")
}

// TestPublishFailureKeepsTheExport: an event bus that cannot be reached
// never fails a committed export; the failure is logged and counted.
func TestPublishFailureKeepsTheExport(t *testing.T) {
	e := newEnv(t, envOpts{})
	metricLines := e.withLifecycle()
	logs := metricLines
	api := &failingEvents{}
	e.svc.Lifecycle.Outbox = &outbox.Outbox{Store: e.fnLedger().Outbox(), Bus: &events.Publisher{API: api, Bus: "daybook-test", Timeout: time.Second}, On: true}
	e.insert("events", genRows("events", testDay, 4)...)
	r := e.export("events", testDay)
	if r.State != ledger.StateCompleted || r.Generation != 1 || api.calls != 1 {
		t.Fatalf("row %+v after %d publishes", r, api.calls)
	}
	e.committed("events", testDay)
	if !strings.Contains(metricLines.String(), `"EventPublishFailures":1`) || !strings.Contains(logs.String(), "partition event not published") {
		t.Fatalf("the failure was not counted and logged:\n%s\n%s", metricLines, logs.String())
	}
	if d := e.delivery(testDay); !d.Complete {
		t.Fatalf("delivery manifest after a failed publish: %+v", d)
	}
	// A bucket fault fails the export itself; a failed export publishes nothing.
	e.failOnce(putOf(layout.SuccessName))
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	if api.calls != 1 || e.faults.Count(buckettest.OpPut) == 0 {
		t.Fatalf("%d publishes after a failed export", api.calls)
	}
	if !slices.Contains([]ledger.State{ledger.StateFailed}, e.row("events", testDay).State) {
		t.Fatalf("row after the failed export: %+v", e.row("events", testDay))
	}
}
