package main

import (
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
)

var testRestate = ledger.RestateConfig{LookbackDays: 7, Interval: 6 * time.Hour, PerSweepCap: 50}

// withLifecycle turns on restatement checks and reseeds (no events).
func (e *env) withLifecycle() *output {
	if e.svc.Lifecycle == nil || e.svc.Lifecycle.Restate != testRestate {
		e.t.Fatalf("the exporter's lifecycle %+v: build gives it the test's restatement settings", e.svc.Lifecycle)
	}
	e.out.reset()
	return e.out
}

// checkBody is the sweeper's restate_check message for a completed row.
func checkBody(t *testing.T, r ledger.Row) string {
	t.Helper()
	b, err := jobs.Encode(jobs.RestateCheck{Kind: jobs.KindRestateCheck, AccountID: r.AccountID, Dataset: r.Dataset, Day: r.Day.String(), Generation: r.Generation})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lateEvents are n events of day that reach the source at arrived.
func lateEvents(day civil.Date, n int, arrived time.Time) [][]any {
	rows := genRows("events", day, n)
	for i, r := range rows {
		r[0] = r[0].(string) + "_late"
		r[3] = arrived.Add(time.Duration(i) * time.Second) // received_at; the insert copies it into inserted_at
	}
	return rows
}

// TestRestatementOfLateRows: rows that reach the source after a day's
// export are found by the restatement check and exported as exactly one
// new generation with the new count, which _manifest.json, the delivery
// manifest and the ledger all call a restatement; a day whose source did
// not change is never queued again.
func TestRestatementOfLateRows(t *testing.T) {
	e := newEnv(t, envOpts{})
	metricLines := e.withLifecycle()
	e.insert("events", genRows("events", testDay, 20)...)
	r := e.export("events", testDay)
	if r.Generation != 1 || r.Rows != 20 || r.Fingerprint.Value == "" {
		t.Fatalf("first export: %+v", r)
	}
	if want := e.clk.Now().Add(testRestate.Interval); !r.Fingerprint.CheckAt.Equal(want) {
		t.Fatalf("next check at %s, want %s", r.Fingerprint.CheckAt, want)
	}

	// Unchanged: the check queues nothing, however often it runs.
	for range 2 {
		e.clk.Advance(testRestate.Interval)
		if err := e.process(checkBody(t, r)); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.row("events", testDay); got.State != ledger.StateCompleted || got.Generation != 1 {
		t.Fatalf("an unchanged day was queued again: %+v", got)
	}
	if n := strings.Count(metricLines.String(), `"RestateChecks":1`); n != 2 {
		t.Fatalf("%d RestateChecks metric lines, want 2:\n%s", n, metricLines)
	}

	// Late rows: the next check queues a restatement, once.
	e.insert("events", lateEvents(testDay, 3, e.clk.Now())...)
	e.clk.Advance(testRestate.Interval)
	if err := e.process(checkBody(t, r)); err != nil {
		t.Fatal(err)
	}
	q := e.row("events", testDay)
	if q.State != ledger.StateQueued || q.Reason != partition.ReasonRestatement || !q.Restating() {
		t.Fatalf("after the check found late rows: %+v", q)
	}
	if err := e.process(checkBody(t, r)); err != nil { // a duplicate delivery of the check
		t.Fatal(err)
	}
	if !strings.Contains(metricLines.String(), `"RestatementsQueued":1`) {
		t.Fatalf("no RestatementsQueued metric:\n%s", metricLines)
	}

	// The next sweep claims it; the new generation replaces the day.
	r2 := e.export("events", testDay)
	m := e.committed("events", testDay)
	want := manifest.Restatement{PreviousGeneration: 1, PreviousRows: 20, Rows: 23}
	if r2.Generation != 2 || r2.Rows != 23 || m.Reason != manifest.ReasonRestatement || m.Restatement == nil || *m.Restatement != want {
		t.Fatalf("restated generation: row %+v, manifest reason %s restatement %+v", r2, m.Reason, m.Restatement)
	}
	d := e.delivery(testDay)
	if len(d.DatasetsDelivered) != 1 || d.DatasetsDelivered[0].Restatement == nil || *d.DatasetsDelivered[0].Restatement != want {
		t.Fatalf("delivery manifest %+v", d)
	}
	if r2.Fingerprint.Value == r.Fingerprint.Value || r2.Fingerprint.CheckAt.IsZero() {
		t.Fatalf("the new generation's fingerprint %+v (old %s)", r2.Fingerprint, r.Fingerprint.Value)
	}

	// Its check finds nothing new; the stale check of generation 1 is dropped.
	e.clk.Advance(testRestate.Interval)
	for _, body := range []string{checkBody(t, r2), checkBody(t, r)} {
		if err := e.process(body); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.row("events", testDay); got.State != ledger.StateCompleted || got.Generation != 2 {
		t.Fatalf("after checks of the restated day: %+v", got)
	}
	// A later generation that restates nothing no longer says so.
	e.insert("events", genRows("events", testDay.AddDays(1), 1)...) // another day: this one is unchanged
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	if m := e.committed("events", testDay); m.Generation != 3 || m.Restatement != nil {
		t.Fatalf("generation 3 restatement %+v", m.Restatement)
	}
	if d := e.delivery(testDay); d.DatasetsDelivered[0].Restatement != nil {
		t.Fatalf("delivery after generation 3: %+v", d.DatasetsDelivered[0])
	}
}

// TestRestatementWindow: a day older than the lookback window is exported
// with a fingerprint but no check, and a check that reaches it anyway (sent
// before the day left the window) leaves it alone, late rows or not.
func TestRestatementWindow(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.withLifecycle()
	old := civil.MustParse(testStart) // 2026-03-01; the window is 2026-03-03..2026-03-09
	e.insert("events", genRows("events", old, 5)...)
	r := e.export("events", old)
	if r.Fingerprint.Value == "" || !r.Fingerprint.CheckAt.IsZero() {
		t.Fatalf("a day outside the window: %+v", r.Fingerprint)
	}
	e.insert("events", lateEvents(old, 2, e.clk.Now())...)
	if err := e.process(checkBody(t, r)); err != nil {
		t.Fatal(err)
	}
	if got := e.row("events", old); got.State != ledger.StateCompleted || got.Generation != 1 {
		t.Fatalf("a day outside the window was queued: %+v", got)
	}
	// Without lifecycle configuration the exporter still stores the
	// fingerprint, schedules no check, and refuses a check message.
	e.svc.Lifecycle = nil
	e.insert("events", genRows("events", testDay, 2)...)
	r = e.export("events", testDay)
	if r.Fingerprint.Value == "" || !r.Fingerprint.CheckAt.IsZero() {
		t.Fatalf("without lifecycle: %+v", r.Fingerprint)
	}
	if err := e.process(checkBody(t, r)); err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("a check without lifecycle configuration: %v", err)
	}
}

// TestLifecycleSampleEvents: the sample restate check and reseed in events/
// are messages the exporter accepts, for the local account.
func TestLifecycleSampleEvents(t *testing.T) {
	for name, check := range map[string]func(jobs.Message) bool{
		"exporter-restate-check.json": func(m jobs.Message) bool {
			return m.RestateCheck != nil && m.RestateCheck.AccountID == "acct_localdemoaccount" && m.RestateCheck.Generation == 1
		},
		"exporter-reseed.json": func(m jobs.Message) bool {
			return m.Reseed != nil && m.Reseed.AccountID == "acct_localdemoaccount" && m.Reseed.Dataset == "profiles"
		},
	} {
		ev := loadEvent(t, "../../events/"+name)
		m, err := jobs.Parse(datasettest.Example(t), ev.Records[0].Body)
		if err != nil || !check(m) {
			t.Errorf("%s: %+v %v", name, m, err)
		}
	}
}
