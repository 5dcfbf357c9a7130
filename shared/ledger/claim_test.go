package ledger

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

func TestManualWhileRunningRunsAgainAfterComplete(t *testing.T) {
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
	if _, err := l.Partitions().ClaimManual(ctx, key, ManualRequest{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("manual claim while running: %v, want ErrBusy", err)
	}
	r, err := l.Partitions().Complete(ctx, key, c.Token, Result{Rows: 7, Bytes: 70, Files: 1, ManifestKey: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != StateQueued || r.Generation != 1 || r.Rows != 7 || r.Reason != partition.ReasonManual || r.RerunRequested {
		t.Fatalf("after complete: %+v, want queued, generation 1, stats kept, reason manual", r)
	}
	due, _, err := l.Partitions().Due(ctx, key.AccountID, 10)
	if err != nil || len(due) != 1 || due[0].State != StateQueued {
		t.Fatalf("due after complete: %+v %v", due, err)
	}
	c2, err := l.Partitions().Claim(ctx, key, "")
	if err != nil || c2.Generation != 2 || c2.Reason != partition.ReasonManual {
		t.Fatalf("second run claim %+v %v", c2, err)
	}
	if r, err = l.Partitions().Complete(ctx, key, c2.Token, Result{Rows: 8}); err != nil || r.State != StateCompleted || r.Generation != 2 {
		t.Fatalf("second complete %+v %v", r, err)
	}
}

func TestLeaseExpiry(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	key := partition.Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	old, err := l.Partitions().Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Start(ctx, key, old.Token); err != nil { // it runs, then its exporter dies
		t.Fatal(err)
	}
	if want := clk.Now().Add(testLease); !old.LeaseUntil.Equal(want) {
		t.Errorf("lease until %s, want %s", old.LeaseUntil, want)
	}

	clk.Advance(testLease - time.Second) // inside the lease
	if _, err := l.Partitions().Claim(ctx, key, partition.ReasonRetry); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim inside the lease: %v, want ErrConflict", err)
	}
	if due, _, _ := l.Partitions().Due(ctx, key.AccountID, 10); len(due) != 0 {
		t.Fatalf("a live claim is due: %+v", due)
	}

	clk.Advance(2 * time.Second) // past the lease: the claim is dead
	due, _, err := l.Partitions().Due(ctx, key.AccountID, 10)
	if err != nil || len(due) != 1 || due[0].State != StateRunning {
		t.Fatalf("dead claim not due: %+v %v", due, err)
	}
	fresh, err := l.Partitions().Claim(ctx, key, partition.ReasonRetry)
	if err != nil {
		t.Fatalf("reclaim after the lease: %v", err)
	}
	if fresh.Attempt != 2 || fresh.Token == old.Token || fresh.Generation != 1 {
		t.Errorf("reclaim %+v", fresh)
	}

	if _, err := l.Partitions().Complete(ctx, key, old.Token, Result{Rows: 1}); !errors.Is(err, ErrClaimLost) {
		t.Errorf("complete with the stale token: %v, want ErrClaimLost", err)
	}
	if _, err := l.Partitions().Fail(ctx, key, old.Token, errors.New("zombie")); !errors.Is(err, ErrClaimLost) {
		t.Errorf("fail with the stale token: %v, want ErrClaimLost", err)
	}
	if r, err := l.Partitions().Complete(ctx, key, fresh.Token, Result{Rows: 2}); err != nil || r.Generation != 1 || r.Rows != 2 {
		t.Errorf("complete with the live token: %+v %v", r, err)
	}
}

// TestConcurrentClaimsWinOnce races four claimers over the same 50 rows in
// different orders: each row has exactly one winner (L2).
func TestConcurrentClaimsWinOnce(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	acct := testAccount(t, "a")
	from := civil.MustParse("2026-01-01")
	days := civil.Range(from, from.AddDays(49))
	if _, err := l.Schedule().Materialize(ctx, acct, "events", days[0], days[len(days)-1]); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	winners := map[civil.Date][]string{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			order := append([]civil.Date(nil), days...)
			if w%2 == 1 {
				for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
					order[i], order[j] = order[j], order[i]
				}
			}
			if w >= 2 { // start in the middle
				order = append(order[25:], order[:25]...)
			}
			for _, d := range order {
				c, err := l.Partitions().Claim(ctx, partition.Key{AccountID: acct, Dataset: "events", Day: d}, "")
				switch {
				case err == nil:
					mu.Lock()
					winners[d] = append(winners[d], c.Token)
					mu.Unlock()
				case !errors.Is(err, ErrConflict):
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, d := range days {
		if len(winners[d]) != 1 {
			t.Errorf("%s claimed %d times", d, len(winners[d]))
			continue
		}
		if r, err := l.Partitions().Get(ctx, partition.Key{AccountID: acct, Dataset: "events", Day: d}); err != nil || r.ClaimToken != winners[d][0] {
			t.Errorf("%s holds %q, winner %q (%v)", d, r.ClaimToken, winners[d][0], err)
		}
	}
}

// getCounter counts GetItem calls.
type getCounter struct {
	DynamoAPI
	gets atomic.Int64
}

func (g *getCounter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	g.gets.Add(1)
	return g.DynamoAPI.GetItem(ctx, in, opts...)
}

// TestRefusedClaimReadsNothingMore: a refused claim explains itself from the
// item the failed conditional write returns (ReturnValuesOnConditionCheckFailure
// ALL_OLD; moto 5.2.1 returns it too), without a second read.
func TestRefusedClaimReadsNothingMore(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	base, _ := newTestLedger(t, clk)
	db := &getCounter{DynamoAPI: base.db}
	l, err := New(db, base.cfg)
	if err != nil {
		t.Fatal(err)
	}
	acct := testAccount(t, "a")
	live, done, dead := partition.Key{AccountID: acct, Dataset: "events", Day: day1}, partition.Key{AccountID: acct, Dataset: "events", Day: day1.AddDays(1)}, partition.Key{AccountID: acct, Dataset: "events", Day: day1.AddDays(2)}
	if _, err := l.Schedule().Materialize(ctx, acct, "events", live.Day, dead.Day); err != nil {
		t.Fatal(err)
	}
	c, err := l.Partitions().Claim(ctx, done, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Complete(ctx, done, c.Token, Result{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Claim(ctx, live, ""); err != nil {
		t.Fatal(err)
	}
	l.cfg.MaxAttempts = 1
	if c, err = l.Partitions().Claim(ctx, dead, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Start(ctx, dead, c.Token); err != nil {
		t.Fatal(err)
	}
	db.gets.Store(0)

	if _, err := l.Partitions().Claim(ctx, live, ""); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "live claim") {
		t.Errorf("claim of a live claim: %v", err)
	}
	if _, err := l.Partitions().Claim(ctx, done, ""); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "completed") {
		t.Errorf("claim of a completed row: %v", err)
	}
	if _, err := l.Partitions().Claim(ctx, partition.Key{AccountID: acct, Dataset: "events", Day: day1.AddDays(9)}, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("claim of an absent row: %v", err)
	}
	clk.Advance(testLease + time.Minute)
	if _, err := l.Partitions().Claim(ctx, dead, partition.ReasonRetry); !errors.Is(err, ErrStopped) {
		t.Errorf("claim of a dead claim on its last attempt: %v", err)
	}
	if n := db.gets.Load(); n != 0 {
		t.Errorf("refused claims read %d items with GetItem, want 0", n)
	}
}

// A manual re-run recorded while a claim ran is honoured even when that
// claim dies on its last attempt: the row is queued, not retired.
func TestRerunSurvivesStoppedDeadClaim(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk, func(c *Config) { c.MaxAttempts = 1 })
	key := partition.Key{AccountID: testAccount(t, "x"), Dataset: "events", Day: day1}
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
	if _, err := l.Partitions().ClaimManual(ctx, key, ManualRequest{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("manual while running: %v", err)
	}
	clk.Advance(testLease + time.Second)
	if _, err := l.Partitions().Claim(ctx, key, partition.ReasonRetry); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim of the dead last attempt: %v", err)
	}
	r, err := l.Partitions().Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != StateQueued || r.Stopped || r.Attempts != 0 || !strings.HasPrefix(r.DueKey, "0#") {
		t.Fatalf("row %+v, want queued with attempts reset", r)
	}
	if _, err := l.Partitions().Claim(ctx, key, ""); err != nil {
		t.Fatalf("the queued re-run is claimable: %v", err)
	}
}
