package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// errCrash is what a fault hook panics with to kill a run in place: nothing
// after it runs, and the handler reports the message for redelivery, as
// SQS redelivers the message of a Lambda that died.
var errCrash = errors.New("crash injected")

// deliver runs one SQS record through the handler and reports whether SQS
// would deliver it again.
func (e *env) deliver(id, body string) (redeliver bool) {
	e.t.Helper()
	h := Handler{Processor: e.svc, Log: e.svc.Log}
	resp, err := h.Handle(e.ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: id, Body: body}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(resp.BatchItemFailures) == 1
}

// TestDeliveryConverges: after the ledger recorded a run (Complete or
// Fail), the exporter dies, or its write of the day's delivery manifest
// fails, which is then missing or states an older failure. SQS delivers
// the job again; Start refuses it (its claim was used), and the redelivery
// rewrites the manifest from the ledger before it is dropped, without
// exporting again.
func TestDeliveryConverges(t *testing.T) {
	for _, tc := range []struct {
		name        string
		failFirst   bool          // an earlier run failed and its manifest says so
		crashOnFail bool          // the run fails (Fail), then the manifest write dies
		writeFails  bool          // the manifest write fails instead of the process dying
		wantCode    manifest.Code // "" : delivered
	}{
		{"crash after Complete: missing", false, false, false, ""},
		{"crash after Complete: a stale failure", true, false, false, ""},
		{"crash after Fail: missing", false, true, false, manifest.CodeInternal},
		{"the manifest write fails after Complete", true, false, true, ""},
		{"the manifest write fails after Fail", false, true, true, manifest.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			e.insert("events", genRows("events", testDay, 4)...)
			pp := e.partPrefix("events", testDay)
			deliveryKey := layout.DeliveryManifestKey(e.prefix, testDay)
			if tc.failFirst {
				e.failOnce(func(c buckettest.Call) bool { return c.Op == buckettest.OpPut && c.Key == pp+layout.SuccessName })
				e.export("events", testDay)
				if d := e.delivery(testDay); len(d.DatasetsMissing) != 1 || d.DatasetsMissing[0].State != "failed" {
					t.Fatalf("after the first failure: %+v", d)
				}
				e.clk.Set(e.row("events", testDay).NextAttemptAt.Add(1))
			}
			if _, err := e.led.Schedule().Materialize(e.ctx, e.acct.ID, "events", testDay, testDay); err != nil {
				t.Fatal(err)
			}
			c, err := e.led.Partitions().Claim(e.ctx, e.key("events", testDay), "")
			if err != nil {
				t.Fatal(err)
			}
			body := jobBody(t, c)
			e.faults.Set(func(call buckettest.Call) error {
				if tc.crashOnFail && call.Op == buckettest.OpPut && call.Key == pp+layout.SuccessName {
					return errInjected
				}
				if call.Op == buckettest.OpPut && call.Key == deliveryKey {
					if tc.writeFails {
						return errInjected
					}
					panic(errCrash) // the ledger holds the outcome; the manifest write never happens
				}
				return nil
			}, nil)
			if !e.deliver("m-1", body) {
				t.Fatal("the message must be delivered again")
			}
			r := e.row("events", testDay)
			if want := map[bool]ledger.State{false: ledger.StateCompleted, true: ledger.StateFailed}[tc.crashOnFail]; r.State != want {
				t.Fatalf("row after the crash: %+v", r)
			}
			stale := e.get(deliveryKey)
			if tc.wantCode == "" && stale != nil && strings.Contains(string(stale), `"complete": true`) {
				t.Fatalf("the crash left a current manifest; the test crashed too late: %s", stale)
			}

			e.faults.Set(nil, nil)
			exports := e.faults.Calls(buckettest.OpDelete, pp+layout.SuccessName)
			if e.deliver("m-1", body) {
				t.Fatal("the redelivered job must be done")
			}
			if n := e.faults.Calls(buckettest.OpDelete, pp+layout.SuccessName); n != exports {
				t.Errorf("the redelivery exported again (%d runs)", n-exports)
			}
			d := e.delivery(testDay)
			if tc.wantCode == "" {
				if !d.Complete || len(d.DatasetsDelivered) != 1 || d.DatasetsDelivered[0].Generation != r.Generation {
					t.Errorf("delivery after the redelivery: %+v, ledger %+v", d, r)
				}
				e.committed("events", testDay)
				return
			}
			if d.Complete || len(d.DatasetsMissing) != 1 || d.DatasetsMissing[0].Code != tc.wantCode {
				t.Errorf("delivery after the redelivery: %+v", d)
			}
		})
	}
}

// TestMalformedJobsReachTheDLQ: a job whose fields are invalid, or that
// names an account or a partition the ledger does not have, can never run:
// it goes to the dead-letter queue at once with the reason in its
// daybook_error attribute; so does a job whose claim token the partition
// never had. A duplicate job for a real partition is dropped quietly.
func TestMalformedJobsReachTheDLQ(t *testing.T) {
	e := newEnv(t, envOpts{})
	dlqName := fmt.Sprintf("dlq-%d", runs.Add(1))
	q, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: &dlqName})
	if err != nil {
		t.Fatal(err)
	}
	dlq := aws.ToString(q.QueueUrl)
	e.insert("events", genRows("events", testDay, 2)...)
	real := e.claim("events", testDay, "")
	good := jobs.Job{Kind: jobs.KindJob, AccountID: e.acct.ID, Dataset: "events", Day: testDay.String(),
		ClaimToken: "0123456789abcdef0123456789abcdef", Attempt: 1, Generation: 1, Reason: "scheduled"}
	for _, tc := range []struct {
		name   string
		mutate func(j *jobs.Job)
		is     error  // nil: dropped quietly
		want   string // in the error and the DLQ reason
	}{
		{"invalid account id", func(j *jobs.Job) { j.AccountID = "acct_../../other" }, jobs.ErrMalformed, `account_id "acct_../../other"`},
		{"unknown dataset", func(j *jobs.Job) { j.Dataset = "visitors" }, jobs.ErrMalformed, `dataset "visitors"`},
		{"hostile claim token", func(j *jobs.Job) { j.ClaimToken = "x' OR '1'='1" }, jobs.ErrMalformed, "claim_token"},
		{"no generation", func(j *jobs.Job) { j.Generation = 0 }, jobs.ErrMalformed, `generation "0"`},
		{"attempt beyond any run", func(j *jobs.Job) { j.Attempt = 5000 }, jobs.ErrMalformed, `attempt "5000"`},
		{"unknown reason", func(j *jobs.Job) { j.Reason = "because" }, jobs.ErrMalformed, `reason "because"`},
		{"unknown account", func(j *jobs.Job) { j.AccountID = "acct_aaaaaaaaaaaaaaaa" }, ErrRejected, `account_id "acct_aaaaaaaaaaaaaaaa": no such account`},
		{"partition with no ledger row", func(j *jobs.Job) { j.Day = testDay.AddDays(-1).String() }, ErrRejected, "the ledger has no row for this partition"},
		{"claim that never existed on a real partition", func(j *jobs.Job) {}, ErrRejected, `claim_token "0123456789abcdef0123456789abcdef" was never issued for a job of this partition`},
		{"duplicate of a real job", func(j *jobs.Job) { j.ClaimToken = real.Token }, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := good
			tc.mutate(&j)
			body, err := jobs.Encode(j)
			if err != nil {
				t.Fatal(err)
			}
			err = e.process(body)
			if tc.is == nil {
				if err != nil {
					t.Fatalf("Process = %v, want nil (dropped)", err)
				}
			} else if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Process = %v, want %v naming %q", err, tc.is, tc.want)
			}
			h := Handler{Processor: e.svc, Log: e.svc.Log, DeadLetters: e.sqs, DLQURL: dlq}
			id := "job-" + strings.ReplaceAll(tc.name, " ", "-")
			resp, err := h.Handle(e.ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: id, Body: body}}})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("Handle = %+v, %v: neither kind is redelivered", resp, err)
			}
			got, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: &dlq, MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.is == nil {
				if len(got.Messages) != 0 {
					t.Errorf("a dropped job reached the DLQ: %v", aws.ToString(got.Messages[0].Body))
				}
				return
			}
			// SQS is at-least-once: when the SDK retries a SendMessage whose
			// answer was lost (the emulator closes idle connections), the DLQ
			// holds this job twice. Every message must be this job.
			if len(got.Messages) == 0 {
				t.Fatal("the DLQ is empty, want this job")
			}
			for _, m := range got.Messages {
				if aws.ToString(m.Body) != body {
					t.Fatalf("the DLQ holds %s, want only this job", aws.ToString(m.Body))
				}
				if reason := aws.ToString(m.MessageAttributes["daybook_error"].StringValue); !strings.Contains(reason, tc.want) {
					t.Errorf("daybook_error %q does not name %q", reason, tc.want)
				}
				if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: &dlq, ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	// The real claim was never disturbed: its job still runs.
	if err := e.process(jobBody(t, real)); err != nil {
		t.Fatal(err)
	}
	e.committed("events", testDay)
}
