//go:build !noduckdb

package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/outbox"
	"github.com/daybook-dev/daybook/shared/partition"
)

// A _SUCCESS and a _manifest.json are the customer's objects: anyone who
// can write to the bucket can plant a pair that commits whatever the
// manifest says. These tests plant one under an account's own partition
// and check that daybook acts only on what its claim says: no event, change
// entry or outbox item names another account, dataset, day or generation,
// no stored generation comes from a manifest, and nothing outside the
// account's prefix changes.

// plantCommit writes m and a _SUCCESS committing it as generation gen into
// e's partition of ds and day, as a customer could.
func (e *env) plantCommit(ds string, day civil.Date, gen int64, m *manifest.Manifest) {
	e.t.Helper()
	pp := e.partPrefix(ds, day)
	body, err := json.Marshal(m)
	if err != nil {
		e.t.Fatal(err)
	}
	marker := manifest.NewSuccess(gen, "run_planted", pp+layout.ManifestName, body, e.clk.Now()).Encode()
	for key, b := range map[string][]byte{pp + layout.ManifestName: body, pp + layout.SuccessName: marker} {
		if _, err := e.s3.PutObject(e.ctx, &s3.PutObjectInput{Bucket: &e.acct.Destination.Bucket, Key: &key, Body: bytes.NewReader(b)}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// objectsOutside is every object of e's bucket outside e's prefix, by ETag.
func (e *env) objectsOutside() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	for k, etag := range e.world("events").objects {
		if !layout.Within(k, e.prefix) {
			out[k] = etag
		}
	}
	return out
}

// eventIDs is the ids of the events recorded for the partitions keys names:
// what another account's own exports recorded before a plant.
func (e *env) eventIDs(keys ...partition.Key) map[string]bool {
	e.t.Helper()
	ids := map[string]bool{}
	for _, k := range keys {
		evs, err := e.led.Outbox().Events(e.ctx, k)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, ev := range evs {
			ids[ev.ID] = true
		}
	}
	return ids
}

// eventsOnlyOf checks that every event recorded for the partitions keys
// names (beyond e.eventsBefore, which their own exports recorded) and
// every event the bus got is one of e's partition of ds and day, of the
// generations want, each recorded once; and that the change log holds
// those generations' entries alone.
func (e *env) eventsOnlyOf(ds string, day civil.Date, bus *countingBus, want []int64, keys ...partition.Key) {
	e.t.Helper()
	t := e.t
	own := e.key(ds, day)
	var gens []int64
	for _, k := range append([]partition.Key{own}, keys...) {
		evs, err := e.led.Outbox().Events(e.ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if k != own {
				if !e.eventsBefore[ev.ID] {
					t.Errorf("an event is recorded under %s: %+v", k, ev)
				}
				continue
			}
			if ev.Kind != ledger.EventCommitted {
				continue
			}
			var d struct {
				Account, Dataset, Day string
				Generation            int64
			}
			if err := json.Unmarshal(ev.Detail, &d); err != nil {
				t.Fatal(err)
			}
			if d.Account != e.acct.ID || d.Dataset != ds || d.Day != day.String() || d.Generation != ev.Generation {
				t.Errorf("recorded event %s names account %s, dataset %s, day %s, generation %d", ev.ID, d.Account, d.Dataset, d.Day, d.Generation)
			}
			gens = append(gens, ev.Generation)
		}
	}
	slices.Sort(gens)
	if !slices.Equal(gens, want) {
		t.Errorf("committed events of generations %v, want %v", gens, want)
	}
	bus.mu.Lock()
	ids := slices.Sorted(maps.Keys(bus.n))
	bus.mu.Unlock()
	for _, id := range ids {
		if !strings.HasPrefix(id, e.acct.ID+"/"+ds+"/"+day.String()+"/") {
			t.Errorf("published event id %s is not of %s", id, own)
		}
	}
	var changed []int64
	for _, c := range e.changes() {
		changed = append(changed, c.Generation)
		if c.Dataset != ds || c.Day != day.String() || !strings.HasPrefix(c.ID, e.acct.ID+"/") {
			t.Errorf("change-log entry %+v is not of %s", c, own)
		}
	}
	slices.Sort(changed)
	if !slices.Equal(changed, want) {
		t.Errorf("change-log entries of generations %v, want %v", changed, want)
	}
}

// TestPlantedCommitIsNotRecovered: after generation 1, a _SUCCESS of
// generation 2 (level with the next claim, which is what a run that died
// before Complete leaves) and a manifest it commits are planted, each
// manifest wrong in one way. The next run numbers its generation above the
// marker as always (3), but recovers nothing from the planted pair: no
// event or change entry of generation 2, none naming another account, no
// generation stored from the manifest, nothing outside the account's prefix
// changed. Before, the recovery published the planted manifest's account,
// day and generation.
func TestPlantedCommitIsNotRecovered(t *testing.T) {
	other := newEnv(t, envOpts{})
	other.insert("events", genRows("events", testDay, 4)...)
	if r := other.export("events", testDay); r.State != ledger.StateCompleted {
		t.Fatalf("the other account's export: %+v", r)
	}
	otherFile := other.committed("events", testDay).Files[0].Key
	nextDay := testDay.AddDays(1)
	for _, tc := range []struct {
		name   string
		forge  func(m *manifest.Manifest)
		others []partition.Key // where a forged event would be recorded
	}{
		{"another account", func(m *manifest.Manifest) { m.AccountID = other.acct.ID },
			[]partition.Key{{AccountID: other.acct.ID, Dataset: "events", Day: testDay}}},
		{"another day", func(m *manifest.Manifest) { m.Day = nextDay.String() }, nil},
		{"generation 2^63-1", func(m *manifest.Manifest) { m.Generation = math.MaxInt64 }, nil},
		{"a file of another account", func(m *manifest.Manifest) { m.Files[0].Key = otherFile }, nil},
		{"a key that is not a data file", func(m *manifest.Manifest) { m.Files[0].Key = strings.TrimSuffix(m.Files[0].Key, ".parquet") + ".csv" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{bucket: other.acct.Destination.Bucket})
			bus := &countingBus{}
			e.withLifecycle()
			e.svc.Lifecycle.Outbox = &outbox.Outbox{Store: e.led.Outbox(), Bus: bus, On: true}
			e.insert("events", genRows("events", testDay, 3)...)
			if r := e.export("events", testDay); r.State != ledger.StateCompleted || r.Generation != 1 {
				t.Fatalf("first export: %+v", r)
			}
			m, err := manifest.Decode(e.get(layout.ManifestKey(e.prefix, "events", testDay)))
			if err != nil {
				t.Fatal(err)
			}
			m.Generation, m.RunID = 2, "run_planted"
			tc.forge(m)
			others := append(tc.others, e.key("events", nextDay))
			e.eventsBefore = e.eventIDs(others...)
			e.plantCommit("events", testDay, 2, m)
			outside := e.objectsOutside()

			if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
				t.Fatal(err)
			}
			r := e.row("events", testDay)
			if got := e.committed("events", testDay); r.State != ledger.StateCompleted || r.Generation != 3 || got.Generation != 3 || got.AccountID != e.acct.ID {
				t.Fatalf("after the planted commit: row %s generation %d, manifest of %s generation %d; want completed, 3, %s, 3",
					r.State, r.Generation, got.AccountID, got.Generation, e.acct.ID)
			}
			e.eventsOnlyOf("events", testDay, bus, []int64{1, 3}, others...)
			if after := e.objectsOutside(); !maps.Equal(after, outside) {
				t.Errorf("objects outside %s changed:\nbefore %v\nafter  %v", e.prefix, outside, after)
			}
		})
	}
}

// TestPlantedCommitOfASlicedDay: while a day is exported in slices, a
// _SUCCESS of the plan's generation is planted with a manifest naming
// another account and the generation 2^63-1. The run of the last slice,
// which looks for a commit of its plan that a stopped run left, does not
// take it for one: it commits the slices itself, the ledger stores the
// plan's generation, and no event names the other account. Before, the
// planted manifest's generation reached Complete (and the next claim
// overflowed) and its account reached the event.
func TestPlantedCommitOfASlicedDay(t *testing.T) {
	e, queue := slicedEnv(t, 1000)
	bus := &countingBus{}
	e.withLifecycle()
	e.svc.Lifecycle.Outbox = &outbox.Outbox{Store: e.led.Outbox(), Bus: bus, On: true}
	e.insert("events", genRows("events", testDay, 2000)...)
	c, bodies := e.planned(queue, 2)
	if err := e.process(bodies[0]); err != nil {
		t.Fatal(err)
	}
	const otherAccount = "acct_aaaaaaaaaaaaaaaa"
	pp := e.partPrefix("events", testDay)
	e.plantCommit("events", testDay, c.Generation, &manifest.Manifest{FormatVersion: manifest.FormatVersion, Contract: layout.Version,
		AccountID: otherAccount, Dataset: "events", Day: testDay.String(), Generation: math.MaxInt64,
		Files: []manifest.File{{Key: pp + "part-s0000-00000.parquet", Rows: 1, Bytes: 1}}, Totals: manifest.Totals{Files: 1, Rows: 1, Bytes: 1}})
	if err := e.process(bodies[1]); err != nil {
		t.Fatal(err)
	}
	m := e.committed("events", testDay)
	if r := e.row("events", testDay); r.Generation != c.Generation || m.Generation != c.Generation || m.AccountID != e.acct.ID || m.Totals.Rows != 2000 {
		t.Fatalf("row generation %d, manifest of %s generation %d with %d rows; want %d, %s, %d, 2000",
			r.Generation, m.AccountID, m.Generation, m.Totals.Rows, c.Generation, e.acct.ID, c.Generation)
	}
	e.eventsOnlyOf("events", testDay, bus, []int64{c.Generation}, partition.Key{AccountID: otherAccount, Dataset: "events", Day: testDay})
	e.exactlyOnce(2000)
}
