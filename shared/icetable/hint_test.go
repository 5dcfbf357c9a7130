package icetable

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
)

// hint is the text of the table's version hint ("" when it is missing).
func (w *world) hint(t testing.TB) string {
	t.Helper()
	b, err := w.b.Get(w.ctx, VersionHintKey(w.table().Location), 64)
	if err != nil {
		t.Fatalf("read the version hint: %v", err)
	}
	return string(b)
}

// failHint makes every write of the version hint fail, as an outage the
// SDK's retries do not outlast does, until the returned func is called.
func (w *world) failHint() func() {
	outage := errors.New("503 SlowDown: the hint's write outlasted the retries")
	w.faults.Set(func(c buckettest.Call) error {
		if c.Op == buckettest.OpPut && strings.HasSuffix(c.Key, "/"+VersionHintName) {
			return outage
		}
		return nil
	}, nil)
	return func() { w.faults.Set(nil, nil) }
}

// TestStaleHintIsRewritten: a withdrawal whose hint write fails leaves the
// hint one version behind, naming the snapshot that still holds the day: a
// reader that follows only the hint (DuckDB's iceberg_scan with version
// '?', the bucket README's `cat version-hint.text`) sees the day while its
// folder is being replaced. The table commit that follows writes the hint; but
// when the table commit had already been made (a repeated run finding
// the table right) or the day is withdrawn again for nothing, no commit is
// made, and before the no-op left the hint behind for good. Now any
// operation whose load went past the hint rewrites it.
func TestStaleHintIsRewritten(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fail commits, after day 2 was delivered, the operation whose hint
		// write fails, and returns its result and the table commit noop repeats.
		fail func(w *world, tb *Table, d Committed) (Result, Committed, error)
		// noop is the operation that finds the table already right.
		noop func(w *world, tb *Table, d Committed) Result
		days []civil.Date // in the table at the end
	}{
		{"repeated table commit",
			// The day is added again after a withdrawal, and its
			// hint write fails: the hint names the withdrawal, so a hint
			// reader lacks day 2 while its _SUCCESS is there.
			func(w *world, tb *Table, _ Committed) (Result, Committed, error) {
				mustWithdraw(w.t, tb, day2, 2)
				d := w.export(day2, 2, 1, 35)
				heal := w.failHint()
				defer heal()
				r, err := tb.Add(w.ctx, d)
				return r, d, err
			},
			func(w *world, tb *Table, d Committed) Result { return mustAdd(w.t, tb, d) },
			[]civil.Date{day1, day2}},
		{"repeated withdrawal",
			// The withdrawal's hint write fails: the hint names the
			// version that still holds day 2.
			func(w *world, tb *Table, d Committed) (Result, Committed, error) {
				heal := w.failHint()
				defer heal()
				r, err := tb.Withdraw(w.ctx, day2, 2)
				return r, d, err
			},
			func(w *world, tb *Table, d Committed) Result { return mustWithdraw(w.t, tb, d.Day, d.Generation+1) },
			[]civil.Date{day1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, false)
			tb := w.table()
			mustAdd(t, tb, w.export(day1, 1, 1, 40))
			d := w.export(day2, 1, 1, 30)
			mustAdd(t, tb, d)
			r, d, err := tc.fail(w, tb, d)
			if err != nil || !r.Changed {
				t.Fatalf("%s: the commit with a failed hint write: changed %v, %v (the commit stands)", tc.name, r.Changed, err)
			}
			if r.HintErr == nil {
				t.Error("the failed hint write is not reported in the Result")
			}
			if got, want := w.hint(t), strconv.Itoa(r.Version-1); got != want {
				t.Fatalf("after a failed hint write the hint is %q, want %q (one behind)", got, want)
			}
			r = tc.noop(w, tb, d)
			if r.Changed {
				t.Fatalf("the %s wrote a snapshot", tc.name)
			}
			if got, want := w.hint(t), strconv.Itoa(r.Version); got != want {
				t.Fatalf("after the %s the hint is %q, want %q (the newest version)", tc.name, got, want)
			}
			if r.HintErr != nil {
				t.Fatalf("the hint's rewrite: %v", r.HintErr)
			}
			w.check(tc.days...)
		})
	}
}

// TestHostileHintIsReplacedNotBelieved: the hint is the customer's
// bucket's content. One that is missing, too large, not a version's
// number as daybook writes it, or names a version above the newest is
// rewritten by the next operation as the newest version the load found,
// never copied. (Before, one above the newest was refused as a broken
// table.)
func TestHostileHintIsReplacedNotBelieved(t *testing.T) {
	w := newWorld(t, false)
	tb := w.table()
	d := w.export(day1, 1, 1, 40)
	r := mustAdd(t, tb, d)
	newest := strconv.Itoa(r.Version)
	key := VersionHintKey(tb.Location)
	for name, body := range map[string]string{
		"garbage":      "latest\n",
		"too large":    strings.Repeat("1", 65),
		"signed":       "+" + newest,
		"zero-padded":  "0" + newest,
		"lower":        "1",
		"negative":     "-" + newest,
		"huge":         "99999999999999999999",
		"missing":      "",
		"two versions": newest + " " + newest,
		"above":        strconv.Itoa(r.Version + 1),
		"far above":    strconv.Itoa(r.Version + 1000),
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			if name == "missing" {
				err = w.b.Delete(w.ctx, key)
			} else {
				err = w.b.Put(w.ctx, key, []byte(body), "text/plain")
			}
			if err != nil {
				t.Fatal(err)
			}
			r := mustAdd(t, tb, d)
			if r.Changed || r.HintErr != nil {
				t.Fatalf("repeated table commit: changed %v, hint %v", r.Changed, r.HintErr)
			}
			if got := w.hint(t); got != newest {
				t.Fatalf("hint %q after the table commit, want %q", got, newest)
			}
		})
	}
}

// TestHintRewriteYieldsToANewerCommit: an operation that found the hint
// behind and the table already right must not set the hint back under a
// writer that committed the next version meanwhile (and wrote its hint).
func TestHintRewriteYieldsToANewerCommit(t *testing.T) {
	w := newWorld(t, false)
	tb := w.table()
	d := w.export(day1, 1, 1, 40)
	mustAdd(t, tb, d)
	heal := w.failHint()
	r := mustAdd(t, tb, w.export(day2, 1, 1, 30))
	heal()
	if got := w.hint(t); got != strconv.Itoa(r.Version-1) {
		t.Fatalf("hint %q after its write failed", got)
	}
	// The repeated table commit of day 1 probes the version after the newest
	// twice: in its load, and before it rewrites the hint. Between the
	// two, another writer commits that version.
	next := MetadataKey(tb.Location, r.Version+1)
	var heads int
	var other Result
	var otherErr error
	w.faults.Set(func(c buckettest.Call) error {
		if c.Op == buckettest.OpHead && c.Key == next {
			if heads++; heads == 2 {
				other, otherErr = w.table().Add(w.ctx, w.export(civil.MustParse("2026-03-03"), 1, 1, 20))
			}
		}
		return nil
	}, nil)
	noop := mustAdd(t, tb, d)
	w.faults.Set(nil, nil)
	if heads < 2 {
		t.Fatalf("the version after the newest was probed %d times: the repeated table commit did not look before writing the hint", heads)
	}
	if otherErr != nil || !other.Changed || noop.Changed {
		t.Fatalf("the other writer: changed %v, %v; the repeated table commit changed %v", other.Changed, otherErr, noop.Changed)
	}
	if got, want := w.hint(t), strconv.Itoa(other.Version); got != want {
		t.Fatalf("hint %q, want the other writer's %q", got, want)
	}
}
