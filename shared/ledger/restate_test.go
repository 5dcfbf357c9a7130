package ledger

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

func TestDeployedRestateIndex(t *testing.T) {
	cfg, table := deployed(t)
	out, err := dynamodb.NewFromConfig(cfg).DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(out.Table.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndexDescription) bool {
		return aws.ToString(g.IndexName) == IndexRestate
	})
	if i < 0 {
		t.Fatalf("table has no %s index", IndexRestate)
	}
	g := out.Table.GlobalSecondaryIndexes[i]
	keys := map[types.KeyType]string{}
	for _, k := range g.KeySchema {
		keys[k.KeyType] = aws.ToString(k.AttributeName)
	}
	if keys[types.KeyTypeHash] != AttrRestateAccount || keys[types.KeyTypeRange] != AttrRestateKey {
		t.Errorf("index %s keys %v, want %s/%s", IndexRestate, keys, AttrRestateAccount, AttrRestateKey)
	}
	// The sweeper checks the state and generation from the index.
	for _, a := range []string{attrAccountID, attrDataset, attrDay, attrState, attrGeneration} {
		if g.Projection.ProjectionType != types.ProjectionTypeAll && !slices.Contains(g.Projection.NonKeyAttributes, a) {
			t.Errorf("index %s does not project %s (%v)", IndexRestate, a, g.Projection.NonKeyAttributes)
		}
	}
}

func TestRestateWindow(t *testing.T) {
	closed := civil.MustParse("2026-03-09")
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	c := RestateConfig{LookbackDays: 7, Interval: 6 * time.Hour}
	from, to := c.Window(closed)
	if from != civil.MustParse("2026-03-03") || to != closed {
		t.Fatalf("window %s..%s, want 2026-03-03..2026-03-09", from, to)
	}
	tests := []struct {
		cfg  RestateConfig
		day  string
		want time.Time
	}{
		{c, "2026-03-09", now.Add(6 * time.Hour)},
		{c, "2026-03-03", now.Add(6 * time.Hour)},
		{c, "2026-03-02", time.Time{}},
		{c, "2026-03-10", time.Time{}}, // not closed
		{RestateConfig{LookbackDays: 0, Interval: time.Hour}, "2026-03-09", time.Time{}},
		{RestateConfig{LookbackDays: 1, Interval: time.Hour}, "2026-03-09", now.Add(time.Hour)},
		{RestateConfig{LookbackDays: 1, Interval: time.Hour}, "2026-03-08", time.Time{}},
	}
	for _, tt := range tests {
		if got := tt.cfg.CheckAt(civil.MustParse(tt.day), closed, now); !got.Equal(tt.want) {
			t.Errorf("%+v CheckAt(%s) = %s, want %s", tt.cfg, tt.day, got, tt.want)
		}
	}
}

// complete claims, starts and completes key with res.
func complete(t *testing.T, l *Ledger, key partition.Key, res Result) Row {
	t.Helper()
	ctx := context.Background()
	if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	if r, err := l.Partitions().Get(ctx, key); err == nil && r.State == StateCompleted {
		if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: key.AccountID, Dataset: key.Dataset, From: key.Day, To: key.Day, Reason: partition.ReasonManual}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := l.Partitions().Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Start(ctx, key, c.Token); err != nil {
		t.Fatal(err)
	}
	r, err := l.Partitions().Complete(ctx, key, c.Token, res)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRestateIndexFollowsCompletes: Complete stores the fingerprint and
// schedules the check; RestateDue finds it only once it is due, oldest
// first; MoveRestateCheck pushes it out once (a second move from the same
// read is refused); a later Complete without a check takes the row out.
func TestRestateIndexFollowsCompletes(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	acct := testAccount(t, "a")
	now := clk.Now()
	a := partition.Key{AccountID: acct, Dataset: "events", Day: day1}
	b := partition.Key{AccountID: acct, Dataset: "profiles", Day: day1.AddDays(1)}
	ra := complete(t, l, a, Result{Rows: 5, Fingerprint: Fingerprint{Value: "fa", At: now, CheckAt: now.Add(2 * time.Hour)}})
	complete(t, l, b, Result{Rows: 7, Fingerprint: Fingerprint{Value: "fb", At: now, CheckAt: now.Add(time.Hour)}})
	if ra.Fingerprint.Value != "fa" || !ra.Fingerprint.At.Equal(now) || !ra.Fingerprint.CheckAt.Equal(now.Add(2*time.Hour)) {
		t.Fatalf("completed row fingerprint %+v", ra.Fingerprint)
	}
	due := func() []partition.Key {
		t.Helper()
		rows, stats, err := restateDueOf(ctx, l, acct, 10)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Queries != 1 {
			t.Errorf("RestateDue ran %d queries", stats.Queries)
		}
		var keys []partition.Key
		for _, r := range rows {
			if r.State != StateCompleted || r.Generation != 1 || r.Fingerprint.CheckAt.IsZero() {
				t.Errorf("index row %+v", r)
			}
			keys = append(keys, r.Key)
		}
		return keys
	}
	if got := due(); len(got) != 0 {
		t.Fatalf("due before their time: %v", got)
	}
	clk.Advance(3 * time.Hour)
	if got := due(); !slices.Equal(got, []partition.Key{b, a}) {
		t.Fatalf("due = %v, want %v (oldest check first)", got, []partition.Key{b, a})
	}
	rows, _, err := restateDueOf(ctx, l, acct, 1)
	if err != nil || len(rows) != 1 || rows[0].Key != b {
		t.Fatalf("limit 1: %v %v", rows, err)
	}
	next := clk.Now().Add(6 * time.Hour)
	if err := l.Restates().MoveRestateCheck(ctx, rows[0], next); err != nil {
		t.Fatal(err)
	}
	if err := l.Restates().MoveRestateCheck(ctx, rows[0], next); !errors.Is(err, ErrConflict) {
		t.Fatalf("second move from the same read: %v, want ErrConflict", err)
	}
	if got := due(); !slices.Equal(got, []partition.Key{a}) {
		t.Fatalf("after moving b: due = %v", got)
	}
	// Completed again without a check (outside the window, or no
	// fingerprint): out of the index, and the old fingerprint is gone.
	r := complete(t, l, a, Result{Rows: 6})
	if r.Fingerprint != (Fingerprint{}) {
		t.Fatalf("fingerprint after a complete without one: %+v", r.Fingerprint)
	}
	if got := due(); len(got) != 0 {
		t.Fatalf("due after a complete without a check: %v", got)
	}
	clk.Advance(7 * time.Hour)
	rows, _, _ = restateDueOf(ctx, l, acct, 10)
	if len(rows) != 1 || rows[0].Key != b {
		t.Fatalf("b after its moved check: %v", rows)
	}
	if err := l.Restates().DropRestateCheck(ctx, rows[0]); err != nil {
		t.Fatal(err)
	}
	if err := l.Restates().DropRestateCheck(ctx, rows[0]); !errors.Is(err, ErrConflict) {
		t.Fatalf("second drop: %v, want ErrConflict", err)
	}
	if got := due(); len(got) != 0 {
		t.Fatalf("due after the drop: %v", got)
	}
	if got, err := l.Partitions().Get(ctx, b); err != nil || got.Fingerprint.Value != "fb" || got.State != StateCompleted {
		t.Fatalf("a dropped check keeps the row and its fingerprint: %+v %v", got, err)
	}
}

// TestRequeueRestatement: only a completed row at the checked generation
// with the checked fingerprint is queued; the restatement is remembered
// until a generation that is not one is committed.
func TestRequeueRestatement(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	key := partition.Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	now := clk.Now()
	complete(t, l, key, Result{Rows: 10, Fingerprint: Fingerprint{Value: "f1", At: now, CheckAt: now.Add(time.Hour)}})

	bad := []struct {
		name       string
		generation int64
		fp         string
		want       error
	}{
		{"other generation", 2, "f1", ErrConflict},
		{"other fingerprint", 1, "f0", ErrConflict},
	}
	for _, tt := range bad {
		if _, err := l.Restates().RequeueRestatement(ctx, key, tt.generation, tt.fp); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	for _, tt := range []struct {
		key partition.Key
		gen int64
		fp  string
	}{{key, 0, "f1"}, {key, 1, ""}, {partition.Key{AccountID: "", Dataset: "events", Day: day1}, 1, "f1"}} {
		if _, err := l.Restates().RequeueRestatement(ctx, tt.key, tt.gen, tt.fp); err == nil || errors.Is(err, ErrConflict) {
			t.Errorf("bad input %+v/%d/%q: %v", tt.key, tt.gen, tt.fp, err)
		}
	}
	if _, err := l.Restates().RequeueRestatement(ctx, partition.Key{AccountID: key.AccountID, Dataset: "events", Day: day1.AddDays(5)}, 1, "f1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("no such row: %v", err)
	}
	if r, err := l.Partitions().Get(ctx, key); err != nil || r.State != StateCompleted || r.Restatement != nil {
		t.Fatalf("refused requeues changed the row: %+v %v", r, err)
	}

	r, err := l.Restates().RequeueRestatement(ctx, key, 1, "f1")
	if err != nil {
		t.Fatal(err)
	}
	if r.State != StateQueued || r.Reason != partition.ReasonRestatement || r.Attempts != 0 || !r.Restating() || r.Restated() != nil ||
		*r.Restatement != (Restatement{PreviousGeneration: 1, PreviousRows: 10}) || r.Fingerprint.CheckAt != (time.Time{}) {
		t.Fatalf("queued for restatement: %+v (%+v)", r, r.Restatement)
	}
	if _, err := l.Restates().RequeueRestatement(ctx, key, 1, "f1"); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second restatement of a queued row: %v", err)
	}
	if rows, _, err := l.Partitions().Due(ctx, key.AccountID, 10); err != nil || len(rows) != 1 || rows[0].State != StateQueued {
		t.Fatalf("the restated row is not due: %v %v", rows, err)
	}
	// The next run keeps the reason and restates generation 1.
	c, err := l.Partitions().Claim(ctx, key, "")
	if err != nil || c.Reason != partition.ReasonRestatement {
		t.Fatalf("claim: %+v %v", c, err)
	}
	st, err := l.Partitions().Start(ctx, key, c.Token)
	if err != nil || !st.Prev.Restating() {
		t.Fatalf("start: %+v %v", st.Prev, err)
	}
	r, err = l.Partitions().Complete(ctx, key, c.Token, Result{Rows: 12, Restated: true, Fingerprint: Fingerprint{Value: "f2", At: clk.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Restated(); r.Generation != 2 || got == nil || *got != (Restatement{1, 10}) || r.Restating() {
		t.Fatalf("completed restatement: generation %d, restated %+v", r.Generation, got)
	}
	// A later generation that restates nothing forgets it.
	r = complete(t, l, key, Result{Rows: 12})
	if r.Generation != 3 || r.Restated() != nil || r.Restatement != nil {
		t.Fatalf("generation after the restatement: %d %+v", r.Generation, r.Restatement)
	}
}

// TestStopsAreReturned: Fail on the last attempt returns the stopped row,
// whose FailedStop is the stop, and Claim retiring a dead claim on its last
// attempt returns a *StoppedError with it; a failure with attempts left has
// no stop.
func TestStopsAreReturned(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk) // MaxAttempts 3
	acct := testAccount(t, "a")
	failing, dying := partition.Key{AccountID: acct, Dataset: "events", Day: day1}, partition.Key{AccountID: acct, Dataset: "events", Day: day1.AddDays(1)}
	if _, err := l.Schedule().Materialize(ctx, acct, "events", failing.Day, dying.Day); err != nil {
		t.Fatal(err)
	}
	run := func(key partition.Key) Claim {
		t.Helper()
		c, err := l.Partitions().Claim(ctx, key, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Start(ctx, key, c.Token); err != nil {
			t.Fatal(err)
		}
		return c
	}
	var stop partition.Stop
	for attempt := 1; attempt <= 3; attempt++ {
		c := run(failing)
		row, err := l.Partitions().Fail(ctx, failing, c.Token, errors.New("source down"))
		if err != nil {
			t.Fatal(err)
		}
		st, ok := row.FailedStop()
		if ok != (attempt == 3) {
			t.Fatalf("after failed attempt %d: stopped %v", attempt, ok)
		}
		if ok {
			stop = st
		}
		clk.Advance(2 * time.Hour)
	}
	if s := stop; s.Key != failing || s.Attempts != 3 || s.Cause != partition.StopFailed || s.Error != "source down" || s.At.IsZero() {
		t.Fatalf("stop of a failing partition: %+v", s)
	}
	for attempt := 1; attempt <= 3; attempt++ {
		run(dying)
		clk.Advance(testLease + time.Minute)
	}
	_, err := l.Partitions().Claim(ctx, dying, "")
	var se *StoppedError
	if !errors.Is(err, ErrStopped) || !errors.As(err, &se) {
		t.Fatalf("claim of a dead claim on its last attempt: %v", err)
	}
	if s := se.Stop; s.Key != dying || s.Attempts != 3 || s.Cause != partition.StopLeaseExpired || s.At.IsZero() {
		t.Fatalf("stop of a dead claim: %+v", s)
	}
}

// TestRequeueRestatementWakes: a restatement makes the day due, so it wakes
// the account like every transition that leaves work due (after the row).
func TestRequeueRestatementWakes(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	a := putTestAccount(t, l, "a")
	key := partition.Key{AccountID: a.ID, Dataset: "events", Day: day1}
	now := clk.Now()
	complete(t, l, key, Result{Rows: 3, Fingerprint: Fingerprint{Value: "f1", At: now, CheckAt: now.Add(time.Hour)}})
	w, ok := woken(t, l, a.ID, now)
	if !ok {
		t.Fatal("new account not woken")
	}
	if _, err := l.Schedule().SetNextWake(ctx, w, now.Add(6*time.Hour), civil.Date{}, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if at, _ := wakeOf(t, l, a.ID); !at.After(now) {
		t.Fatalf("wake time %s, want after %s before the restatement", at, now)
	}
	if _, err := l.Restates().RequeueRestatement(ctx, key, 1, "f1"); err != nil {
		t.Fatal(err)
	}
	if at, ok := wakeOf(t, l, a.ID); !ok || at.After(now) {
		t.Fatalf("after the restatement: wake time %s (in index %v), want %s", at, ok, now)
	}
}

// restateDueOf is RestateDue of acct's shard, keeping acct's rows (the
// package's tests share the table), at most limit of them.
func restateDueOf(ctx context.Context, l *Ledger, acct string, limit int) ([]Row, ReadStats, error) {
	rows, stats, err := l.Restates().RestateDue(ctx, Shard(acct), 1000)
	rows = slices.DeleteFunc(rows, func(r Row) bool { return r.AccountID != acct })
	return rows[:min(limit, len(rows))], stats, err
}

// TestShardRestateChecks: a check written before the index was sharded
// (restate_account = the account id) is never due to a sweep until
// ShardRestateChecks moves it to the account's shard; a second run moves
// nothing.
func TestShardRestateChecks(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, db := newTestLedger(t, clk)
	acct := testAccount(t, "old")
	now := clk.Now()
	k := partition.Key{AccountID: acct, Dataset: "events", Day: day1}
	complete(t, l, k, Result{Rows: 5, Fingerprint: Fingerprint{Value: "f", At: now, CheckAt: now.Add(time.Hour)}})
	// As a release before the sharding wrote it.
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(l.Config().Table), Key: rowKey(k),
		UpdateExpression:          aws.String("SET #a = :a"),
		ExpressionAttributeNames:  map[string]string{"#a": AttrRestateAccount},
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberS{Value: acct}}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	due := func() int {
		t.Helper()
		rows, _, err := restateDueOf(ctx, l, acct, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	if n := due(); n != 0 {
		t.Fatalf("an unsharded check is due to a sweep: %d", n)
	}
	if n, err := l.Restates().ShardRestateChecks(ctx, acct); err != nil || n != 1 {
		t.Fatalf("ShardRestateChecks = %d, %v; want 1", n, err)
	}
	if n := due(); n != 1 {
		t.Errorf("after the move: %d due, want 1", n)
	}
	if n, err := l.Restates().ShardRestateChecks(ctx, acct); err != nil || n != 0 {
		t.Errorf("second run moved %d, %v", n, err)
	}
}
