package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/partition"
)

// lockedRand makes a seeded source safe for the function's concurrent use.
type lockedRand struct {
	mu sync.Mutex
	r  interface{ Read([]byte) (int, error) }
}

func (l *lockedRand) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

// drain takes every message off queue.
func drain(t *testing.T, q *sqs.Client, queue string) []string {
	t.Helper()
	var bodies []string
	for {
		out, err := q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &queue, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return bodies
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
			if _, err := q.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: &queue, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// asDeployed is the sweeper as main builds it (build: the deployed
// function's environment with vars over it, its clients through the check
// of every call against the sweeper's policy in template.yaml, clk its
// clock), on the test's own ledger table and queues standing for the
// stack's; with the test's SQS client and the jobs and sweep queues.
func asDeployed(t *testing.T, clk *clock, vars map[string]string) (fn Function, q *sqs.Client, jobsQueue, sweepQueue string) {
	t.Helper()
	cfg, out := deployed(t)
	table := samstacktest.OwnTable(t, cfg, out["LedgerTableName"])
	jobsQueue = samstacktest.OwnQueue(t, cfg, out["JobsQueueUrl"])
	sweepQueue = samstacktest.OwnQueue(t, cfg, out["SweepQueueUrl"])
	env := samstacktest.FunctionEnv(t, srv, stackStage, "SweeperFunction")
	fcfg := sweeperAWS(t)
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": *fcfg.BaseEndpoint, "LEDGER_TABLE": table, "JOBS_QUEUE_URL": jobsQueue,
		"SWEEP_QUEUE_URL": sweepQueue, "LOG_LEVEL": "WARN"} {
		env[k] = v
	}
	maps.Copy(env, vars)
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	fn, err := build(environ, Options{AWS: fcfg, Now: clk.Now, Rand: &lockedRand{r: seeded(t, "function")}, Stdout: t.Output()})
	if err != nil {
		t.Fatal(err)
	}
	if fn.Config.Ledger.Table != table {
		t.Fatalf("the deployed sweeper's ledger table %s, want %s", fn.Config.Ledger.Table, table)
	}
	return fn, sqs.NewFromConfig(cfg), jobsQueue, sweepQueue
}

// runShards delivers the shard messages (bodies) to fn as the sweep queue's
// event source does, and fails t unless every worker succeeded.
func runShards(t *testing.T, fn Function, bodies []string) {
	t.Helper()
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprint("shard-", i), EventSource: "aws:sqs", Body: b})
	}
	raw, _ := json.Marshal(ev)
	res, err := fn.Handler.Invoke(context.Background(), raw)
	if resp, ok := res.(events.SQSEventResponse); err != nil || !ok || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the shard messages: %+v %v", res, err)
	}
}

// TestSweeperAsDeployed: the sweeper as main builds it (build: the
// deployed function's environment, its clients through the check of every
// call against the sweeper's policy in template.yaml), on a ledger table
// and queues of the test's own standing for the stack's. A scheduled sweep
// with more woken accounts than FAN_OUT_ACCOUNTS fans out; each shard
// message, delivered as the sweep queue's event source does, materializes
// and claims its account's closed days and sends their jobs; the next
// sweep after the claims' lease, on their last attempt (MAX_ATTEMPTS=1),
// retires them as stopped and publishes their stopped events on the bus.
func TestSweeperAsDeployed(t *testing.T) {
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "deployed")
	a1 := newAccount(t, l, "one", "2026-03-29") // 03-29 .. 03-31 closed
	a2 := newAccount(t, l, "two", "2026-03-30") // 03-30, 03-31
	fn, q, jobsQueue, sweepQueue := asDeployed(t, clk, map[string]string{"FAN_OUT_ACCOUNTS": "1", "MAX_ATTEMPTS": "1", "SETTLE_DELAY": "0s"})
	if fn.Config.EventBus == "" {
		t.Fatalf("the deployed sweeper's configuration %+v", fn.Config)
	}
	// What fails after a recorded transition (a wake, a history item) is
	// reported through the function's own log and metrics, where the
	// template's alarms on WakeFailures and HistoryWriteFailures look.
	if rep := fn.Handler.Shards.(*Sweeper).Ledger.(FunctionLedger).Config().Report; rep.Log != fn.Log || rep.Metrics == nil || rep.Metrics != fn.Handler.Metrics {
		t.Errorf("the ledger reports to %+v, not to the function's log and metrics", rep)
	}

	// sweep runs a scheduled sweep and, as the sweep queue's event source
	// does, each shard message it fanned out.
	sweep := func(event string) {
		t.Helper()
		res, err := fn.Handler.Invoke(ctx, json.RawMessage(event))
		sum, _ := res.(Summary)
		if err != nil || sum.FanOut == 0 || sum.Woken != 2 {
			t.Fatalf("the scheduled sweep: %+v %v, want the two woken accounts fanned out", res, err)
		}
		shards := drain(t, q, sweepQueue)
		if len(shards) != sum.FanOut {
			t.Fatalf("%d shard messages on the sweep queue, the sweep sent %d", len(shards), sum.FanOut)
		}
		runShards(t, fn, shards)
	}
	sweep(`{"source":"daybook.schedule","scheduled_time":"2026-04-01T12:00:00Z"}`)
	var claimed []string
	for _, b := range drain(t, q, jobsQueue) {
		m, err := jobs.Parse(datasettest.Example(t), b)
		if err != nil || m.Job == nil {
			t.Fatalf("job message %s: %v", b, err)
		}
		claimed = append(claimed, m.Job.AccountID+" "+m.Job.Day)
		// An exporter starts the job, and dies.
		if _, err := l.Partitions().Start(ctx, partition.Key{AccountID: m.Job.AccountID, Dataset: m.Job.Dataset, Day: m.Job.DayValue()}, m.Job.ClaimToken); err != nil {
			t.Fatal(err)
		}
	}
	if len(claimed) != 5 {
		t.Fatalf("jobs sent %v, want the 5 closed days of the two accounts", claimed)
	}
	for _, a := range []string{a1.ID, a2.ID} {
		rows, err := l.Partitions().List(ctx, a, "events", a1.StartDate, a1.StartDate.AddDays(3))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.ClaimToken == "" {
				t.Errorf("%s %s: %+v after the sweep, want claimed", a, r.Day, r)
			}
		}
	}

	// Past the lease the runs are dead, on their last attempt: the next
	// sweep retires them as stopped and publishes their events.
	clk.Advance(fn.Config.Ledger.Lease + time.Hour)
	sweep(`{}`)
	rows, err := l.Partitions().List(ctx, a2.ID, "events", a2.StartDate, a2.StartDate.AddDays(2))
	if err != nil || len(rows) != 2 || !rows[0].Stopped || !rows[1].Stopped {
		t.Fatalf("rows after the retirement: %+v %v, want both stopped", rows, err)
	}
	evs, err := l.Outbox().Events(ctx, rows[0].Key)
	if err != nil || len(evs) != 1 || evs[0].Pending() {
		t.Errorf("the stopped event of %s: %+v %v, want one, published", rows[0].Key, evs, err)
	}
}
