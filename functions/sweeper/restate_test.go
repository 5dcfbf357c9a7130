package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/partition"
)

// The restatement tests run at 2026-03-10 12:00 UTC with no settle delay:
// the last closed day is 2026-03-09, the 7-day window 2026-03-03..09.
const restateNow = "2026-03-10T12:00:00Z"

var restateCfg = ledger.RestateConfig{LookbackDays: 7, Interval: 6 * time.Hour, PerSweepCap: 50}

// checkQueue records restate_check messages; sends fail while failing is set.
type checkQueue struct {
	mu      sync.Mutex
	checks  []jobs.RestateCheck
	failing bool
}

func (q *checkQueue) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failing {
		return nil, errors.New("queue unavailable")
	}
	out := &sqs.SendMessageBatchOutput{}
	ex, _ := dataset.Example()
	for _, e := range in.Entries {
		m, err := jobs.Parse(ex, aws.ToString(e.MessageBody))
		if err != nil || m.RestateCheck == nil {
			return nil, errors.Join(errors.New("not a restate check: "+aws.ToString(e.MessageBody)), err)
		}
		q.checks = append(q.checks, *m.RestateCheck)
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (q *checkQueue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, c := range q.checks {
		out = append(out, c.AccountID+"/"+c.Dataset+"/"+c.Day)
	}
	q.checks = nil
	slices.Sort(out)
	return out
}

// completeWith completes the partition key as the exporter would: a
// generation with a fingerprint and its next check at checkAt.
func completeWith(t *testing.T, l *ledger.Ledger, key partition.Key, checkAt time.Time) {
	t.Helper()
	ctx := context.Background()
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
	if _, err := l.Partitions().Complete(ctx, key, c.Token, ledger.Result{Rows: 1,
		Fingerprint: ledger.Fingerprint{Value: "fp-" + key.Day.String(), At: checkAt.Add(-restateCfg.Interval), CheckAt: checkAt}}); err != nil {
		t.Fatal(err)
	}
}

func newRestater(t *testing.T, l RestateLedger, clk *clock, q SQSAPI, cfg ledger.RestateConfig) *Restater {
	return &Restater{Ledger: l, SQS: q, Config: RestateConfig{QueueURL: "q", Restate: cfg, Now: clk.Now}}
}

// TestRestatePass: the checks of completed days inside the window are
// queued once they are due and then not again for an interval; a day older
// than the window, a row no longer completed and a dataset the account no
// longer exports are taken out of the index and never checked.
func TestRestatePass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at(restateNow)
	l := newLedger(t, clk, "l")
	zero := time.Duration(0)
	a := storeAccount(t, l, accountSpec{salt: "a", start: "2026-02-20", tz: "UTC", settle: &zero, datasets: []string{"events", "profiles"}})
	// Other tests' accounts share the ledger; only a's checks are looked at.
	due := clk.Now().Add(restateCfg.Interval)
	var want []string
	for _, d := range civil.Range(civil.MustParse("2026-03-05"), civil.MustParse("2026-03-09")) {
		completeWith(t, l, partition.Key{AccountID: a.ID, Dataset: "events", Day: d}, due)
		want = append(want, a.ID+"/events/"+d.String())
	}
	completeWith(t, l, partition.Key{AccountID: a.ID, Dataset: "events", Day: civil.MustParse("2026-03-01")}, due)   // outside the window by then
	completeWith(t, l, partition.Key{AccountID: a.ID, Dataset: "profiles", Day: civil.MustParse("2026-03-08")}, due) // profiles is disabled below
	completeWith(t, l, partition.Key{AccountID: a.ID, Dataset: "events", Day: civil.MustParse("2026-03-04")}, due)   // requeued below: not completed
	if _, err := l.Partitions().Requeue(ctx, ledger.RequeueRange{AccountID: a.ID, Dataset: "events", From: civil.MustParse("2026-03-04"), To: civil.MustParse("2026-03-04"), Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	a.Datasets = []string{"events"}
	if err := l.Accounts().PutAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	q := &checkQueue{}
	r := newRestater(t, only(l, a), clk, q, restateCfg)
	of := func(all []string) []string {
		return slices.DeleteFunc(all, func(s string) bool { return !strings.HasPrefix(s, a.ID+"/") })
	}

	if _, err := r.Run(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := of(q.take()); len(got) != 0 {
		t.Fatalf("checks before they are due: %v", got)
	}
	clk.Advance(restateCfg.Interval)
	sum, err := r.Run(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := of(q.take()); !slices.Equal(got, want) {
		t.Fatalf("checks %v, want %v", got, want)
	}
	// The summary counts the whole shared table; what matters is that a's
	// three rows left the index (a row that changed between the read and
	// the drop is counted as skipped).
	if sum.Dropped+sum.Skipped < 3 {
		t.Fatalf("summary %+v: want the three rows out of the window or no longer checked dropped", sum)
	}
	for _, k := range []partition.Key{{AccountID: a.ID, Dataset: "events", Day: civil.MustParse("2026-03-01")}, {AccountID: a.ID, Dataset: "events", Day: civil.MustParse("2026-03-04")}, {AccountID: a.ID, Dataset: "profiles", Day: civil.MustParse("2026-03-08")}} {
		if row, _ := l.Partitions().Get(ctx, k); !row.Fingerprint.CheckAt.IsZero() {
			t.Fatalf("%s is still in the restate index: %+v (summary %+v)", k, row.Fingerprint, sum)
		}
	}
	// Not again within the interval, however often the sweeper runs.
	clk.Advance(restateCfg.Interval - time.Minute)
	for range 2 {
		if _, err := r.Run(ctx, clk.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if got := of(q.take()); len(got) != 0 {
		t.Fatalf("checks queued again within the interval: %v", got)
	}
	clk.Advance(time.Minute)
	if _, err := r.Run(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := of(q.take()); !slices.Equal(got, want) {
		t.Fatalf("checks of the next interval %v, want %v", got, want)
	}
	// A day that leaves the window (2026-03-05, two days later) is dropped.
	clk.Advance(2 * 24 * time.Hour)
	if _, err := r.Run(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := of(q.take()); slices.Contains(got, a.ID+"/events/2026-03-05") || len(got) != 4 {
		t.Fatalf("checks two days later %v: want 2026-03-06..09 only", got)
	}
}

// TestRestateCap: however many checks are due, one sweep queues at most
// the cap; the rest go in the next sweeps, each check once.
func TestRestateCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at(restateNow)
	l := newLedger(t, clk, "l")
	zero := time.Duration(0)
	due := clk.Now().Add(time.Hour)
	var accounts []string
	var accts []account.Account
	for i := range 3 {
		a := storeAccount(t, l, accountSpec{salt: string(rune('a' + i)), start: "2026-02-20", tz: "UTC", settle: &zero, datasets: []string{"events", "profiles", "daily_stats"}})
		accounts, accts = append(accounts, a.ID), append(accts, a)
		for _, ds := range a.Datasets {
			for _, d := range civil.Range(civil.MustParse("2026-03-03"), civil.MustParse("2026-03-09")) {
				completeWith(t, l, partition.Key{AccountID: a.ID, Dataset: ds, Day: d}, due)
			}
		}
	}
	clk.Advance(2 * time.Hour)
	cfg := restateCfg
	cfg.PerSweepCap = 25
	q := &checkQueue{}
	r := newRestater(t, only(l, accts...), clk, q, cfg)
	mine := func(all []string) []string {
		return slices.DeleteFunc(all, func(s string) bool {
			return !slices.ContainsFunc(accounts, func(a string) bool { return strings.HasPrefix(s, a+"/") })
		})
	}
	seen := map[string]bool{}
	var sums []RestateSummary
	for sweep := 1; sweep <= 4; sweep++ {
		sum, err := r.Run(ctx, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sum)
		all := q.take()
		if len(all) > cfg.PerSweepCap || sum.Sent != len(all) {
			t.Fatalf("sweep %d queued %d checks (summary %+v), cap %d", sweep, len(all), sum, cfg.PerSweepCap)
		}
		for _, c := range mine(all) {
			if seen[c] {
				t.Fatalf("sweep %d: %s queued twice within the interval", sweep, c)
			}
			seen[c] = true
		}
		clk.Advance(time.Minute) // the next sweep starts from another account
	}
	if len(seen) != 3*3*7 {
		t.Fatalf("%d checks of the 63 due were queued in four sweeps: %+v", len(seen), sums)
	}
}

// TestRestateSendFailure: a check whose message was not sent is queued by
// the next sweep, not an interval later; with the lookback at 0 nothing is
// read at all.
func TestRestateSendFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at(restateNow)
	l := newLedger(t, clk, "l")
	zero := time.Duration(0)
	a := storeAccount(t, l, accountSpec{salt: "a", start: "2026-02-20", tz: "UTC", settle: &zero, datasets: []string{"events"}})
	completeWith(t, l, partition.Key{AccountID: a.ID, Dataset: "events", Day: civil.MustParse("2026-03-09")}, clk.Now())
	q := &checkQueue{failing: true}
	r := newRestater(t, only(l, a), clk, q, restateCfg)
	if _, err := r.Run(ctx, clk.Now()); err == nil || !strings.Contains(err.Error(), "queue unavailable") {
		t.Fatalf("a failed send: %v", err)
	}
	q.failing = false
	clk.Advance(time.Minute)
	if _, err := r.Run(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if got := q.take(); !slices.Contains(got, a.ID+"/events/2026-03-09") {
		t.Fatalf("checks after the failed send: %v", got)
	}
	off := newRestater(t, ledgerOf(l), clk, q, ledger.RestateConfig{Interval: time.Hour, PerSweepCap: 5})
	if sum, err := off.Run(ctx, clk.Now()); err != nil || sum != (RestateSummary{}) {
		t.Fatalf("lookback 0: %+v %v", sum, err)
	}
}

// fixedRunner is a sweep that returns sum and err.
type fixedRunner struct {
	sum Summary
	err error
}

func (f fixedRunner) Run(context.Context, time.Time) (Summary, error) { return f.sum, f.err }

// TestWithRestate: the handler's runner runs the pass after the sweep,
// keeps the sweep's summary and errors, adds the pass's, and counts the
// checks it queued.
func TestWithRestate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at(restateNow)
	l := newLedger(t, clk, "l")
	var logs, lines bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	w := withRestate{Runner: fixedRunner{sum: Summary{Claimed: 3}}, Restate: newRestater(t, ledgerOf(l), clk, &checkQueue{}, restateCfg),
		Metrics: &metrics.Emitter{W: &lines, Stage: "test"}, Log: log}
	sum, err := w.Run(ctx, clk.Now())
	if err != nil || sum.Claimed != 3 || !strings.Contains(lines.String(), `"RestateChecksSent"`) || !strings.Contains(logs.String(), "restatement checks queued") {
		t.Fatalf("Run = %+v, %v\n%s\n%s", sum, err, lines.String(), logs.String())
	}
	w.Runner = fixedRunner{err: errors.New("sweep broke")}
	w.Restate = newRestater(t, ledgerOf(l), clk, &checkQueue{}, ledger.RestateConfig{LookbackDays: 7, Interval: time.Hour}) // no cap: refused
	if _, err := w.Run(ctx, clk.Now()); err == nil || !strings.Contains(err.Error(), "sweep broke") || !strings.Contains(err.Error(), "restatement checks") {
		t.Fatalf("errors of both: %v", err)
	}
}

// TestRestatePassAccountsItCannotCheck: the checks of a disabled account
// wait an interval unsent, those of a deleted account leave the index, and
// those of an account whose record cannot be read wait an interval too, so
// that, oldest under a cap of one, they do not starve a readable account's
// check, which the next pass queues.
func TestRestatePassAccountsItCannotCheck(t *testing.T) {
	ctx := context.Background()
	clk := at(restateNow)
	l := newLedger(t, clk, "l")
	zero := time.Duration(0)
	spec := func(salt string) accountSpec {
		return accountSpec{salt: salt, start: "2026-02-20", tz: "UTC", settle: &zero, datasets: []string{"events"}}
	}
	broken, disabled, deleted, fine := storeAccount(t, l, spec("broken")), storeAccount(t, l, spec("disabled")), storeAccount(t, l, spec("deleted")), storeAccount(t, l, spec("fine"))
	day := civil.MustParse("2026-03-09")
	for i, a := range []account.Account{broken, disabled, deleted, fine} {
		// Oldest first: broken's check is the oldest, fine's the newest.
		completeWith(t, l, partition.Key{AccountID: a.ID, Dataset: "events", Day: day}, clk.Now().Add(time.Duration(i)*time.Minute))
	}
	disabled.Enabled = false
	if err := l.Accounts().PutAccount(ctx, disabled); err != nil {
		t.Fatal(err)
	}
	setAttr(t, accountKey(broken.ID), "doc", &dbtypes.AttributeValueMemberS{Value: "{not json"})
	db, table := rawDB(t)
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: accountKey(deleted.ID)}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Minute)
	cfg := restateCfg
	cfg.PerSweepCap = 1
	q := &checkQueue{}
	r := newRestater(t, only(l, broken, disabled, deleted, fine), clk, q, cfg)
	var sums []RestateSummary
	for range 4 {
		sum, err := r.Run(ctx, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sum)
		clk.Advance(time.Minute)
	}
	if got := q.take(); !slices.Equal(got, []string{fine.ID + "/events/2026-03-09"}) {
		t.Errorf("checks queued %v, want only the readable, enabled account's", got)
	}
	if sums[0].Deferred != 1 || sums[1].Disabled != 1 || sums[2].Dropped != 1 || sums[3].Sent != 1 {
		t.Errorf("passes %+v: want the unreadable one deferred, the disabled one moved, the deleted one dropped, then the check sent", sums)
	}
	if row, _ := l.Partitions().Get(ctx, partition.Key{AccountID: disabled.ID, Dataset: "events", Day: day}); row.Fingerprint.CheckAt.IsZero() {
		t.Error("the disabled account's check left the index")
	}
}
