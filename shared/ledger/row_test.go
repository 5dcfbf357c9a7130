package ledger

import (
	"testing"
	"time"
)

// TestRowClaimPredicates: the row-side readings of the claim conditions,
// at their boundaries (a lease that ends at now is still live; a run that
// never started used no attempt).
func TestRowClaimPredicates(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	const maxAttempts = 3
	running := func(lease time.Duration, started bool, attempts int) Row {
		r := Row{State: StateRunning, ClaimToken: "tok", LeaseUntil: now.Add(lease), Attempts: attempts}
		if started {
			r.StartedAt = now.Add(-time.Hour)
		}
		return r
	}
	cases := []struct {
		name            string
		row             Row
		heldBy          bool // by "tok"
		live, deadOnMax bool
	}{
		{"live claim", running(time.Minute, true, maxAttempts), true, true, false},
		{"lease ends now: live", running(0, true, maxAttempts), true, true, false},
		{"dead, started on the last attempt", running(-time.Second, true, maxAttempts), true, false, true},
		{"dead, started past the last attempt", running(-time.Hour, true, maxAttempts+1), true, false, true},
		{"dead, started with attempts left", running(-time.Second, true, maxAttempts-1), true, false, false},
		{"dead, never started", running(-time.Second, false, maxAttempts), true, false, false},
		{"other token", Row{State: StateRunning, ClaimToken: "other", LeaseUntil: now.Add(time.Minute)}, false, true, false},
		{"failed with the token left behind", Row{State: StateFailed, ClaimToken: "tok", LeaseUntil: now.Add(-time.Hour), StartedAt: now, Attempts: maxAttempts}, false, false, false},
		{"completed", Row{State: StateCompleted}, false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.row.heldBy("tok"); got != tc.heldBy {
				t.Errorf("heldBy = %v, want %v", got, tc.heldBy)
			}
			if got := tc.row.liveAt(now); got != tc.live {
				t.Errorf("liveAt = %v, want %v", got, tc.live)
			}
			if got := tc.row.deadOnLastAttempt(now, maxAttempts); got != tc.deadOnMax {
				t.Errorf("deadOnLastAttempt = %v, want %v", got, tc.deadOnMax)
			}
		})
	}
}
