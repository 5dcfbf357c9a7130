package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TestDueWorkScheduledFirstMoreAndNext: the newest closed day materialized
// with priority is read before the queued rows, More says whether rows were
// left, and NextAt is the earliest time a failed row or a live claim read
// becomes due.
func TestDueWorkScheduledFirstMoreAndNext(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	acct := testAccount(t, "a")
	days := civil.Range(day1, day1.AddDays(4)) // 03-01 .. 03-05
	newest := days[4]
	if n, err := l.Schedule().MaterializeDays(ctx, acct, "events", days, newest); err != nil || n != 5 {
		t.Fatalf("materialize %d %v", n, err)
	}
	if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: acct, Dataset: "events", From: days[3], To: days[3], Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	row, err := l.Partitions().Get(ctx, partition.Key{AccountID: acct, Dataset: "events", Day: newest})
	if err != nil || row.Reason != partition.ReasonScheduled || !strings.HasPrefix(row.DueKey, dueScheduled) {
		t.Fatalf("newest day %+v %v, want scheduled in the scheduled class", row, err)
	}
	if r, _ := l.Partitions().Get(ctx, partition.Key{AccountID: acct, Dataset: "events", Day: days[0]}); r.Reason != partition.ReasonBackfill {
		t.Errorf("older day reason %s, want backfill", r.Reason)
	}
	// 03-01 fails (next attempt later), 03-02 is claimed (live lease).
	f := &fixture{t: t, ctx: ctx, l: l, clk: clk, key: partition.Key{AccountID: acct, Dataset: "events", Day: days[0]}}
	c, err := l.Partitions().Claim(ctx, f.key, "")
	f.must(err)
	failed, err := l.Partitions().Fail(ctx, f.key, c.Token, errors.New("boom"))
	f.must(err)
	live, err := l.Partitions().Claim(ctx, partition.Key{AccountID: acct, Dataset: "events", Day: days[1]}, "")
	f.must(err)

	w, err := l.Partitions().DueWork(ctx, acct, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(dueDays(w.Rows), " "), "pending:2026-03-05 queued:2026-03-04 pending:2026-03-03"; got != want {
		t.Errorf("due rows:\n got %s\nwant %s", got, want)
	}
	if !w.Rows[0].Scheduled() || w.Rows[1].Scheduled() {
		t.Error("Scheduled() does not mark the scheduled row only")
	}
	if w.More || !w.NextAt.Equal(minTime(failed.NextAttemptAt, LeaseEnd(live.LeaseUntil))) {
		t.Errorf("More %v NextAt %s, want false and %s", w.More, w.NextAt, minTime(failed.NextAttemptAt, LeaseEnd(live.LeaseUntil)))
	}
	// Capped: the head of the order, More, no NextAt.
	w, err = l.Partitions().DueWork(ctx, acct, 2)
	if err != nil || strings.Join(dueDays(w.Rows), " ") != "pending:2026-03-05 queued:2026-03-04" || !w.More || !w.NextAt.IsZero() {
		t.Errorf("capped at 2: %v more %v next %s %v", dueDays(w.Rows), w.More, w.NextAt, err)
	}
	// A released scheduled row keeps its class.
	sc, err := l.Partitions().Claim(ctx, partition.Key{AccountID: acct, Dataset: "events", Day: newest}, "")
	f.must(err)
	f.must(l.Partitions().Release(ctx, sc))
	if r, _ := l.Partitions().Get(ctx, sc.Key); !r.Scheduled() || r.State != StatePending {
		t.Errorf("released scheduled row %+v", r)
	}
}

// TestMalformedDueRowDoesNotHideItsGroup: an index entry that cannot be
// read is named and skipped; the rows of its class after it are returned.
func TestMalformedDueRowDoesNotHideItsGroup(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, db := newTestLedger(t, clk)
	acct := testAccount(t, "a")
	if _, err := l.Schedule().Materialize(ctx, acct, "events", day1, day1.AddDays(3)); err != nil {
		t.Fatal(err)
	}
	// The oldest pending row's attempts is not a number: it cannot be decoded.
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(l.cfg.Table), Key: rowKey(partition.Key{AccountID: acct, Dataset: "events", Day: day1}),
		UpdateExpression:          aws.String("SET #a = :v"),
		ExpressionAttributeNames:  map[string]string{"#a": attrAttempts},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("many")},
	}); err != nil {
		t.Fatal(err)
	}
	w, err := l.Partitions().DueWork(ctx, acct, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(dueDays(w.Rows), " "); got != "pending:2026-03-02 pending:2026-03-03 pending:2026-03-04" {
		t.Errorf("rows %s, want the three readable ones", got)
	}
	if len(w.Malformed) != 1 || !errors.Is(w.Malformed[0], ErrMalformed) || !strings.Contains(w.Malformed[0].Error(), "2026-03-01") {
		t.Errorf("malformed %v, want the 03-01 entry named", w.Malformed)
	}
	rows, _, err := l.Partitions().Due(ctx, acct, 10)
	if len(rows) != 3 || !errors.Is(err, ErrMalformed) {
		t.Errorf("Due = %d rows, %v; want 3 and the malformed entry named", len(rows), err)
	}
}

// TestStoppedPartitionsInTheFleetIndex: a row that stops retrying is
// counted under its account in its shard, and leaves on requeue.
func TestStoppedPartitionsInTheFleetIndex(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk, func(c *Config) { c.MaxAttempts = 1 })
	acct := testAccount(t, "a")
	count := func() int {
		t.Helper()
		m, _, err := l.Schedule().StoppedByAccount(ctx, Shard(acct))
		if err != nil {
			t.Fatal(err)
		}
		return m[acct]
	}
	for i := range 2 {
		f := &fixture{t: t, ctx: ctx, l: l, clk: clk, key: partition.Key{AccountID: acct, Dataset: "events", Day: day1.AddDays(i)}}
		f.started()
		if r, err := l.Partitions().Fail(ctx, f.key, f.token, errors.New("boom")); err != nil || !r.Stopped {
			t.Fatalf("fail: %+v %v", r, err)
		}
	}
	if n := count(); n != 2 {
		t.Errorf("stopped %d, want 2", n)
	}
	if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: acct, Dataset: "events", From: day1, To: day1, Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().ClaimManual(ctx, partition.Key{AccountID: acct, Dataset: "events", Day: day1.AddDays(1)}, ManualRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Errorf("stopped %d after requeue and manual claim, want 0", n)
	}
}

// TestExportStatsAndReconcile: Complete records export durations per hour;
// the reconcile marker is claimed once per period.
func TestExportStatsAndReconcile(t *testing.T) {
	ctx := context.Background()
	clk := newClock("2031-01-01T10:30:00Z") // an hour no other test writes
	l, _ := newTestLedger(t, clk)
	before, _, err := l.Schedule().FleetStats(ctx, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	acct := testAccount(t, "a")
	for i, d := range []time.Duration{10 * time.Second, 30 * time.Second} {
		f := &fixture{t: t, ctx: ctx, l: l, clk: clk, key: partition.Key{AccountID: acct, Dataset: "events", Day: day1.AddDays(i)}}
		f.started()
		if _, err := l.Partitions().Complete(ctx, f.key, f.token, Result{Duration: d}); err != nil {
			t.Fatal(err)
		}
	}
	st, _, err := l.Schedule().FleetStats(ctx, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := (FleetStats{Exports: st.Exports - before.Exports, ExportTime: st.ExportTime - before.ExportTime}).MeanExport(2); !ok || got != 20*time.Second {
		t.Errorf("mean export %s %v, want 20s", got, ok)
	}
	if _, ok := (FleetStats{Exports: 1, ExportTime: time.Second}).MeanExport(2); ok {
		t.Error("a mean from fewer exports than asked")
	}
	ok1, err1 := l.Schedule().ClaimReconcile(ctx, 24*time.Hour)
	ok2, err2 := l.Schedule().ClaimReconcile(ctx, 24*time.Hour)
	if err1 != nil || err2 != nil || !ok1 || ok2 {
		t.Errorf("ClaimReconcile twice = %v %v, %v %v; want the first only", ok1, err1, ok2, err2)
	}
	clk.Advance(24 * time.Hour)
	if ok, err := l.Schedule().ClaimReconcile(ctx, 24*time.Hour); !ok || err != nil {
		t.Errorf("a day later: %v %v", ok, err)
	}
}

// TestReconcilePutsOldRecordsIntoTheIndex: an enabled account written
// without the fleet attributes (before the index existed) is added, woken
// now; a disabled one still in the index is taken out.
func TestReconcilePutsOldRecordsIntoTheIndex(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, db := newTestLedger(t, clk)
	old := putTestAccount(t, l, "old")
	gone := putTestAccount(t, l, "gone")
	strip := func(id string, expr string, vals map[string]types.AttributeValue) {
		t.Helper()
		in := &dynamodb.UpdateItemInput{TableName: aws.String(l.cfg.Table), Key: tableKey(pkAccounts, id),
			UpdateExpression: aws.String(expr), ExpressionAttributeValues: vals}
		if _, err := db.UpdateItem(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	strip(old.ID, "REMOVE "+AttrFleetShard+", "+AttrFleetKey+", "+attrWakeSeq, nil)
	strip(gone.ID, "SET "+attrEnabled+" = :f", map[string]types.AttributeValue{":f": &types.AttributeValueMemberBOOL{Value: false}})
	clk.Advance(time.Hour)
	res, _, err := l.Schedule().ReconcileWake(ctx)
	if err != nil && !errors.Is(err, ErrMalformed) { // other tests' malformed records are reported, not fatal
		t.Fatal(err)
	}
	if res.Added < 1 || res.Removed < 1 {
		t.Errorf("reconcile %+v", res)
	}
	if at, in := wakeOf(t, l, old.ID); !in || !at.Equal(clk.Now()) {
		t.Errorf("old record: wake %s %v, want now", at, in)
	}
	if _, in := wakeOf(t, l, gone.ID); in {
		t.Error("disabled record still in the wake index")
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
