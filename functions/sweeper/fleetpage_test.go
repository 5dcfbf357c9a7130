package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/console"
	"github.com/daybook-dev/daybook/shared/devkit/dynalite"
	"github.com/daybook-dev/daybook/shared/devkit/dynamometer"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/ops"
	"github.com/daybook-dev/daybook/shared/partition"
)

// fleetPageCost is what the fleet view costs over n accounts: the requests
// of one console fleet page load (the handler, over HTTP), of the first
// page of daybook status's fleet view and of its second page (ops.Fleet as
// status calls it).
type fleetPageCost struct {
	accounts              int
	console, status, next dynamometer.Counts
	consoleTook           time.Duration
}

// measureFleetPage creates a ledger table on the local DynamoDB, stores the
// summaries of n accounts as the ledger writes them (one real account's,
// built by ledger.Refresh from its rows, copied under n ids) and measures
// the fleet view's reads, with latency injected before each request.
func measureFleetPage(t testing.TB, fb fleetBench, n int, stage string, latency time.Duration) fleetPageCost {
	cfg, tmpl := fb.cfg, fb.tmpl
	ctx := context.Background()
	client := dynamodb.NewFromConfig(cfg)
	names, err := samstacktest.CreateTables(ctx, client, tmpl, cfg.Region, map[string]string{"Stage": stage})
	if err != nil {
		t.Fatal(err)
	}
	table := names["LedgerTable"]
	meter := &dynamometer.Client{API: unatomic{client}, ReadBack: true}
	clk := at("2026-04-01T12:00:00Z")
	led, err := ledger.New(meter, ledger.Config{Catalog: datasettest.Example(t), Table: table, Lease: 20 * time.Minute, Now: clk.Now, Rand: rand.NewChaCha8([32]byte{byte(n)})})
	if err != nil {
		t.Fatal(err)
	}
	// The model: an account with a completed day and a failed one.
	model := account.Account{Name: "model", Enabled: true, StartDate: civil.MustParse("2026-03-01"), Datasets: []string{"events"},
		Destination: account.Destination{Bucket: "daybook-exports-bench"}}
	if model.ID, err = account.NewID(rand.NewChaCha8([32]byte{9})); err != nil {
		t.Fatal(err)
	}
	if err := led.Accounts().PutAccount(ctx, model); err != nil {
		t.Fatal(err)
	}
	if _, err := led.Schedule().Materialize(ctx, model.ID, "events", civil.MustParse("2026-03-30"), civil.MustParse("2026-03-31")); err != nil {
		t.Fatal(err)
	}
	for i, d := range []string{"2026-03-30", "2026-03-31"} {
		k := partition.Key{AccountID: model.ID, Dataset: "events", Day: civil.MustParse(d)}
		c, err := led.Partitions().Claim(ctx, k, "")
		if err == nil {
			_, err = led.Partitions().Start(ctx, k, c.Token)
		}
		if err == nil && i == 0 {
			_, err = led.Partitions().Complete(ctx, k, c.Token, ledger.Result{Rows: 1})
		} else if err == nil {
			_, err = led.Partitions().Fail(ctx, k, c.Token, fmt.Errorf("source unreachable"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := led.Fleet().Refresh(ctx, model.ID); err != nil {
		t.Fatal(err)
	}
	var raw []map[string]dbtypes.AttributeValue
	for _, sk := range []string{"SUMMARY", "NAME"} {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]dbtypes.AttributeValue{"pk": &dbtypes.AttributeValueMemberS{Value: "FS#" + model.ID}, "sk": &dbtypes.AttributeValueMemberS{Value: sk}}})
		if err != nil || len(out.Item) == 0 {
			t.Fatalf("the model's %s item: %v", sk, err)
		}
		raw = append(raw, out.Item)
	}
	var items []map[string]dbtypes.AttributeValue
	for i := range n - 1 {
		id, err := account.NewID(rand.NewChaCha8([32]byte{3, byte(i), byte(i >> 8), byte(i >> 16)}))
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range raw {
			items = append(items, cloneSummary(it, model.ID, id))
		}
	}
	batchWrite(t, client, table, items, false)

	srv, err := console.New(console.Config{Catalog: datasettest.Example(t), Ledger: ops.LedgerOf(led), ReadOnly: true, Now: clk.Now,
		Buckets: console.BucketsFunc(func(account.Account) (console.ObjectReader, error) { return nil, fmt.Errorf("no buckets here") })})
	if err != nil {
		t.Fatal(err)
	}
	c := fleetPageCost{accounts: n}
	meter.Reset()
	meter.Latency = latency
	start := time.Now()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	c.consoleTook = time.Since(start)
	c.console = meter.Counts()
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Next page") && n > ops.DefaultFleetLimit {
		t.Fatalf("the fleet page over %d accounts: %d\n%s", n, rec.Code, rec.Body.String())
	}
	meter.Reset()
	res, err := ops.Fleet(ctx, ops.LedgerOf(led), ops.FleetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.status = meter.Counts()
	if want := min(n, ops.DefaultFleetLimit); len(res.Lines) != want {
		t.Fatalf("status over %d accounts: %d lines, want %d", n, len(res.Lines), want)
	}
	if res.Next != "" {
		meter.Reset()
		if _, err := ops.Fleet(ctx, ops.LedgerOf(led), ops.FleetOptions{Token: res.Next}); err != nil {
			t.Fatal(err)
		}
		c.next = meter.Counts()
	}
	meter.Latency = 0
	return c
}

// cloneSummary is a summary (or name) item of the model account under id.
func cloneSummary(it map[string]dbtypes.AttributeValue, model, id string) map[string]dbtypes.AttributeValue {
	out := map[string]dbtypes.AttributeValue{}
	for k, v := range it {
		if s, ok := v.(*dbtypes.AttributeValueMemberS); ok {
			v = &dbtypes.AttributeValueMemberS{Value: strings.ReplaceAll(s.Value, model, id)}
		}
		out[k] = v
	}
	shard := fmt.Sprintf("%02d", ledger.Shard(id))
	fs := it["fleet_shard"].(*dbtypes.AttributeValueMemberS).Value
	out["fleet_shard"] = &dbtypes.AttributeValueMemberS{Value: fs[:2] + shard}
	return out
}

// startDynalite starts the local DynamoDB the fleet benchmark uses.
func startDynalite(t testing.TB) (aws.Config, string) {
	tmpl, err := samstacktest.Template()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := dynalite.Start(ctx, filepath.Dir(tmpl), filepath.Join(t.TempDir(), "dynalite.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, tmpl
}

// TestFleetPageCostsTheSameAtAnySize: a console fleet page load and a
// status fleet view (its first page, and the next) make the same number of
// DynamoDB requests over 200 accounts as over 2,000: one query per shard of
// the fleet index (issue 22 §3). On the code before the summaries, the
// page read every account's rows (a query per dataset of each).
func TestFleetPageCostsTheSameAtAnySize(t *testing.T) {
	t.Parallel()
	cfg, tmpl := startDynalite(t)
	small := measureFleetPage(t, fleetBench{cfg: cfg, tmpl: tmpl}, 200, "pagesmall", 0)
	large := measureFleetPage(t, fleetBench{cfg: cfg, tmpl: tmpl}, 2000, "pagelarge", 0)
	for _, c := range []struct {
		what     string
		small, l dynamometer.Counts
	}{{"console page", small.console, large.console}, {"status", small.status, large.status}, {"status next page", small.next, large.next}} {
		t.Logf("%s: %d requests over 200 accounts %v, %d over 2,000 %v", c.what, c.small.Requests, c.small.ByOp, c.l.Requests, c.l.ByOp)
		if c.small.Requests != c.l.Requests || c.l.Requests != ledger.FleetShards {
			t.Errorf("%s: %d requests over 200 accounts, %d over 2,000; want %d each (a query per fleet shard)", c.what, c.small.Requests, c.l.Requests, ledger.FleetShards)
		}
	}
}

// BenchmarkFleetPage is the fleet view's cost over 1,000 and 100,000
// accounts (FLEET_PAGE_SIZES overrides) on the fleet benchmark's local
// DynamoDB, with benchLatency injected before each request.
func BenchmarkFleetPage(b *testing.B) {
	sizes := []int{1000, 100000}
	if v := os.Getenv("FLEET_PAGE_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("FLEET_PAGE_SIZES=%q: %v", v, err)
			}
			sizes = append(sizes, n)
		}
	}
	cfg, tmpl := startDynalite(b)
	var rows []fleetPageCost
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := range b.N {
				rows = append(rows, measureFleetPage(b, fleetBench{cfg: cfg, tmpl: tmpl}, n, fmt.Sprintf("page%d-%d", n, i), benchLatency))
			}
		})
	}
	fmt.Printf("%10s  %-28s  %8s  %6s  %14s  %s\n", "accounts", "read", "requests", "items", "modeled serial", "measured")
	for _, r := range rows {
		for _, c := range []struct {
			what string
			n    dynamometer.Counts
			took time.Duration
		}{{"console fleet page", r.console, r.consoleTook}, {"status fleet view", r.status, 0}, {"status, next page", r.next, 0}} {
			took := "-"
			if c.took > 0 {
				took = c.took.Round(time.Millisecond).String()
			}
			fmt.Printf("%10d  %-28s  %8d  %6d  %14s  %s\n", r.accounts, c.what, c.n.Requests, c.n.Items, (time.Duration(c.n.Requests) * benchLatency).String(), took)
		}
	}
}
