package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// accountWithoutSummary saves an account on stage's ledger with ten days
// of rows (one failed for good, nine waiting) and no fleet summary: an
// account not changed since before summaries existed, as every account is
// right after the upgrade, before `daybook fleet rebuild`.
func accountWithoutSummary(t *testing.T, st stackTable, stage, id string, now time.Time) {
	t.Helper()
	cfg, table := st.cfg, st.table
	ctx := context.Background()
	led, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Config{Catalog: datasettest.Example(t), Table: table, Lease: time.Hour, MaxAttempts: 1,
		Stage: stage, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	a := account.Account{ID: id, Name: "Summaryless " + stage, Enabled: true, StartDate: civil.MustParse("2026-11-10"),
		Datasets: []string{"events"}, Destination: account.Destination{Bucket: "daybook-exports-" + stage}}
	if err := led.Accounts().PutAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := led.Schedule().Materialize(ctx, id, "events", civil.MustParse("2026-11-10"), civil.MustParse("2026-11-19")); err != nil {
		t.Fatal(err)
	}
	stopDay(t, led, partition.Key{AccountID: id, Dataset: "events", Day: civil.MustParse("2026-11-15")})
	if stored := summaryItem(t, cfg, table, id); stored != nil {
		t.Fatalf("the account has a summary before the search: %v", stored)
	}
}

// stopDay claims, starts and fails key's materialized row on a ledger of
// one attempt: it stops, failed for good.
func stopDay(t *testing.T, led *ledger.Ledger, key partition.Key) {
	t.Helper()
	ctx := context.Background()
	cl, err := led.Partitions().Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := led.Partitions().Start(ctx, key, cl.Token); err != nil {
		t.Fatal(err)
	}
	if r, err := led.Partitions().Fail(ctx, key, cl.Token, errors.New("source_unavailable: down")); err != nil || !r.Stopped {
		t.Fatalf("the failed day: %+v %v", r, err)
	}
}

// stackTable is a deployed stage's AWS config and ledger table.
type stackTable struct {
	cfg   aws.Config
	table string
}

// summaryItem is the account's stored fleet summary item, nil if none.
func summaryItem(t *testing.T, cfg aws.Config, table, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := dynamodb.NewFromConfig(cfg).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		ledger.AttrPK: &types.AttributeValueMemberS{Value: "FS#" + id}, ledger.AttrSK: &types.AttributeValueMemberS{Value: "SUMMARY"}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// searchShowsCounts searches the console for id and wants the account's
// line with its counts from its rows: one stopped day, nine queued.
func searchShowsCounts(t *testing.T, c *lambdaConsole, id string) {
	t.Helper()
	res := c.do("GET", "/", "q="+id, "")
	if res.StatusCode != 200 || !strings.Contains(res.Body, `href="/accounts/`+id+`"`) ||
		!strings.Contains(res.Body, `has-stopped">1<`) || !strings.Contains(res.Body, `has-due">9<`) {
		t.Errorf("search for %s: %d\n%s", id, res.StatusCode, res.Body)
	}
}

// TestDeployedReadOnlyConsoleSearchesAccountWithoutSummary: the console
// deployed without ConsoleActions, whose role may only read the ledger,
// finds by id an account that has rows and no summary: it computes the
// summary from the rows and shows it, and stores nothing (every call is
// checked against its role's policy; a PutItem would be refused). A
// second search computes it again, still storing nothing.
func TestDeployedReadOnlyConsoleSearchesAccountWithoutSummary(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	c, cfg, outs := deployedReadOnlyConsole(t, now)
	const id = "acct_consolereadonlya"
	table := outs["LedgerTableName"]
	accountWithoutSummary(t, stackTable{cfg, table}, readOnlyStage, id, now)
	for range 2 {
		searchShowsCounts(t, c, id)
		if stored := summaryItem(t, cfg, table, id); stored != nil {
			t.Errorf("a read-only console stored a summary: %v", stored)
		}
	}
}

// TestDeployedConsoleActionsStoresBuiltSummary: the console deployed with
// ConsoleActions, whose role may put the account's fleet summary, stores
// the summary it built for a search by id, as `daybook status` does, so
// the next search is one GetItem.
func TestDeployedConsoleActionsStoresBuiltSummary(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	c, cfg, outs := deployedConsole(t, now)
	const id = "acct_consoleactsummar"
	table := outs["LedgerTableName"]
	accountWithoutSummary(t, stackTable{cfg, table}, actionsStage, id, now)
	searchShowsCounts(t, c, id)
	if stored := summaryItem(t, cfg, table, id); stored == nil {
		t.Error("the console with actions did not store the summary it built")
	}
	searchShowsCounts(t, c, id)
}
