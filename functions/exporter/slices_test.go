//go:build !noduckdb

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
)

// slicedEnv is an env whose exporter exports a day expected to hold more
// than sliceRows rows in slices, and sends to a queue of its own, so the
// test receives the slice messages and delivers them in the order it
// chooses.
func slicedEnv(t *testing.T, sliceRows int64) (*env, string) {
	t.Helper()
	e := newEnv(t, envOpts{ownQueue: true, env: map[string]string{"SLICE_ROWS": fmt.Sprint(sliceRows)}})
	return e, e.queueURL
}

// receive takes every visible message off queue, by slice number. A message
// whose body is one of skip is dropped: a failed slice's retry, sent with a
// delay of real seconds, becomes visible whenever those have passed, which
// a test that has already delivered the retry itself must not depend on.
func (e *env) receive(queue string, skip ...string) map[int]string {
	e.t.Helper()
	got := map[int]string{}
	for {
		out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: &queue, MaxNumberOfMessages: 10})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return got
		}
		for _, m := range out.Messages {
			msg, err := jobs.Parse(e.svc.Catalog, aws.ToString(m.Body))
			if err != nil || msg.Slice == nil {
				e.t.Fatalf("queue message %s: %v (want a slice)", aws.ToString(m.Body), err)
			}
			if _, dup := got[msg.Slice.Slice]; dup {
				e.t.Errorf("slice %d was sent twice", msg.Slice.Slice)
			}
			if !slices.Contains(skip, aws.ToString(m.Body)) {
				got[msg.Slice.Slice] = aws.ToString(m.Body)
			}
			if _, err := e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: &queue, ReceiptHandle: m.ReceiptHandle}); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

// delayed is the number of messages of queue waiting out a delay.
func (e *env) delayed(queue string) string {
	e.t.Helper()
	out, err := e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{QueueUrl: &queue,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)]
}

// planned runs the day's job and wants it planned in n slices: the
// partition still running, no _SUCCESS, n slice messages sent.
func (e *env) planned(queue string, n int) (ledger.Claim, map[int]string) {
	e.t.Helper()
	c := e.claim("events", testDay, "")
	if err := e.process(jobBody(e.t, c)); err != nil {
		e.t.Fatal(err)
	}
	if r := e.row("events", testDay); r.State != ledger.StateRunning || r.ClaimToken != c.Token {
		e.t.Fatalf("after the plan the partition is %s (token %s), want running under its claim", r.State, r.ClaimToken)
	}
	e.noSuccess()
	bodies := e.receive(queue)
	if len(bodies) != n {
		e.t.Fatalf("%d slice messages, want %d", len(bodies), n)
	}
	return c, bodies
}

func (e *env) noSuccess() {
	e.t.Helper()
	if b := e.get(e.partPrefix("events", testDay) + layout.SuccessName); b != nil {
		e.t.Fatalf("_SUCCESS exists before the last slice: %s", b)
	}
}

// exactlyOnce reads the delivered day back with DuckDB: every source row
// once.
func (e *env) exactlyOnce(want int64) {
	e.t.Helper()
	db := duckcheck.Open(e.t)
	var n, distinct int64
	q := "SELECT count(*), count(DISTINCT event_id) FROM " + fromClause(e.download(), mustDataset(e.t, "events"), "")
	if err := db.QueryRow(q).Scan(&n, &distinct); err != nil {
		e.t.Fatal(err)
	}
	if n != want || distinct != want {
		e.t.Errorf("DuckDB reads %d rows, %d distinct event ids; want each of the %d source rows once", n, distinct, want)
	}
}

// slicedFiles checks the manifest lists slice files, in slice order, and
// returns the slices they come from.
func slicedFiles(t *testing.T, m *manifest.Manifest) []int {
	t.Helper()
	var keys []string
	var from []int
	for _, f := range m.Files {
		keys = append(keys, f.Key)
		name := f.Key[strings.LastIndex(f.Key, "/")+1:]
		var s, n int
		if _, err := fmt.Sscanf(name, "part-s%04d-%05d.parquet", &s, &n); err != nil {
			t.Fatalf("manifest file %s is not a slice's part file: %v", f.Key, err)
		}
		if len(from) == 0 || from[len(from)-1] != s {
			from = append(from, s)
		}
	}
	if !slices.IsSorted(keys) {
		t.Errorf("manifest files are not in slice order: %v", keys)
	}
	return from
}

// TestSlicedDayCommitsOnceWithACrashedSlice: a day forced into 3 slices,
// one of which fails once and is retried alone and one whose run dies and
// is taken over after its lease, commits once, after its last slice, with
// every row exactly once; no _SUCCESS exists before; later deliveries of
// the slices change nothing.
func TestSlicedDayCommitsOnceWithACrashedSlice(t *testing.T) {
	e, queue := slicedEnv(t, 1000)
	const rows = 3000
	e.insert("events", genRows("events", testDay, rows)...)
	c, bodies := e.planned(queue, 3)
	key := e.key("events", testDay)
	pp := e.partPrefix("events", testDay)

	// Slice 1 fails (its first file's upload) and sends itself again,
	// delayed by the ledger's backoff.
	e.failOnce(putOf("part-s0001-00000.parquet"))
	if err := e.process(bodies[1]); err != nil {
		t.Fatalf("a failed slice is recorded and re-sent, not redelivered: %v", err)
	}
	_, sls, err := e.led.Slices().SlicesOf(e.ctx, key)
	if err != nil || sls[1].State != ledger.StateFailed || sls[1].Attempts != 1 || !strings.Contains(sls[1].LastError, "injected fault") {
		t.Fatalf("slice 1 after its failure: %+v, %v", sls, err)
	}
	if d := e.delayed(queue); d != "1" {
		t.Errorf("%s messages delayed, want slice 1's retry", d)
	}
	e.faults.Set(nil, nil)

	// Slice 2's run starts and dies: its message is dropped while the dead
	// run's lease lives.
	dead, err := e.led.Slices().StartSlice(e.ctx, key, c.Token, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.process(bodies[2]); err != nil {
		t.Fatal(err)
	}
	if _, sls, _ := e.led.Slices().SlicesOf(e.ctx, key); sls[2].RunToken != dead.RunToken || sls[2].State != ledger.StateRunning {
		t.Fatalf("slice 2 was run under the dead run's live lease: %+v", sls[2])
	}

	if err := e.process(bodies[0]); err != nil {
		t.Fatal(err)
	}
	e.noSuccess()
	if err := e.process(bodies[1]); err != nil { // the retry
		t.Fatal(err)
	}
	e.noSuccess()
	e.clk.Advance(testLease + time.Second)
	if err := e.process(bodies[2]); err != nil { // the dead run's message, back after its visibility timeout
		t.Fatal(err)
	}

	m := e.committed("events", testDay)
	if m.Totals.Rows != rows || m.Generation != c.Generation || m.Provenance.RowCount != rows {
		t.Errorf("manifest: generation %d, %d rows (source %d), want generation %d, %d rows", m.Generation, m.Totals.Rows, m.Provenance.RowCount, c.Generation, rows)
	}
	if from := slicedFiles(t, m); !slices.Equal(from, []int{0, 1, 2}) {
		t.Errorf("files from slices %v, want 0, 1, 2", from)
	}
	if r := e.row("events", testDay); r.Attempts != 1 || r.Rows != rows {
		t.Errorf("ledger row %+v: the partition's one attempt, %d rows", r, rows)
	}
	e.exactlyOnce(rows)

	// Every slice delivered again: nothing is written, nothing sent.
	puts := e.faults.Calls(buckettest.OpPut, pp+layout.SuccessName)
	for i := range 3 {
		if err := e.process(bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.faults.Calls(buckettest.OpPut, pp+layout.SuccessName); n != puts {
		t.Errorf("redelivered slices wrote _SUCCESS %d more times", n-puts)
	}
	if again := e.receive(queue, bodies[1]); len(again) != 0 {
		t.Errorf("redelivered slices sent %d messages", len(again))
	}
}

// TestSkewedDaySlicesEvenly (issue 25 §2): a day with 80% of its rows in
// one hour is planned from its rows (the source's index), each slice item
// carrying its own range, and its slices hold within 1.25x of the mean
// rows, where equal time ranges would put most of the day into one; every
// row is delivered once.
func TestSkewedDaySlicesEvenly(t *testing.T) {
	e, queue := slicedEnv(t, 750)
	const rows = 3000
	in := genRows("events", testDay, rows)
	hot := testDay.Start(time.UTC).Add(14 * time.Hour)
	for i, r := range in {
		if i%5 != 0 {
			ts := hot.Add(time.Duration(int64(i)*2654435761%3_600_000_000) * time.Microsecond)
			r[2], r[3] = ts, ts.Add(time.Second)
		}
	}
	e.insert("events", in...)
	_, bodies := e.planned(queue, 4)
	for i := range 4 {
		if err := e.process(bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	plan, sls, err := e.led.Slices().SlicesOf(e.ctx, e.key("events", testDay))
	if err != nil || len(plan.Bounds) != 3 || len(sls) != 4 {
		t.Fatalf("plan %+v, %d slices, %v: want 3 bounds from the rows", plan, len(sls), err)
	}
	var counts, equal []int64
	for _, sl := range sls {
		counts = append(counts, sl.Rows)
	}
	q := partitionQuery(e.acct, mustDataset(t, "events"), testDay)
	for i := range 4 {
		sq, n := sliceQuery(q, i, 4), int64(0)
		for _, r := range in {
			if ts := r[2].(time.Time); !ts.Before(sq.Start) && ts.Before(sq.End) {
				n++
			}
		}
		equal = append(equal, n)
	}
	t.Logf("rows per slice %v; equal time ranges would give %v", counts, equal)
	largest := func(c []int64) float64 { return float64(slices.Max(c)) * 4 / rows }
	if l := largest(counts); l > 1.25 {
		t.Errorf("the largest slice holds %.2fx the mean rows, want at most 1.25x: %v", l, counts)
	}
	if l := largest(equal); l <= 1.25 {
		t.Errorf("equal time ranges give %.2fx: the day is not skewed", l)
	}
	e.exactlyOnce(rows)
}

// TestShrunkDayExportsInOneRun: a day exported in slices that later holds
// fewer rows than the target is exported in one run (sized by the source's
// row count, not the previous generation's), and its commit removes the
// slices' files.
func TestShrunkDayExportsInOneRun(t *testing.T) {
	e, queue := slicedEnv(t, 1000)
	e.insert("events", genRows("events", testDay, 2500)...)
	_, bodies := e.planned(queue, 3)
	for i := range 3 {
		if err := e.process(bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	if m := e.committed("events", testDay); m.Totals.Rows != 2500 {
		t.Fatalf("sliced generation: %d rows", m.Totals.Rows)
	}
	res, err := e.db.Exec("DELETE FROM events WHERE account_id = ? AND event_id >= ?", e.acct.ID, fmt.Sprintf("evt_%s_%06d", testDay, 400))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2100 {
		t.Fatalf("deleted %d rows", n)
	}
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	m := e.committed("events", testDay)
	want := layout.DataKey(e.prefix, "events", testDay, 0, ".parquet")
	if m.Generation != 2 || m.Totals.Rows != 400 || len(m.Files) != 1 || m.Files[0].Key != want {
		t.Errorf("after shrinking: generation %d, %d rows, files %v; want generation 2, 400 rows in %s", m.Generation, m.Totals.Rows, m.Files, want)
	}
	if sent := e.receive(queue); len(sent) != 0 {
		t.Errorf("the shrunk day was planned in %d slices", len(sent))
	}
	e.exactlyOnce(400)
}

// TestConcurrentSlicesCommitOnce: every slice of a day delivered twice,
// all at once: one commit, one _SUCCESS, one manifest, every row once.
func TestConcurrentSlicesCommitOnce(t *testing.T) {
	e, queue := slicedEnv(t, 500)
	const rows = 2000
	e.insert("events", genRows("events", testDay, rows)...)
	c, bodies := e.planned(queue, 4)
	pp := e.partPrefix("events", testDay)
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(bodies))
	for range 2 {
		for _, b := range bodies {
			wg.Go(func() { errs <- e.process(b) })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := e.faults.Calls(buckettest.OpPut, pp+layout.SuccessName); n != 1 {
		t.Errorf("_SUCCESS written %d times, want once", n)
	}
	if n := e.faults.Calls(buckettest.OpPut, pp+layout.ManifestName); n != 1 {
		t.Errorf("_manifest.json written %d times, want once", n)
	}
	m := e.committed("events", testDay)
	if m.Generation != c.Generation || m.Totals.Rows != rows {
		t.Errorf("manifest: generation %d, %d rows", m.Generation, m.Totals.Rows)
	}
	if from := slicedFiles(t, m); !slices.Equal(from, []int{0, 1, 2, 3}) {
		t.Errorf("files from slices %v, want 0 to 3", from)
	}
	e.exactlyOnce(rows)
}

// TestSliceQueryPartitionsTheWindow: the slices' ranges are contiguous,
// half-open and cover the window, for any number of slices and a window
// that is not a whole number of microseconds per slice.
func TestSliceQueryPartitionsTheWindow(t *testing.T) {
	day := civil.MustParse("2026-03-29") // 23 hours in Europe/Berlin
	q := partitionQuery(account.Account{ID: "acct_aaaaaaaaaaaaaaaa", TimeZone: "Europe/Berlin"}, mustDataset(t, "events"), day)
	if q.End.Sub(q.Start) != 23*time.Hour {
		t.Fatalf("window %s to %s", q.Start, q.End)
	}
	for _, n := range []int{2, 3, 7, 100, 1000} {
		prev := q.Start
		for i := range n {
			s := sliceQuery(q, i, n)
			if !s.Start.Equal(prev) || !s.Start.Before(s.End) {
				t.Fatalf("%d slices: slice %d is [%s, %s), want it to start at %s", n, i, s.Start, s.End, prev)
			}
			prev = s.End
		}
		if !prev.Equal(q.End) {
			t.Fatalf("%d slices end at %s, want the window's end %s", n, prev, q.End)
		}
	}
}

// completeFailsOnce answers the first Complete with an error, as a run
// that stopped after its commit and before the ledger heard of it.
type completeFailsOnce struct {
	LedgerAPI
	failed bool
}

func (c *completeFailsOnce) Complete(ctx context.Context, key partition.Key, token string, res ledger.Result) (ledger.Row, error) {
	if !c.failed {
		c.failed = true
		return ledger.Row{}, errInjected
	}
	return c.LedgerAPI.Complete(ctx, key, token, res)
}

// TestSlicedCommitRecordedAfterItsRunStopped: the run of the last slice
// commits and stops before Complete; the redelivery of its message records
// the commit without writing the partition again.
func TestSlicedCommitRecordedAfterItsRunStopped(t *testing.T) {
	e, queue := slicedEnv(t, 1000)
	e.insert("events", genRows("events", testDay, 2000)...)
	c, bodies := e.planned(queue, 2)
	pp := e.partPrefix("events", testDay)
	if err := e.process(bodies[0]); err != nil {
		t.Fatal(err)
	}
	e.svc.Ledger = &completeFailsOnce{LedgerAPI: e.svc.Ledger}
	if err := e.process(bodies[1]); err == nil {
		t.Fatal("a commit the ledger did not record must be delivered again")
	}
	if r := e.row("events", testDay); r.State != ledger.StateRunning || e.get(pp+layout.SuccessName) == nil {
		t.Fatalf("after the stopped run: row %s, want running with the partition committed", r.State)
	}
	written := func() int {
		return e.faults.Calls(buckettest.OpPut, pp+layout.SuccessName) + e.faults.Calls(buckettest.OpPut, pp+layout.ManifestName) +
			e.faults.Count(buckettest.OpDeleteObjects)
	}
	before := written()
	e.clk.Advance(testLease + time.Second) // the message comes back after the commit's lease
	if err := e.process(bodies[1]); err != nil {
		t.Fatal(err)
	}
	if n := written() - before; n != 0 {
		t.Errorf("recording the stopped commit wrote or deleted under the partition %d times", n)
	}
	m := e.committed("events", testDay)
	if m.Generation != c.Generation || m.Totals.Rows != 2000 {
		t.Errorf("manifest: generation %d, %d rows", m.Generation, m.Totals.Rows)
	}
}

// TestFailedSlicedDayWaitsForItsSlices: a slice out of attempts fails the
// day's attempt while another slice still runs; the day is not due again
// before that slice's lease ends, a manual re-export before it writes
// nothing, and the day exported after it holds every row once.
func TestFailedSlicedDayWaitsForItsSlices(t *testing.T) {
	e, queue := slicedEnv(t, 1000)
	const rows = 3000
	e.insert("events", genRows("events", testDay, rows)...)
	c, bodies := e.planned(queue, 3)
	key := e.key("events", testDay)
	pp := e.partPrefix("events", testDay)
	running, err := e.led.Slices().StartSlice(e.ctx, key, c.Token, 2) // a slice still running
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 3; attempt++ { // MaxAttempts
		e.failOnce(putOf("part-s0001-00000.parquet"))
		if err := e.process(bodies[1]); err != nil {
			t.Fatal(err)
		}
	}
	e.faults.Set(nil, nil)
	r := e.row("events", testDay)
	if r.State != ledger.StateFailed || r.NextAttemptAt.Before(running.LeaseUntil) || !strings.Contains(r.LastError, "injected fault") {
		t.Fatalf("after the slice's last attempt: %s, next attempt %s, error %q; want failed, not before %s", r.State, r.NextAttemptAt, r.LastError, running.LeaseUntil)
	}

	writes := e.faults.Count(buckettest.OpPut) + e.faults.Count(buckettest.OpDelete)
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	if r := e.row("events", testDay); r.State != ledger.StateFailed || !strings.Contains(r.LastError, "may still be writing") || r.NextAttemptAt.Before(running.LeaseUntil) {
		t.Fatalf("manual re-export while a slice runs: %s, %q, next attempt %s; want failed, not due before %s", r.State, r.LastError, r.NextAttemptAt, running.LeaseUntil)
	}
	if n := e.faults.Count(buckettest.OpPut) + e.faults.Count(buckettest.OpDelete) - writes; n > 1 { // the delivery manifest
		t.Errorf("the refused run wrote %d objects", n)
	}

	e.clk.Set(running.LeaseUntil.Add(time.Second))
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	bodies = e.receive(queue, bodies[1]) // the failed plan's delayed retries of slice 1
	if len(bodies) != 3 {
		t.Fatalf("the re-export planned %d slices", len(bodies))
	}
	for i := range 3 {
		if err := e.process(bodies[i]); err != nil {
			t.Fatal(err)
		}
	}
	m := e.committed("events", testDay)
	if m.Totals.Rows != rows || e.get(pp+layout.SuccessName) == nil {
		t.Errorf("after the re-export: %d rows", m.Totals.Rows)
	}
	e.exactlyOnce(rows)
}

// TestLastSliceHandsTheCommitOn: the last slice finishes with too little of
// its invocation left to commit; it sends its message again and the fresh
// invocation commits.
func TestLastSliceHandsTheCommitOn(t *testing.T) {
	e, queue := slicedEnv(t, 1000)
	e.insert("events", genRows("events", testDay, 2000)...)
	_, bodies := e.planned(queue, 2)
	if err := e.process(bodies[0]); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithDeadline(e.ctx, time.Now().Add(DefaultReserve+minCommitTime-30*time.Second))
	defer cancel()
	if err := e.svc.Process(short, "short", bodies[1]); err != nil {
		t.Fatal(err)
	}
	e.noSuccess()
	again := e.receive(queue)
	if len(again) != 1 || again[1] == "" {
		t.Fatalf("handed on %v, want slice 1's message", again)
	}
	if err := e.process(again[1]); err != nil {
		t.Fatal(err)
	}
	if m := e.committed("events", testDay); m.Totals.Rows != 2000 {
		t.Errorf("%d rows", m.Totals.Rows)
	}
}

// TestSliceOfAChangedDestinationFailsThePlan: the account's destination
// changed after the plan; its slices write nothing there, and the day's
// attempt fails at once, to be planned again for the new destination.
func TestSliceOfAChangedDestinationFailsThePlan(t *testing.T) {
	e, queue := slicedEnv(t, 1000)
	e.insert("events", genRows("events", testDay, 2000)...)
	_, bodies := e.planned(queue, 2)
	a := e.acct
	a.Destination.Format = "ndjson"
	if err := e.led.Accounts().PutAccount(e.ctx, a); err != nil {
		t.Fatal(err)
	}
	puts := e.faults.Count(buckettest.OpPut)
	if err := e.process(bodies[0]); err != nil {
		t.Fatal(err)
	}
	if n := e.faults.Count(buckettest.OpPut) - puts; n > 1 { // the delivery manifest
		t.Errorf("the slice wrote %d objects", n)
	}
	if r := e.row("events", testDay); r.State != ledger.StateFailed || !strings.Contains(r.LastError, "destination changed") {
		t.Fatalf("after the slice: %s, %q; want the attempt failed", r.State, r.LastError)
	}
}

// TestSliceRedeliveryWritesTheDeliveryManifest: the run that committed the
// day failed to write its delivery manifest; the redelivery of its slice's
// message writes it, as a job's redelivery does.
func TestSliceRedeliveryWritesTheDeliveryManifest(t *testing.T) {
	e, queue := slicedEnv(t, 1000)
	e.insert("events", genRows("events", testDay, 2000)...)
	c, bodies := e.planned(queue, 2)
	if err := e.process(bodies[0]); err != nil {
		t.Fatal(err)
	}
	delivery := layout.DeliveryManifestKey(e.prefix, testDay)
	e.failOnce(func(call buckettest.Call) bool { return call.Op == buckettest.OpPut && call.Key == delivery })
	if err := e.process(bodies[1]); err == nil {
		t.Fatal("a delivery manifest that was not written must bring the message back")
	}
	if e.get(delivery) != nil {
		t.Fatal("the delivery manifest exists after its write failed")
	}
	if err := e.process(bodies[1]); err != nil {
		t.Fatal(err)
	}
	if d := e.delivery(testDay); !d.Complete || len(d.DatasetsDelivered) != 1 || d.DatasetsDelivered[0].Generation != c.Generation {
		t.Errorf("delivery manifest after the redelivery: %+v", d)
	}
}

// TestPlanFor: when a day is planned in slices, in how many, and the plan.
func TestPlanFor(t *testing.T) {
	events, stats := mustDataset(t, "events"), mustDataset(t, "daily_stats")
	const dest = "bucket|prefix|parquet|snappy|"
	for _, tc := range []struct {
		name      string
		ds        dataset.Dataset
		perSlice  int64
		maxSlices int
		rows      int64 // the fingerprint's count; -1: none
		prevRows  int64 // the previous generation's
		want      int   // 0: not sliced
	}{
		{"slicing off", events, 0, 0, 5000, 0, 0},
		{"at the target", events, 1000, 0, 1000, 0, 0},
		{"just above", events, 1000, 0, 1001, 0, 2},
		{"the count wins over the previous generation", events, 1000, 0, 500, 9000, 0},
		{"no count: the previous generation's rows", events, 1000, 0, -1, 2500, 3},
		{"no count and no generation yet", events, 1000, 0, -1, 0, 0},
		{"capped by MAX_SLICES", events, 10, 4, 1_000_000, 0, 4},
		{"capped by the default", events, 1, 0, 1_000_000, 0, DefaultMaxSlices},
		{"a dataset partitioned on a date", stats, 1000, 0, 5000, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Exporter{Catalog: datasettest.Example(t), Config: ExportConfig{SliceRows: tc.perSlice, MaxSlices: tc.maxSlices}}
			tg := &target{destination: dest,
				Partition: Partition{Dataset: tc.ds, Claim: ledger.Claim{Token: "tok", Prev: ledger.Row{Rows: tc.prevRows}}, RunID: "run"}}
			n := e.slicesFor(tg, tc.rows)
			if n != tc.want {
				t.Fatalf("slices %d, want %d", n, tc.want)
			}
			if n == 0 {
				return
			}
			plan := e.planOf(tg, 3, n, tc.rows, content{fp: ledger.Fingerprint{Value: "fp"}, started: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)})
			expected := tc.rows
			if expected < 0 {
				expected = tc.prevRows
			}
			if plan.Slices != n || plan.ExpectedRows != expected || plan.Generation != 3 || plan.Token != "tok" || plan.Destination != dest ||
				plan.Fingerprint.Value != "fp" || plan.RunID != "run" {
				t.Errorf("plan %+v", plan)
			}
		})
	}
}
