package icetable

import (
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
)

// grow adds n days after day1 (one commit each; the first also creates
// the table) and returns the last table commit's result.
func (w *world) grow(tb *Table, n int) Result {
	w.t.Helper()
	var r Result
	for i := range n {
		r = mustAdd(w.t, tb, w.export(day1.AddDays(i), 1, 1, 2))
	}
	return r
}

// days are the n days grow adds, then more.
func days(n int, more ...civil.Date) []civil.Date {
	var out []civil.Date
	for i := range n {
		out = append(out, day1.AddDays(i))
	}
	return append(out, more...)
}

// keepMetadata makes every delete of a metadata file fail (a role without
// s3:DeleteObject, a bucket's object lock), so the metadata cleanup keeps
// every version, v1 included.
func (w *world) keepMetadata() {
	w.faults.Set(func(c buckettest.Call) error {
		if c.Op == buckettest.OpDelete && strings.HasSuffix(c.Key, ".metadata.json") {
			return errors.New("403 AccessDenied: the metadata cleanup's delete")
		}
		return nil
	}, nil)
}

func (w *world) exists(key string) bool {
	w.t.Helper()
	_, err := w.b.Head(w.ctx, key)
	if err != nil && !bucket.IsNotFound(err) {
		w.t.Fatal(err)
	}
	return err == nil
}

// setHint writes the version hint as body, or deletes it when missing.
func (w *world) setHint(body string, missing bool) {
	w.t.Helper()
	key := VersionHintKey(w.table().Location)
	var err error
	if missing {
		err = w.b.Delete(w.ctx, key)
	} else {
		err = w.b.Put(w.ctx, key, []byte(body), "text/plain")
	}
	if err != nil {
		w.t.Fatal(err)
	}
}

// TestUnusableHintFindsTheNewestVersion: the version hint is a shortcut in
// the customer's bucket: a lifecycle rule or a person deletes it, a tool
// overwrites it. When it cannot be used (missing, not a version, too
// large, naming a version that is not there, or more than maxProbe
// versions behind), the load lists the table's metadata folder once and
// takes the newest metadata file named as daybook names them, ignoring
// every other key; the next commit is that version + 1, and the hint is
// written again. Before, a hint that was missing or garbage made the load
// start at v1, which the metadata cleanup deletes after 21 commits: the
// load found no table and the table commit wrote a new one at v1 beside the
// old chain (a fork); with every version kept, it probed 32 versions and
// refused the table as broken; a hint ahead of the newest was refused as
// broken too.
func TestUnusableHintFindsTheNewestVersion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		commits int
		// keep: the metadata cleanup's deletes fail, so v1 and every
		// version after it stay.
		keep bool
		// hint is the hint's body given the newest version; missing: no hint.
		hint    func(newest int) string
		missing bool
		// plant are keys planted under the table's metadata/ folder (each
		// holding what no load accepts), given the newest version.
		plant func(newest int) []string
	}{
		{name: "hint missing, v1 expired", commits: 30, missing: true},
		{name: "garbage hint, v1 expired", commits: 30, hint: func(int) string { return "latest\n" }},
		{name: "hint too large, v1 expired", commits: 30, hint: func(int) string { return strings.Repeat("7", 65) }},
		{name: "hint past the version range", commits: 30, hint: func(int) string { return strconv.Itoa(1 << 30) }},
		{name: "hint names an expired version", commits: 30, hint: func(int) string { return "3" }},
		{name: "hint ahead of the newest", commits: 5, hint: func(n int) string { return strconv.Itoa(n + 3) }},
		{name: "garbage hint, more than 32 versions", commits: 40, keep: true, hint: func(int) string { return "latest" }},
		{name: "hint missing, more than 32 versions", commits: 40, keep: true, missing: true},
		{name: "hint more than 32 versions behind", commits: 40, keep: true, hint: func(int) string { return "2" }},
		{name: "planted keys", commits: 30, missing: true, plant: func(n int) []string {
			next := func(d int) string { return strconv.Itoa(n + d) }
			return []string{
				"v0" + next(1) + ".metadata.json",            // a leading zero
				"v9999999999.metadata.json",                  // past the version range
				"v" + strconv.Itoa(1<<30) + ".metadata.json", // the first past it
				"x/v" + next(2) + ".metadata.json",           // in a folder below
				"v" + next(3) + "/x.metadata.json",
				"v" + next(4) + ".metadata.json.tmp",
				"v" + next(5) + ".metadata.jsonx",
				"v+" + next(6) + ".metadata.json",
				"v-" + next(7) + ".metadata.json",
				"v" + next(8) + "a.metadata.json",
				"v" + next(9) + ".Metadata.json",
				"v.metadata.json",
				"v0.metadata.json",
				"V" + next(10) + ".metadata.json",
				"vv" + next(11) + ".metadata.json",
				"v " + next(12) + ".metadata.json",
			}
		}},
		{name: "planted keys beside a hint ahead", commits: 30, hint: func(n int) string { return strconv.Itoa(n + 1) }, plant: func(n int) []string {
			return []string{"v0" + strconv.Itoa(n+1) + ".metadata.json", "x/v" + strconv.Itoa(n+1) + ".metadata.json"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, true)
			tb := w.table()
			loc := tb.Location
			if tc.keep {
				w.keepMetadata()
			}
			newest := w.grow(tb, tc.commits).Version
			w.faults.Set(nil, nil)
			if want := tc.commits + 1; newest != want {
				t.Fatalf("%d table commits made v%d, want v%d", tc.commits, newest, want)
			}
			if v1 := w.exists(MetadataKey(loc, 1)); v1 != (tc.keep || tc.commits < keepMetadataVersions) {
				t.Fatalf("v1 exists: %v", v1)
			}
			if tc.plant != nil {
				for _, k := range tc.plant(newest) {
					if err := w.b.Put(w.ctx, loc+"/"+MetadataDir+"/"+k, []byte("not metadata"), "application/json"); err != nil {
						t.Fatal(err)
					}
				}
			}
			hint := ""
			if tc.hint != nil {
				hint = tc.hint(newest)
			}
			w.setHint(hint, tc.missing)

			lists := w.faults.Count(buckettest.OpList)
			next := w.export(day1.AddDays(tc.commits), 1, 1, 3)
			r, err := tb.Add(w.ctx, next)
			if err != nil {
				t.Fatalf("the table commit after the hint was made unusable: %v", err)
			}
			if r.Version != newest+1 || r.HintErr != nil {
				t.Fatalf("the table commit committed v%d (hint error %v), want v%d: the version after the newest", r.Version, r.HintErr, newest+1)
			}
			if n := w.faults.Count(buckettest.OpList) - lists; n != 1 {
				t.Errorf("the load listed %d times, want once", n)
			}
			if got, want := w.hint(t), strconv.Itoa(newest+1); got != want {
				t.Fatalf("hint %q after the table commit, want %q", got, want)
			}
			if !tc.keep && tc.commits >= keepMetadataVersions && w.exists(MetadataKey(loc, 1)) {
				t.Fatal("the table commit wrote a new v1: the table forked")
			}
			w.check(days(tc.commits + 1)...)

			// The hint is good again: the next load lists nothing.
			lists = w.faults.Count(buckettest.OpList)
			r = mustAdd(t, tb, w.export(day1.AddDays(tc.commits+1), 1, 1, 2))
			if r.Version != newest+2 {
				t.Fatalf("the next table commit committed v%d, want v%d", r.Version, newest+2)
			}
			if n := w.faults.Count(buckettest.OpList) - lists; n != 0 {
				t.Fatalf("a load with a good hint listed %d times", n)
			}
			w.check(days(tc.commits + 2)...)
		})
	}
}

// TestHintlessExportContinuesTheChain: on S3 (moto), a table whose v1 the
// metadata cleanup has deleted loses its version hint. The next table commit
// continues the chain as its next version; before, it found no table and
// wrote a new one at v1 (the conditional write succeeds, v1 being gone),
// whose hint "1" then led the table commit after it back into the old chain,
// so the day of the forked commit was lost from the table.
func TestHintlessExportContinuesTheChain(t *testing.T) {
	w := newWorld(t, false)
	tb := w.table()
	n := keepMetadataVersions + 4
	newest := w.grow(tb, n).Version
	w.setHint("", true)
	a := mustAdd(t, tb, w.export(day1.AddDays(n), 1, 1, 5))
	b := mustAdd(t, tb, w.export(day1.AddDays(n+1), 1, 1, 4))
	if a.Version != newest+1 || b.Version != newest+2 {
		t.Fatalf("the table commits after the hint's loss committed v%d and v%d, want v%d and v%d", a.Version, b.Version, newest+1, newest+2)
	}
	if w.exists(MetadataKey(tb.Location, 1)) {
		t.Fatal("a table commit wrote a new v1 beside the old chain")
	}
	w.check(days(n + 2)...)
}

// TestNoVersionListed: a folder with no metadata file is no table when no
// hint names a version (the first table commit lists once and creates v1), and
// a broken table when the hint names one: the metadata it named was
// deleted, and `daybook table repair` rebuilds the days from the ledger
// where a table commit would start an empty table.
func TestNoVersionListed(t *testing.T) {
	w := newWorld(t, true)
	tb := w.table()
	r := mustAdd(t, tb, w.export(day1, 1, 1, 2))
	if r.Version != 2 || w.faults.Count(buckettest.OpList) != 1 {
		t.Fatalf("the first table commit committed v%d after %d listings, want v2 after one", r.Version, w.faults.Count(buckettest.OpList))
	}
	for v := 1; v <= 2; v++ {
		if err := w.b.Delete(w.ctx, MetadataKey(tb.Location, v)); err != nil {
			t.Fatal(err)
		}
	}
	d := w.export(day2, 1, 1, 2)
	before := w.digest(tb.Location + "/")
	_, err := tb.Add(w.ctx, d)
	var be *BrokenError
	if !errors.As(err, &be) || be.Key != VersionHintKey(tb.Location) || !strings.Contains(err.Error(), "v2") {
		t.Fatalf("a hint naming v2 in a folder without metadata: %v, want a BrokenError of the hint naming v2", err)
	}
	if after := w.digest(tb.Location + "/"); !maps.Equal(before, after) {
		t.Fatalf("the refused table commit changed the table's folder: %d objects, before %d", len(after), len(before))
	}
}

// TestMetadataFloodIsBounded: the metadata folder is the customer's
// bucket's, so a load lists a bounded number of its v* keys. A flood
// planted there costs a load with a good hint nothing (it lists nothing);
// without a usable hint, the load stops a page past Limits.MetadataListed
// and the table is broken (ErrTableLimit) naming the folder and the limit,
// with nothing written.
func TestMetadataFloodIsBounded(t *testing.T) {
	w := newWorld(t, true)
	tb := w.table()
	newest := w.grow(tb, 2).Version
	dir := tb.Location + "/" + MetadataDir + "/"
	limit := DefaultLimits.MetadataListed
	for i := range limit {
		// Keys as daybook names versions, far above the newest: a load
		// that took one would read "not metadata" and fail.
		if err := w.b.Put(w.ctx, dir+"v"+strconv.Itoa(100_000+i)+".metadata.json", []byte("not metadata"), "application/json"); err != nil {
			t.Fatal(err)
		}
	}
	lists := w.faults.Count(buckettest.OpList)
	if r := mustAdd(t, tb, w.export(day1.AddDays(2), 1, 1, 2)); r.Version != newest+1 {
		t.Fatalf("with a good hint the table commit committed v%d, want v%d", r.Version, newest+1)
	}
	if n := w.faults.Count(buckettest.OpList) - lists; n != 0 {
		t.Fatalf("a load with a good hint listed %d times", n)
	}

	w.setHint("", true)
	d := w.export(day1.AddDays(3), 1, 1, 2)
	lists = w.faults.Count(buckettest.OpList)
	var err error
	if wrote := w.writes(func() { _, err = tb.Add(w.ctx, d) }); len(wrote) != 0 {
		t.Fatalf("the refused table commit wrote %v", wrote)
	}
	var be *BrokenError
	if !errors.As(err, &be) || !errors.Is(err, ErrTableLimit) || be.Key != dir ||
		!strings.Contains(err.Error(), w.b.URI(dir)) || !strings.Contains(err.Error(), strconv.Itoa(limit)) {
		t.Fatalf("a hintless load of a flooded folder: %v; want a BrokenError of %s, ErrTableLimit, naming the folder and the limit %d", err, dir, limit)
	}
	if n, want := w.faults.Count(buckettest.OpList)-lists, limit/1000+1; n != want {
		t.Fatalf("the load made %d listing requests, want %d (a page past the limit)", n, want)
	}
	t.Logf("refused: %v", err)
}

// TestListedVersion: only a key MetadataKey writes is a listed version.
func TestListedVersion(t *testing.T) {
	dir := "p/v1/events/metadata/"
	for key, want := range map[string]int{
		MetadataKey("p/v1/events", 7):               7,
		MetadataKey("p/v1/events", 1):               1,
		MetadataKey("p/v1/events", 1<<30-1):         1<<30 - 1,
		MetadataKey("p/v1/events", 1<<30):           0,
		dir + "v9999999999.metadata.json":           0,
		dir + "v99999999999999999999.metadata.json": 0,
		dir + "v07.metadata.json":                   0,
		dir + "v0.metadata.json":                    0,
		dir + "v.metadata.json":                     0,
		dir + "v-7.metadata.json":                   0,
		dir + "v+7.metadata.json":                   0,
		dir + "v7 .metadata.json":                   0,
		dir + "v٧.metadata.json":                    0, // an Arabic-Indic seven
		dir + "x/v7.metadata.json":                  0,
		dir + "v7/v8.metadata.json":                 0,
		dir + "v7.metadata.json/x":                  0,
		dir + "v7.metadata.json.tmp":                0,
		dir + "V7.metadata.json":                    0,
		dir + "version-hint.text":                   0,
		"p/v1/other/metadata/v7.metadata.json":      0,
		"p/v1/events/v7.metadata.json":              0,
	} {
		if got := listedVersion(dir, key); got != want {
			t.Errorf("listedVersion(%q) = %d, want %d", key, got, want)
		}
	}
}
