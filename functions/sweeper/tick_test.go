package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// The tests below put a schedule tick and the function's clock on either
// side of a day's close: 31 March closes in UTC at 02:00 on 1 April
// (midnight plus the 2-hour settle delay). The scheduler fires at 01:59:45;
// the function runs at 02:00:30.
const (
	beforeClose = "2026-04-01T01:59:45Z"
	afterClose  = "2026-04-01T02:00:30Z"
)

// jobDays takes the jobs off queue and returns the days each account's
// jobs name, in the order sent.
func jobDays(t *testing.T, q *sqs.Client, queue string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, b := range drain(t, q, queue) {
		m, err := jobs.Parse(datasettest.Example(t), b)
		if err != nil || m.Job == nil {
			t.Fatalf("job message %s: %v", b, err)
		}
		out[m.Job.AccountID] = append(out[m.Job.AccountID], m.Job.Day)
	}
	for _, days := range out {
		slices.Sort(days)
	}
	return out
}

// TestSweepClosesTheDaysOfItsTick: a sweep closes the days closed at its
// tick, not at the instant it runs. The function runs after 31 March closed,
// for a tick before: it exports through 30 March; the next tick, at the
// close itself, exports 31 March; the first tick delivered again exports
// nothing and leaves the account's record closed through 31 March. What a
// sweep exports is a function of its event, whatever the hour it runs at;
// the local drivers send their clock as the tick, so a demo pinned to one
// instant exports the days closed at it.
func TestSweepClosesTheDaysOfItsTick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at(afterClose)
	l := newLedger(t, clk, "tick")
	a := newAccount(t, l, "tick", "2026-03-29")
	fn, q, jobsQueue, _ := asDeployed(t, clk, map[string]string{"SETTLE_DELAY": "2h"})
	for i, tc := range []struct {
		tick string
		want []string
	}{
		{beforeClose, []string{"2026-03-29", "2026-03-30"}},
		{"2026-04-01T02:00:00Z", []string{"2026-03-31"}},
		{beforeClose, nil},
	} {
		if i == 2 {
			// Its claims' leases are running: woken by hand, as by an
			// operator's retry, two minutes before the delivery.
			if err := l.Schedule().Wake(ctx, a.ID, clk.Now()); err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Minute)
		}
		res, err := fn.Handler.Invoke(ctx, json.RawMessage(`{"source":"daybook.schedule","scheduled_time":"`+tc.tick+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := jobDays(t, q, jobsQueue)[a.ID]; !slices.Equal(got, tc.want) {
			t.Errorf("the sweep for %s at %s sent jobs for %v, want %v", tc.tick, clk.Now(), got, tc.want)
		}
		if sum, _ := res.(Summary); sum.Accounts != 1 || !sum.AsOf.Equal(at(tc.tick).Now()) {
			t.Errorf("the sweep for %s at %s: %+v, want the account handled as of the tick", tc.tick, clk.Now(), res)
		}
	}
	woken, _, err := l.Schedule().WokenAccounts(ctx, ledger.Shard(a.ID), clk.Now().AddDate(0, 0, 1), 0)
	i := slices.IndexFunc(woken, func(w ledger.Woken) bool { return w.ID == a.ID })
	if err != nil || i < 0 || woken[i].ClosedThrough != civil.MustParse("2026-03-31") {
		t.Errorf("the account's record after the first tick again: %+v %v, want it closed through 2026-03-31", woken[max(i, 0):], err)
	}
}

// TestFanOutWorkersCloseTheDaysOfTheirSweep: the workers of a fanned-out
// sweep run later, from the sweep queue, and close the days of the sweep's
// tick, which their message carries: the sweep fans out before 31 March
// closes, its messages are delivered after, and the workers export through
// 30 March, as the sweep would have.
func TestFanOutWorkersCloseTheDaysOfTheirSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T01:59:50Z")
	l := newLedger(t, clk, "fanout")
	a1 := newAccount(t, l, "one", "2026-03-30")
	a2 := newAccount(t, l, "two", "2026-03-30")
	fn, q, jobsQueue, sweepQueue := asDeployed(t, clk, map[string]string{"FAN_OUT_ACCOUNTS": "1", "SETTLE_DELAY": "2h"})
	res, err := fn.Handler.Invoke(ctx, json.RawMessage(`{"source":"daybook.schedule","scheduled_time":"`+beforeClose+`"}`))
	if sum, _ := res.(Summary); err != nil || sum.FanOut == 0 {
		t.Fatalf("the scheduled sweep: %+v %v, want it fanned out", res, err)
	}
	shards := drain(t, q, sweepQueue)
	for _, b := range shards {
		var j ShardJob
		if err := json.Unmarshal([]byte(b), &j); err != nil || j.Sweep != beforeClose {
			t.Errorf("shard message %s: %v, want the sweep's tick %s", b, err, beforeClose)
		}
	}
	clk.Set(at(afterClose).Now())
	runShards(t, fn, shards)
	got := jobDays(t, q, jobsQueue)
	for _, a := range []string{a1.ID, a2.ID} {
		if !slices.Equal(got[a], []string{"2026-03-30"}) {
			t.Errorf("%s: the workers run at %s sent jobs for %v, want 2026-03-30 (the sweep's tick %s)", a, afterClose, got[a], beforeClose)
		}
	}
}

// TestClosesAsOf: the tick decides, unless it is in the future (a day is
// never closed before the function's clock closes it) or older than
// MaxTickAge (a replay); no tick is the clock.
func TestClosesAsOf(t *testing.T) {
	t.Parallel()
	tick := at(beforeClose).Now()
	for _, tc := range []struct {
		name string
		tick time.Time
		now  time.Time
		want time.Time
	}{
		{"a late run", tick, tick.Add(45 * time.Second), tick},
		{"at the tick", tick, tick, tick},
		{"as late as a tick may be", tick, tick.Add(MaxTickAge), tick},
		{"older: a replay", tick, tick.Add(MaxTickAge + time.Second), tick.Add(MaxTickAge + time.Second)},
		{"ahead of the clock", tick, tick.Add(-time.Second), tick.Add(-time.Second)},
		{"no tick", time.Time{}, tick, tick},
	} {
		if got := closesAsOf(tc.tick, tc.now); !got.Equal(tc.want) {
			t.Errorf("%s: closesAsOf(%s, %s) = %s, want %s", tc.name, tc.tick, tc.now, got, tc.want)
		}
	}
}

// TestTemplateSendsATickMaxTickAgeAdmits: the template's schedule sends the
// scheduler's tick as scheduled_time, and a tick it delivers is never older
// than MaxTickAge: the scheduler retries it for at most its event age, then
// Lambda keeps the asynchronous invocation for at most the function's.
func TestTemplateSendsATickMaxTickAgeAdmits(t *testing.T) {
	t.Parallel()
	body, err := samstack.Translate(context.Background(), "../../template.yaml", motoserver.Region)
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				FunctionName map[string]string
				Target       struct {
					Arn         map[string][]string `json:"Arn"`
					Input       string
					RetryPolicy struct{ MaximumEventAgeInSeconds int }
				}
				MaximumEventAgeInSeconds int
			}
		}
	}
	if err := json.Unmarshal(body, &tpl); err != nil {
		t.Fatal(err)
	}
	var scheduler, lambda int
	for id, r := range tpl.Resources {
		p := r.Properties
		switch {
		case r.Type == "AWS::Scheduler::Schedule" && slices.Equal(p.Target.Arn["Fn::GetAtt"], []string{"SweeperFunction", "Arn"}):
			var ev ScheduleEvent
			if err := json.Unmarshal([]byte(p.Target.Input), &ev); err != nil || ev.ScheduledTime != "<aws.scheduler.scheduled-time>" {
				t.Errorf("%s sends %s (%v), want the scheduled time as scheduled_time", id, p.Target.Input, err)
			}
			scheduler = p.Target.RetryPolicy.MaximumEventAgeInSeconds
		case r.Type == "AWS::Lambda::EventInvokeConfig" && p.FunctionName["Ref"] == "SweeperFunction":
			lambda = p.MaximumEventAgeInSeconds
		}
	}
	if scheduler == 0 || lambda == 0 {
		t.Fatalf("the sweeper's schedule retry age %d s, its asynchronous event age %d s: want both set", scheduler, lambda)
	}
	if oldest := time.Duration(scheduler+lambda) * time.Second; oldest > MaxTickAge {
		t.Errorf("a tick may arrive %s after it fired, MaxTickAge is %s", oldest, MaxTickAge)
	}
}

// TestRestateWindowEndsAtTheTick: the restatement pass after a sweep takes
// its lookback window from the day closed at the sweep's tick, as the sweep
// does. With no settle delay 10 March closes at midnight: for a tick just
// before, the 7-day window is 3..9 March and 3 March's check is queued,
// though the pass runs just after, when the clock's window starts on 4 March.
func TestRestateWindowEndsAtTheTick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-03-11T00:00:30Z")
	l := newLedger(t, clk, "l")
	zero := time.Duration(0)
	a := storeAccount(t, l, accountSpec{salt: "a", start: "2026-02-20", tz: "UTC", settle: &zero})
	day := civil.MustParse("2026-03-03")
	completeWith(t, l, partition.Key{AccountID: a.ID, Dataset: "events", Day: day}, clk.Now().Add(-time.Minute))
	q := &checkQueue{}
	sum, err := newRestater(t, only(l, a), clk, q, restateCfg).Run(ctx, at("2026-03-10T23:59:45Z").Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.DeleteFunc(q.take(), func(s string) bool { return !strings.HasPrefix(s, a.ID+"/") }); !slices.Equal(got, []string{a.ID + "/events/" + day.String()}) {
		t.Errorf("checks queued %v (%+v), want 3 March's: in the window at the tick", got, sum)
	}
}
