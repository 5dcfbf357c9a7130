package ledger

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/partition"
)

// itemsNaming scans the table for the items with any string value (key or
// attribute, string sets included) containing s.
func itemsNaming(t *testing.T, db *dynamodb.Client, table, s string) []string {
	t.Helper()
	var out []string
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			for _, v := range it {
				var vals []string
				switch x := v.(type) {
				case *types.AttributeValueMemberS:
					vals = []string{x.Value}
				case *types.AttributeValueMemberSS:
					vals = x.Value
				}
				if strings.Contains(strings.Join(vals, "\x00"), s) {
					out = append(out, avString(it[AttrPK])+" / "+avString(it[AttrSK]))
					break
				}
			}
		}
	}
	return out
}

// TestPurgeLeavesNoItemOfTheAccount: an account with partition rows of two
// contracts, attempt history, an issued claim token, a slice plan with its
// slices, an outbox event, a watermark, its summary and its history of
// changes is deleted and purged: no item of the ledger names it any more,
// while another account's items stay. Before, the tokens, the slice plan and
// slices and the outbox items stayed.
func TestPurgeLeavesNoItemOfTheAccount(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, db := newTestLedger(t, clk)
	r := seededRand(t)
	newAcct := func() account.Account {
		id, err := account.NewID(r)
		if err != nil {
			t.Fatal(err)
		}
		return account.Account{ID: id, Name: id, Enabled: true, StartDate: day1, Datasets: []string{"events"},
			Destination: account.Destination{Bucket: "daybook-exports-purge"}}
	}
	a, other := newAcct(), newAcct()
	for _, acct := range []account.Account{a, other} {
		if err := l.Accounts().PutAccount(ctx, acct); err != nil {
			t.Fatal(err)
		}
		for _, ds := range []string{"events", "events.v2"} {
			if _, err := l.Schedule().Materialize(ctx, acct.ID, ds, day1, day1.AddDays(2)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Schedule().AdvanceWatermark(ctx, acct.ID, "events", day1.AddDays(2)); err != nil {
			t.Fatal(err)
		}
		// A completed day, its committed event in the outbox.
		k := partition.Key{AccountID: acct.ID, Dataset: "events", Day: day1}
		c, err := l.Partitions().Claim(ctx, k, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Complete(ctx, k, c.Token, Result{Rows: 1, Generation: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Outbox().RecordEvent(ctx, Event{Key: k, Kind: EventCommitted, Generation: 1, ID: acct.ID + "/events/" + day1.String() + "/1",
			DetailType: "daybook.partition.committed", Detail: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		// A day of the later contract running in slices: its token, plan
		// and slices.
		k2 := partition.Key{AccountID: acct.ID, Dataset: "events.v2", Day: day1.AddDays(1)}
		c2, err := l.Partitions().Claim(ctx, k2, "")
		if err != nil {
			t.Fatal(err)
		}
		if c2, err = l.Partitions().Start(ctx, k2, c2.Token); err != nil {
			t.Fatal(err)
		}
		if err := l.Slices().PlanSlices(ctx, SlicePlan{Key: k2, Token: c2.Token, Generation: c2.Generation, Slices: 2, RunID: "run_1", StartedAt: clk.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Fleet().Refresh(ctx, acct.ID); err != nil {
			t.Fatal(err)
		}
	}
	if len(itemsNaming(t, db, l.cfg.Table, a.ID)) < 12 {
		t.Fatalf("the account's items before the purge: %v", itemsNaming(t, db, l.cfg.Table, a.ID))
	}
	otherBefore := itemsNaming(t, db, l.cfg.Table, other.ID)

	if err := l.Accounts().DeleteAccount(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	res, err := l.Accounts().PurgeAccount(ctx, a.ID, []string{"events", "events.v2", "profiles"})
	if err != nil {
		t.Fatal(err)
	}
	if left := itemsNaming(t, db, l.cfg.Table, a.ID); len(left) > 0 {
		t.Errorf("after the purge (%+v) these items name the account:\n%s", res, strings.Join(left, "\n"))
	}
	if res.Rows != 6 || res.Other < 5 {
		t.Errorf("purge %+v, want 6 rows and at least the token, plan, 2 slices and outbox event", res)
	}
	if after := itemsNaming(t, db, l.cfg.Table, other.ID); len(after) != len(otherBefore) {
		t.Errorf("the other account's items: %d before, %d after the purge", len(otherBefore), len(after))
	}
}
