package chaos

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/hostbuild"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

func TestClassify(t *testing.T) {
	const pp = "/b/daybook/acct_x/v1/events/dt=2026-03-05/"
	for _, tc := range []struct {
		method, target string
		step           Step
		key            string
	}{
		{"GET", pp + "_SUCCESS?x-id=GetObject", StepBegin, "daybook/acct_x/v1/events/dt=2026-03-05/_SUCCESS"},
		{"DELETE", pp + "_SUCCESS?x-id=DeleteObject", StepBegin, "daybook/acct_x/v1/events/dt=2026-03-05/_SUCCESS"},
		{"PUT", pp + "part-00000.parquet?x-id=PutObject", StepData, "daybook/acct_x/v1/events/dt=2026-03-05/part-00000.parquet"},
		{"POST", pp + "part-00001.parquet?uploads=&x-id=CreateMultipartUpload", StepData, "daybook/acct_x/v1/events/dt=2026-03-05/part-00001.parquet"},
		{"PUT", pp + "part-00001.parquet?partNumber=2&uploadId=abc&x-id=UploadPart", StepData, "daybook/acct_x/v1/events/dt=2026-03-05/part-00001.parquet"},
		{"GET", "/b?list-type=2&prefix=daybook%2Facct_x%2Fv1%2Fevents%2Fdt%3D2026-03-05%2F", StepStale, "daybook/acct_x/v1/events/dt=2026-03-05/"},
		{"POST", "/b?delete=", StepStale, ""},
		{"GET", "/b?uploads=&prefix=daybook%2F", StepStale, "daybook/"},
		{"PUT", pp + "_manifest.json?x-id=PutObject", StepManifest, "daybook/acct_x/v1/events/dt=2026-03-05/_manifest.json"},
		{"PUT", pp + "_load/duckdb.sql?x-id=PutObject", StepManifest, "daybook/acct_x/v1/events/dt=2026-03-05/_load/duckdb.sql"},
		{"PUT", pp + "_SUCCESS?x-id=PutObject", StepSuccess, "daybook/acct_x/v1/events/dt=2026-03-05/_SUCCESS"},
		{"PUT", "/b/daybook/acct_x/v1/_manifests/dt=2026-03-05/manifest.json?x-id=PutObject", StepDelivery, "daybook/acct_x/v1/_manifests/dt=2026-03-05/manifest.json"},
		{"PUT", "/b/elsewhere.txt", StepOther, "elsewhere.txt"},
	} {
		r := classify(httptest.NewRequest(tc.method, tc.target, nil))
		if r.step != tc.step || r.key != tc.key {
			t.Errorf("%s %s: step %s key %q, want %s %q", tc.method, tc.target, r.step, r.key, tc.step, tc.key)
		}
	}
	a := classify(httptest.NewRequest("PUT", pp+"part-00001.parquet?partNumber=2&uploadId=abc", nil))
	b := classify(httptest.NewRequest("PUT", pp+"part-00001.parquet?partNumber=2&uploadId=xyz", nil))
	if a.id != b.id {
		t.Errorf("a part's identity depends on its upload id: %q, %q", a.id, b.id)
	}
}

// TestDecide: decisions are the seed's, request by request, whatever the
// order; kills stop at the budget; the rates are about right.
func TestDecide(t *testing.T) {
	rates := Rates{Kill: 0.1, Error: 0.1, Reset: 0.1, Drop: 0.1, Outage: 0.01}
	reqs := make([]request, 4000)
	for i := range reqs {
		reqs[i] = request{step: StepData, id: "PUT /b/k" + strconv.Itoa(i%500)}
	}
	draw := func(seed uint64, order []int, kills int) map[int]Kind {
		f := NewFaults(seed, rates, kills)
		out := map[int]Kind{}
		seen := map[string]int{}
		for _, i := range order {
			seen[reqs[i].id]++
			out[i] = f.decide(reqs[i])
		}
		return out
	}
	fwd, rev := make([]int, len(reqs)), make([]int, len(reqs))
	for i := range reqs {
		fwd[i], rev[i] = i, i
	}
	// Reversing the order of requests with distinct identities only.
	for i, j := 0, 499; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	a, b := draw(1, fwd, 1<<30), draw(1, rev, 1<<30)
	counts := map[Kind]int{}
	for i := range reqs {
		if a[i] != b[i] {
			t.Fatalf("request %d: %q in one order, %q in the other", i, a[i], b[i])
		}
		counts[a[i]]++
	}
	// Kills and errors are split in two kinds: 200 expected for each of
	// those, 400 for a reset and a drop.
	for _, k := range Kinds {
		want := 200
		switch k {
		case KindReset, KindDrop:
			want = 400
		case KindOutage:
			// 40 outages, each answered on every later request of its
			// identity (8 per identity here) up to outageRepeats more times.
			want = 40 * (1 + outageRepeats)
		}
		if n := counts[k]; n < want*6/10 || n > want*14/10 {
			t.Errorf("%s drawn %d times in 4000, want about %d", k, n, want)
		}
	}
	if c := draw(2, fwd, 1<<30); c[0] == a[0] && c[1] == a[1] && c[2] == a[2] && c[3] == a[3] && c[4] == a[4] && c[5] == a[5] {
		t.Error("another seed draws the same faults")
	}
	limited := draw(1, fwd, 5)
	kills := 0
	for _, k := range limited {
		if k == KindKillBefore || k == KindKillAfter {
			kills++
		}
	}
	if kills != 5 {
		t.Errorf("%d kills drawn with a budget of 5", kills)
	}
}

// buildBootstraps builds both functions' host bootstraps as `make build`
// lays them out, unless DAYBOOK_CHAOS_BIN names a build already made.
func buildBootstraps(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("DAYBOOK_CHAOS_BIN"); dir != "" {
		return dir
	}
	dir := t.TempDir()
	hostbuild.Bootstraps(t, dir, "SweeperFunction", "ExporterFunction")
	return dir
}

func run(t *testing.T, o Options) *Report {
	t.Helper()
	o.Dir, o.BinDir, o.Template, o.Log = t.TempDir(), buildBootstraps(t), "../../../template.yaml", t.Output()
	// Every call of every function instance is checked against its policy
	// in the template as the run deploys it.
	policies := iamcheck.ForStage(t, stage, nil)
	o.Endpoint = func(fn, upstream string, services map[string]string) string {
		return iamcheck.Endpoint(t, policies, iamcheck.Route{Function: fn, Upstream: upstream, Services: services})
	}
	rep, err := Run(t.Context(), o)
	if rep != nil {
		rep.Print(t.Output())
	}
	if err != nil {
		for _, name := range []string{"ExporterFunction-0", "ExporterFunction-1", "SweeperFunction-0"} {
			if b, _ := os.ReadFile(filepath.Join(o.Dir, "logs", name+".log")); len(b) > 0 {
				t.Logf("%s log tail:\n%s", name, b[max(0, len(b)-3000):])
			}
		}
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("%d invariants broken", len(rep.Problems))
	}
	if rep.Forged == 0 || rep.ForgedDeadLettered != rep.Forged {
		t.Fatalf("%d forged messages delivered, %d found dead-lettered: want some, all", rep.Forged, rep.ForgedDeadLettered)
	}
	if rep.Kills < o.Kills || rep.Checked.Partitions == 0 || rep.Checked.Commits < rep.Checked.Partitions {
		t.Fatalf("the run did not do what it was asked: %d kills, %d partitions checked, %d commits", rep.Kills, rep.Checked.Partitions, rep.Checked.Commits)
	}
	if tc := rep.Checked.Table; tc.Checks == 0 || tc.Days == 0 || tc.Files == 0 || tc.Rows == 0 {
		t.Fatalf("the Iceberg table check covered nothing: %+v", tc)
	}
	if a := rep.Accounts; a.Rounds == 0 || a.Created == 0 || a.Refused == 0 || a.Objects == 0 {
		t.Fatalf("the account races did not run: %+v", a)
	}
	if pl := rep.Planted; pl.Rounds == 0 || pl.Plants == 0 || pl.OutsideChecked == 0 || pl.EventsChecked == 0 {
		t.Fatalf("the planted commits did not run: %+v", pl)
	}
	if pl := rep.Iceberg; pl.Rounds == 0 || pl.Objects == 0 || pl.Checked == 0 || pl.Outside != 0 {
		t.Fatalf("the planted Iceberg metadata: %+v; want plants, objects compared, none outside the prefix changed", pl)
	}
	for _, store := range []string{StoreGCS, StoreAzure} {
		s := rep.Stores[store]
		for _, step := range []Step{StepData, StepManifest, StepSuccess, StepIceberg} {
			if s.Requests[step] == 0 || s.Faults[KindKillBefore][step]+s.Faults[KindKillAfter][step] == 0 {
				t.Errorf("%s %s: %d requests, no exporter killed there", store, step, s.Requests[step])
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return rep
}

// TestChaosShort is a small seeded run in the normal test suite: a few
// kills and faults on two days of data and one multipart file, then the
// self-test, which shows the check reports broken data.
func TestChaosShort(t *testing.T) {
	start := time.Now()
	run(t, Options{Seed: 11, Kills: 8, Days: 2, EventsPerDay: 20, BigRows: 4500, Reexports: 8, Duplicate: 0.15, StoreDatasets: []string{"events"},
		Rates: Rates{Kill: 0.04, Error: 0.03, Reset: 0.02, Drop: 0.03, Outage: 0.01, CreateDrop: 0.5, DeliveryKill: 0.15}, SelfTest: true})
	t.Logf("short chaos run: %s", time.Since(start).Round(time.Second))
}

// TestChaosSliced is the short run with the big day exported in 3 slices:
// slice runs killed, failed, delivered twice, their commit raced, and the
// same invariants checked.
func TestChaosSliced(t *testing.T) {
	start := time.Now()
	rep := run(t, Options{Seed: 12, Kills: 8, Days: 2, EventsPerDay: 20, BigRows: 4500, SliceRows: 2000, Reexports: 8, Duplicate: 0.15, StoreDatasets: []string{"events"},
		Rates: Rates{Kill: 0.04, Error: 0.03, Reset: 0.02, Drop: 0.03, Outage: 0.01, CreateDrop: 0.5, DeliveryKill: 0.15}})
	if rep.Checked.Sliced == 0 {
		t.Fatal("no partition was committed in slices")
	}
	t.Logf("sliced chaos run: %s", time.Since(start).Round(time.Second))
}

// TestChaos is the full run `make chaos` starts (DAYBOOK_CHAOS=1), with
// DAYBOOK_CHAOS_SEED and DAYBOOK_CHAOS_KILLS overriding Defaults.
func TestChaos(t *testing.T) {
	if os.Getenv("DAYBOOK_CHAOS") == "" {
		t.Skip("the full chaos run takes minutes: make chaos (DAYBOOK_CHAOS=1)")
	}
	o := Defaults
	if s := os.Getenv("DAYBOOK_CHAOS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DAYBOOK_CHAOS_SEED=%q: %v", s, err)
		}
		o.Seed = seed
	}
	if s := os.Getenv("DAYBOOK_CHAOS_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("DAYBOOK_CHAOS_KILLS=%q: want a positive number", s)
		}
		o.Kills = n
	}
	if s := os.Getenv("DAYBOOK_CHAOS_SLICE_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Fatalf("DAYBOOK_CHAOS_SLICE_ROWS=%q: want a number of rows (0: no slices)", s)
		}
		o.SliceRows = n
	}
	if rep := run(t, o); o.SliceRows > 0 && rep.Checked.Sliced == 0 {
		t.Fatal("no partition was committed in slices")
	}
}

// TestWorldDiff: the forged messages' check sees every kind of change.
func TestWorldDiff(t *testing.T) {
	k := partition.Key{AccountID: "acct_aaaaaaaaaaaaaaaa", Dataset: "events", Day: civil.MustParse("2026-03-05")}
	before := world{objects: map[string]string{"b/x": "e1 t1", "b/y": "e2 t2"}, rows: map[partition.Key]string{k: "completed updated t1"}}
	after := world{objects: map[string]string{"b/x": "e3 t3", "b/z": "e4 t4"}, rows: map[partition.Key]string{k: "completed updated t2"}}
	if d := before.diff(before); len(d) != 0 {
		t.Errorf("no change: %v", d)
	}
	got := strings.Join(before.diff(after), "; ")
	for _, want := range []string{"s3://b/x (rewritten)", "s3://b/y (deleted)", "s3://b/z (written)", "ledger row " + k.String()} {
		if !strings.Contains(got, want) {
			t.Errorf("diff %q misses %q", got, want)
		}
	}
}

// TestOverdueClaims: an expired claim still holding its row two sweeps later
// is a problem, reported once; one reclaimed (another token, another state,
// or the row gone) counts as reclaimed; one younger than two sweeps waits.
func TestOverdueClaims(t *testing.T) {
	key := func(day string) partition.Key {
		return partition.Key{AccountID: "acct_a", Dataset: "events", Day: civil.MustParse(day)}
	}
	running := func(day, token string) ledger.Row {
		return ledger.Row{Key: key(day), State: ledger.StateRunning, ClaimToken: token}
	}
	expired := map[partition.Key]expiry{
		key("2026-03-01"): {token: "old", sweeps: 3}, // still held, 2 sweeps on: overdue
		key("2026-03-02"): {token: "old", sweeps: 4}, // still held, 1 sweep on: waits
		key("2026-03-03"): {token: "old", sweeps: 3}, // reclaimed under a new token
		key("2026-03-04"): {token: "old", sweeps: 3}, // completed since
		key("2026-03-05"): {token: "old", sweeps: 3}, // row not read
	}
	rows := map[partition.Key]ledger.Row{
		key("2026-03-01"): running("2026-03-01", "old"),
		key("2026-03-02"): running("2026-03-02", "old"),
		key("2026-03-03"): running("2026-03-03", "new"),
		key("2026-03-04"): {Key: key("2026-03-04"), State: ledger.StateCompleted},
	}
	waiting, reclaimed, problems := overdueClaims(expired, rows, 5)
	if reclaimed != 3 {
		t.Errorf("reclaimed %d, want 3", reclaimed)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "2026-03-01") {
		t.Errorf("problems %q, want one for 2026-03-01", problems)
	}
	if len(waiting) != 1 || waiting[key("2026-03-02")].token != "old" {
		t.Errorf("waiting %+v, want only 2026-03-02", waiting)
	}
	if _, _, again := overdueClaims(waiting, rows, 6); len(again) != 1 || !strings.Contains(again[0], "2026-03-02") {
		t.Errorf("a sweep later: %q, want 2026-03-02 overdue", again)
	}
}

// TestChangeProblems: the check of events and change-log entries reports
// a committed generation without its event or entry, one recorded twice,
// an id that is not the stable one, and records of a generation that was
// never committed; a partition in order has none.
func TestChangeProblems(t *testing.T) {
	k := partition.Key{AccountID: "acct_aaaaaaaaaaaaaaaa", Dataset: "events", Day: civil.MustParse("2026-03-05")}
	seq := []Commit{{Generation: 1, RunID: "a"}, {Generation: 2, RunID: "b"}, {Generation: 2, RunID: "b"}}
	ev := func(g int64) ledger.Event {
		return ledger.Event{Key: k, Kind: ledger.EventCommitted, Generation: g, ID: events.CommittedID(k.AccountID, k.Dataset, k.Day.String(), g)}
	}
	ch := func(g int64) events.Change {
		return events.Change{Dataset: k.Dataset, Day: k.Day.String(), Generation: g}
	}
	stopped := ledger.Event{Key: k, Kind: ledger.EventStopped, Generation: 2, ID: "x"}
	badID := ev(2)
	badID.ID = "acct_aaaaaaaaaaaaaaaa/events/2"
	for _, tc := range []struct {
		name    string
		evs     []ledger.Event
		entries []events.Change
		want    []string
	}{
		{"in order", []ledger.Event{ev(1), ev(2), stopped}, []events.Change{ch(2), ch(1)}, nil},
		{"an event missing", []ledger.Event{ev(1)}, []events.Change{ch(1), ch(2)}, []string{"generation 2 committed, 0 events recorded, want 1"}},
		{"an entry twice", []ledger.Event{ev(1), ev(2)}, []events.Change{ch(1), ch(2), ch(2)}, []string{"generation 2 committed, 2 change-log entries, want 1"}},
		{"an entry missing", []ledger.Event{ev(1), ev(2)}, []events.Change{ch(1)}, []string{"generation 2 committed, 0 change-log entries, want 1"}},
		{"a wrong id", []ledger.Event{ev(1), badID}, []events.Change{ch(1), ch(2)}, []string{`the event of generation 2 has id "acct_aaaaaaaaaaaaaaaa/events/2"`}},
		{"never committed", []ledger.Event{ev(1), ev(2), ev(3)}, []events.Change{ch(1), ch(2), ch(3)}, []string{"generation 3 was never committed, yet has 1 events and 1 change-log entries"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := changeProblems(k, seq, tc.evs, tc.entries)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %q", got, tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) || !strings.HasPrefix(got[i], k.String()+": ") {
					t.Errorf("problem %q, want it to say %q", got[i], w)
				}
			}
		})
	}
}

// TestMain writes the tally of the policy checks of the runs' functions.
func TestMain(m *testing.M) { os.Exit(iamcheck.Main(m.Run)) }
