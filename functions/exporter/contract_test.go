//go:build !noduckdb

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TestContractTwoBesideOne: a catalog that drops a delivered column of
// events is refused at v1 (schema_mismatch, the column named); the same
// catalog with contract: v2 exports every day again under v2/events/ from
// rows of its own (events.v2), writes v2/_schemas/events.json, and leaves
// every byte under v1/ of events as it was, even when a v1 row of the
// dataset is claimed after the move. Both contracts' duckdb.sql load in
// DuckDB: v1's with user_id, v2's without.
func TestContractTwoBesideOne(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events"}})
	days := []civil.Date{testDay.AddDays(-1), testDay}
	for _, d := range append(days, testDay.AddDays(-2)) {
		e.insert("events", genRows("events", d, 3)...)
	}
	for _, d := range days {
		if row := e.export("events", d); row.State != ledger.StateCompleted {
			t.Fatalf("v1 export of %s: %+v", d, row)
		}
	}
	v1 := func() map[string][]byte {
		out := map[string][]byte{}
		for _, p := range []string{layout.ContractPrefix(e.prefix) + "events/", layout.ContractSchemaKey(e.prefix, "v1", "events")} {
			for k := range e.list(p) {
				out[k] = e.get(k)
			}
		}
		return out
	}
	for _, d := range days {
		if m := e.committed("events", d); m.Contract != "v1" {
			t.Errorf("v1 manifest of %s: contract %q", d, m.Contract)
		}
	}
	before := v1()
	if len(before) < 2*4 {
		t.Fatalf("v1 tree: %d objects", len(before))
	}

	e.useCatalog(func(s string) string { return strings.Replace(s, dropUserIDLine, "", 1) })
	row := e.export("events", testDay.AddDays(-2))
	if row.State != ledger.StateFailed {
		t.Fatalf("v1 export with a dropped column: %+v", row)
	}
	contains(t, "ledger error", row.LastError, "schema_mismatch: ", `column "user_id" removed`)

	e.useCatalog(func(s string) string {
		s = strings.Replace(s, dropUserIDLine, "", 1)
		return strings.Replace(s, "  - name: events\n    version: 1\n", "  - name: events\n    version: 1\n    contract: v2\n", 1)
	})
	for _, d := range days {
		if row := e.export("events.v2", d); row.State != ledger.StateCompleted {
			t.Fatalf("v2 export of %s: %+v", d, row)
		}
		if m := e.committed("events.v2", d); m.Dataset != "events" || m.Contract != "v2" || strings.Contains(string(e.get(layout.ManifestKey(e.prefix, "events.v2", d))), "user_id") {
			t.Errorf("v2 manifest of %s: dataset %q, contract %q, or it names user_id", d, m.Dataset, m.Contract)
		}
		if d := e.delivery(d); len(d.DatasetsDelivered) != 1 || d.DatasetsDelivered[0].Contract != "v2" || !strings.HasPrefix(d.DatasetsDelivered[0].Manifest, e.prefix+"/v2/events/") {
			t.Errorf("delivery manifest: %+v", d.DatasetsDelivered)
		}
	}
	doc := string(e.get(layout.ContractSchemaKey(e.prefix, "v2", "events")))
	if !strings.Contains(doc, `"contract": "v2"`) || strings.Contains(doc, "user_id") {
		t.Errorf("v2 schema document:\n%s", doc)
	}
	// A v1 row of the dataset claimed after the move writes nothing.
	if row := e.export("events", testDay.AddDays(-3)); row.State == ledger.StateCompleted {
		t.Errorf("a retired v1 row exported: %+v", row)
	}
	after := v1()
	if len(after) != len(before) {
		t.Errorf("v1 tree: %d objects before, %d after", len(before), len(after))
	}
	for k, b := range before {
		if !bytes.Equal(after[k], b) {
			t.Errorf("%s changed", k)
		}
	}

	// Load each contract's day as its duckdb.sql says, from a copy of the bucket.
	dir := e.download()
	root := strings.TrimSuffix(filepath.ToSlash(dir), e.prefix)
	for _, c := range []struct {
		tree   string
		userID bool
	}{{"events.v1", true}, {"events.v2", false}} {
		duck := duckcheck.Open(t)
		for _, d := range days {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(layout.LoadKey(e.prefix, c.tree, d, "duckdb"))))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := duck.Exec(strings.ReplaceAll(string(b), "s3://"+e.acct.Destination.Bucket+"/", root)); err != nil {
				t.Fatalf("%s duckdb.sql of %s: %v", c.tree, d, err)
			}
		}
		var n int
		if err := duck.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil || n != 6 {
			t.Errorf("%s: %d rows loaded (%v), want 6", c.tree, n, err)
		}
		var has int
		if err := duck.QueryRow(`SELECT count(*) FROM information_schema.columns WHERE table_name = 'events' AND column_name = 'user_id'`).Scan(&has); err != nil || (has == 1) != c.userID {
			t.Errorf("%s: user_id column present %v, want %v (%v)", c.tree, has == 1, c.userID, err)
		}
	}
}

// TestReexportAfterTheMoveReachesTheNewContract: after a dataset moves to
// v2, an operator's re-export of `events` (the catalog name, as daybook
// reexport and the console send it) exports the v2 partition. Before, it
// was refused as not enabled for the account, and a requeue reached the
// retired v1 row, which the exporter never exports again.
func TestReexportAfterTheMoveReachesTheNewContract(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events"}})
	e.insert("events", genRows("events", testDay, 3)...)
	e.useCatalog(func(s string) string {
		return strings.Replace(s, "  - name: events\n    version: 1\n", "  - name: events\n    version: 1\n    contract: v2\n", 1)
	})
	if err := e.process(manualBody(t, jobs.Manual{AccountID: e.acct.ID, Dataset: "events", Day: testDay.String()})); err != nil {
		t.Fatalf("re-export of events after the move: %v", err)
	}
	if r := e.row("events.v2", testDay); r.State != ledger.StateCompleted || r.Rows != 3 {
		t.Fatalf("the v2 row after the re-export: %+v", r)
	}
	if m := e.committed("events.v2", testDay); m.Dataset != "events" || !strings.HasPrefix(e.manifestKeyOf("events.v2", testDay), e.prefix+"/v2/events/") {
		t.Fatalf("committed %q at %s", m.Dataset, e.manifestKeyOf("events.v2", testDay))
	}
}

func (e *env) manifestKeyOf(ds string, day civil.Date) string {
	return layout.ManifestKey(e.prefix, ds, day)
}

// TestReseedAfterTheMoveReachesTheNewContract: a reseed of profiles (the
// catalog name) after it moved to v2 rebuilds the profiles.v2 rows: the
// seed is the v2 dataset's, and its days are queued as v2 rows.
func TestReseedAfterTheMoveReachesTheNewContract(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"profiles"}})
	e.withLifecycle()
	e.svc.Queue = &recordingQueue{}
	e.acct.StartDate = testDay
	if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
		t.Fatal(err)
	}
	e.useCatalog(func(s string) string {
		return strings.Replace(s, "  - name: profiles\n    version: 1\n", "  - name: profiles\n    version: 1\n    contract: v2\n", 1)
	})
	if err := e.process(reseedBody(t, e.acct.ID, "profiles", "r1")); err != nil {
		t.Fatalf("reseed of profiles after the move: %v", err)
	}
	if seed, err := e.led.Seeds().Seed(e.ctx, e.acct.ID, "profiles.v2"); err != nil || !seed.Running() {
		t.Fatalf("the v2 seed: %+v, %v", seed, err)
	}
	if r := e.row("profiles.v2", testDay); r.State != ledger.StateQueued || r.Reason != partition.ReasonReseed {
		t.Fatalf("the v2 row of %s: %+v", testDay, r)
	}
}

// TestEventIDsNameTheContract: the committed events and change-log
// entries of generation 1 of one day under v1 and under v2 have ids of
// their own (the v2 one names events.v2, the dataset's ledger name; the v1
// one is as it always was), so a consumer that drops repeats by id keeps
// both; each is recorded in the outbox under its own partition and
// published. On the old code both were acct/events/<day>/1, and the v2
// event was not even recorded (the v1 one held its outbox item).
func TestEventIDsNameTheContract(t *testing.T) {
	e := newEnv(t, envOpts{datasets: []string{"events"}})
	drain := e.eventQueue()
	e.insert("events", genRows("events", testDay, 3)...)
	if row := e.export("events", testDay); row.State != ledger.StateCompleted {
		t.Fatalf("v1 export: %+v", row)
	}
	e.clk.Advance(time.Minute) // the move is deployed later (a change-log key names the commit's second)
	e.useCatalog(func(s string) string {
		return strings.Replace(s, "  - name: events\n    version: 1\n", "  - name: events\n    version: 1\n    contract: v2\n", 1)
	})
	if row := e.export("events.v2", testDay); row.State != ledger.StateCompleted || row.Generation != 1 {
		t.Fatalf("v2 export: %+v", row)
	}
	v1ID, v2ID := e.acct.ID+"/events/"+testDay.String()+"/1", e.acct.ID+"/events.v2/"+testDay.String()+"/1"

	var published []string
	for _, ev := range drain() {
		var d struct {
			ID       string `json:"id"`
			Dataset  string `json:"dataset"`
			Contract string `json:"contract"`
		}
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			t.Fatal(err)
		}
		published = append(published, d.ID+" "+d.Dataset+" "+d.Contract)
	}
	slices.Sort(published)
	if want := []string{v2ID + " events v2", v1ID + " events v1"}; !slices.Equal(published, want) { // sorted: "." before "/"
		t.Errorf("published %q, want %q", published, want)
	}
	for _, c := range []struct {
		ds, id string
	}{{"events", v1ID}, {"events.v2", v2ID}} {
		evs, err := e.led.Outbox().Events(e.ctx, e.key(c.ds, testDay))
		if err != nil || len(evs) != 1 || evs[0].ID != c.id {
			t.Errorf("outbox of %s: %+v %v; want one event %s", c.ds, evs, err, c.id)
		}
	}
	var logged []string
	for _, c := range e.changes() {
		logged = append(logged, c.ID)
	}
	slices.Sort(logged)
	if want := []string{v2ID, v1ID}; !slices.Equal(logged, want) {
		t.Errorf("change-log ids %q, want %q", logged, want)
	}
}
