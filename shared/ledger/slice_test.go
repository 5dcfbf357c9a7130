package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/partition"
)

// startedPartition materializes, claims and starts a partition, as the
// exporter holds it when it plans slices.
func startedPartition(t *testing.T, l *Ledger, suffix string) Claim {
	t.Helper()
	ctx := context.Background()
	key := partition.Key{AccountID: testAccount(t, suffix), Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	c, err := l.Partitions().Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if c, err = l.Partitions().Start(ctx, key, c.Token); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSliceLifecycle: slices are claimed, leased, retried and recorded
// like partitions, under the partition's claim, whose lease every slice
// write renews; the plan commits once.
func TestSliceLifecycle(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	c := startedPartition(t, l, "s")
	plan := SlicePlan{Key: c.Key, Token: c.Token, Generation: c.Generation, Slices: 3, RunID: "run_1",
		StartedAt: clk.Now(), ExpectedRows: 3000, Fingerprint: Fingerprint{Value: "ab", At: clk.Now()}}
	for _, bad := range []SlicePlan{{Key: c.Key, Token: c.Token, Generation: 1, Slices: 1}, {Key: c.Key, Token: c.Token, Generation: 1, Slices: partition.MaxSlices + 1}, {Key: c.Key, Token: "", Generation: 1, Slices: 2}} {
		if err := l.Slices().PlanSlices(ctx, bad); err == nil {
			t.Errorf("PlanSlices(%+v) accepted", bad)
		}
	}
	if err := l.Slices().PlanSlices(ctx, SlicePlan{Key: c.Key, Token: "0123456789abcdef0123456789abcdef", Generation: 1, Slices: 2}); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("plan under a token that does not hold the partition: %v, want ErrClaimLost", err)
	}
	clk.Advance(time.Minute)
	if err := l.Slices().PlanSlices(ctx, plan); err != nil {
		t.Fatal(err)
	}
	hold := DefaultRedelivery + testLease
	if r, _ := l.Partitions().Get(ctx, c.Key); r.State != StateRunning || !r.LeaseUntil.Equal(clk.Now().Add(hold)) || l.Config().SliceHold != hold {
		t.Fatalf("partition after the plan: %s until %s, want running, held for %s from now", r.State, r.LeaseUntil, hold)
	}
	got, sls, err := l.Slices().SlicesOf(ctx, c.Key)
	if err != nil || got.Slices != 3 || got.Token != c.Token || got.RunID != "run_1" || got.ExpectedRows != 3000 ||
		got.Fingerprint.Value != "ab" || len(sls) != 3 || got.Done(sls) {
		t.Fatalf("SlicesOf = %+v, %+v, %v", got, sls, err)
	}
	for i, sl := range sls {
		if sl.Index != i || sl.State != StateQueued || sl.Generation != c.Generation || sl.Slices != 3 {
			t.Errorf("slice %d: %+v", i, sl)
		}
	}

	// Slice 0 runs and completes.
	s0, err := l.Slices().StartSlice(ctx, c.Key, c.Token, 0)
	if err != nil || s0.State != StateRunning || s0.Attempts != 1 || s0.RunToken == "" {
		t.Fatalf("start slice 0: %+v, %v", s0, err)
	}
	if _, err := l.Slices().StartSlice(ctx, c.Key, c.Token, 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("second start of a live slice: %v, want ErrConflict", err)
	}
	if err := l.Slices().CompleteSlice(ctx, c.Key, c.Token, 0, "ffffffffffffffffffffffffffffffff", SliceResult{}); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("complete under another run's token: %v, want ErrClaimLost", err)
	}
	if err := l.Slices().CompleteSlice(ctx, c.Key, c.Token, 0, s0.RunToken, SliceResult{Rows: 10, Bytes: 100, Files: `{"files":[]}`}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Slices().StartSlice(ctx, c.Key, c.Token, 0); !errors.Is(err, ErrSliceDone) {
		t.Fatalf("start of a completed slice: %v, want ErrSliceDone", err)
	}

	// Slice 1 fails twice and stops on its third attempt.
	for attempt := 1; attempt <= 3; attempt++ {
		s1, err := l.Slices().StartSlice(ctx, c.Key, c.Token, 1)
		if err != nil || s1.Attempts != attempt {
			t.Fatalf("start slice 1, attempt %d: %+v, %v", attempt, s1, err)
		}
		clk.Advance(time.Minute) // the failure's hold is told from the start's
		f, err := l.Slices().FailSlice(ctx, c.Key, c.Token, 1, s1.RunToken, fmt.Errorf("boom %d", attempt))
		if err != nil || f.State != StateFailed || f.LastError != fmt.Sprintf("boom %d", attempt) || f.Stopped != (attempt == 3) {
			t.Fatalf("fail slice 1, attempt %d: %+v, %v", attempt, f, err)
		}
	}
	if _, err := l.Slices().StartSlice(ctx, c.Key, c.Token, 1); !errors.Is(err, ErrStopped) {
		t.Fatalf("start of a stopped slice: %v, want ErrStopped", err)
	}
	if r, _ := l.Partitions().Get(ctx, c.Key); !r.LeaseUntil.Equal(clk.Now().Add(hold)) {
		t.Fatalf("partition held until %s after a slice's failure, want %s: a slice waiting for its retry holds it", r.LeaseUntil, clk.Now().Add(hold))
	}

	// Slice 2's run dies; once its lease expires it is taken over, on a
	// new attempt; the dead run's token no longer holds it.
	dead, err := l.Slices().StartSlice(ctx, c.Key, c.Token, 2)
	if err != nil {
		t.Fatal(err)
	}
	if until, err := l.Slices().SliceFence(ctx, c.Key, ""); err != nil || !until.Equal(dead.LeaseUntil) {
		t.Fatalf("SliceFence = %s, %v; want the running slice's lease %s", until, err, dead.LeaseUntil)
	}
	if until, err := l.Slices().SliceFence(ctx, c.Key, c.Token); err != nil || !until.IsZero() {
		t.Fatalf("SliceFence for the plan's own claim = %s, %v; want none", until, err)
	}
	clk.Advance(testLease + time.Second)
	s2, err := l.Slices().StartSlice(ctx, c.Key, c.Token, 2)
	if err != nil || s2.Attempts != 2 || s2.RunToken == dead.RunToken {
		t.Fatalf("take-over of a dead slice: %+v, %v", s2, err)
	}
	if err := l.Slices().CompleteSlice(ctx, c.Key, c.Token, 2, dead.RunToken, SliceResult{}); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("the dead run completes: %v, want ErrClaimLost", err)
	}
	if err := l.Slices().CompleteSlice(ctx, c.Key, c.Token, 2, s2.RunToken, SliceResult{Rows: 5}); err != nil {
		t.Fatal(err)
	}
	if _, sls, _ := l.Slices().SlicesOf(ctx, c.Key); plan.Done(sls) {
		t.Fatal("a plan with a stopped slice is done")
	}

	// No slice was heard of for the whole hold (a lease and the queue's
	// redelivery delay): the sweeper claims the partition again, and the
	// new claim plans again; the old plan's slices are lost to it.
	clk.Advance(testLease + time.Second)
	if _, err := l.Partitions().Claim(ctx, c.Key, partition.ReasonRetry); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim of a sliced partition a slice was heard of within the hold: %v, want ErrConflict", err)
	}
	clk.Advance(hold - testLease)
	re, err := l.Partitions().Claim(ctx, c.Key, partition.ReasonRetry)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Slices().StartSlice(ctx, c.Key, c.Token, 1); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("slice of a partition claimed again: %v, want ErrClaimLost", err)
	}
	if re, err = l.Partitions().Start(ctx, c.Key, re.Token); err != nil {
		t.Fatal(err)
	}
	plan2 := plan
	plan2.Token, plan2.Slices = re.Token, 2
	if err := l.Slices().PlanSlices(ctx, plan2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Slices().StartSlice(ctx, c.Key, c.Token, 0); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("slice of the replaced plan: %v, want ErrClaimLost", err)
	}
	if _, err := l.Slices().ClaimSliceCommit(ctx, c.Key, c.Token); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("commit of the replaced plan: %v, want ErrClaimLost", err)
	}
	for i := range 2 {
		sl, err := l.Slices().StartSlice(ctx, c.Key, re.Token, i)
		if err != nil || sl.Attempts != 1 {
			t.Fatalf("slice %d of the new plan: %+v, %v", i, sl, err)
		}
		if err := l.Slices().CompleteSlice(ctx, c.Key, re.Token, i, sl.RunToken, SliceResult{Rows: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	p2, sls, err := l.Slices().SlicesOf(ctx, c.Key)
	if err != nil || !p2.Done(sls) || len(sls) != 2 {
		t.Fatalf("the new plan after its two slices: %+v %+v %v (the old plan's third slice must not count)", p2, sls, err)
	}

	// One commit: the second claim is refused while the first's lease
	// lives, and taken over after it.
	if _, err := l.Slices().ClaimSliceCommit(ctx, c.Key, re.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Slices().ClaimSliceCommit(ctx, c.Key, re.Token); !errors.Is(err, ErrConflict) {
		t.Fatalf("second commit claim: %v, want ErrConflict", err)
	}
	held, err := l.Partitions().HeldClaim(ctx, c.Key, re.Token)
	if err != nil || held.Token != re.Token || held.Attempt != re.Attempt || held.Reason != partition.ReasonRetry {
		t.Fatalf("HeldClaim = %+v, %v", held, err)
	}
	if _, err := l.Partitions().Complete(ctx, c.Key, re.Token, Result{Rows: 1, Generation: plan.Generation}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().HeldClaim(ctx, c.Key, re.Token); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("HeldClaim after Complete: %v, want ErrClaimLost", err)
	}
}

// TestFailAfter: a partition failed while slices may still write is not
// due again before they are gone.
func TestFailAfter(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	c := startedPartition(t, l, "f")
	fence := clk.Now().Add(5 * time.Hour) // past any backoff of the first attempt
	r, err := l.Partitions().FailAfter(ctx, c.Key, c.Token, errors.New("slice 3 failed 3 times"), fence)
	if err != nil || r.State != StateFailed || r.NextAttemptAt.Before(fence) {
		t.Fatalf("FailAfter = %+v, %v; want failed, next attempt after %s", r, err, fence)
	}
	clk.Set(fence.Add(-time.Minute))
	if _, err := l.Partitions().Claim(ctx, c.Key, partition.ReasonRetry); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim before the fence: %v, want ErrConflict", err)
	}
	clk.Set(r.NextAttemptAt)
	if _, err := l.Partitions().Claim(ctx, c.Key, partition.ReasonRetry); err != nil {
		t.Fatalf("claim after the fence: %v", err)
	}
}

// TestExpireClaimEndsItsSlices: a claim known dead takes its running
// slices with it, so they fence no later run.
func TestExpireClaimEndsItsSlices(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	c := startedPartition(t, l, "e")
	if err := l.Slices().PlanSlices(ctx, SlicePlan{Key: c.Key, Token: c.Token, Generation: c.Generation, Slices: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Slices().StartSlice(ctx, c.Key, c.Token, 0); err != nil {
		t.Fatal(err)
	}
	if until, _ := l.Slices().SliceFence(ctx, c.Key, ""); until.IsZero() {
		t.Fatal("a running slice sets no fence")
	}
	if err := l.Partitions().ExpireClaim(ctx, c.Key, c.Token); err != nil {
		t.Fatal(err)
	}
	if until, err := l.Slices().SliceFence(ctx, c.Key, ""); err != nil || !until.IsZero() {
		t.Fatalf("fence after ExpireClaim: %s, %v; want none", until, err)
	}
	if _, err := l.Partitions().Claim(ctx, c.Key, partition.ReasonRetry); err != nil {
		t.Fatalf("claim after ExpireClaim: %v", err)
	}
}

// TestSliceBoundsStored (issue 25 §2, §3): a plan's bounds give each
// slice its own range, which every attempt of the slice reads back; bounds
// that do not cut the plan into its slices are refused, naming the field
// and value, with nothing written; a recorded plan marks the partition's
// row SlicePlanned (the exporter reads SliceFence only then).
func TestSliceBoundsStored(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	c := startedPartition(t, l, "b")
	b0 := time.Date(2026, 11, 28, 10, 17, 0, 123456000, time.UTC)
	b1 := b0.Add(time.Microsecond)
	base := SlicePlan{Key: c.Key, Token: c.Token, Generation: c.Generation, Slices: 3, RunID: "run_1", StartedAt: clk.Now()}
	for _, tc := range []struct {
		bounds []time.Time
		want   string
	}{
		{[]time.Time{b0}, "1 bounds for 3 slices, want 2"},
		{[]time.Time{b1, b0}, "bounds[1] 2026-11-28T10:17:00.123456Z is not after bounds[0]"},
		{[]time.Time{b0, b0}, "bounds[1] 2026-11-28T10:17:00.123456Z is not after"},
		{[]time.Time{b0, b1.Add(time.Nanosecond)}, "bounds[1] 2026-11-28T10:17:00.123457001Z: want a whole microsecond"},
	} {
		bad := base
		bad.Bounds = tc.bounds
		if err := l.Slices().PlanSlices(ctx, bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PlanSlices(bounds %v) = %v, want an error containing %q", tc.bounds, err, tc.want)
		}
	}
	if _, err := l.Slices().PlanOf(ctx, c.Key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after refused plans: %v, want no plan", err)
	}
	if r, err := l.Partitions().Get(ctx, c.Key); err != nil || r.SlicePlanned {
		t.Fatalf("row after refused plans: SlicePlanned %v, %v; want unmarked", r.SlicePlanned, err)
	}
	plan := base
	plan.Bounds = []time.Time{b0, b1}
	if err := l.Slices().PlanSlices(ctx, plan); err != nil {
		t.Fatal(err)
	}
	// The row is marked: a later run of the partition reads the fence.
	if r, err := l.Partitions().Get(ctx, c.Key); err != nil || !r.SlicePlanned {
		t.Fatalf("row after the plan: SlicePlanned %v, %v; want marked", r.SlicePlanned, err)
	}
	got, err := l.Slices().PlanOf(ctx, c.Key)
	if err != nil || len(got.Bounds) != 2 || !got.Bounds[0].Equal(b0) || !got.Bounds[1].Equal(b1) {
		t.Fatalf("PlanOf = %+v, %v, want bounds %s, %s", got, err, b0, b1)
	}
	want := [][2]time.Time{{{}, b0}, {b0, b1}, {b1, {}}}
	for i, w := range want {
		sl, err := l.Slices().StartSlice(ctx, c.Key, c.Token, i)
		if err != nil {
			t.Fatal(err)
		}
		if !sl.From.Equal(w[0]) || !sl.To.Equal(w[1]) {
			t.Errorf("slice %d: [%s, %s), want [%s, %s)", i, sl.From, sl.To, w[0], w[1])
		}
		// A retry reads the same range.
		if sl, err = l.Slices().FailSlice(ctx, c.Key, c.Token, i, sl.RunToken, errors.New("boom")); err != nil {
			t.Fatal(err)
		}
		if again, err := l.Slices().StartSlice(ctx, c.Key, c.Token, i); err != nil || !again.From.Equal(w[0]) || !again.To.Equal(w[1]) || again.Attempts != 2 {
			t.Errorf("slice %d again: %+v, %v", i, again, err)
		}
	}
}
