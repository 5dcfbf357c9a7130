package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/ledgertest"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

var (
	srv  *motoserver.Server
	runs atomic.Int64
)

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

// stackStage is the stage of the stack the package's tests deploy.
const stackStage = "sweeptest"

var (
	serialOnce sync.Once
	serial     *ledgertest.SerialProxy
	serialErr  error
)

// deployed is the real template.yaml deployed into this package's moto,
// and a configuration that reaches it through one proxy that serializes
// the writes to each item (moto does not; ledgertest.SerialProxy): the
// test's clients and the sweeper's (through its policy check) alike.
func deployed(t *testing.T) (aws.Config, map[string]string) {
	t.Helper()
	cfg, out := samstacktest.Stack(t, srv, stackStage)
	serialOnce.Do(func() {
		serial = &ledgertest.SerialProxy{Target: srv.URL, KeyAttrs: []string{ledger.AttrPK, ledger.AttrSK}}
		serialErr = serial.Start()
	})
	if serialErr != nil {
		t.Fatal(serialErr)
	}
	cfg = cfg.Copy()
	cfg.BaseEndpoint = aws.String(serial.URL())
	return cfg, out
}

// sweeperAWS is the sweeper's AWS configuration in t: every call its
// clients make is checked against the sweeper's policy in template.yaml
// (the test's own table and queues stand for the stack's).
func sweeperAWS(t *testing.T) aws.Config {
	t.Helper()
	cfg, _ := deployed(t)
	return iamcheck.Config(t, iamcheck.ForStage(t, stackStage, nil), "SweeperFunction", cfg, iamcheck.Names{Own: samstacktest.Like})
}

// twins maps a test's ledger to the sweeper's: the same table and
// settings on the sweeper's (checked) client. A test sets its world up
// with its own ledger, as an operator and the exporter do, and runs the
// sweeper on the twin (only).
var twins sync.Map // *ledger.Ledger -> *ledger.Ledger

func sweeperLedger(t *testing.T, l *ledger.Ledger) *ledger.Ledger {
	t.Helper()
	tw, ok := twins.Load(l)
	if !ok {
		t.Fatal("a ledger not made by newLedger")
	}
	return tw.(*ledger.Ledger)
}

// ledgerTable is the ledger table of t's top-level test (created for it
// like the deployed stack's, on the package's moto server): each test reads and
// writes its own items only, so none pays for another's (moto reads the
// whole table for an index query and copies it for each item of a
// transaction).
func ledgerTable(t *testing.T) (aws.Config, string) {
	cfg, out := deployed(t)
	return cfg, samstacktest.OwnTable(t, cfg, out["LedgerTableName"])
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)         { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func at(s string) *clock {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &clock{t: t}
}

func seeded(t *testing.T, salt string) *rand.ChaCha8 {
	return rand.NewChaCha8(sha256.Sum256([]byte(t.Name() + "/" + salt)))
}

const lease = 20 * time.Minute

func newLedger(t *testing.T, clk *clock, salt string) *ledger.Ledger {
	t.Helper()
	return newCatalogLedger(t, clk, salt, datasettest.Example(t))
}

// newCatalogLedger is newLedger of a deployment whose catalog is cat.
func newCatalogLedger(t *testing.T, clk *clock, salt string, cat *dataset.Set) *ledger.Ledger {
	t.Helper()
	cfg, table := ledgerTable(t)
	lc := ledger.Config{Catalog: cat,
		Table: table, Lease: lease, MaxAttempts: 3,
		BackoffBase: time.Minute, BackoffCap: time.Hour, Now: clk.Now, Rand: seeded(t, salt),
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), lc)
	if err != nil {
		t.Fatal(err)
	}
	lc.Rand = seeded(t, salt+"/sweeper")
	twin, err := ledger.New(dynamodb.NewFromConfig(sweeperAWS(t)), lc)
	if err != nil {
		t.Fatal(err)
	}
	twins.Store(l, twin)
	t.Cleanup(func() { twins.Delete(l) })
	return l
}

// newAccount stores an enabled account in UTC, with the deployment's settle
// delay and the events dataset, and a random id.
func newAccount(t *testing.T, l *ledger.Ledger, salt string, start string) account.Account {
	t.Helper()
	return storeAccount(t, l, accountSpec{salt: salt, start: start, tz: "UTC"})
}

// accountSpec is an account storeAccount stores: salt seeds its id; settle
// nil is the deployment's settle delay; no datasets is events.
type accountSpec struct {
	salt, start, tz string
	settle          *time.Duration
	datasets        []string
}

// storeAccount stores an enabled account with a random id.
func storeAccount(t *testing.T, l *ledger.Ledger, spec accountSpec) account.Account {
	t.Helper()
	// The run counter keeps ids unique under -count=N on one server.
	id, err := account.NewID(seeded(t, fmt.Sprint("id/", spec.salt, "/", runs.Add(1))))
	if err != nil {
		t.Fatal(err)
	}
	datasets := spec.datasets
	if len(datasets) == 0 {
		datasets = []string{"events"}
	}
	a := account.Account{ID: id, Name: spec.salt, Enabled: true, StartDate: civil.MustParse(spec.start), TimeZone: spec.tz,
		Datasets: datasets, Destination: account.Destination{Bucket: "daybook-exports-test"}}
	if spec.settle != nil {
		d := account.Duration(*spec.settle)
		a.SettleDelay = &d
	}
	if err := l.Accounts().PutAccount(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

// recordingSQS records jobs; entries whose day is in failDays fail.
type recordingSQS struct {
	mu       sync.Mutex
	jobs     []Job
	failDays map[string]bool
}

func (r *recordingSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(in.Entries) > 10 {
		return nil, fmt.Errorf("batch of %d", len(in.Entries))
	}
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		var j Job
		if err := json.Unmarshal([]byte(aws.ToString(e.MessageBody)), &j); err != nil {
			return nil, err
		}
		if r.failDays[j.Day] {
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("injected")})
			continue
		}
		r.jobs = append(r.jobs, j)
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (r *recordingSQS) take() []Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	j := r.jobs
	r.jobs = nil
	return j
}

func jobsOf(jobs []Job, acct string) []string {
	var out []string
	for _, j := range jobs {
		if j.AccountID == acct {
			out = append(out, j.Day)
		}
	}
	return out
}

// isolate keeps only the test's accounts visible to a sweep (woken
// accounts, stopped partitions), since the package's tests share one
// deployed table; it never reconciles the shared table.
type isolate struct {
	functionLedger
	ids map[string]bool
}

func (i isolate) WokenAccounts(ctx context.Context, shard int, now time.Time, limit int) ([]ledger.Woken, ledger.ReadStats, error) {
	all, st, err := i.functionLedger.WokenAccounts(ctx, shard, now, 0)
	var out []ledger.Woken
	for _, w := range all {
		if i.ids[w.ID] && (limit <= 0 || len(out) < limit) {
			out = append(out, w)
		}
	}
	return out, st, err
}

func (i isolate) CountWoken(ctx context.Context, shard int, now time.Time) (int, ledger.ReadStats, error) {
	ws, st, err := i.WokenAccounts(ctx, shard, now, 0)
	return len(ws), st, err
}

func (i isolate) StoppedByAccount(ctx context.Context, shard int) (map[string]int, ledger.ReadStats, error) {
	all, st, err := i.functionLedger.StoppedByAccount(ctx, shard)
	out := map[string]int{}
	for acct, n := range all {
		if i.ids[acct] {
			out[acct] = n
		}
	}
	return out, st, err
}

func (i isolate) ClaimReconcile(context.Context, time.Duration) (bool, error) { return false, nil }

// StaleSummaries keeps the marks of the test's accounts, at most limit.
func (i isolate) StaleSummaries(ctx context.Context, shard, limit int) ([]ledger.StaleMark, ledger.ReadStats, error) {
	all, st, err := i.functionLedger.StaleSummaries(ctx, shard, 1<<16)
	var out []ledger.StaleMark
	for _, m := range all {
		if i.ids[m.Account] && len(out) < limit {
			out = append(out, m)
		}
	}
	return out, st, err
}

// RestateDue keeps the test's accounts' due checks of the shard, at most
// limit of them.
func (i isolate) RestateDue(ctx context.Context, shard, limit int) ([]ledger.Row, ledger.ReadStats, error) {
	all, st, err := i.functionLedger.RestateDue(ctx, shard, 1<<16)
	var out []ledger.Row
	for _, r := range all {
		if i.ids[r.AccountID] && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, st, err
}

// raceStart holds a sweep's first claim until every sweep got there.
type raceStart struct {
	isolate
	barrier *sync.WaitGroup
	once    sync.Once
}

func (r *raceStart) Claim(ctx context.Context, key partition.Key, reason partition.Reason) (ledger.Claim, error) {
	r.once.Do(func() { r.barrier.Done(); r.barrier.Wait() })
	return r.isolate.Claim(ctx, key, reason)
}

// only is the sweeper's view of l (its twin, on the sweeper's checked
// client) limited to accts.
func only(l *ledger.Ledger, accts ...account.Account) isolate {
	ids := map[string]bool{}
	for _, a := range accts {
		ids[a.ID] = true
	}
	tw, ok := twins.Load(l)
	if !ok {
		panic("only: a ledger not made by newLedger")
	}
	return isolate{ledgerOf(tw.(*ledger.Ledger)), ids}
}

// sweeper is a sweeper on l; its catalog is l's (the example without one).
func sweeper(l LedgerAPI, q SQSAPI, clk *clock, perAccount, perSweep int) *Sweeper {
	cat, _ := dataset.Example()
	if c, ok := l.(interface{ Config() ledger.Config }); ok {
		cat = c.Config().Catalog
	}
	return &Sweeper{Catalog: cat, Ledger: l, SQS: q, Config: SweepConfig{
		QueueURL: "https://sqs.example/jobs", PerAccountCap: perAccount, PerSweepCap: perSweep,
		DefaultSettleDelay: 0, Now: clk.Now,
	}}
}

func TestTwoConcurrentSweepsClaimEachRowOnce(t *testing.T) {
	ctx := context.Background()
	cfg, out := deployed(t)
	clk := at("2026-03-01T12:00:00Z")
	l1, l2 := newLedger(t, clk, "one"), newLedger(t, clk, "two")
	// Three accounts, 20 closed days each (2026-02-09 .. 2026-02-28): 60 due rows.
	var accts []account.Account
	for i := range 3 {
		accts = append(accts, newAccount(t, l1, fmt.Sprint(i), "2026-02-09"))
	}
	q := sqs.NewFromConfig(sweeperAWS(t))
	// Both sweeps reach their claims before either claims anything, so the
	// claims race row by row.
	var barrier sync.WaitGroup
	barrier.Add(2)
	mk := func(l *ledger.Ledger) *Sweeper {
		s := sweeper(&raceStart{isolate: only(l, accts...), barrier: &barrier}, q, clk, 100, 1000)
		s.Config.QueueURL = out["JobsQueueUrl"]
		return s
	}
	s1, s2 := mk(l1), mk(l2)
	var sums [2]Summary
	var errs [2]error
	var wg sync.WaitGroup
	for i, s := range []*Sweeper{s1, s2} {
		wg.Go(func() { sums[i], errs[i] = s.Run(ctx, clk.Now()) })
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil {
			t.Fatalf("sweep %d: %v", i, errs[i])
		}
	}
	t.Logf("sweep summaries: %+v / %+v", sums[0], sums[1])
	if m := sums[0].Materialized + sums[1].Materialized; m != 60 {
		t.Errorf("materialized %d rows, want 60 (each day once)", m)
	}
	claimed := sums[0].Claimed + sums[1].Claimed
	if claimed != 60 || sums[0].Enqueued+sums[1].Enqueued != claimed {
		t.Errorf("claimed %d, enqueued %d, want 60 each", claimed, sums[0].Enqueued+sums[1].Enqueued)
	}

	// Drain the queue (as the exporters' event source): every claimed row
	// arrives once, with the live token.
	q = sqs.NewFromConfig(cfg)
	ours := map[string]bool{}
	for _, a := range accts {
		ours[a.ID] = true
	}
	seen := map[string]Job{}
	msgs := 0
	for empty := 0; empty < 2; {
		res, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(out["JobsQueueUrl"]), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range res.Messages {
			var j Job
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &j); err != nil {
				t.Fatalf("message %q: %v", aws.ToString(m.Body), err)
			}
			if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(out["JobsQueueUrl"]), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			if !ours[j.AccountID] {
				continue
			}
			msgs++
			k := j.AccountID + "/" + j.Dataset + "/" + j.Day
			if prev, dup := seen[k]; dup {
				t.Errorf("%s enqueued twice: %+v and %+v", k, prev, j)
			}
			seen[k] = j
		}
	}
	if msgs != claimed || len(seen) != 60 {
		t.Errorf("received %d messages for %d distinct rows, claimed %d", msgs, len(seen), claimed)
	}
	for k, j := range seen {
		if j.Kind != JobKind || j.Attempt != 1 || j.Generation != 1 || (j.Reason != "backfill" && j.Reason != "scheduled") {
			t.Errorf("%s: job %+v", k, j)
		}
		r, err := l1.Partitions().Get(ctx, partition.Key{AccountID: j.AccountID, Dataset: j.Dataset, Day: civil.MustParse(j.Day)})
		if err != nil || r.State != ledger.StateRunning || r.ClaimToken != j.ClaimToken {
			t.Errorf("%s: row %+v (%v) does not hold the message's token %s", k, r, err, j.ClaimToken)
		}
	}
}

func TestNeverToday(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	two := 2 * time.Hour
	zero := time.Duration(0)
	cases := []struct {
		tz     string
		now    string // local wall time
		settle *time.Duration
		want   string // last materialized day
	}{
		{"America/Sao_Paulo", "2026-03-10T23:59:00", &zero, "2026-03-09"},
		{"America/Sao_Paulo", "2026-03-11T00:01:00", &zero, "2026-03-10"},
		{"America/Sao_Paulo", "2026-03-11T00:01:00", &two, "2026-03-09"},
		{"America/Sao_Paulo", "2026-03-11T02:00:00", &two, "2026-03-10"},
		{"Asia/Kolkata", "2026-03-10T23:59:00", &zero, "2026-03-09"},
		{"Asia/Kolkata", "2026-03-11T00:01:00", &zero, "2026-03-10"},
		{"Asia/Kolkata", "2026-03-11T00:01:00", &two, "2026-03-09"},
		{"Asia/Kolkata", "2026-03-11T01:59:59", nil, "2026-03-09"}, // default settle delay 2h
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%s %s settle %v", tc.tz, tc.now, tc.settle), func(t *testing.T) {
			loc, err := time.LoadLocation(tc.tz)
			if err != nil {
				t.Fatal(err)
			}
			local, err := time.ParseInLocation("2006-01-02T15:04:05", tc.now, loc)
			if err != nil {
				t.Fatal(err)
			}
			clk := &clock{t: local.UTC()}
			l := newLedger(t, clk, "l")
			a := storeAccount(t, l, accountSpec{salt: fmt.Sprint("never-today-", i), start: "2026-03-05", tz: tc.tz, settle: tc.settle})
			rec := &recordingSQS{}
			s := sweeper(only(l, a), rec, clk, 50, 50)
			s.Config.DefaultSettleDelay = 2 * time.Hour
			sum, err := s.Run(ctx, clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			rows, err := l.Partitions().List(ctx, a.ID, "events", civil.MustParse("2026-01-01"), civil.MustParse("2026-12-31"))
			if err != nil || len(rows) == 0 {
				t.Fatalf("rows %v %v", rows, err)
			}
			if last := rows[len(rows)-1].Day.String(); last != tc.want {
				t.Errorf("last materialized day %s, want %s (today there is %s)", last, tc.want, civil.Of(local))
			}
			sent := jobsOf(rec.take(), a.ID)
			if len(sent) != len(rows) || sum.Enqueued != len(rows) || sent[len(sent)-1] > tc.want {
				t.Errorf("sent %v for rows through %s (summary %+v)", sent, tc.want, sum)
			}
		})
	}
}

func TestFairnessAndNoHole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	a := newAccount(t, l, "a", "2026-01-01") // 90 closed days: 01-01 .. 03-31
	b := newAccount(t, l, "b", "2026-03-31") // one closed day
	rec := &recordingSQS{}
	s := sweeper(only(l, a, b), rec, clk, 10, 200)
	sum, err := s.Run(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	jobs := rec.take()
	if got := jobsOf(jobs, b.ID); strings.Join(got, ",") != "2026-03-31" {
		t.Errorf("B got %v, want its one day", got)
	}
	want := strings.Join(dayStrings(civil.Range(civil.MustParse("2026-01-01"), civil.MustParse("2026-01-10"))), ",")
	if got := strings.Join(jobsOf(jobs, a.ID), ","); got != want {
		t.Errorf("A's first sweep sent %s, want its 10 oldest days %s", got, want)
	}
	if sum.Materialized != 91 || sum.Claimed != 11 || sum.CappedAccounts != 1 {
		t.Errorf("summary %+v", sum)
	}

	clk.Advance(15 * time.Minute) // next sweep; nothing has completed yet
	if _, err := s.Run(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	jobs = rec.take()
	want = strings.Join(dayStrings(civil.Range(civil.MustParse("2026-01-11"), civil.MustParse("2026-01-20"))), ",")
	if got := strings.Join(jobsOf(jobs, a.ID), ","); got != want {
		t.Errorf("A's second sweep sent %s, want %s", got, want)
	}
	if got := jobsOf(jobs, b.ID); len(got) != 0 {
		t.Errorf("B's running day was sent again: %v", got)
	}
}

func TestPerSweepCapIsRoundRobin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	var accts []account.Account
	for i := range 3 {
		accts = append(accts, newAccount(t, l, fmt.Sprint(i), "2026-03-22")) // 10 days each
	}
	rec := &recordingSQS{}
	sum, err := sweeper(only(l, accts...), rec, clk, 10, 7).Run(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	jobs := rec.take()
	counts := []int{}
	for _, a := range accts {
		counts = append(counts, len(jobsOf(jobs, a.ID)))
		if d := jobsOf(jobs, a.ID); len(d) > 0 && d[0] != "2026-03-22" {
			t.Errorf("account %s did not start with its oldest day: %v", a.ID, d)
		}
	}
	sort.Ints(counts)
	if fmt.Sprint(counts) != "[2 2 3]" || sum.Claimed != 7 || sum.Capped != 23 {
		t.Errorf("per-account counts %v, summary %+v; want 2/2/3 and 23 capped", counts, sum)
	}
}

func TestFailedSendIsReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	a := newAccount(t, l, "a", "2026-03-29") // 3 days
	rec := &recordingSQS{failDays: map[string]bool{"2026-03-30": true}}
	s := sweeper(only(l, a), rec, clk, 10, 10)
	sum, err := s.Run(ctx, clk.Now())
	if err == nil || !strings.Contains(err.Error(), "2026-03-30") {
		t.Errorf("error %v should name the unsent job", err)
	}
	if sum.Claimed != 3 || sum.Enqueued != 2 || sum.Released != 1 {
		t.Errorf("summary %+v", sum)
	}
	r, err := l.Partitions().Get(ctx, partition.Key{AccountID: a.ID, Dataset: "events", Day: civil.MustParse("2026-03-30")})
	if err != nil || r.State != ledger.StatePending || r.Attempts != 0 || r.ClaimToken != "" {
		t.Fatalf("released row %+v %v", r, err)
	}
	rec.take()
	rec.failDays = nil
	clk.Advance(15 * time.Minute)
	sum, err = s.Run(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := jobsOf(rec.take(), a.ID); strings.Join(got, ",") != "2026-03-30" || sum.Claimed != 1 {
		t.Errorf("next sweep sent %v (summary %+v), want the released day", got, sum)
	}
}

func TestRetriesAndDeadClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	a := newAccount(t, l, "a", "2026-03-29") // 03-29, 03-30, 03-31
	rec := &recordingSQS{}
	s := sweeper(only(l, a), rec, clk, 10, 10)
	if _, err := s.Run(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	jobs := rec.take()
	if len(jobs) != 3 {
		t.Fatalf("first sweep sent %+v", jobs)
	}
	key := func(j Job) partition.Key {
		return partition.Key{AccountID: j.AccountID, Dataset: j.Dataset, Day: civil.MustParse(j.Day)}
	}
	// 03-29 runs and fails; 03-30's worker starts and dies (its claim is never
	// completed); 03-31's job waits in the queue past its lease, never started.
	if _, err := l.Partitions().Start(ctx, key(jobs[0]), jobs[0].ClaimToken); err != nil {
		t.Fatal(err)
	}
	failed, err := l.Partitions().Fail(ctx, key(jobs[0]), jobs[0].ClaimToken, errors.New("throttled"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Start(ctx, key(jobs[1]), jobs[1].ClaimToken); err != nil {
		t.Fatal(err)
	}
	clk.Set(failed.NextAttemptAt.Add(-time.Second))
	if sum, _ := s.Run(ctx, clk.Now()); sum.Claimed != 0 {
		t.Errorf("claimed %d before the next attempt and inside the lease", sum.Claimed)
	}
	clk.Set(maxTime(failed.NextAttemptAt, clk.Now().Add(lease+time.Minute)))
	sum, err := s.Run(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	retried := rec.take()
	if sum.Claimed != 3 || len(retried) != 3 {
		t.Fatalf("retry sweep %+v %+v", sum, retried)
	}
	// The runs that started used an attempt; the job that never ran did not.
	want := "2026-03-29 retry attempt 2, 2026-03-30 retry attempt 2, 2026-03-31 retry attempt 1"
	var got []string
	for _, r := range retried {
		got = append(got, fmt.Sprintf("%s %s attempt %d", r.Day, r.Reason, r.Attempt))
	}
	if strings.Join(got, ", ") != want {
		t.Errorf("retry jobs (failed-and-due first, then dead claims):\n got %s\nwant %s", strings.Join(got, ", "), want)
	}
	// The job that waited is dropped when its old message finally arrives.
	if _, err := l.Partitions().Start(ctx, key(jobs[2]), jobs[2].ClaimToken); !errors.Is(err, ledger.ErrClaimLost) {
		t.Errorf("old message of a reclaimed job started: %v", err)
	}
	if c, err := l.Partitions().Start(ctx, key(retried[2]), retried[2].ClaimToken); err != nil || c.Attempt != 1 {
		t.Errorf("start of the reclaimed job: %+v %v", c, err)
	}
}

// TestBacklogLongerThanLeaseNeverStops: when jobs wait in SQS longer than
// the lease, each sweep reclaims them, but a claim that never started uses no
// attempt: the row is never stopped without having run, and each
// superseded message is dropped at Start.
func TestBacklogLongerThanLeaseNeverStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	a := newAccount(t, l, "a", "2026-03-31")
	rec := &recordingSQS{}
	s := sweeper(only(l, a), rec, clk, 10, 10)
	var msgs []Job
	for round := range l.Config().MaxAttempts + 2 {
		sum, err := s.Run(ctx, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		sent := rec.take()
		if sum.Claimed != 1 || sum.Retired != 0 || sum.Stopped != 0 || len(sent) != 1 || sent[0].Attempt != 1 {
			t.Fatalf("round %d: summary %+v, jobs %+v; want one claim on attempt 1 and nothing stopped", round, sum, sent)
		}
		msgs = append(msgs, sent[0])
		clk.Advance(lease + time.Minute) // nobody has received the job yet
	}
	key := partition.Key{AccountID: a.ID, Dataset: "events", Day: civil.MustParse("2026-03-31")}
	if r, err := l.Partitions().Get(ctx, key); err != nil || r.State != ledger.StateRunning || r.Attempts != 0 || r.Stopped {
		t.Fatalf("row after the backlog %+v %v", r, err)
	}
	// The backlog drains: only the newest message runs.
	started := 0
	for _, m := range msgs {
		if _, err := l.Partitions().Start(ctx, key, m.ClaimToken); err == nil {
			started++
		} else if !errors.Is(err, ledger.ErrClaimLost) {
			t.Fatal(err)
		}
	}
	if started != 1 {
		t.Errorf("%d of %d queued messages started, want 1", started, len(msgs))
	}
}

// deliveringSQS plays a send that reaches the queue, where an exporter
// starts the job at once, while the response is lost: SendMessageBatch
// returns an error.
type deliveringSQS struct {
	l   *ledger.Ledger
	err error
}

func (d *deliveringSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	for _, e := range in.Entries {
		var j Job
		if err := json.Unmarshal([]byte(aws.ToString(e.MessageBody)), &j); err != nil {
			return nil, err
		}
		key := partition.Key{AccountID: j.AccountID, Dataset: j.Dataset, Day: civil.MustParse(j.Day)}
		if _, err := d.l.Partitions().Start(ctx, key, j.ClaimToken); err != nil {
			return nil, err
		}
	}
	return nil, d.err
}

// TestSendErrorForADeliveredJobKeepsItRunning: a send that reports an error
// for a job an exporter already started must not release the claim (a second
// exporter could then run the partition, L2); the job counts as sent.
func TestSendErrorForADeliveredJobKeepsItRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	a := newAccount(t, l, "a", "2026-03-31")
	s := sweeper(only(l, a), &deliveringSQS{l: l, err: errors.New("read tcp: connection reset by peer")}, clk, 10, 10)
	sum, err := s.Run(ctx, clk.Now())
	if err != nil {
		t.Errorf("sweep error %v: the job was delivered", err)
	}
	if sum.Claimed != 1 || sum.Enqueued != 1 || sum.Released != 0 {
		t.Errorf("summary %+v, want the job counted as sent, not released", sum)
	}
	r, err := l.Partitions().Get(ctx, partition.Key{AccountID: a.ID, Dataset: "events", Day: civil.MustParse("2026-03-31")})
	if err != nil || r.State != ledger.StateRunning || r.StartedAt.IsZero() || r.Attempts != 1 {
		t.Fatalf("row %+v %v, want running under the started claim", r, err)
	}
	clk.Advance(15 * time.Minute)
	rec := &recordingSQS{}
	s.SQS = rec
	if sum, err := s.Run(ctx, clk.Now()); err != nil || sum.Claimed != 0 || len(rec.take()) != 0 {
		t.Errorf("the running job was claimed again: %+v %v", sum, err)
	}
}

// TestStoppedIsALevel: every sweep reports how many partitions stopped
// retrying, not only the sweep in which one stopped (L1, O3).
func TestStoppedIsALevel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newLedger(t, clk, "l")
	a := newAccount(t, l, "a", "2026-03-30") // 03-30, 03-31
	rec := &recordingSQS{}
	s := sweeper(only(l, a), rec, clk, 10, 10)
	key := func(j Job) partition.Key {
		return partition.Key{AccountID: j.AccountID, Dataset: j.Dataset, Day: civil.MustParse(j.Day)}
	}
	// 03-30 fails every attempt; 03-31 starts every attempt and dies.
	for round := range l.Config().MaxAttempts {
		sum, err := s.Run(ctx, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if sum.Stopped != 0 {
			t.Errorf("round %d: %d stopped", round, sum.Stopped)
		}
		for _, j := range rec.take() {
			if _, err := l.Partitions().Start(ctx, key(j), j.ClaimToken); err != nil {
				t.Fatal(err)
			}
			if j.Day == "2026-03-30" {
				if _, err := l.Partitions().Fail(ctx, key(j), j.ClaimToken, errors.New("access denied")); err != nil {
					t.Fatal(err)
				}
			}
		}
		clk.Advance(2 * time.Hour) // past the backoff cap and the lease
	}
	for round, want := range []Summary{{Stopped: 2, Retired: 1}, {Stopped: 2}} {
		sum, err := s.Run(ctx, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if sum.Stopped != want.Stopped || sum.Retired != want.Retired || sum.Claimed != 0 || !sum.StoppedCounted {
			t.Errorf("sweep %d after stopping: %+v, want stopped %d, retired %d", round, sum, want.Stopped, want.Retired)
		}
		clk.Advance(15 * time.Minute)
	}
	if _, err := l.Partitions().Requeue(ctx, ledger.RequeueRange{AccountID: a.ID, Dataset: "events", From: civil.MustParse("2026-03-30"), To: civil.MustParse("2026-03-30"), Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	if sum, err := s.Run(ctx, clk.Now()); err != nil || sum.Stopped != 1 || sum.Claimed != 1 {
		t.Errorf("sweep after a requeue: %+v %v, want 1 stopped and the requeued day claimed", sum, err)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func TestSummaryJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Summary{Accounts: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"accounts", "materialized", "due", "claimed", "enqueued", "released", "capped", "items_read", "stopped", "retired", "duration_ms", "as_of"} {
		if !strings.Contains(string(b), `"`+k+`"`) {
			t.Errorf("summary JSON %s lacks %s", b, k)
		}
	}
	j, _ := json.Marshal(Job{Kind: JobKind, AccountID: "a", Dataset: "d", Day: "2026-01-01", ClaimToken: "t", Attempt: 1, Generation: 2, Reason: "manual"})
	if string(j) != `{"kind":"job","account_id":"a","dataset":"d","day":"2026-01-01","claim_token":"t","attempt":1,"generation":2,"reason":"manual"}` {
		t.Errorf("job JSON %s", j)
	}
}

func dayStrings(ds []civil.Date) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}
