package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/dynamometer"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/outbox"
)

// meteredLedger is newLedger whose sweeper twin (only) counts its
// requests.
func meteredLedger(t *testing.T, clk *clock, salt string) (*ledger.Ledger, *dynamometer.Client) {
	t.Helper()
	return metered(t, newLedger(t, clk, salt))
}

// metered makes l's sweeper twin (only) count its requests.
func metered(t *testing.T, l *ledger.Ledger) (*ledger.Ledger, *dynamometer.Client) {
	t.Helper()
	m := &dynamometer.Client{API: dynamodb.NewFromConfig(sweeperAWS(t))}
	twin, err := ledger.New(m, sweeperLedger(t, l).Config())
	if err != nil {
		t.Fatal(err)
	}
	twins.Store(l, twin)
	return l, m
}

// rawDB is the deployed table's client, for writing what validation would
// refuse.
func rawDB(t *testing.T) (*dynamodb.Client, string) {
	cfg, table := ledgerTable(t)
	return dynamodb.NewFromConfig(cfg), table
}

func setAttr(t *testing.T, key map[string]types.AttributeValue, attr string, v types.AttributeValue) {
	t.Helper()
	db, table := rawDB(t)
	if _, err := db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: key, UpdateExpression: aws.String("SET #a = :v"),
		ExpressionAttributeNames: map[string]string{"#a": attr}, ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
	}); err != nil {
		t.Fatal(err)
	}
}

func accountKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{ledger.AttrPK: &types.AttributeValueMemberS{Value: "ACCOUNTS"}, ledger.AttrSK: &types.AttributeValueMemberS{Value: id}}
}

// idleQueues is the SQS of a deployed sweeper in a test: it records the
// messages sent and reports an empty jobs queue.
type idleQueues struct{ recordingSQS }

func (*idleQueues) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"ApproximateNumberOfMessages": "0",
		"ApproximateNumberOfMessagesNotVisible": "0", "ApproximateNumberOfMessagesDelayed": "0"}}, nil
}

// discardBus is an event bus that takes every event: the deployed
// function's outbox is on whenever a bus is configured.
type discardBus struct{}

func (discardBus) Publish(context.Context, string, any) error { return nil }

// deployedHandler is the function as main wires it (wire), with the
// template's default settings, on l (an isolate: the package's tests share
// the table).
func deployedHandler(t *testing.T, l FunctionLedger, q Queues, clk *clock) Handler {
	t.Helper()
	cfg, err := loadConfig(envvar.From(map[string]string{"LEDGER_TABLE": "t", "JOBS_QUEUE_URL": "https://sqs.example/jobs",
		"SWEEP_QUEUE_URL": "https://sqs.example/sweep"}))
	if err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	return wire(cfg, wiring{Ledger: l, Queues: q, Outbox: &outbox.Outbox{Store: l, Bus: discardBus{}, On: true}, Now: clk.Now,
		Metrics: &metrics.Emitter{W: io.Discard, Stage: "test"}, Log: discard})
}

// idleAt is when a sweep left an idle account (now) asleep until (wake).
type idleAt struct{ wake, now time.Time }

// idleAccounts is n idle accounts: one stored by the ledger (spec) and
// left as a sweep leaves an account with nothing due before wake, and n-1
// copies of its record under other ids (as fleetpage_test.go copies
// summaries). A sweep reads the records only; a copy is one write on moto,
// where an account put is a transaction that moto runs by copying the
// whole table for each of its items.
func idleAccounts(t *testing.T, l *ledger.Ledger, n int, spec accountSpec, at idleAt) isolate {
	t.Helper()
	wake, now := at.wake, at.now
	ctx := context.Background()
	model := storeAccount(t, l, spec)
	db, table := rawDB(t)
	if ok, err := l.Schedule().SetNextWake(ctx, ledger.Woken{ID: model.ID, Seq: 1}, wake, civil.MustParse("2026-03-31"), now); err != nil || !ok {
		// Seen once in a full run, never alone: say what the account
		// record held, for the next one to look at.
		item, gerr := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: accountKey(model.ID), ConsistentRead: aws.Bool(true)})
		t.Fatalf("idle %s: SetNextWake = %v, %v; the account record: %v (%v)", model.ID, ok, err, item, gerr)
	}
	rec, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: accountKey(model.ID), ConsistentRead: aws.Bool(true)})
	if err != nil || len(rec.Item) == 0 {
		t.Fatalf("the model account's record: %v", err)
	}
	accts := []account.Account{model}
	var items []map[string]types.AttributeValue
	for i := range n - 1 {
		id, err := account.NewID(seeded(t, fmt.Sprint("idle/", spec.salt, "/", i)))
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, cloneSummary(rec.Item, model.ID, id)) // fleet_shard W#<its own shard>
		accts = append(accts, account.Account{ID: id})
	}
	batchWrite(t, db, table, items, false)
	for _, a := range accts[1:] {
		if got, err := l.Accounts().GetAccount(ctx, a.ID); err != nil || got.ID != a.ID || !got.Enabled || len(got.Datasets) != len(model.Datasets) {
			t.Fatalf("copied account %s: %+v, %v", a.ID, got, err)
		}
	}
	return only(l, accts...)
}

// TestIdleAccountsCostNothing: the deployed function's DynamoDB requests do
// not grow with idle accounts (L6): 10 or 100 idle accounts, the same
// requests, a few dozen: the sweep's 16 wake shards, 16 stopped shards and
// the stats, and the restatement pass's 16 restate shards. It runs the
// handler as main wires it (sweep, restatement pass, fan-out), so a part
// that lists accounts shows here; the pass of the old code made one query
// per account.
func TestIdleAccountsCostNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l, meter := meteredLedger(t, clk, "l")
	tomorrow := clk.Now().Add(24 * time.Hour)
	idle := func(n int, salt string) isolate {
		return idleAccounts(t, l, n, accountSpec{salt: salt, start: "2026-03-01", tz: "UTC"}, idleAt{wake: tomorrow, now: clk.Now()})
	}
	small, large := idle(10, "small"), idle(100, "large")
	clk.Advance(15 * time.Minute)
	// As the sweeps after their creation left them: summaries refreshed.
	for _, set := range []isolate{small, large} {
		if _, err := refreshSummaries(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	cost := map[int]dynamometer.Counts{}
	for _, set := range []isolate{small, large} {
		q := &idleQueues{}
		h := deployedHandler(t, set, q, clk)
		meter.Reset()
		out, err := h.Invoke(ctx, json.RawMessage(`{"source":"scheduler"}`))
		if err != nil {
			t.Fatal(err)
		}
		sum := out.(Summary)
		if sum.Woken != 0 || sum.Accounts != 0 || sum.Claimed != 0 || len(q.take()) != 0 {
			t.Errorf("%d idle accounts: summary %+v", len(set.ids), sum)
		}
		cost[len(set.ids)] = meter.Counts()
		t.Logf("%3d idle accounts: %d DynamoDB requests %v", len(set.ids), cost[len(set.ids)].Requests, cost[len(set.ids)].ByOp)
	}
	if cost[10].Requests != cost[100].Requests {
		t.Errorf("requests grow with idle accounts: %d for 10, %d for 100", cost[10].Requests, cost[100].Requests)
	}
	if want := 4*ledger.FleetShards + 1 + ledger.OutboxShards; cost[100].Requests != want {
		t.Errorf("%d requests, want %d (wake shards, stopped shards, stats, restate shards, outbox shards, stale summary shards)", cost[100].Requests, want)
	}
}

// TestMalformedAccountDoesNotStallTheSweep: an account record that cannot
// be read is reported, naming it, and the other accounts are swept.
func TestMalformedAccountDoesNotStallTheSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	good := newAccount(t, l, "good", "2026-03-31")
	bad := newAccount(t, l, "bad", "2026-03-31")
	setAttr(t, accountKey(bad.ID), "doc", &types.AttributeValueMemberS{Value: `{"id":`})
	rec := &recordingSQS{}
	sum, err := sweeper(only(l, good, bad), rec, clk, 10, 10).Run(ctx, clk.Now())
	if err == nil || !strings.Contains(err.Error(), bad.ID) || !errors.Is(err, ledger.ErrMalformed) || sum.Errors != 1 {
		t.Errorf("error %v (summary %+v), want one naming %s", err, sum, bad.ID)
	}
	if got := jobsOf(rec.take(), good.ID); strings.Join(got, ",") != "2026-03-31" {
		t.Errorf("good account sent %v", got)
	}
}

// TestMalformedRowDoesNotHideItsGroup: a due row that cannot be read is
// reported, naming its key, and the account's other rows are claimed.
func TestMalformedRowDoesNotHideItsGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	a := newAccount(t, l, "a", "2026-03-29")
	for _, d := range civil.Range(civil.MustParse("2026-03-29"), civil.MustParse("2026-03-31")) {
		if _, err := l.Schedule().Materialize(ctx, a.ID, "events", d, d); err != nil {
			t.Fatal(err)
		}
	}
	setAttr(t, map[string]types.AttributeValue{
		ledger.AttrPK: &types.AttributeValueMemberS{Value: "P#" + a.ID + "#events"},
		ledger.AttrSK: &types.AttributeValueMemberS{Value: "2026-03-29"},
	}, "attempts", &types.AttributeValueMemberS{Value: "many"})
	rec := &recordingSQS{}
	sum, err := sweeper(only(l, a), rec, clk, 10, 10).Run(ctx, clk.Now())
	if err == nil || !strings.Contains(err.Error(), "P#"+a.ID+"#events/2026-03-29") || sum.Errors != 1 {
		t.Errorf("error %v (summary %+v), want one naming the row", err, sum)
	}
	if got := strings.Join(jobsOf(rec.take(), a.ID), ","); got != "2026-03-30,2026-03-31" {
		t.Errorf("sent %s, want the two readable days", got)
	}
}

// TestHostileStartDateIsClampedAndChunked: a record that asks for a
// backfill from year 1 (written around validation) gets at most the
// backfill limit, at most MaterializeRows rows per sweep, and does not hold
// up another account in the same sweeps.
func TestHostileStartDateIsClampedAndChunked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	hostile := newAccount(t, l, "hostile", "2026-03-01")
	other := newAccount(t, l, "other", "2026-03-31")
	hostile.StartDate = civil.MustParse("0001-01-01")
	doc, _ := json.Marshal(hostile)
	setAttr(t, accountKey(hostile.ID), "doc", &types.AttributeValueMemberS{Value: string(doc)})
	rec := &recordingSQS{}
	s := sweeper(only(l, hostile, other), rec, clk, 10, 100)
	s.Config.MaxBackfillDays, s.Config.MaterializeRows = 120, 50
	total := 0
	for sweep := range 3 { // 50 + 50 + 20 rows
		sum, err := s.Run(ctx, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if sum.Materialized > 50+1 || sum.Clamped != 1 {
			t.Errorf("sweep %d: %+v, want at most 50 rows for the hostile account and it clamped", sweep, sum)
		}
		total += sum.Materialized
		if sweep == 0 && strings.Join(jobsOf(rec.take(), other.ID), ",") != "2026-03-31" {
			t.Error("the other account was not served in the first sweep")
		}
		clk.Advance(15 * time.Minute)
	}
	rows, err := l.Partitions().List(ctx, hostile.ID, "events", civil.MustParse("0001-01-01"), civil.MustParse("2026-12-31"))
	if err != nil {
		t.Fatal(err)
	}
	// today 2026-04-01 less 120 days: 2025-12-02 .. 2026-03-31.
	if len(rows) != 120 || rows[0].Day.String() != "2025-12-02" || total != 121 {
		t.Errorf("hostile account has %d rows from %v (total materialized %d), want 120 from 2025-12-02", len(rows), rows[0].Day, total)
	}
	wm, err := l.Schedule().Watermark(ctx, hostile.ID, "events")
	if err != nil || wm.String() != "2026-03-31" {
		t.Errorf("watermark %s %v", wm, err)
	}
}

// TestYesterdayBeforeAnyBackfill: under a budget smaller than the work,
// every live account's newest closed day goes before any backfill, its own
// included (L6).
func TestYesterdayBeforeAnyBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	created := func(a *account.Account) { a.CreatedAt = time.Date(2026, 3, 30, 9, 0, 0, 0, time.UTC) }
	backfill := newAccountWith(t, l, "backfill", "2026-01-01", created)
	live1 := newAccountWith(t, l, "live1", "2026-03-31", created)
	live2 := newAccountWith(t, l, "live2", "2026-03-31", created)
	rec := &recordingSQS{}
	sum, err := sweeper(only(l, backfill, live1, live2), rec, clk, 10, 3).Run(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	jobs := rec.take()
	var got []string
	for _, j := range jobs {
		got = append(got, j.Day+"/"+j.Reason)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != "2026-03-31/scheduled 2026-03-31/scheduled 2026-03-31/scheduled" || sum.Claimed != 3 {
		t.Errorf("a budget of 3 went to %v (summary %+v), want the three accounts' 03-31", got, sum)
	}
	clk.Advance(15 * time.Minute)
	if _, err := sweeper(only(l, backfill, live1, live2), rec, clk, 10, 3).Run(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(jobsOf(rec.take(), backfill.ID), ","); got != "2026-01-01,2026-01-02,2026-01-03" {
		t.Errorf("then the backfill, oldest first: %s", got)
	}
}

func newAccountWith(t *testing.T, l *ledger.Ledger, salt, start string, mut func(*account.Account)) account.Account {
	t.Helper()
	a := newAccount(t, l, salt, start)
	mut(&a)
	if err := l.Accounts().PutAccount(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

// shardSQS records shard messages sent to the sweep queue and passes job
// messages on.
type shardSQS struct {
	*recordingSQS
	url  string
	mu   sync.Mutex
	jobs []ShardJob
}

func (q *shardSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if aws.ToString(in.QueueUrl) != q.url {
		return q.recordingSQS.SendMessageBatch(ctx, in, o...)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		var j ShardJob
		if err := json.Unmarshal([]byte(aws.ToString(e.MessageBody)), &j); err != nil {
			return nil, err
		}
		q.jobs = append(q.jobs, j)
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// TestFanOut: more woken accounts than one invocation takes go out as shard
// messages that split the budget; the workers sweep every account once.
func TestFanOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	var accts []account.Account
	for i := range 6 {
		accts = append(accts, newAccount(t, l, fmt.Sprint(i), "2026-03-31"))
	}
	q := &shardSQS{recordingSQS: &recordingSQS{}, url: "https://sqs.example/sweep"}
	s := sweeper(only(l, accts...), q, clk, 10, 5)
	s.Config.SweepQueueURL, s.Config.FanOutAccounts = q.url, 2
	sum, err := s.Run(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	budget, shards := 0, map[int]bool{}
	for _, j := range q.jobs {
		budget += j.Budget
		for _, sh := range j.Shards {
			if shards[sh] {
				t.Errorf("shard %d in two messages", sh)
			}
			shards[sh] = true
		}
	}
	if sum.FanOut != len(q.jobs) || len(q.jobs) < 2 || budget != 5 || sum.Claimed != 0 || sum.Woken != 6 || !sum.StoppedCounted {
		t.Fatalf("fan-out summary %+v, messages %+v", sum, q.jobs)
	}
	claimed := 0
	for _, j := range q.jobs {
		ws, err := s.RunShards(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		claimed += ws.Claimed
		if ws.Claimed > j.Budget || ws.StoppedCounted {
			t.Errorf("worker %+v: %+v", j, ws)
		}
	}
	if claimed != 5 || len(q.take()) != 5 {
		t.Errorf("workers claimed %d, want the budget of 5", claimed)
	}
}

// TestConcurrentFanOutSweepsShareTheBudget: two scheduled sweeps of a
// fanned-out fleet that run at once (a tick delivered twice) each split a
// budget of 5 among their workers; together the workers of both claim 5,
// not 10 (L6). On the old code each sweep's workers claimed its whole
// budget.
func TestConcurrentFanOutSweepsShareTheBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	var accts []account.Account
	for i := range 6 {
		accts = append(accts, newAccount(t, l, fmt.Sprint(i), "2026-03-29")) // 3 days each: 18 due rows
	}
	q := &shardSQS{recordingSQS: &recordingSQS{}, url: "https://sqs.example/sweep"}
	scope := fmt.Sprint(t.Name(), "/", runs.Add(1)) // the package's tests share one table
	mk := func() *Sweeper {
		s := sweeper(only(l, accts...), q, clk, 10, 5)
		s.Config.SweepQueueURL, s.Config.FanOutAccounts = q.url, 2
		s.Config.BudgetWindow, s.Config.BudgetScope = time.Minute, scope
		return s
	}
	sweeps := []*Sweeper{mk(), mk()}
	var wg sync.WaitGroup
	errs := make([]error, len(sweeps))
	for i, s := range sweeps {
		wg.Go(func() { _, errs[i] = s.Run(ctx, clk.Now()) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	budget := 0
	for _, j := range q.jobs {
		budget += j.Budget
	}
	if budget != 10 {
		t.Fatalf("the two sweeps' messages carry a budget of %d, want 5 each: %+v", budget, q.jobs)
	}
	// Their workers run interleaved, each sweep's on its own invocation.
	claimed := 0
	for i, j := range q.jobs {
		ws, err := sweeps[i%2].RunShards(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		claimed += ws.Claimed
	}
	if sent := len(q.take()); claimed != 5 || sent != 5 {
		t.Errorf("the workers of two concurrent sweeps claimed %d (sent %d), want the budget of 5 together", claimed, sent)
	}
	// The next tick, past the window, has a budget of its own.
	clk.Advance(5 * time.Minute)
	next := mk()
	seen := len(q.jobs)
	if sum, err := next.Run(ctx, clk.Now()); err != nil || sum.FanOut == 0 {
		t.Fatalf("next sweep %+v %v", sum, err)
	}
	claimed = 0
	for _, j := range q.jobs[seen:] {
		ws, err := next.RunShards(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		claimed += ws.Claimed
	}
	if claimed != 5 {
		t.Errorf("the next tick's workers claimed %d, want its own budget of 5", claimed)
	}
}
