package ledger

import (
	"context"
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
	if _, err := l.Schedule().Materialize(ctx, acct, "events", day1, day1.AddDays(2)); err != nil {
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
			cfg, _ := deployed(t)
			proxyURL, cut := mototest.LoseFirstAnswer(t, aws.ToString(cfg.BaseEndpoint), "UpdateItem")
			cfg = cfg.Copy()
			cfg.BaseEndpoint = aws.String(proxyURL)
			lossy, err := New(dynamodb.NewFromConfig(cfg), l.Config())
			if err != nil {
				t.Fatal(err)
			}
			claim, err := tt.claim(lossy)
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
		})
	}
}
