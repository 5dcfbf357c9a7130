package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/partition"
)

// TestCompleteGeneration: a generation only ever increases and never repeats.
// The exporter may commit a generation above the claim's (it found a newer
// one in an old _SUCCESS); Complete stores it, and refuses one that is not
// above the stored generation.
func TestCompleteGeneration(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	key := partition.Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	run := func() Claim {
		t.Helper()
		c, err := l.Partitions().Claim(ctx, key, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Start(ctx, key, c.Token); err != nil {
			t.Fatal(err)
		}
		return c
	}
	requeue := func() {
		t.Helper()
		if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: key.AccountID, Dataset: key.Dataset, From: key.Day, To: key.Day, Reason: partition.ReasonManual}); err != nil {
			t.Fatal(err)
		}
	}

	// A crash after _SUCCESS (generation 1) but before Complete: the next run
	// is claimed as generation 1 again and commits 2.
	c := run()
	if c.Generation != 1 {
		t.Fatalf("claim generation %d, want 1", c.Generation)
	}
	r, err := l.Partitions().Complete(ctx, key, c.Token, Result{Rows: 1, Generation: 2})
	if err != nil || r.Generation != 2 || r.State != StateCompleted {
		t.Fatalf("complete at generation 2: %+v %v", r, err)
	}

	// Generation 0 keeps the stored + 1 behaviour.
	requeue()
	c = run()
	if c.Generation != 3 {
		t.Fatalf("claim generation %d, want 3", c.Generation)
	}
	if r, err = l.Partitions().Complete(ctx, key, c.Token, Result{Rows: 2}); err != nil || r.Generation != 3 {
		t.Fatalf("complete without a generation: %+v %v", r, err)
	}

	// Lower than or equal to the stored one: refused, the claim still holds.
	requeue()
	c = run()
	for _, g := range []int64{2, 3} {
		if _, err := l.Partitions().Complete(ctx, key, c.Token, Result{Generation: g}); !errors.Is(err, ErrConflict) {
			t.Errorf("complete at generation %d over stored 3: %v, want ErrConflict", g, err)
		}
	}
	if _, err := l.Partitions().Complete(ctx, key, "stale", Result{Generation: 9}); !errors.Is(err, ErrClaimLost) {
		t.Errorf("complete with a stale token: %v, want ErrClaimLost", err)
	}
	if r, err := l.Partitions().Get(ctx, key); err != nil || r.State != StateRunning || r.ClaimToken != c.Token || r.Generation != 3 {
		t.Fatalf("after refused completes: %+v %v", r, err)
	}

	// A re-run requested meanwhile: the row is queued with the generation stored.
	if _, err := l.Partitions().ClaimManual(ctx, key, ManualRequest{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("manual claim while running: %v", err)
	}
	if r, err = l.Partitions().Complete(ctx, key, c.Token, Result{Generation: 7}); err != nil || r.State != StateQueued || r.Generation != 7 {
		t.Fatalf("complete with a re-run requested: %+v %v", r, err)
	}
	if c = run(); c.Generation != 8 {
		t.Errorf("next claim generation %d, want 8", c.Generation)
	}
}

// Run A commits generation 1 and dies before Complete; run B finds A's
// _SUCCESS, notes generation 1, and fails after removing it: the next claim
// is still numbered 2, never 1 again. A failed run that found nothing new
// leaves no gap.
func TestNoteCommittedGeneration(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk, func(c *Config) { c.MaxAttempts = 5 })
	key := partition.Key{AccountID: testAccount(t, "r"), Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	claimStart := func() Claim {
		t.Helper()
		c, err := l.Partitions().Claim(ctx, key, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Start(ctx, key, c.Token); err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := claimStart() // commits 1 in the bucket, dies
	if a.Generation != 1 {
		t.Fatalf("first claim generation %d", a.Generation)
	}
	clk.Advance(testLease + time.Second)
	b := claimStart()
	if b.Generation != 1 {
		t.Fatalf("second claim generation %d, want 1 (the ledger never heard of A's commit)", b.Generation)
	}
	if err := l.Partitions().NoteCommitted(ctx, key, "not-the-token", 1); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("note with a stale token: %v", err)
	}
	if err := l.Partitions().NoteCommitted(ctx, key, b.Token, 1); err != nil { // B found A's _SUCCESS
		t.Fatal(err)
	}
	if _, err := l.Partitions().Fail(ctx, key, b.Token, errors.New("source down")); err != nil { // ...and failed after removing it
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	c := claimStart()
	if c.Generation != 2 {
		t.Fatalf("claim after a noted 1: generation %d, want 2", c.Generation)
	}
	if err := l.Partitions().NoteCommitted(ctx, key, c.Token, 1); !errors.Is(err, ErrConflict) {
		t.Fatalf("noting a generation not above the noted one: %v", err)
	}
	if _, err := l.Partitions().Fail(ctx, key, c.Token, errors.New("bucket down")); err != nil { // found nothing new, failed
		t.Fatal(err)
	}
	clk.Advance(4 * time.Hour)
	d := claimStart()
	if d.Generation != 2 {
		t.Fatalf("a failed run that noted nothing must leave no gap: generation %d, want 2", d.Generation)
	}
	if r, err := l.Partitions().Complete(ctx, key, d.Token, Result{Generation: 2}); err != nil || r.Generation != 2 {
		t.Fatalf("complete: %+v %v", r, err)
	}
}
