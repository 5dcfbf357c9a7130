package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
)

// recordingQueue keeps the messages the exporter sends to the jobs queue.
type recordingQueue struct {
	mu     sync.Mutex
	bodies []string
}

func (q *recordingQueue) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		q.bodies = append(q.bodies, aws.ToString(e.MessageBody))
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (q *recordingQueue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.bodies
	q.bodies = nil
	return b
}

func reseedBody(t *testing.T, acct, ds, request string) string {
	t.Helper()
	b, err := jobs.Encode(jobs.Reseed{Kind: jobs.KindReseed, AccountID: acct, Dataset: ds, RequestID: request, RequestedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// profilesState is what the delivery manifest of day says about profiles:
// "delivered" or the missing state, and its reseed flag.
func (e *env) profilesState(day civil.Date) (state string, reseed bool) {
	e.t.Helper()
	d := e.delivery(day)
	for _, ds := range d.DatasetsDelivered {
		if ds.Name == "profiles" {
			return "delivered", ds.Reseed
		}
	}
	for _, ds := range d.DatasetsMissing {
		if ds.Name == "profiles" {
			return ds.State, ds.Reseed
		}
	}
	e.t.Fatalf("delivery manifest of %s does not mention profiles: %+v", day, d)
	return "", false
}

// TestReseedShortHistory: a reseed of a three-day history queues every
// day, flags reseed in every day's delivery manifest while it runs (days
// waiting and days rebuilt alike), completes once the last day is rebuilt,
// and then clears the flag everywhere. Events cannot be reseeded, and a
// redelivered request changes nothing.
func TestReseedShortHistory(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events", "profiles"}})
	e.withLifecycle()
	queue := &recordingQueue{}
	e.svc.Queue = queue
	e.acct.StartDate = civil.MustParse("2026-03-07") // closed through 2026-03-09
	if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
		t.Fatal(err)
	}
	days := civil.Range(e.acct.StartDate, civil.MustParse("2026-03-09"))
	for _, d := range days {
		e.insert("profiles", genRows("profiles", d, 5)...)
		e.export("profiles", d)
		if st, reseed := e.profilesState(d); st != "delivered" || reseed {
			t.Fatalf("%s before the reseed: %s, reseed %v", d, st, reseed)
		}
	}

	// events is a union of immutable days: refused, nothing changes.
	err := e.process(reseedBody(t, e.acct.ID, "events", "r-events"))
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "daybook reexport") {
		t.Fatalf("reseed of events: %v", err)
	}
	if _, err := e.led.Seeds().Seed(e.ctx, e.acct.ID, "events"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a refused reseed left a seed: %v", err)
	}

	if err := e.process(reseedBody(t, e.acct.ID, "profiles", "r1")); err != nil {
		t.Fatal(err)
	}
	seed, err := e.led.Seeds().Seed(e.ctx, e.acct.ID, "profiles")
	if err != nil || seed.Epoch != 1 || !seed.Running() || seed.Days != 3 || seed.From != days[0] || seed.Through != days[2] {
		t.Fatalf("seed %+v %v", seed, err)
	}
	for _, d := range days {
		if r := e.row("profiles", d); r.State != ledger.StateQueued || r.Reason != partition.ReasonReseed {
			t.Fatalf("%s after the reseed request: %+v", d, r)
		}
		if st, reseed := e.profilesState(d); st != "queued" || !reseed {
			t.Fatalf("%s while queued: %s, reseed %v", d, st, reseed)
		}
	}
	// A second request while it runs is refused; the same one again is not.
	if err := e.process(reseedBody(t, e.acct.ID, "profiles", "r2")); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "is running") {
		t.Fatalf("a second reseed while running: %v", err)
	}
	if err := e.process(reseedBody(t, e.acct.ID, "profiles", "r1")); err != nil {
		t.Fatalf("the same request again: %v", err)
	}

	for i, d := range days {
		r := e.export("profiles", d)
		m := e.committed("profiles", d)
		if r.Generation != 2 || r.SeedEpoch != 1 || m.Reason != manifest.ReasonReseed {
			t.Fatalf("%s rebuilt: row %+v, manifest reason %s", d, r, m.Reason)
		}
		for j, other := range days {
			want := "queued"
			if j <= i {
				want = "delivered"
			}
			if st, reseed := e.profilesState(other); st != want || !reseed {
				t.Fatalf("after rebuilding %s: %s is %s with reseed %v, want %s with reseed", d, other, st, reseed, want)
			}
		}
		if sent := queue.take(); i < len(days)-1 && len(sent) != 0 {
			t.Fatalf("messages before the last day: %v", sent)
		} else if i == len(days)-1 && (len(sent) != 1 || !strings.Contains(sent[0], `"kind":"reseed_done"`)) {
			t.Fatalf("after the last day: %v", sent)
		} else if i == len(days)-1 {
			if err := e.process(sent[0]); err != nil {
				t.Fatal(err)
			}
			if err := e.process(sent[0]); err != nil { // redelivered
				t.Fatal(err)
			}
		}
	}
	seed, err = e.led.Seeds().Seed(e.ctx, e.acct.ID, "profiles")
	if err != nil || seed.State != ledger.SeedCompleted || len(seed.Done) != 3 {
		t.Fatalf("seed after the last day: %+v %v", seed, err)
	}
	for _, d := range days {
		if st, reseed := e.profilesState(d); st != "delivered" || reseed {
			t.Fatalf("%s after the reseed completed: %s, reseed %v", d, st, reseed)
		}
		if got := e.delivery(d).DatasetsDelivered; len(got) != 1 || got[0].SeedEpoch != 1 || got[0].Generation != 2 {
			t.Fatalf("%s delivered %+v", d, got)
		}
	}
	// The request redelivered after completion queues nothing again.
	if err := e.process(reseedBody(t, e.acct.ID, "profiles", "r1")); err != nil {
		t.Fatal(err)
	}
	for _, d := range days {
		if r := e.row("profiles", d); r.State != ledger.StateCompleted {
			t.Fatalf("%s after a late redelivery: %+v", d, r)
		}
	}
}

// TestReseedCountsOnlyNewRuns: a day whose run began before the reseed did
// is not part of it, and is re-exported.
func TestReseedCountsOnlyNewRuns(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"profiles"}})
	e.withLifecycle()
	e.svc.Queue = &recordingQueue{}
	e.acct.StartDate = testDay
	if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
		t.Fatal(err)
	}
	e.insert("profiles", genRows("profiles", testDay, 3)...)
	c := e.claim("profiles", testDay, "")
	started, err := e.led.Partitions().Start(e.ctx, e.key("profiles", testDay), c.Token)
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(30e9)
	if err := e.process(reseedBody(t, e.acct.ID, "profiles", "r1")); err != nil {
		t.Fatal(err)
	}
	// The run that began before the reseed finishes now.
	seed, _ := e.led.Seeds().Seed(e.ctx, e.acct.ID, "profiles")
	if seed.Counts(testDay, started.Prev.StartedAt) {
		t.Fatal("a run that began before the reseed counts for it")
	}
	if r, err := e.led.Partitions().Complete(e.ctx, c.Key, c.Token, ledger.Result{Rows: 3}); err != nil || r.State != ledger.StateQueued {
		t.Fatalf("the old run completes into a re-run: %+v %v", r, err)
	}
	r := e.export("profiles", testDay)
	if r.SeedEpoch != 1 {
		t.Fatalf("the re-run: %+v", r)
	}
	if seed, _ := e.led.Seeds().Seed(e.ctx, e.acct.ID, "profiles"); len(seed.Done) != 1 || seed.Done[0] != testDay {
		t.Fatalf("seed after the re-run: %+v", seed)
	}
}

// failingQueue is a recordingQueue whose sends fail while fail is set.
type failingQueue struct {
	recordingQueue
	fail bool
}

func (q *failingQueue) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	q.mu.Lock()
	fail := q.fail
	q.mu.Unlock()
	if fail {
		return nil, errors.New("injected: the jobs queue refused the send")
	}
	return q.recordingQueue.SendMessageBatch(ctx, in, opts...)
}

// TestReseedCompletionSentAgain: a run whose reseed state cannot be read
// is recorded as failed, not completed without its epoch (a day so
// recorded would never count for the reseed). The run that then rebuilds
// the reseed's last day cannot count it: its message is not done, and the
// job SQS sends again finds the day at rest and counts it, but cannot
// queue the reseed's completion; so it is not done either, and the job's
// next copy finds the day counted and queues the completion, which
// finishes the reseed.
func TestReseedCompletionSentAgain(t *testing.T) {
	var refuseSeeds, refuseCount atomic.Bool
	e := newEnv(t, envOpts{datasets: []string{"profiles"}, aws: func(c aws.Config) aws.Config {
		c = c.Copy()
		c.APIOptions = append(c.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("refuseSeeds", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if g, ok := in.Parameters.(*dynamodb.GetItemInput); ok && refuseSeeds.Load() {
					if pk, ok := g.Key[ledger.AttrPK].(*ddbtypes.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, "SEED#") {
						return middleware.InitializeOutput{}, middleware.Metadata{}, errors.New("throttled (the test refuses reseed reads)")
					}
				}
				if u, ok := in.Parameters.(*dynamodb.UpdateItemInput); ok && refuseCount.Load() {
					if pk, ok := u.Key[ledger.AttrPK].(*ddbtypes.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, "SEED#") {
						return middleware.InitializeOutput{}, middleware.Metadata{}, errors.New("throttled (the test refuses reseed counts)")
					}
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
		})
		return c
	}})
	e.withLifecycle()
	queue := &failingQueue{}
	e.svc.Queue = queue
	day := civil.MustParse("2026-03-09") // the last closed day: a reseed of one day
	e.acct.StartDate = day
	if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
		t.Fatal(err)
	}
	e.insert("profiles", genRows("profiles", day, 3)...)
	e.export("profiles", day)
	if err := e.process(reseedBody(t, e.acct.ID, "profiles", "r1")); err != nil {
		t.Fatal(err)
	}
	queue.take()

	refuseSeeds.Store(true)
	_ = e.process(jobBody(t, e.claim("profiles", day, ""))) // the delivery manifest reads the reseed too: not written
	if r := e.row("profiles", day); r.State != ledger.StateFailed || !strings.Contains(r.LastError, "the test refuses reseed reads") {
		t.Fatalf("a run whose reseed state was not read: %s, %q", r.State, r.LastError)
	}
	refuseSeeds.Store(false)

	refuseCount.Store(true)
	r := e.row("profiles", day)
	e.clk.Set(r.NextAttemptAt.Add(time.Second))
	c, err := e.led.Partitions().Claim(e.ctx, e.key("profiles", day), partition.ReasonRetry)
	if err != nil {
		t.Fatal(err)
	}
	job := jobBody(t, c)
	if err := e.process(job); err == nil {
		t.Fatal("the run could not count its day for the reseed, and its message is done: the reseed would wait for ever")
	}
	if r := e.row("profiles", day); r.State != ledger.StateCompleted || r.SeedEpoch != 1 {
		t.Fatalf("the rebuilt day: %s, epoch %d", r.State, r.SeedEpoch)
	}
	refuseCount.Store(false)

	queue.fail = true
	if err := e.process(job); err == nil { // SQS sends the job again
		t.Fatal("the job sent again could not queue the reseed's completion, and its message is done: the reseed would wait for ever")
	}
	if seed, err := e.led.Seeds().Seed(e.ctx, e.acct.ID, "profiles"); err != nil || len(seed.Done) != 1 || !seed.Running() {
		t.Fatalf("the job sent again did not count the day at rest: %+v %v", seed, err)
	}
	queue.fail = false
	if err := e.process(job); err != nil { // and again
		t.Fatalf("the job sent again: %v", err)
	}
	sent := queue.take()
	if len(sent) != 1 || !strings.Contains(sent[0], `"kind":"reseed_done"`) {
		t.Fatalf("the job sent again queued %v, want the reseed's completion", sent)
	}
	if err := e.process(sent[0]); err != nil {
		t.Fatal(err)
	}
	if seed, err := e.led.Seeds().Seed(e.ctx, e.acct.ID, "profiles"); err != nil || seed.State != ledger.SeedCompleted {
		t.Fatalf("the reseed after its completion was sent again: %+v %v", seed, err)
	}
	if got := e.delivery(day).DatasetsDelivered; len(got) != 1 || got[0].SeedEpoch != 1 {
		t.Errorf("delivered %+v", got)
	}
}
