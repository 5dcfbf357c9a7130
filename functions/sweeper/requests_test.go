package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/awscount"
	"github.com/daybook-dev/daybook/shared/ledger"
)

var updateDocs = flag.Bool("update", false, "rewrite the request-count rows of docs/performance.md from the counts")

// countedQueues counts the sweeper's SQS requests on idle queues.
type countedQueues struct {
	idleQueues
	mu sync.Mutex
	n  map[string]int
}

func (q *countedQueues) count(op string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == nil {
		q.n = map[string]int{}
	}
	q.n["SQS "+op]++
}

func (q *countedQueues) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	q.count("SendMessageBatch")
	return q.idleQueues.SendMessageBatch(ctx, in, o...)
}

func (q *countedQueues) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, o ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	q.count("GetQueueAttributes")
	return q.idleQueues.GetQueueAttributes(ctx, in, o...)
}

// TestIdleSweepRequests (issue 25 §3): the requests of one scheduled
// sweep of the deployed function over idle accounts (nothing due, no
// restatement check due) are the idle-sweep row of the table in
// docs/performance.md; -update rewrites it. DynamoDB is counted on the
// emulated table, SQS on idle queues.
func TestIdleSweepRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l, meter := meteredLedger(t, clk, "requests")
	tomorrow := clk.Now().Add(24 * time.Hour)
	var accts []account.Account
	for i := range 10 {
		a := newAccount(t, l, fmt.Sprint("req", i), "2026-03-01")
		if ok, err := l.Schedule().SetNextWake(ctx, ledger.Woken{ID: a.ID, Seq: 1}, tomorrow, civil.MustParse("2026-03-31"), clk.Now()); err != nil || !ok {
			t.Fatalf("SetNextWake = %v, %v", ok, err)
		}
		accts = append(accts, a)
	}
	clk.Advance(15 * time.Minute)
	set := only(l, accts...)
	// As the sweeps after their creation left them: summaries refreshed.
	if _, err := refreshSummaries(ctx, set); err != nil {
		t.Fatal(err)
	}
	q := &countedQueues{}
	h := deployedHandler(t, set, q, clk)
	meter.Reset()
	if _, err := h.Invoke(ctx, json.RawMessage(`{"source":"scheduler"}`)); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for op, n := range meter.Counts().ByOp {
		counts["DynamoDB "+op] = n
	}
	for op, n := range q.n {
		counts[op] = n
	}
	t.Logf("idle sweep: %v", awscount.Ops(counts))
	r, err := awscount.RowOf("one idle sweep (any number of idle accounts)", "sweeper", counts)
	if err != nil {
		t.Fatal(err)
	}
	awscount.CheckDoc(t, "../../docs/performance.md", []awscount.Row{r}, *updateDocs)
}
