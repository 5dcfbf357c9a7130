package ledger

import (
	"context"
	"errors"
	"testing"

	"github.com/daybook-dev/daybook/shared/partition"
)

// TestIssuedTokens: every token the ledger hands out in a message stays on
// record after its claim ends, so a redelivery (a token the partition had)
// is told from a forgery (one it never had): Claim records its job's
// token, PlanSlices its plan; a token nobody issued, or issued for another
// partition, is ErrNotFound.
func TestIssuedTokens(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	c := startedPartition(t, l, "tk")
	if _, err := l.Partitions().Complete(ctx, c.Key, c.Token, Result{Rows: 1}); err != nil {
		t.Fatal(err)
	}
	is, err := l.Tokens().IssuedToken(ctx, c.Key, c.Token)
	if err != nil || !is.Job || is.Token != c.Token || !is.IssuedAt.Equal(c.ClaimedAt) || is.PlanSlices != 0 {
		t.Fatalf("IssuedToken of the completed claim = %+v, %v", is, err)
	}
	other := c.Key
	other.Day = other.Day.AddDays(1)
	for _, tt := range []struct {
		name  string
		key   partition.Key
		token string
	}{
		{"invented token", c.Key, "0123456789abcdef0123456789abcdef"},
		{"the token of another partition", other, c.Token},
	} {
		if got, err := l.Tokens().IssuedToken(ctx, tt.key, tt.token); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: IssuedToken = %+v, %v; want ErrNotFound", tt.name, got, err)
		}
	}

	// A manual claim's token travels only in its plan's slice messages.
	m, err := l.Partitions().ClaimManual(ctx, c.Key, ManualRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Tokens().IssuedToken(ctx, m.Key, m.Token); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a manual claim's token before any plan: %v, want ErrNotFound", err)
	}
	if err := l.Slices().PlanSlices(ctx, SlicePlan{Key: m.Key, Token: m.Token, Generation: m.Generation, Slices: 4, StartedAt: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	is, err = l.Tokens().IssuedToken(ctx, m.Key, m.Token)
	if err != nil || is.Job || is.PlanGeneration != m.Generation || is.PlanSlices != 4 {
		t.Fatalf("IssuedToken of the manual claim's plan = %+v, %v", is, err)
	}
}
