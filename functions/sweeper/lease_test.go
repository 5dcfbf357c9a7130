package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// deadClaim sweeps a one-day account once and starts the job it sent, whose
// worker then dies: the row stays running under a claim that nobody
// completes. It returns the claim's stored lease end.
func deadClaim(t *testing.T, l *ledger.Ledger, s *Sweeper, rec *recordingSQS, key partition.Key) time.Time {
	t.Helper()
	ctx := context.Background()
	if sum, err := s.Run(ctx, s.now()); err != nil || sum.Claimed != 1 {
		t.Fatalf("first sweep %+v %v", sum, err)
	}
	jobs := rec.take()
	if len(jobs) != 1 {
		t.Fatalf("first sweep sent %+v", jobs)
	}
	c, err := l.Partitions().Start(ctx, key, jobs[0].ClaimToken)
	if err != nil {
		t.Fatal(err)
	}
	return c.LeaseUntil
}

// woken reports whether the fleet index wakes the account by at.
func woken(t *testing.T, l *ledger.Ledger, id string, at time.Time) bool {
	t.Helper()
	ws, _, err := l.Schedule().WokenAccounts(context.Background(), ledger.Shard(id), at, 0)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(ws, func(w ledger.Woken) bool { return w.ID == id })
}

// TestSweepInsideTheLeasesLastSecond: a sweep inside the last second of a
// dead claim's lease neither sees the row due nor gives the account up; the
// first sweep after the lease's end reclaims it (L3). On the old code the
// sweep inside that second read the row as due, Claim refused it as live,
// and the account slept until its next day close.
func TestSweepInsideTheLeasesLastSecond(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	a := newAccount(t, l, "a", "2026-03-31")
	key := partition.Key{AccountID: a.ID, Dataset: "events", Day: civil.MustParse("2026-03-31")}
	rec := &recordingSQS{}
	s := sweeper(only(l, a), rec, clk, 10, 10)
	until := deadClaim(t, l, s, rec, key)

	clk.Set(until.Add(500 * time.Millisecond))
	sum, err := s.Run(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Due != 0 || sum.Claimed != 0 || sum.Skipped != 0 {
		t.Errorf("sweep inside the lease's last second: %+v; want the row not yet due", sum)
	}
	if end := ledger.LeaseEnd(until); !woken(t, l, a.ID, end) {
		t.Errorf("after a sweep inside the lease's last second the account is not woken at the lease end %s", end)
	}

	clk.Set(ledger.LeaseEnd(until))
	sum, err = s.Run(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	jobs := rec.take()
	if sum.Claimed != 1 || len(jobs) != 1 || jobs[0].Reason != string(partition.ReasonRetry) || jobs[0].Attempt != 2 {
		t.Fatalf("first sweep after the lease's end: %+v %+v; want the dead claim retried", sum, jobs)
	}
}

// rivalLedger plays a concurrent sweep that claims every row just before
// this sweep's claim of it: this sweep's claim is refused as live.
type rivalLedger struct {
	isolate
	rival []ledger.Claim
}

func (r *rivalLedger) Claim(ctx context.Context, key partition.Key, reason partition.Reason) (ledger.Claim, error) {
	c, err := r.isolate.Claim(ctx, key, reason)
	if err != nil {
		return c, err
	}
	r.rival = append(r.rival, c)
	return r.isolate.Claim(ctx, key, reason)
}

// TestRefusedClaimNeverPushesTheWakePastTheLease: a row read as due whose
// claim is refused because another claim took it since keeps its account
// woken until that claim's lease ends; if that claim dies (its job is
// lost), the first sweep after its lease takes the row (L3). On the old
// code the refusal counted as a lost race and the account's wake moved to
// its next day close.
func TestRefusedClaimNeverPushesTheWakePastTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	a := newAccount(t, l, "a", "2026-03-31")
	key := partition.Key{AccountID: a.ID, Dataset: "events", Day: civil.MustParse("2026-03-31")}
	rec := &recordingSQS{}
	s := sweeper(only(l, a), rec, clk, 10, 10)
	until := deadClaim(t, l, s, rec, key)

	clk.Set(ledger.LeaseEnd(until).Add(time.Minute))
	rival := &rivalLedger{isolate: only(l, a)}
	s.Ledger = rival
	sum, err := s.Run(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Claimed != 0 || sum.Skipped != 1 || len(rival.rival) != 1 {
		t.Fatalf("raced sweep %+v, rival claims %d; want the claim refused as live", sum, len(rival.rival))
	}
	end := ledger.LeaseEnd(rival.rival[0].LeaseUntil)
	if !woken(t, l, a.ID, end) {
		t.Errorf("the refused claim pushed the account's wake past the live claim's lease end %s", end)
	}

	// The rival's job is lost: the first sweep after its lease retries the row.
	s.Ledger = only(l, a)
	clk.Set(end)
	sum, err = s.Run(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if jobs := rec.take(); sum.Claimed != 1 || len(jobs) != 1 {
		t.Fatalf("first sweep after the rival's lease: %+v %+v; want the row claimed", sum, jobs)
	}
}
