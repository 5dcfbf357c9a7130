package ledger

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TestClaimWhoseAnswerWasLost: the write that claims a row lands, its
// answer is lost and the SDK sends it again; the copy finds the row held
// by the very token it carries. The claim is the caller's (Claim, and
// ClaimManual with and without a request id), not a conflict, a re-run
// or a request served already, and it carries the row's generation.
func TestClaimWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c)
	acct := testAccount(t, "a")
	key := func(i int) partition.Key {
		return partition.Key{AccountID: acct, Dataset: "events", Day: day1.AddDays(i)}
	}
	if _, err := l.Schedule().Materialize(ctx, acct, "events", day1, day1.AddDays(4)); err != nil {
		t.Fatal(err)
	}
	// Day 0 has a committed generation 1, so a claim is its generation 2.
	first, err := l.Partitions().ClaimManual(ctx, key(0), ManualRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Complete(ctx, key(0), first.Token, Result{Rows: 5, Generation: 1}); err != nil {
		t.Fatal(err)
	}
	c.Advance(testLease)

	tests := []struct {
		name  string
		day   int
		claim func(l *Ledger) (Claim, error)
		gen   int64
	}{
		{"a request with an id", 0, func(l *Ledger) (Claim, error) {
			return l.Partitions().ClaimManual(ctx, key(0), ManualRequest{By: "ops-erin", ID: "r-lost"})
		}, 2},
		{"a request without one", 1, func(l *Ledger) (Claim, error) {
			return l.Partitions().ClaimManual(ctx, key(1), ManualRequest{})
		}, 1},
		{"the sweep's claim", 2, func(l *Ledger) (Claim, error) { return l.Partitions().Claim(ctx, key(2), "") }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lost, cut := lossy(t, l)
			claim, err := tt.claim(lost)
			if err != nil {
				t.Fatalf("a claim whose answer was lost: %v", err)
			}
			if cut.Load() != 1 {
				t.Fatalf("the proxy cut %d answers, want 1", cut.Load())
			}
			row := get(t, l, key(tt.day))
			if !row.heldBy(claim.Token) || claim.Generation != tt.gen || row.RerunRequested {
				t.Errorf("claim %+v (generation %d, want %d) on row %+v", claim, claim.Generation, tt.gen, row)
			}
			if claim.Reason == partition.ReasonManual {
				return
			}
			// The row before the claim is gone: the claim stands for a
			// queued one, which its Release leaves queued and due now.
			if err := l.Partitions().Release(ctx, claim); err != nil {
				t.Fatal(err)
			}
			if row := get(t, l, key(tt.day)); row.State != StateQueued || row.ClaimToken != "" {
				t.Errorf("released: %+v, want queued", row)
			}
		})
	}

	// The run of day 3 starts through the lossy ledger: Start's copy finds
	// its own start, not a second delivery of the job.
	lost, cut := lossy(t, l)
	cl, err := l.Partitions().Claim(ctx, key(3), "")
	if err != nil {
		t.Fatal(err)
	}
	started, err := lost.Partitions().Start(ctx, key(3), cl.Token)
	if err != nil || cut.Load() != 1 || started.Attempt != 1 {
		t.Fatalf("a start whose answer was lost: %+v, %v (%d answers cut)", started, err, cut.Load())
	}
	if _, err := l.Partitions().Start(ctx, key(3), cl.Token); !errors.Is(err, ErrClaimLost) {
		t.Errorf("a second start of the claim: %v, want ErrClaimLost", err)
	}
	// Day 4 completes through it: Complete's copy finds its own result.
	lost, cut = lossy(t, l)
	cl, err = l.Partitions().Claim(ctx, key(4), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Start(ctx, key(4), cl.Token); err != nil {
		t.Fatal(err)
	}
	res := Result{Rows: 7, Generation: cl.Generation, ManifestKey: "p/dt=" + key(4).Day.String() + "/_manifest.json"}
	row, err := lost.Partitions().Complete(ctx, key(4), cl.Token, res)
	if err != nil || cut.Load() != 1 || row.State != StateCompleted || row.Generation != cl.Generation {
		t.Fatalf("a completion whose answer was lost: %+v, %v (%d answers cut)", row, err, cut.Load())
	}
	if h, err := l.Partitions().History(ctx, key(4)); err != nil || len(h) != 1 || h[0].Outcome != OutcomeCompleted {
		t.Errorf("history of the completion: %+v, %v", h, err)
	}
	// A completion of the same result by a claim that does not hold the
	// row, in the same second (a run taken over), is still refused: it is
	// not this call's write.
	for _, token := range []string{cl.Token, "a-token-that-never-held-it"} {
		if _, err := l.Partitions().Complete(ctx, key(4), token, res); !errors.Is(err, ErrClaimLost) {
			t.Errorf("the same completion again under %s: %v, want ErrClaimLost", token, err)
		}
	}
}

// TestFailWhoseAnswerWasLost: the write that records a failed attempt
// lands, its answer is lost and the SDK sends it again; the copy is
// refused (no claim left), and Fail finds its own failure recorded: the
// row as written, its history item, not ErrClaimLost.
func TestFailWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c)
	cl := startedPartition(t, l, "a")
	key := cl.Key
	lost, cut := lossy(t, l)
	row, err := lost.Partitions().Fail(ctx, key, cl.Token, errors.New("source_unavailable: down"))
	if err != nil || cut.Load() != 1 || row.State != StateFailed || row.Attempts != 1 || row.NextAttemptAt.IsZero() {
		t.Fatalf("a failure whose answer was lost: %+v, %v (%d answers cut)", row, err, cut.Load())
	}
	if h, err := l.Partitions().History(ctx, key); err != nil || len(h) != 1 || h[0].Outcome != OutcomeFailed {
		t.Errorf("history of the failure: %+v, %v", h, err)
	}
	// The claim is gone: the same failure again under it is refused.
	if _, err := l.Partitions().Fail(ctx, key, cl.Token, errors.New("source_unavailable: down")); !errors.Is(err, ErrClaimLost) {
		t.Errorf("a second failure under the token: %v, want ErrClaimLost", err)
	}
}

// TestFailOfAnotherSlice: two slices of a day fail its partition under the
// one token with the same error in the same second; the first lands while
// the second has read the row and is about to write. The second is refused
// and finds a failure that is not its own write: ErrClaimLost, so the
// failure is reported once.
func TestFailOfAnotherSlice(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, db := newTestLedger(t, c)
	cl := startedPartition(t, l, "a")
	key := cl.Key
	cause := errors.New("the partition cannot be exported: account is disabled")
	first := func() {
		if _, err := l.Partitions().Fail(ctx, key, cl.Token, cause); err != nil {
			t.Errorf("the first slice's failure: %v", err)
		}
	}
	second, err := New(&beforeUpdate{DynamoAPI: db, hook: first}, l.Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Partitions().Fail(ctx, key, cl.Token, cause); !errors.Is(err, ErrClaimLost) {
		t.Errorf("the second slice's failure: %v, want ErrClaimLost", err)
	}
	if h, err := l.Partitions().History(ctx, key); err != nil || len(h) != 1 {
		t.Errorf("history %+v, %v: want the one failure", h, err)
	}
}

// beforeUpdate runs hook once, before the first UpdateItem it passes on.
type beforeUpdate struct {
	DynamoAPI
	once sync.Once
	hook func()
}

func (b *beforeUpdate) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	b.once.Do(b.hook)
	return b.DynamoAPI.UpdateItem(ctx, in, opts...)
}

// TestSliceRunWhoseAnswerWasLost: a slice's start, completion, failure
// and the plan's commit claim each land with their answer lost; each copy
// finds its own write (the run's fresh token, write_id, the fresh commit
// token) and is the caller's, not a conflict or a lost claim.
func TestSliceRunWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	c := startedPartition(t, l, "s")
	if err := l.Slices().PlanSlices(ctx, SlicePlan{Key: c.Key, Token: c.Token, Generation: c.Generation, Slices: 2, RunID: "run_1", StartedAt: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	// The answer lost is the slice item's write (S#0000, S#0001) or the
	// plan's (commit_token), not the partition's renewal before it.
	through := func(has ...string) (*Ledger, func()) {
		lost, cut := lossy(t, l, has...)
		return lost, func() {
			t.Helper()
			if cut.Load() != 1 {
				t.Fatalf("the proxy cut %d answers, want 1", cut.Load())
			}
		}
	}
	lost, cut := through("S#0000", "running")
	s0, err := lost.Slices().StartSlice(ctx, c.Key, c.Token, 0)
	if err != nil || s0.State != StateRunning || s0.Attempts != 1 {
		t.Fatalf("a slice start whose answer was lost: %+v, %v", s0, err)
	}
	cut()
	lost, cut = through("S#0000", "completed")
	if err := lost.Slices().CompleteSlice(ctx, c.Key, c.Token, 0, s0.RunToken, SliceResult{Rows: 1}); err != nil {
		t.Fatalf("a slice completion whose answer was lost: %v", err)
	}
	cut()
	s1, err := l.Slices().StartSlice(ctx, c.Key, c.Token, 1)
	if err != nil {
		t.Fatal(err)
	}
	lost, cut = through("S#0001", "failed")
	if f, err := lost.Slices().FailSlice(ctx, c.Key, c.Token, 1, s1.RunToken, errors.New("boom")); err != nil || f.State != StateFailed || f.LastError != "boom" {
		t.Fatalf("a slice failure whose answer was lost: %+v, %v", f, err)
	}
	cut()
	lost, cut = through("commit_token")
	commit, err := lost.Slices().ClaimSliceCommit(ctx, c.Key, c.Token)
	if err != nil || commit == "" {
		t.Fatalf("a commit claim whose answer was lost: %q, %v", commit, err)
	}
	cut()
	if _, err := l.Slices().ClaimSliceCommit(ctx, c.Key, c.Token); !errors.Is(err, ErrConflict) {
		t.Errorf("a second commit claim: %v, want ErrConflict (the first holds it)", err)
	}
}

// lossy is l's ledger through a proxy that loses the answer to its first
// UpdateItem (whose body holds every one of has: mototest.LoseFirstAnswer),
// and how many answers it cut.
func lossy(t *testing.T, l *Ledger, has ...string) (*Ledger, *atomic.Int32) {
	t.Helper()
	cfg, _ := deployed(t)
	proxyURL, cut := mototest.LoseFirstAnswer(t, aws.ToString(cfg.BaseEndpoint), "UpdateItem", has...)
	cfg = cfg.Copy()
	cfg.BaseEndpoint = aws.String(proxyURL)
	lost, err := New(dynamodb.NewFromConfig(cfg), l.Config())
	if err != nil {
		t.Fatal(err)
	}
	return lost, cut
}

// TestOtherWritesWhoseAnswerWasLost: the mechanism is the kernel's, so
// writes no transition wrote a check for are covered too: a generation
// noted committed, and a retry (Requeue, an ALL_OLD write) whose answers
// were lost are the caller's, not a conflict.
func TestOtherWritesWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c)
	cl := startedPartition(t, l, "a")
	lost, cut := lossy(t, l)
	if err := lost.Partitions().NoteCommitted(ctx, cl.Key, cl.Token, cl.Generation); err != nil || cut.Load() != 1 {
		t.Fatalf("a committed generation noted with its answer lost: %v (%d answers cut)", err, cut.Load())
	}
	if r := get(t, l, cl.Key); r.GenReserved != cl.Generation {
		t.Errorf("generation reserved %d, want %d", r.GenReserved, cl.Generation)
	}
	next := cl.Key
	next.Day = next.Day.AddDays(1)
	lost, cut = lossy(t, l, `"`+next.Day.String()+`"`) // the row's write, not the summary's stale mark
	res, err := lost.Partitions().Requeue(ctx, RequeueRange{AccountID: next.AccountID, Dataset: next.Dataset, From: next.Day, To: next.Day, Reason: partition.ReasonManual})
	if err != nil || cut.Load() != 1 || res.Queued != 1 || res.RerunRequested != 0 {
		t.Fatalf("a retry with its answer lost: %+v, %v (%d answers cut)", res, err, cut.Load())
	}
	if r := get(t, l, next); r.State != StateQueued {
		t.Errorf("retried row %s, want queued", r.State)
	}
}
