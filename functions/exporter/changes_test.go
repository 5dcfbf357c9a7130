//go:build !noduckdb

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/outbox"
	"github.com/daybook-dev/daybook/shared/partition"
)

// countingBus counts the publishes of each event id; its first fail calls
// fail.
type countingBus struct {
	mu   sync.Mutex
	n    map[string]int
	fail int
}

func (b *countingBus) Publish(_ context.Context, _ string, detail any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail > 0 {
		b.fail--
		return errors.New("bus unavailable")
	}
	raw, ok := detail.(json.RawMessage)
	if !ok {
		return fmt.Errorf("published %T, not the recorded detail", detail)
	}
	var d struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || d.ID == "" {
		return fmt.Errorf("detail %s has no id: %v", raw, err)
	}
	if b.n == nil {
		b.n = map[string]int{}
	}
	b.n[d.ID]++
	return nil
}

// crashingStore lets its first RecordEvent take effect, then fails it, as
// a run that died right after recording.
type crashingStore struct {
	outbox.Store
	crash bool
}

func (s *crashingStore) RecordEvent(ctx context.Context, ev ledger.Event) (bool, error) {
	ok, err := s.Store.RecordEvent(ctx, ev)
	if err == nil && s.crash {
		s.crash = false
		return ok, errInjected
	}
	return ok, err
}

// crashingComplete lets its first Complete take effect, then fails it.
type crashingComplete struct {
	LedgerAPI
	crash bool
}

func (l *crashingComplete) Complete(ctx context.Context, key partition.Key, token string, res ledger.Result) (ledger.Row, error) {
	row, err := l.LedgerAPI.Complete(ctx, key, token, res)
	if err == nil && l.crash {
		l.crash = false
		return row, errInjected
	}
	return row, err
}

// TestCrashAfterSuccessRecordsOnce re-exports a committed partition and
// stops the run at each point after its _SUCCESS (S3 calls and ledger
// writes that take effect and then fail, as a crash right after them; a
// bus that is down). After recovery (the ledger's retry, a redelivered
// message, a sweep's republish) every committed generation has exactly one
// recorded event, published at least once, with its stable id, and exactly
// one change-log entry.
func TestCrashAfterSuccessRecordsOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		// arm sets the crash up.
		arm func(e *env, store *crashingStore, led *crashingComplete, bus *countingBus)
		// retry: the crash failed the run, and the ledger's retry runs it
		// again, which commits one more generation.
		retry bool
	}{
		{"after _SUCCESS", func(e *env, _ *crashingStore, _ *crashingComplete, _ *countingBus) {
			e.crashOnceAfter(putOf(layout.SuccessName))
		}, true},
		{"after the change-log entry", func(e *env, _ *crashingStore, _ *crashingComplete, _ *countingBus) {
			e.crashOnceAfter(func(c buckettest.Call) bool {
				return c.Op == buckettest.OpPut && strings.Contains(c.Key, "/"+layout.ChangesDir+"/")
			})
		}, true},
		{"after the event is recorded", func(_ *env, s *crashingStore, _ *crashingComplete, _ *countingBus) { s.crash = true }, true},
		{"after Complete, the bus down", func(_ *env, _ *crashingStore, l *crashingComplete, b *countingBus) {
			l.crash, b.fail = true, 1
		}, false},
		{"the publish fails", func(_ *env, _ *crashingStore, _ *crashingComplete, b *countingBus) { b.fail = 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			bus := &countingBus{}
			store := &crashingStore{Store: e.fnLedger().Outbox()}
			ob := &outbox.Outbox{Store: store, Bus: bus, On: true}
			e.svc.Lifecycle.Outbox = ob
			led := &crashingComplete{LedgerAPI: e.svc.Ledger}
			e.svc.Ledger = led
			e.insert("events", genRows("events", testDay, 20)...)
			e.export("events", testDay)

			tc.arm(e, store, led, bus)
			err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()}))
			e.faults.Set(nil, nil)
			want := int64(2)
			if tc.retry {
				if err != nil {
					t.Fatalf("a recorded failure is a done message: %v", err)
				}
				if r := e.retry("events", testDay); r.State != ledger.StateCompleted {
					t.Fatalf("after the retry: %+v", r)
				}
				want = 3
			}
			// A sweep, a grace later, publishes what is pending (the
			// sweeper's outbox: the test's ledger plays it).
			e.clk.Advance(time.Minute)
			sweep := &outbox.Outbox{Store: e.led.Outbox(), Bus: bus, On: true}
			if _, err := sweep.Republish(e.ctx, e.clk.Now(), 0); err != nil {
				t.Fatal(err)
			}
			if r := e.row("events", testDay); r.Generation != want || e.committed("events", testDay).Generation != want {
				t.Fatalf("row %+v, want generation %d committed", r, want)
			}

			evs, err := e.led.Outbox().Events(e.ctx, e.key("events", testDay))
			if err != nil {
				t.Fatal(err)
			}
			var gens []int64
			for _, ev := range evs {
				if ev.Kind != ledger.EventCommitted {
					continue
				}
				gens = append(gens, ev.Generation)
				id := events.CommittedID(e.acct.ID, "events", testDay.String(), ev.Generation)
				if ev.ID != id || ev.Pending() || bus.n[id] < 1 {
					t.Errorf("event of generation %d: id %s, pending %v, published %d times", ev.Generation, ev.ID, ev.Pending(), bus.n[id])
				}
			}
			if !slices.Equal(gens, wantGenerations(want)) {
				t.Errorf("recorded events of generations %v, want one each of %v", gens, wantGenerations(want))
			}
			entries := e.changes()
			var changed []int64
			for _, c := range entries {
				changed = append(changed, c.Generation)
				if c.ID != events.CommittedID(e.acct.ID, "events", testDay.String(), c.Generation) || c.Dataset != "events" || c.Day != testDay.String() {
					t.Errorf("change-log entry %+v", c)
				}
			}
			slices.Sort(changed)
			if !slices.Equal(changed, wantGenerations(want)) {
				t.Errorf("change-log entries of generations %v, want one each of %v", changed, wantGenerations(want))
			}
		})
	}
}

func wantGenerations(n int64) []int64 {
	var out []int64
	for g := int64(1); g <= n; g++ {
		out = append(out, g)
	}
	return out
}

// changes reads the account's change log, in key order.
func (e *env) changes() []events.Change {
	e.t.Helper()
	var out []events.Change
	for _, k := range sortedKeys(e.list(layout.ChangesPrefix(e.prefix))) {
		var c events.Change
		if err := json.Unmarshal(e.get(k), &c); err != nil {
			e.t.Fatalf("%s: %v", k, err)
		}
		out = append(out, c)
	}
	return out
}

// readmeBlock returns the first fenced block of lang after the heading
// "## "+heading in the README md.
func readmeBlock(t *testing.T, md, heading, lang string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("the README has no section %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```"+lang+"\n")
	if !ok {
		t.Fatalf("section %q has no %s block", heading, lang)
	}
	block, _, _ := strings.Cut(rest, "```")
	return block
}

// TestChangeLogAsTheReadmeShows runs the bucket README's DuckDB query
// ("what changed since your last run") as written, on a copy of the bucket
// with its URI and time edited: two days exported, then one of them again
// three hours later. Since the second run's start it lists that day's new
// generation alone; since before everything, each day once, at its newest
// generation, with the rows before and after.
func TestChangeLogAsTheReadmeShows(t *testing.T) {
	e := newEnv(t, envOpts{})
	other := testDay.AddDays(1)
	e.insert("events", genRows("events", testDay, 7)...)
	e.insert("events", genRows("events", other, 5)...)
	first := e.clk.Now()
	e.export("events", testDay)
	e.export("events", other)
	e.clk.Advance(3 * time.Hour)
	lastRun := e.clk.Now()
	e.clk.Advance(time.Minute)
	e.insert("events", genRows("events", testDay, 9)[7:]...)
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatal(err)
	}
	if m := e.committed("events", testDay); m.Generation != 2 || m.Totals.Rows != 9 {
		t.Fatalf("re-export: generation %d, %d rows", m.Generation, m.Totals.Rows)
	}

	dir := e.download()
	readme, err := os.ReadFile(filepath.Join(dir, layout.Version, layout.ReadmeName))
	if err != nil {
		t.Fatal(err)
	}
	query := readmeBlock(t, string(readme), bucketdocs.ChangesQueryHeading, "sql")
	uri := "s3://" + e.acct.Destination.Bucket + "/" + e.prefix + "/"
	if !strings.Contains(query, uri) || !strings.Contains(query, bucketdocs.ChangesLastRun) {
		t.Fatalf("the README's query reads neither %s nor the example time:\n%s", uri, query)
	}
	query = strings.ReplaceAll(query, uri, filepath.ToSlash(dir)+"/")
	db := duckcheck.Open(t)
	run := func(since time.Time) []string {
		t.Helper()
		stmts := strings.Split(strings.ReplaceAll(query, bucketdocs.ChangesLastRun, since.UTC().Format("2006-01-02 15:04:05+00")), ";\n")
		if _, err := db.Exec(stmts[0]); err != nil {
			t.Fatalf("%s: %v", stmts[0], err)
		}
		rows, err := db.Query(stmts[1])
		if err != nil {
			t.Fatalf("%s: %v", stmts[1], err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var ds, reason, key string
			var day time.Time
			var gen, before, after int64
			if err := rows.Scan(&ds, &day, &gen, &reason, &before, &after, &key); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s %s g%d %s %d->%d %s", ds, day.Format(time.DateOnly), gen, reason, before, after, strings.TrimPrefix(key, e.prefix+"/")))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	mk := func(d string) string { return "v1/events/dt=" + d + "/_manifest.json" }
	for _, tc := range []struct {
		since time.Time
		want  []string
	}{
		{lastRun, []string{"events " + testDay.String() + " g2 manual 7->9 " + mk(testDay.String())}},
		{first.Add(-24 * time.Hour), []string{
			"events " + testDay.String() + " g2 manual 7->9 " + mk(testDay.String()),
			"events " + other.String() + " g1 scheduled 0->5 " + mk(other.String()),
		}},
		{e.clk.Now().Add(2 * time.Hour), nil},
	} {
		if got := run(tc.since); !slices.Equal(got, tc.want) {
			t.Errorf("changed since %s:\n got %q\nwant %q", tc.since.UTC().Format(time.RFC3339), got, tc.want)
		}
	}
}

// TestRecoveredEventKeepsItsReseed: a run of a reseed commits its day and
// dies before it records the event; the retry recovers the event from the
// committed manifest, and that event still says which reseed the
// generation was made for (it said reseed false before). The retry's own
// generation counts for the reseed too.
func TestRecoveredEventKeepsItsReseed(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"profiles"}})
	e.withLifecycle()
	e.svc.Lifecycle.Outbox = &outbox.Outbox{Store: e.fnLedger().Outbox(), Bus: &countingBus{}, On: true}
	e.svc.Queue = &recordingQueue{}
	e.acct.StartDate = testDay
	if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
		t.Fatal(err)
	}
	e.insert("profiles", genRows("profiles", testDay, 3)...)
	if err := e.process(reseedBody(t, e.acct.ID, "profiles", "r1")); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Second)
	e.crashOnceAfter(putOf(layout.SuccessName))
	if r := e.export("profiles", testDay); r.State != ledger.StateFailed {
		t.Fatalf("the run that died after _SUCCESS: %+v", r)
	}
	e.faults.Set(nil, nil)
	if r := e.retry("profiles", testDay); r.State != ledger.StateCompleted || r.SeedEpoch != 1 {
		t.Fatalf("the retry: %+v", r)
	}
	evs, err := e.led.Outbox().Events(e.ctx, e.key("profiles", testDay))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]events.Committed{}
	for _, ev := range evs {
		if ev.Kind != ledger.EventCommitted {
			continue
		}
		var d events.Committed
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			t.Fatalf("event detail %s: %v", ev.Detail, err)
		}
		seen[ev.Generation] = d
	}
	if len(seen) != 2 {
		t.Fatalf("committed events %v, want generations 1 and 2", seen)
	}
	for g, d := range seen {
		if !d.Reseed || d.SeedEpoch != 1 {
			t.Errorf("the event of generation %d says reseed %v, epoch %d; want reseed true, epoch 1", g, d.Reseed, d.SeedEpoch)
		}
	}
}
