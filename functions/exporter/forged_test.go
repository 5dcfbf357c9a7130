//go:build !noduckdb

package main

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Messages daybook cannot act on go to the dead-letter queue with the
// reason and write nothing (C6); at-least-once redeliveries of real
// messages are dropped (and may rewrite the day's delivery manifest, their
// documented convergence). These tests tell the two apart.

const forgedToken = "0123456789abcdef0123456789abcdef"

// world is what a message could change: every object of the account's
// bucket (by ETag) and the partition's ledger items.
type world struct {
	objects map[string]string
	row     ledger.Row
	plan    ledger.SlicePlan
	slices  []ledger.Slice
}

func (e *env) world(ds string) world {
	e.t.Helper()
	w := world{objects: map[string]string{}}
	p := s3.NewListObjectsV2Paginator(e.s3, &s3.ListObjectsV2Input{Bucket: &e.acct.Destination.Bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, o := range page.Contents {
			w.objects[aws.ToString(o.Key)] = aws.ToString(o.ETag)
		}
	}
	var err error
	if w.row, err = e.led.Partitions().Get(e.ctx, e.key(ds, testDay)); err != nil && !errors.Is(err, ledger.ErrNotFound) {
		e.t.Fatal(err)
	}
	if w.plan, w.slices, err = e.led.Slices().SlicesOf(e.ctx, e.key(ds, testDay)); err != nil && !errors.Is(err, ledger.ErrNotFound) {
		e.t.Fatal(err)
	}
	return w
}

// unchanged fails the test when anything of before changed.
func (e *env) unchanged(what string, before world) {
	e.t.Helper()
	after := e.world(before.row.Dataset)
	if !maps.Equal(before.objects, after.objects) {
		e.t.Errorf("%s changed the bucket:\nbefore %v\nafter  %v", what, before.objects, after.objects)
	}
	if !before.row.UpdatedAt.Equal(after.row.UpdatedAt) || before.row.State != after.row.State || !before.row.LeaseUntil.Equal(after.row.LeaseUntil) ||
		before.row.Attempts != after.row.Attempts || before.row.Generation != after.row.Generation {
		e.t.Errorf("%s changed the ledger row:\nbefore %+v\nafter  %+v", what, before.row, after.row)
	}
	if !slices.EqualFunc(before.slices, after.slices, func(a, b ledger.Slice) bool {
		return a.State == b.State && a.Attempts == b.Attempts && a.RunToken == b.RunToken && a.LeaseUntil.Equal(b.LeaseUntil)
	}) || before.plan.Token != after.plan.Token || before.plan.CommitToken != after.plan.CommitToken {
		e.t.Errorf("%s changed the slices:\nbefore %+v %+v\nafter  %+v %+v", what, before.plan, before.slices, after.plan, after.slices)
	}
}

// rejected wants err to be a rejection naming want (the handler sends it
// to the dead-letter queue with that reason).
func rejected(t *testing.T, what string, err error, want string) {
	t.Helper()
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: Process = %v, want a rejection naming %q", what, err, want)
	}
}

func encodeBody(t *testing.T, v any) string {
	t.Helper()
	b, err := jobs.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestForgedJobIsDeadLettered: a job with a claim token the partition
// never had is rejected and writes nothing, on a completed partition (the
// old code dropped it and rewrote the delivery manifest: new ETag, new
// updated_at) and on a running one; the first job's second delivery is
// still a quiet drop.
func TestForgedJobIsDeadLettered(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.insert("events", genRows("events", testDay, 5)...)
	c := e.claim("events", testDay, "")
	real := jobBody(t, c)
	if err := e.process(real); err != nil {
		t.Fatal(err)
	}
	e.committed("events", testDay)
	e.clk.Advance(61e9) // a rewritten delivery manifest would carry a new updated_at

	forged := jobs.Job{Kind: jobs.KindJob, AccountID: e.acct.ID, Dataset: "events", Day: testDay.String(), ClaimToken: forgedToken,
		Attempt: 1, Generation: 2, Reason: "scheduled"}
	before := e.world("events")
	rejected(t, "forged job on a completed partition", e.process(encodeBody(t, forged)), `claim_token "`+forgedToken+`" was never issued`)
	e.unchanged("a forged job", before)

	// The token of another partition is as foreign.
	other := e.claim("events", testDay.AddDays(1), "")
	forged.ClaimToken = other.Token
	rejected(t, "another partition's token", e.process(encodeBody(t, forged)), "was never issued")
	e.unchanged("another partition's token", before)

	// A redelivery of the real job is dropped, not dead-lettered.
	if err := e.process(real); err != nil {
		t.Errorf("second delivery of the real job: %v, want a drop", err)
	}

	// While a claim runs, a forged job leaves it alone.
	e.clk.Advance(61e9)
	m, err := e.led.Partitions().ClaimManual(e.ctx, e.key("events", testDay), ledger.ManualRequest{})
	if err != nil {
		t.Fatal(err)
	}
	before = e.world("events")
	forged.ClaimToken = forgedToken
	rejected(t, "forged job on a running partition", e.process(encodeBody(t, forged)), "was never issued")
	// A manual claim's token never travels in a job.
	forged.ClaimToken = m.Token
	if err := e.process(encodeBody(t, forged)); err != nil {
		t.Errorf("a job with the running claim's own token: %v, want a drop (it is that claim's, started)", err)
	}
	e.unchanged("forged jobs on a running partition", before)
}

// TestForgedSlicesAreDeadLettered: slice messages that no plan of the
// partition ever had (an invented token, the real token with another
// generation or number of slices, a slice beyond the plan, an unknown
// account) are rejected and leave the partition as it was: the old code
// failed the whole partition on a wrong generation and dropped an index
// beyond the plan silently after renewing the partition's hold. The real
// slices then commit the day, and their redeliveries are dropped.
func TestForgedSlicesAreDeadLettered(t *testing.T) {
	e, queue := slicedEnv(t, 1000)
	e.insert("events", genRows("events", testDay, 2000)...)
	c, bodies := e.planned(queue, 2)
	e.clk.Advance(61e9) // a renewed hold would move lease_until
	real := sliceMessage(c.Key, c.Token, c.Generation, 0, 2)
	for _, tt := range []struct {
		name   string
		mutate func(m *jobs.Slice)
		want   string
	}{
		{"invented token", func(m *jobs.Slice) { m.ClaimToken = forgedToken }, `claim_token "` + forgedToken + `" planned no slices`},
		{"wrong generation", func(m *jobs.Slice) { m.Generation++ }, "the message is for generation 2 in 2 slices; claim_token"},
		{"wrong number of slices", func(m *jobs.Slice) { m.Slices = 3 }, "generation 1 in 3 slices"},
		{"slice beyond the plan", func(m *jobs.Slice) { m.Slice, m.Slices = 5, 8 }, "slice 5 of " + c.Key.String() + " is beyond the 2 slices"},
		{"unknown account", func(m *jobs.Slice) { m.AccountID = "acct_aaaaaaaaaaaaaaaa" }, `account_id "acct_aaaaaaaaaaaaaaaa": no such account`},
		{"another partition", func(m *jobs.Slice) { m.Day = testDay.AddDays(1).String() }, "planned no slices"},
	} {
		m := real
		tt.mutate(&m)
		before := e.world("events")
		rejected(t, tt.name, e.process(encodeBody(t, m)), tt.want)
		e.unchanged(tt.name, before)
	}
	if r := e.row("events", testDay); r.State != ledger.StateRunning || r.ClaimToken != c.Token {
		t.Fatalf("after the forged slices the partition is %s under %s, want running under its plan's claim", r.State, r.ClaimToken)
	}
	for i := range 2 {
		if err := e.process(bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	e.committed("events", testDay)
	// After the commit: a redelivered slice is dropped; a forged one is
	// rejected and writes nothing (no delivery manifest rewrite).
	if err := e.process(bodies[1]); err != nil {
		t.Errorf("redelivered slice: %v, want a drop", err)
	}
	e.clk.Advance(61e9)
	before := e.world("events")
	forged := real
	forged.ClaimToken = forgedToken
	rejected(t, "forged slice of a committed day", e.process(encodeBody(t, forged)), "planned no slices")
	e.unchanged("a forged slice of a committed day", before)
}

// TestSliceOfAReplacedPlanIsDropped: a slice message of a plan that a
// later claim replaced is a redelivery, dropped (no dead letter), and
// leaves the new plan alone.
func TestSliceOfAReplacedPlanIsDropped(t *testing.T) {
	e, queue := slicedEnv(t, 1000)
	e.insert("events", genRows("events", testDay, 2000)...)
	c, old := e.planned(queue, 2)
	if _, err := e.led.Partitions().Fail(e.ctx, c.Key, c.Token, errors.New("the run died")); err != nil {
		t.Fatal(err)
	}
	r := e.row("events", testDay)
	e.clk.Set(r.NextAttemptAt.Add(1e9))
	c2, err := e.led.Partitions().Claim(e.ctx, c.Key, partition.ReasonRetry)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.process(jobBody(t, c2)); err != nil {
		t.Fatal(err)
	}
	if len(e.receive(queue)) != 2 {
		t.Fatal("the retry did not plan 2 slices")
	}
	before := e.world("events")
	if before.plan.Token != c2.Token {
		t.Fatalf("plan of %s, want the retry's", before.plan.Token)
	}
	if err := e.process(old[0]); err != nil {
		t.Errorf("slice of the replaced plan: %v, want a drop", err)
	}
	e.unchanged("a slice of the replaced plan", before)
}

// TestForgedLifecycleMessagesAreDeadLettered: restatement checks and
// reseed completions of things the ledger never had are rejected (the old
// code dropped them with an INFO line); checks of a partition that moved
// on, and completions of a replaced epoch, are still dropped.
func TestForgedLifecycleMessagesAreDeadLettered(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events", "profiles"}})
	e.withLifecycle()
	e.insert("events", genRows("events", testDay, 3)...)
	row := e.export("events", testDay)
	check := jobs.RestateCheck{Kind: jobs.KindRestateCheck, AccountID: e.acct.ID, Dataset: "events", Day: testDay.String(), Generation: row.Generation}
	done := jobs.ReseedDone{Kind: jobs.KindReseedDone, AccountID: e.acct.ID, Dataset: "profiles", Epoch: 1}
	for _, tt := range []struct {
		name string
		msg  any
		want string // "": dropped
	}{
		{"check for an unknown account", func() any { c := check; c.AccountID = "acct_aaaaaaaaaaaaaaaa"; return c }(), "no such account"},
		{"check of a partition the ledger never had", func() any { c := check; c.Day = testDay.AddDays(-1).String(); return c }(), "the ledger has no row for this partition"},
		{"check of a generation never committed", func() any { c := check; c.Generation = 7; return c }(), "generation 7 was never committed (the partition is at generation 1)"},
		{"completion for an unknown account", func() any { d := done; d.AccountID = "acct_aaaaaaaaaaaaaaaa"; return d }(), "no such account"},
		{"completion of a dataset never reseeded", done, "was never reseeded"},
	} {
		before := e.world("events")
		rejected(t, tt.name, e.process(encodeBody(t, tt.msg)), tt.want)
		e.unchanged(tt.name, before)
	}
	// An epoch that never began, or one whose days are not all rebuilt,
	// was never completed by the exporter.
	if _, _, err := e.led.Seeds().StartReseed(e.ctx, ledger.ReseedRequest{AccountID: e.acct.ID, Dataset: "profiles",
		From: testDay, Through: testDay.AddDays(1), RequestID: "r1"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		epoch int64
		want  string
	}{{2, "epoch 2 never began (the reseed is at epoch 1)"}, {1, "epoch 1 has rebuilt 0 of 2 days"}} {
		d := done
		d.Epoch = tt.epoch
		before := e.world("events")
		rejected(t, "completion of epoch "+tt.want, e.process(encodeBody(t, d)), tt.want)
		e.unchanged("a forged reseed completion", before)
	}
	if s, err := e.led.Seeds().Seed(e.ctx, e.acct.ID, "profiles"); err != nil || !s.Running() {
		t.Errorf("the reseed after forged completions: %+v, %v; want it running", s, err)
	}

	// A check of a generation the partition has moved past is dropped.
	if _, err := e.led.Partitions().ClaimManual(e.ctx, e.key("events", testDay), ledger.ManualRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := e.process(encodeBody(t, check)); err != nil {
		t.Errorf("check of a partition that moved on: %v, want a drop", err)
	}
}
