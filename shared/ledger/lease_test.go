package ledger

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/partition"
)

// TestOneLeaseEnd: the due index and the claim condition agree on when a
// dead claim's lease has ended, at every instant around it: DueWork reads
// the row as due exactly when Claim takes it, and NextAt, while it is live,
// is the first instant Claim takes it (LeaseEnd). On the old code DueWork
// read the row as due from the start of its lease_until second, where
// Claim refused it as live.
func TestOneLeaseEnd(t *testing.T) {
	for _, tc := range []struct {
		after time.Duration // from the stored lease_until
		due   bool
	}{
		{-time.Second, false},
		{0, false},
		{500 * time.Millisecond, false},
		{999 * time.Millisecond, false},
		{time.Second, true},
		{time.Minute, true},
	} {
		t.Run(fmt.Sprint(tc.after), func(t *testing.T) {
			ctx := context.Background()
			clk := newClock(t0)
			l, _ := newTestLedger(t, clk)
			key := partition.Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
			if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
				t.Fatal(err)
			}
			c, err := l.Partitions().Claim(ctx, key, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Partitions().Start(ctx, key, c.Token); err != nil {
				t.Fatal(err)
			}
			clk.Set(c.LeaseUntil.Add(tc.after))
			w, err := l.Partitions().DueWork(ctx, key.AccountID, 10)
			if err != nil {
				t.Fatal(err)
			}
			if due := len(w.Rows) == 1; due != tc.due {
				t.Errorf("DueWork at lease_until%+v: due %v, want %v", tc.after, due, tc.due)
			}
			if !tc.due && !w.NextAt.Equal(LeaseEnd(c.LeaseUntil)) {
				t.Errorf("NextAt %s, want the lease end %s", w.NextAt, LeaseEnd(c.LeaseUntil))
			}
			_, err = l.Partitions().Claim(ctx, key, partition.ReasonRetry)
			var live *LiveClaimError
			switch {
			case tc.due && err != nil:
				t.Errorf("Claim of a row DueWork read as due: %v", err)
			case !tc.due && (!errors.As(err, &live) || !errors.Is(err, ErrConflict) || !live.Ends().Equal(LeaseEnd(c.LeaseUntil))):
				t.Errorf("Claim inside the lease: %v, want a LiveClaimError ending at %s", err, LeaseEnd(c.LeaseUntil))
			}
		})
	}
}

// TestReserveClaims: sweeps in one window draw from its total, whatever
// each asks; the window's first reservation sets it; a later window starts
// again; bad arguments are refused, naming them.
func TestReserveClaims(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	scope := testAccount(t, "scope")
	steps := []struct {
		advance     time.Duration
		total, want int
		granted     int
	}{
		{0, 10, 0, 0},          // a sweep about to fan out opens the window
		{0, 4, 6, 6},           // its first worker (the window's total holds, not the worker's)
		{0, 10, 6, 4},          // a concurrent sweep's worker gets what is left
		{0, 10, 1, 0},          // and then nothing
		{time.Minute, 7, 5, 5}, // the next window
		{0, 7, 5, 2},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		got, err := l.Schedule().ReserveClaims(ctx, scope, 30*time.Second, st.total, st.want)
		if err != nil || got != st.granted {
			t.Errorf("step %d: granted %d, %v; want %d", i, got, err, st.granted)
		}
	}
	if _, err := l.Schedule().ReserveClaims(ctx, scope, 0, 10, 1); err == nil {
		t.Error("a zero window was accepted")
	}
	if _, err := l.Schedule().ReserveClaims(ctx, scope, time.Minute, 10, -1); err == nil {
		t.Error("a negative want was accepted")
	}
}
