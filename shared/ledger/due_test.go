package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

func dueDays(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, string(r.State)+":"+r.Day.String())
	}
	return out
}

func TestDueOrder(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	acct := testAccount(t, "a")
	from, to := civil.MustParse("2026-03-01"), civil.MustParse("2026-03-05")
	if n, err := l.Schedule().Materialize(ctx, acct, "events", from, to); err != nil || n != 5 {
		t.Fatalf("materialize %d %v", n, err)
	}
	// 03-04 is queued by hand: it goes first although it is not the oldest.
	if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: acct, Dataset: "events", From: civil.MustParse("2026-03-04"), To: civil.MustParse("2026-03-04"), Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	// 03-01 fails once: it waits for its next attempt.
	k1 := partition.Key{AccountID: acct, Dataset: "events", Day: from}
	c, err := l.Partitions().Claim(ctx, k1, "")
	if err != nil {
		t.Fatal(err)
	}
	failed, err := l.Partitions().Fail(ctx, k1, c.Token, errors.New("boom"))
	if err != nil {
		t.Fatal(err)
	}
	due, _, err := l.Partitions().Due(ctx, acct, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(dueDays(due), " "), "queued:2026-03-04 pending:2026-03-02 pending:2026-03-03 pending:2026-03-05"; got != want {
		t.Fatalf("due before the next attempt:\n got %s\nwant %s", got, want)
	}
	clk.Set(failed.NextAttemptAt)
	due, _, _ = l.Partitions().Due(ctx, acct, 10)
	if got, want := strings.Join(dueDays(due), " "), "queued:2026-03-04 failed:2026-03-01 pending:2026-03-02 pending:2026-03-03 pending:2026-03-05"; got != want {
		t.Fatalf("due at the next attempt:\n got %s\nwant %s", got, want)
	}
	// The cap keeps the head of the order.
	due, _, _ = l.Partitions().Due(ctx, acct, 2)
	if got, want := strings.Join(dueDays(due), " "), "queued:2026-03-04 failed:2026-03-01"; got != want {
		t.Fatalf("due capped at 2: got %s want %s", got, want)
	}

	// Stop 03-01: it leaves the due work until a requeue brings it back.
	for {
		c, err := l.Partitions().Claim(ctx, k1, partition.ReasonRetry)
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Partitions().Fail(ctx, k1, c.Token, errors.New("boom"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Stopped {
			break
		}
		clk.Set(r.NextAttemptAt)
	}
	clk.Advance(48 * time.Hour)
	due, _, _ = l.Partitions().Due(ctx, acct, 10)
	if got, want := strings.Join(dueDays(due), " "), "queued:2026-03-04 pending:2026-03-02 pending:2026-03-03 pending:2026-03-05"; got != want {
		t.Fatalf("due with 03-01 stopped:\n got %s\nwant %s", got, want)
	}
	if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: acct, Dataset: "events", From: from, To: from, Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	due, _, _ = l.Partitions().Due(ctx, acct, 10)
	if got, want := strings.Join(dueDays(due), " "), "queued:2026-03-01 queued:2026-03-04 pending:2026-03-02 pending:2026-03-03 pending:2026-03-05"; got != want {
		t.Fatalf("due after requeue:\n got %s\nwant %s", got, want)
	}
}

// TestCountStopped: rows that stopped retrying are a level that can be
// read from the index at any time (L1, O3), and leave it on requeue or a
// manual claim.
func TestCountStopped(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	acct, other := testAccount(t, "a"), testAccount(t, "b")
	key := func(a string, i int) partition.Key {
		return partition.Key{AccountID: a, Dataset: "events", Day: day1.AddDays(i)}
	}
	for _, a := range []string{acct, other} {
		if _, err := l.Schedule().Materialize(ctx, a, "events", day1, day1.AddDays(3)); err != nil {
			t.Fatal(err)
		}
	}
	count := func(a string, want int) {
		t.Helper()
		n, st, err := l.Schedule().CountStopped(ctx, a)
		if err != nil || n != want || st.Items != want || st.Queries != 1 {
			t.Errorf("CountStopped(%s) = %d %+v %v, want %d reading %d items in 1 query", a, n, st, err, want, want)
		}
	}
	count(acct, 0)

	// Day 0 fails MaxAttempts times; day 1 dies after starting its last attempt.
	f0 := &fixture{t: t, ctx: ctx, l: l, clk: clk, key: key(acct, 0)}
	f0.runs(l.cfg.MaxAttempts)
	f1 := &fixture{t: t, ctx: ctx, l: l, clk: clk, key: key(acct, 1)}
	f1.runs(l.cfg.MaxAttempts - 1)
	f1.running()
	if _, err := l.Partitions().Start(ctx, f1.key, f1.token); err != nil {
		t.Fatal(err)
	}
	clk.Advance(testLease + time.Minute)
	if _, err := l.Partitions().Claim(ctx, f1.key, partition.ReasonRetry); !errors.Is(err, ErrStopped) {
		t.Fatalf("dead last attempt: %v", err)
	}
	// Day 2 completes, day 3 stays pending.
	c, err := l.Partitions().Claim(ctx, key(acct, 2), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Complete(ctx, key(acct, 2), c.Token, Result{}); err != nil {
		t.Fatal(err)
	}
	count(acct, 2)
	count(other, 0)
	due, _, err := l.Partitions().Due(ctx, acct, 10)
	if got := strings.Join(dueDays(due), " "); err != nil || got != "pending:2026-03-04" {
		t.Errorf("due with two stopped rows: %s %v", got, err)
	}

	if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: acct, Dataset: "events", From: f0.key.Day, To: f0.key.Day, Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	count(acct, 1)
	if _, err := l.Partitions().ClaimManual(ctx, f1.key, ManualRequest{}); err != nil {
		t.Fatal(err)
	}
	count(acct, 0)
}
