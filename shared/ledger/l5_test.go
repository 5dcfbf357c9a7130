package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// seedCompleted writes count completed rows for (acct, dataset) ending the day
// before `before`, straight through BatchWriteItem (seeding only).
func seedCompleted(t *testing.T, db *dynamodb.Client, table, acct, dataset string, before civil.Date, count int) {
	t.Helper()
	ctx := context.Background()
	var batch []types.WriteRequest
	flush := func() {
		req := map[string][]types.WriteRequest{table: batch}
		for len(req) > 0 {
			out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: req})
			if err != nil {
				t.Fatal(err)
			}
			req = out.UnprocessedItems
		}
		batch = batch[:0]
	}
	for i := 1; i <= count; i++ {
		d := before.AddDays(-i)
		item := rowKey(partition.Key{AccountID: acct, Dataset: dataset, Day: d})
		item[attrAccountID] = s(acct)
		item[attrDataset] = s(dataset)
		item[attrDay] = s(d.String())
		item[attrState] = s(string(StateCompleted))
		item[attrAttempts] = n(1)
		item[attrGeneration] = n(1)
		item[attrRows] = n(1000)
		item[attrBytes] = n(123456)
		item[attrFiles] = n(1)
		item[attrManifestKey] = s("x/_manifest.json")
		item[attrReason] = s(string(partition.ReasonBackfill))
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		if len(batch) == 25 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
}

// TestSweepReadCostIndependentOfLedgerSize is L5 with numbers: the same
// due work behind 100 and behind 10,000 completed rows costs the same reads,
// and so does counting the partitions that stopped retrying.
func TestSweepReadCostIndependentOfLedgerSize(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, db := newTestLedger(t, clk)
	cutoff := civil.MustParse("2026-01-01") // completed history ends before this
	setup := func(acct string, completed int) {
		start := time.Now()
		seedCompleted(t, db, l.cfg.Table, acct, "events", cutoff, completed)
		t.Logf("seeded %d completed rows for %s in %s", completed, acct, time.Since(start).Round(time.Millisecond))
		// The same due work: 3 queued, 5 pending, 2 failed-and-due, 1 dead
		// claim; and 1 stopped row, which is not due.
		if _, err := l.Schedule().Materialize(ctx, acct, "events", civil.MustParse("2026-01-01"), civil.MustParse("2026-01-12")); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: acct, Dataset: "events", From: civil.MustParse("2026-01-09"), To: civil.MustParse("2026-01-11"), Reason: partition.ReasonManual}); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"2026-01-01", "2026-01-02"} {
			k := partition.Key{AccountID: acct, Dataset: "events", Day: civil.MustParse(d)}
			c, err := l.Partitions().Claim(ctx, k, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Partitions().Fail(ctx, k, c.Token, errors.New("boom")); err != nil {
				t.Fatal(err)
			}
		}
		dead := partition.Key{AccountID: acct, Dataset: "events", Day: civil.MustParse("2026-01-03")}
		c, err := l.Partitions().Claim(ctx, dead, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Start(ctx, dead, c.Token); err != nil {
			t.Fatal(err)
		}
		// 2026-01-12 fails every attempt at once (MaxAttempts 1 for it).
		k := partition.Key{AccountID: acct, Dataset: "events", Day: civil.MustParse("2026-01-12")}
		once, err := New(l.db, func() Config { c := l.cfg; c.MaxAttempts = 1; return c }())
		if err != nil {
			t.Fatal(err)
		}
		if c, err = once.Partitions().Claim(ctx, k, ""); err != nil {
			t.Fatal(err)
		}
		if r, err := once.Partitions().Fail(ctx, k, c.Token, errors.New("boom")); err != nil || !r.Stopped {
			t.Fatalf("stop %s: %+v %v", k, r, err)
		}
	}
	small, large := testAccount(t, "small"), testAccount(t, "large")
	setup(small, 100)
	setup(large, 10_000)
	clk.Advance(testLease + time.Hour) // failed rows due, the claim dead

	due, stopped := map[string]ReadStats{}, map[string]ReadStats{}
	for _, acct := range []string{small, large} {
		start := time.Now()
		rows, stats, err := l.Partitions().Due(ctx, acct, 50)
		t.Logf("Due(%s) took %s", acct, time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 11 {
			t.Fatalf("%s: %d due rows, want 11: %v", acct, len(rows), dueDays(rows))
		}
		due[acct] = stats
		n, stats, err := l.Schedule().CountStopped(ctx, acct)
		if err != nil || n != 1 {
			t.Fatalf("%s: CountStopped = %d %v, want 1", acct, n, err)
		}
		stopped[acct] = stats
	}
	s, g := due[small], due[large]
	t.Logf("L5: ledger of   112 rows (100 completed): Due read %d items in %d queries, %.1f capacity units", s.Items, s.Queries, s.CapacityUnits)
	t.Logf("L5: ledger of 10012 rows (10000 completed): Due read %d items in %d queries, %.1f capacity units", g.Items, g.Queries, g.CapacityUnits)
	if s.Items != g.Items || s.Queries != g.Queries {
		t.Errorf("read cost depends on ledger size: %+v vs %+v", s, g)
	}
	if g.Items != 11 {
		t.Errorf("Due read %d items for 11 due rows", g.Items)
	}
	s, g = stopped[small], stopped[large]
	t.Logf("L5: ledger of   112 rows (100 completed): CountStopped read %d items in %d queries, %.1f capacity units", s.Items, s.Queries, s.CapacityUnits)
	t.Logf("L5: ledger of 10012 rows (10000 completed): CountStopped read %d items in %d queries, %.1f capacity units", g.Items, g.Queries, g.CapacityUnits)
	if s.Items != g.Items || s.Queries != g.Queries || g.Items != 1 || g.Queries != 1 {
		t.Errorf("CountStopped read %+v and %+v, want 1 item in 1 query for 1 stopped row", s, g)
	}
}
