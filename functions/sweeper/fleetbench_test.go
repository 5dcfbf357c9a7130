package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/dynalite"
	"github.com/daybook-dev/daybook/shared/devkit/dynamometer"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/outbox"
)

// benchLatency is the DynamoDB latency the fleet benchmark injects and
// models: a sweep's time is its requests at this latency.
const benchLatency = 5 * time.Millisecond

// countingSQS accepts every message: it counts job batches and keeps the
// shard messages sent to the sweep queue.
type countingSQS struct {
	mu      sync.Mutex
	batches int
	jobs    int
	checks  int // restate_check messages (of jobs)
	shards  []ShardJob
}

// GetQueueAttributes reports an empty jobs queue to the claim budget.
func (*countingSQS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"ApproximateNumberOfMessages": "0",
		"ApproximateNumberOfMessagesNotVisible": "0", "ApproximateNumberOfMessagesDelayed": "0"}}, nil
}

const benchSweepQueue = "https://sqs.bench/sweep"

func (q *countingSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		if aws.ToString(in.QueueUrl) == benchSweepQueue {
			var j ShardJob
			if err := json.Unmarshal([]byte(aws.ToString(e.MessageBody)), &j); err != nil {
				return nil, err
			}
			q.shards = append(q.shards, j)
		} else {
			q.jobs++
			if strings.Contains(aws.ToString(e.MessageBody), `"kind":"restate_check"`) {
				q.checks++
			}
		}
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id})
	}
	q.batches++
	return out, nil
}

// fleetRow is one line of the benchmark's table.
type fleetRow struct {
	accounts    int
	scenario    string
	invocations int
	counts      dynamometer.Counts
	longest     time.Duration
	measured    time.Duration
	sum         Summary
	checks      int // restatement checks queued
}

// BenchmarkFleet is the fleet benchmark (L6): DynamoDB requests and items
// of one sweep over 100, 1,000 and 10,000 accounts of three datasets each
// (FLEET_BENCH_SIZES overrides), on dynalite with the table created from
// template.yaml, in three states: idle (nothing due, no day closed); one
// 365-day backfill added among the idle accounts; and the next day closed
// for every account (three rows each to materialize and claim; the budget is
// set high enough to claim them all). Each sweep runs with benchLatency
// injected before every request; "modeled" is its requests at benchLatency
// one after another, divided by the sweeper's account concurrency for the
// concurrent bound. A sweep that fans out runs its shard messages one after
// another here; "longest" is the longest invocation, what a parallel
// fan-out takes.
func BenchmarkFleet(b *testing.B) {
	sizes := []int{100, 1000, 10000}
	if v := os.Getenv("FLEET_BENCH_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("FLEET_BENCH_SIZES=%q: %v", v, err)
			}
			sizes = append(sizes, n)
		}
	}
	// FLEET_BENCH_SCENARIOS=idle,restate,backfill,newday (default all)
	// runs some of the sweeps: backfill and newday follow each other.
	var scenarios map[string]bool
	if v := os.Getenv("FLEET_BENCH_SCENARIOS"); v != "" {
		scenarios = map[string]bool{}
		for _, f := range strings.Split(v, ",") {
			switch f = strings.TrimSpace(f); f {
			case "idle", "restate", "backfill", "newday":
				scenarios[f] = true
			default:
				b.Fatalf("FLEET_BENCH_SCENARIOS=%q: %q is not one of idle, restate, backfill, newday", v, f)
			}
		}
	}
	tmpl, err := samstacktest.Template()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	srv, err := dynalite.Start(ctx, filepath.Dir(tmpl), filepath.Join(b.TempDir(), "dynalite.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Stop() })
	cfg, err := srv.Config(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var rows []fleetRow
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := range b.N {
				rows = append(rows, fleetRun(b, fleetBench{cfg: cfg, tmpl: tmpl, scenarios: scenarios}, n, fmt.Sprintf("bench%d-%d", n, i))...)
			}
		})
	}
	printFleet(os.Stdout, rows)
}

// fleetBench is what every fleet run shares: the local DynamoDB, the
// template its tables come from and the scenarios to run (nil: all).
type fleetBench struct {
	cfg       aws.Config
	tmpl      string
	scenarios map[string]bool
}

func fleetRun(b *testing.B, fb fleetBench, n int, stage string) []fleetRow {
	cfg, tmpl, scenarios := fb.cfg, fb.tmpl, fb.scenarios
	ctx := context.Background()
	client := dynamodb.NewFromConfig(cfg)
	names, err := samstacktest.CreateTables(ctx, client, tmpl, cfg.Region, map[string]string{"Stage": stage})
	if err != nil {
		b.Fatal(err)
	}
	meter := &dynamometer.Client{API: unatomic{client}, ReadBack: true}
	clk := at("2026-04-01T12:00:00Z")
	led, err := ledger.New(meter, ledger.Config{Catalog: datasettest.Example(b), Table: names["LedgerTable"], Lease: 20 * time.Minute, Now: clk.Now,
		Rand: rand.NewChaCha8([32]byte{byte(n)})})
	if err != nil {
		b.Fatal(err)
	}
	q := &countingSQS{}
	// The function as main wires it (sweep, claim budget, fan-out,
	// restatement pass) with the template's defaults, but for the budget:
	// raised (per-sweep cap and exporter concurrency 40,000) so that a new
	// day's rows are all claimed.
	fcfg, err := loadConfig(envvar.From(map[string]string{"LEDGER_TABLE": names["LedgerTable"], "JOBS_QUEUE_URL": "https://sqs.bench/jobs",
		"SWEEP_QUEUE_URL": benchSweepQueue, "PER_ACCOUNT_CAP": "10", "PER_SWEEP_CAP": "40000", "EXPORTER_CONCURRENCY": "40000", "SETTLE_DELAY": "2h"}))
	if err != nil {
		b.Fatal(err)
	}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := wire(fcfg, wiring{Ledger: ledgerOf(led), Queues: q, Outbox: &outbox.Outbox{Store: led.Outbox(), Bus: discardBus{}, On: true}, Now: clk.Now,
		Metrics: &metrics.Emitter{W: io.Discard, Stage: stage}, Log: discard})
	datasets := []string{"daily_stats", "events", "profiles"}
	// The idle fleet: every account materialized through 03-31, its next
	// wake 04-01's close (04-02 02:00 with the 2 h settle delay).
	created := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	idleWake := time.Date(2026, 4, 2, 2, 0, 0, 0, time.UTC)
	setupStart := time.Now()
	ids := make([]string, n)
	parallel(b, n, 32, func(i int) error {
		id, err := account.NewID(rand.NewChaCha8([32]byte{1, byte(i), byte(i >> 8), byte(i >> 16)}))
		if err != nil {
			return err
		}
		ids[i] = id
		a := account.Account{ID: id, Name: fmt.Sprint("bench ", i), Enabled: true, StartDate: civil.MustParse("2026-03-01"),
			Datasets: datasets, Destination: account.Destination{Bucket: "daybook-exports-bench"}, CreatedAt: created}
		if err := led.Accounts().PutAccount(ctx, a); err != nil {
			return err
		}
		_, err = led.Schedule().SetNextWake(ctx, ledger.Woken{ID: id, Seq: 1}, idleWake, civil.MustParse("2026-03-31"), clk.Now())
		return err
	})
	// The once-a-day reconcile of the fleet index (one query page per
	// megabyte of account records) is not part of the sweeps measured.
	if ok, err := led.Schedule().ClaimReconcile(ctx, 24*time.Hour); err != nil || !ok {
		b.Fatalf("claim reconcile: %v %v", ok, err)
	}
	meter.Reset()
	if _, _, err := led.Schedule().ReconcileWake(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d accounts set up in %s; the daily reconcile reads them in %d requests", n, time.Since(setupStart).Round(time.Millisecond), meter.Counts().Requests)

	// A settled fleet: every account put marked its fleet summary stale,
	// and the sweeps since refreshed them (at most 400 a sweep), so no
	// scenario pays for the setup's marks.
	// Their marks are settled (ledger.StaleSettle) by then: a refresh
	// removes them.
	clk.Set(time.Date(2026, 4, 1, 12, 5, 0, 0, time.UTC))
	for i := 0; ; i++ {
		n, err := refreshSummaries(ctx, ledgerOf(led))
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			break
		}
		if i > n/(refreshPerShard*ledger.FleetShards)+len(ids) {
			b.Fatalf("setup: %d fleet summaries still marked stale after %d refreshes", n, i+1)
		}
	}

	var rows []fleetRow
	sweep := func(scenario string) {
		meter.Reset()
		meter.Latency = benchLatency
		defer func() { meter.Latency = 0 }()
		q.shards, q.checks = nil, 0
		r := fleetRow{accounts: n, scenario: scenario}
		start := time.Now()
		out, err := h.Invoke(ctx, json.RawMessage(`{"source":"scheduler"}`))
		if err != nil {
			b.Fatalf("%s: %v", scenario, err)
		}
		r.longest = time.Since(start)
		r.invocations = 1
		r.sum = out.(Summary)
		for _, j := range q.shards {
			ws := time.Now()
			wsum, err := h.Shards.RunShards(ctx, j)
			if err != nil {
				b.Fatalf("%s: shards %v: %v", scenario, j.Shards, err)
			}
			r.longest = max(r.longest, time.Since(ws))
			r.invocations++
			r.sum.Accounts += wsum.Accounts
			r.sum.Materialized += wsum.Materialized
			r.sum.Claimed += wsum.Claimed
		}
		r.measured = time.Since(start)
		r.counts = meter.Counts()
		r.checks = q.checks
		rows = append(rows, r)
	}
	runs := func(scenario string) bool { return scenarios == nil || scenarios[scenario] }

	clk.Set(time.Date(2026, 4, 1, 12, 15, 0, 0, time.UTC))
	if runs("idle") {
		sweep("idle")
	}
	if runs("restate") {
		// Seven closed days in the lookback window for every account, each
		// completed with its restatement check due; taken out after the
		// sweep, so the scenarios after it are as without it.
		days := civil.Range(civil.MustParse("2026-03-25"), civil.MustParse("2026-03-31"))
		items := restateItems(ids, days, "events", clk.Now().Add(-time.Minute))
		batchWrite(b, client, names["LedgerTable"], items, false)
		sweep(fmt.Sprintf("%d restatement checks due per account", len(days)))
		if rows[len(rows)-1].checks == 0 {
			b.Fatal("the restatement pass queued no check: the seeded rows are not what the ledger writes")
		}
		batchWrite(b, client, names["LedgerTable"], items, true)
	}
	if !runs("backfill") && !runs("newday") {
		return rows
	}

	back := account.Account{Name: "backfill", Enabled: true, StartDate: civil.MustParse("2025-04-01"), Datasets: datasets,
		Destination: account.Destination{Bucket: "daybook-exports-bench"}}
	if back.ID, err = account.NewID(rand.NewChaCha8([32]byte{2, byte(n)})); err != nil {
		b.Fatal(err)
	}
	if err := led.Accounts().PutAccount(ctx, back); err != nil {
		b.Fatal(err)
	}
	clk.Set(time.Date(2026, 4, 1, 12, 30, 0, 0, time.UTC))
	sweep("365-day backfill added")

	if runs("newday") {
		clk.Set(time.Date(2026, 4, 2, 2, 5, 0, 0, time.UTC))
		sweep("a new day for all")
	}
	return rows
}

// restateItems are completed partition rows of dataset for each account and
// day, with a fingerprint and a restatement check due at checkAt, as
// Complete stores them (the restate index sharded like fleet: R#<nn>).
func restateItems(ids []string, days []civil.Date, dataset string, checkAt time.Time) []map[string]dbtypes.AttributeValue {
	s := func(v string) dbtypes.AttributeValue { return &dbtypes.AttributeValueMemberS{Value: v} }
	at := checkAt.UTC().Format(time.RFC3339)
	var out []map[string]dbtypes.AttributeValue
	for _, id := range ids {
		for _, d := range days {
			out = append(out, map[string]dbtypes.AttributeValue{
				"pk": s("P#" + id + "#" + dataset), "sk": s(d.String()), "account_id": s(id), "dataset": s(dataset), "day": s(d.String()),
				"state": s("completed"), "generation": &dbtypes.AttributeValueMemberN{Value: "1"}, "rows": &dbtypes.AttributeValueMemberN{Value: "1"},
				"fingerprint": s("fp"), "fingerprint_at": s(at), "completed_at": s(at), "updated_at": s(at),
				ledger.AttrRestateAccount: s(fmt.Sprintf("R#%02d", ledger.Shard(id))), ledger.AttrRestateKey: s(at + "#" + d.String() + "#" + dataset),
			})
		}
	}
	return out
}

// batchWrite puts (or deletes) items 25 to a request, 8 requests at once.
func batchWrite(b testing.TB, client *dynamodb.Client, table string, items []map[string]dbtypes.AttributeValue, del bool) {
	ctx := context.Background()
	n := (len(items) + 24) / 25
	parallel(b, n, 8, func(i int) error {
		var reqs []dbtypes.WriteRequest
		for _, it := range items[i*25 : min(i*25+25, len(items))] {
			if del {
				reqs = append(reqs, dbtypes.WriteRequest{DeleteRequest: &dbtypes.DeleteRequest{Key: map[string]dbtypes.AttributeValue{"pk": it["pk"], "sk": it["sk"]}}})
			} else {
				reqs = append(reqs, dbtypes.WriteRequest{PutRequest: &dbtypes.PutRequest{Item: it}})
			}
		}
		for len(reqs) > 0 {
			out, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]dbtypes.WriteRequest{table: reqs}})
			if err != nil {
				return err
			}
			reqs = out.UnprocessedItems[table]
		}
		return nil
	})
}

// parallel runs fn(0..n-1), conc at a time, failing b on the first error.
func parallel(b testing.TB, n, conc int, fn func(int) error) {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	sem := make(chan struct{}, conc)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				once.Do(func() { first = err })
			}
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

func printFleet(w io.Writer, rows []fleetRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "accounts\tscenario\tinvocations\tDynamoDB requests\titems\tmaterialized\tclaimed\tchecks queued\tmodeled serial\tmodeled /32\tmeasured @%s\tlongest invocation\t\n", benchLatency)
	for _, r := range rows {
		modeled := time.Duration(r.counts.Requests) * benchLatency
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n", r.accounts, r.scenario, r.invocations, r.counts.Requests, r.counts.Items,
			r.sum.Materialized, r.sum.Claimed, r.checks, modeled.Round(time.Millisecond), (modeled / 32).Round(time.Millisecond),
			r.measured.Round(time.Millisecond), r.longest.Round(time.Millisecond))
	}
	tw.Flush()
	fmt.Fprintln(w, "requests by operation:")
	for _, r := range rows {
		fmt.Fprintf(w, "  %6d %-24s %v\n", r.accounts, r.scenario, r.counts.ByOp)
	}
}

// unatomic runs a transaction's writes one by one: dynalite has no
// TransactWriteItems, which only account writes (the benchmark's setup)
// use. Not atomic, and a condition check alone is not evaluated: enough for
// a setup whose writes do not race.
type unatomic struct{ *dynamodb.Client }

func (u unatomic) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		var err error
		switch {
		case it.Put != nil:
			p := it.Put
			_, err = u.PutItem(ctx, &dynamodb.PutItemInput{TableName: p.TableName, Item: p.Item, ConditionExpression: p.ConditionExpression,
				ExpressionAttributeNames: p.ExpressionAttributeNames, ExpressionAttributeValues: p.ExpressionAttributeValues}, opts...)
		case it.Update != nil:
			p := it.Update
			_, err = u.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: p.TableName, Key: p.Key, UpdateExpression: p.UpdateExpression,
				ConditionExpression: p.ConditionExpression, ExpressionAttributeNames: p.ExpressionAttributeNames, ExpressionAttributeValues: p.ExpressionAttributeValues}, opts...)
		case it.Delete != nil:
			p := it.Delete
			_, err = u.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: p.TableName, Key: p.Key, ConditionExpression: p.ConditionExpression,
				ExpressionAttributeNames: p.ExpressionAttributeNames, ExpressionAttributeValues: p.ExpressionAttributeValues}, opts...)
		}
		if err != nil {
			return nil, err
		}
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}
