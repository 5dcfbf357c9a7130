package ledger

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestExpireClaim: a claim whose exporter is known dead is reclaimable at
// once, as a dead claim (its attempt counted), without waiting its lease; a
// token that does not hold the row changes nothing.
func TestExpireClaim(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk, func(c *Config) { c.MaxAttempts = 5 })
	key := Key{AccountID: testAccount(t, "x"), Dataset: "events", Day: day1}
	if _, err := l.Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	a, err := l.Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(ctx, key, a.Token); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute) // well inside the lease
	if _, err := l.Claim(ctx, key, ""); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim under a live lease: %v", err)
	}
	for _, tok := range []string{"not-the-token", ""} {
		if err := l.ExpireClaim(ctx, key, tok); !errors.Is(err, ErrClaimLost) {
			t.Fatalf("ExpireClaim(%q) = %v, want ErrClaimLost", tok, err)
		}
	}
	if err := l.ExpireClaim(ctx, key, a.Token); err != nil {
		t.Fatal(err)
	}
	r, err := l.Get(ctx, key)
	if err != nil || r.State != StateRunning || r.ClaimToken != a.Token || !r.LeaseUntil.Before(clk.Now()) {
		t.Fatalf("row after ExpireClaim: %+v (%v)", r, err)
	}
	due, _, err := l.Due(ctx, key.AccountID, 10)
	if err != nil || len(due) != 1 || due[0].State != StateRunning {
		t.Fatalf("Due after ExpireClaim = %+v, %v: want the dead claim", due, err)
	}
	b, err := l.Claim(ctx, key, "")
	if err != nil || b.Attempt != 2 {
		t.Fatalf("reclaim = %+v, %v: want attempt 2", b, err)
	}
	if err := l.ExpireClaim(ctx, key, a.Token); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("expiring the old claim after the reclaim: %v", err)
	}
}
