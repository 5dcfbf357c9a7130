package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TestExpireClaim: a claim whose exporter is known dead is reclaimable at
// once, as a dead claim (its attempt counted), without waiting its lease; a
// token that does not hold the row changes nothing.
func TestExpireClaim(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk, func(c *Config) { c.MaxAttempts = 5 })
	key := partition.Key{AccountID: testAccount(t, "x"), Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	a, err := l.Partitions().Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Start(ctx, key, a.Token); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute) // well inside the lease
	if _, err := l.Partitions().Claim(ctx, key, ""); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim under a live lease: %v", err)
	}
	for _, tok := range []string{"not-the-token", ""} {
		if err := l.Partitions().ExpireClaim(ctx, key, tok); !errors.Is(err, ErrClaimLost) {
			t.Fatalf("ExpireClaim(%q) = %v, want ErrClaimLost", tok, err)
		}
	}
	if err := l.Partitions().ExpireClaim(ctx, key, a.Token); err != nil {
		t.Fatal(err)
	}
	r, err := l.Partitions().Get(ctx, key)
	if err != nil || r.State != StateRunning || r.ClaimToken != a.Token || !r.LeaseUntil.Before(clk.Now()) {
		t.Fatalf("row after ExpireClaim: %+v (%v)", r, err)
	}
	due, _, err := l.Partitions().Due(ctx, key.AccountID, 10)
	if err != nil || len(due) != 1 || due[0].State != StateRunning {
		t.Fatalf("Due after ExpireClaim = %+v, %v: want the dead claim", due, err)
	}
	b, err := l.Partitions().Claim(ctx, key, "")
	if err != nil || b.Attempt != 2 {
		t.Fatalf("reclaim = %+v, %v: want attempt 2", b, err)
	}
	if err := l.Partitions().ExpireClaim(ctx, key, a.Token); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("expiring the old claim after the reclaim: %v", err)
	}
}

// TestExpireClaimWakesTheAccount: the dead claim ExpireClaim makes is due at
// once, so the account is woken now; without it no sweep would read the row
// before the old lease's end.
func TestExpireClaimWakesTheAccount(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	a := putTestAccount(t, l, "expire")
	key := partition.Key{AccountID: a.ID, Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	c, err := l.Partitions().Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	w, ok := woken(t, l, a.ID, clk.Now())
	if !ok {
		t.Fatal("the new account is not woken")
	}
	// The sweep that claimed it sets the next wake at the lease's end.
	if _, err := l.Schedule().SetNextWake(ctx, w, c.LeaseUntil, civil.Date{}, clk.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	if _, ok := woken(t, l, a.ID, clk.Now()); ok {
		t.Fatal("woken under a live lease")
	}
	if err := l.Partitions().ExpireClaim(ctx, key, c.Token); err != nil {
		t.Fatal(err)
	}
	if _, ok := woken(t, l, a.ID, clk.Now()); !ok {
		t.Fatal("the account is not woken after its claim was expired")
	}
}
