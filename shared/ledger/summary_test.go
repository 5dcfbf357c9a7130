package ledger

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// summaryFixture: stopped (one day stopped, one completed), failing (one
// day failed, will retry) and fine (two days completed), named so that a
// search for "alp" finds the last two.
type summaryFixture struct {
	clk                    *clock
	l                      *Ledger
	stopped, failing, fine string
	failingKey             partition.Key
}

func newSummaryFixture(t *testing.T) summaryFixture {
	t.Helper()
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	once, _ := newTestLedger(t, clk, func(c *Config) { c.MaxAttempts = 1 })
	r := seededRand(t)
	f := summaryFixture{clk: clk, l: l}
	for i, name := range []string{"Zeta Stopped Corp", "alpha failing", "Alpine Fine"} {
		id, err := account.NewID(r)
		if err != nil {
			t.Fatal(err)
		}
		a := account.Account{ID: id, Name: name, Enabled: true, StartDate: day1, Datasets: []string{"events"},
			Destination: account.Destination{Bucket: "daybook-exports-test"}}
		if err := l.Accounts().PutAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
		*[]*string{&f.stopped, &f.failing, &f.fine}[i] = id
	}
	run := func(l *Ledger, acct, day string, fail bool) partition.Key {
		k := partition.Key{AccountID: acct, Dataset: "events", Day: civil.MustParse(day)}
		c, err := l.Partitions().Claim(ctx, k, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Start(ctx, k, c.Token); err != nil {
			t.Fatal(err)
		}
		if fail {
			_, err = l.Partitions().Fail(ctx, k, c.Token, errors.New("source unreachable"))
		} else {
			_, err = l.Partitions().Complete(ctx, k, c.Token, Result{Rows: 1, Files: 1, Bytes: 1})
		}
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	for _, acct := range []string{f.stopped, f.failing, f.fine} {
		if _, err := l.Schedule().Materialize(ctx, acct, "events", civil.MustParse("2026-03-02"), civil.MustParse("2026-03-03")); err != nil {
			t.Fatal(err)
		}
	}
	run(once, f.stopped, "2026-03-02", true)
	run(l, f.stopped, "2026-03-03", false)
	f.failingKey = run(l, f.failing, "2026-03-02", true)
	run(l, f.fine, "2026-03-02", false)
	run(l, f.fine, "2026-03-03", false)
	return f
}

// TestFleetSummaries: each account's summary counts its rows by phase,
// the fleet pages give every account once, worst first, in pages of
// FleetShards queries, and a name search and an id find them.
func TestFleetSummaries(t *testing.T) {
	ctx := context.Background()
	f := newSummaryFixture(t)
	l := f.l
	f.clk.Advance(2 * StaleSettle)
	if err := refreshStale(ctx, l); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		acct     string
		counts   map[string]int
		oldest   string
		last     string
		failures int
		severity int
	}{
		{f.stopped, map[string]int{PhaseStopped: 1, PhaseCompleted: 1}, "2026-03-02", "2026-03-03", 1, 3},
		{f.failing, map[string]int{PhaseFailed: 1, PhaseQueued: 1}, "2026-03-02", "", 1, 2},
		{f.fine, map[string]int{PhaseCompleted: 2}, "", "2026-03-03", 0, 0},
	}
	for _, tt := range tests {
		s, err := l.Fleet().FleetSummary(ctx, tt.acct)
		if err != nil {
			t.Fatal(err)
		}
		for p, n := range s.Counts {
			if n != tt.counts[p] {
				t.Errorf("%s: %s = %d, want %v", tt.acct, p, n, tt.counts)
			}
		}
		if len(s.Counts) != len(tt.counts) || s.OldestDue != tt.oldest || s.LastExport != tt.last || len(s.Failures) != tt.failures || s.Severity() != tt.severity {
			t.Errorf("%s: %+v, want counts %v oldest %q last %q failures %d", tt.acct, s, tt.counts, tt.oldest, tt.last, tt.failures)
		}
	}

	// Every page of two: FleetShards queries, the three accounts once each,
	// worst first (the table holds other tests' accounts too).
	var order []string
	pages := 0
	for tok := ""; ; {
		p, err := l.Fleet().FleetPage(ctx, tok, 2)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if p.Stats.Queries > FleetShards || len(p.Summaries) > 2 {
			t.Fatalf("page %d: %d queries, %d summaries", pages, p.Stats.Queries, len(p.Summaries))
		}
		for i, s := range p.Summaries {
			if i > 0 && s.rank() < p.Summaries[i-1].rank() {
				t.Errorf("page %d out of order: %s before %s", pages, p.Summaries[i-1].rank(), s.rank())
			}
			if slices.Contains([]string{f.stopped, f.failing, f.fine}, s.Account) {
				order = append(order, s.Account)
			}
		}
		if p.Next == "" {
			break
		}
		tok = p.Next
	}
	if !slices.Equal(order, []string{f.stopped, f.failing, f.fine}) {
		t.Errorf("fleet order %v, want stopped, failing, fine %v", order, []string{f.stopped, f.failing, f.fine})
	}

	p, err := l.Fleet().SearchFleet(ctx, "ALP", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, s := range p.Summaries {
		found = append(found, s.Account)
	}
	if !slices.Contains(found, f.failing) || !slices.Contains(found, f.fine) || slices.Contains(found, f.stopped) ||
		slices.Index(found, f.failing) > slices.Index(found, f.fine) {
		t.Errorf("search alp: %v, want alpha failing then Alpine Fine, not Zeta", found)
	}
	if _, err := l.Fleet().FleetPage(ctx, "not-a-token", 2); !errors.Is(err, ErrBadPageToken) {
		t.Errorf("a made-up token: %v, want ErrBadPageToken", err)
	}
}

// TestSummaryRefreshes: a transition's mark is refreshed by the next
// sweep's RefreshStale and kept while younger than StaleSettle; a refused
// transition leaves no mark and changes no count; a refresh that read earlier never
// overwrites one that read later; a missing summary is built on its read
// by id.
func TestSummaryRefreshes(t *testing.T) {
	ctx := context.Background()
	f := newSummaryFixture(t)
	l := f.l
	marked := func(acct string) bool {
		t.Helper()
		marks, _, err := l.Fleet().StaleSummaries(ctx, Shard(acct), 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(marks, func(m StaleMark) bool { return m.Account == acct })
	}
	// No refresh yet: the summary is built on its first read by id.
	s, err := l.Fleet().FleetSummary(ctx, f.failing)
	if err != nil || s.Counts[PhaseFailed] != 1 {
		t.Fatalf("a missing summary read by id: %+v, %v", s, err)
	}

	// A young mark: refreshed, and kept for the next sweep.
	if err := refreshStale(ctx, l); err != nil {
		t.Fatal(err)
	}
	if !marked(f.failing) {
		t.Error("a mark younger than StaleSettle was removed")
	}
	f.clk.Advance(2 * StaleSettle)
	if err := refreshStale(ctx, l); err != nil {
		t.Fatal(err)
	}
	if marked(f.failing) {
		t.Error("a settled mark stayed after its refresh")
	}

	// A claim refused by its condition leaves no mark (the mark is part of
	// the transition's write), and a refresh finds the counts unchanged.
	before, _ := l.Fleet().FleetSummary(ctx, f.fine)
	k := partition.Key{AccountID: f.fine, Dataset: "events", Day: civil.MustParse("2026-03-02")}
	if _, err := l.Partitions().Claim(ctx, k, ""); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim of a completed day: %v, want ErrConflict", err)
	}
	if _, err := l.Partitions().Complete(ctx, k, "not-the-token", Result{}); !errors.Is(err, ErrClaimLost) && !errors.Is(err, ErrConflict) {
		t.Fatalf("complete without the claim: %v", err)
	}
	if marked(f.fine) {
		t.Error("refused transitions left a stale mark")
	}
	f.clk.Advance(2 * StaleSettle)
	after, err := l.Fleet().Refresh(ctx, f.fine)
	if err != nil || !mapsEqual(before.Counts, after.Counts) || !after.AsOf.After(before.AsOf) {
		t.Errorf("refused transitions changed the counts: %v -> %v (as of %s -> %s), %v", before.Counts, after.Counts, before.AsOf, after.AsOf, err)
	}

	// The failing day is retried and completes; a refresh that read before
	// (an older clock) does not overwrite the newer one.
	f.clk.Advance(2 * time.Hour) // past its backoff
	c, err := l.Partitions().Claim(ctx, f.failingKey, "")
	if err == nil {
		_, err = l.Partitions().Start(ctx, f.failingKey, c.Token)
	}
	if err == nil {
		_, err = l.Partitions().Complete(ctx, f.failingKey, c.Token, Result{Rows: 1})
	}
	if err != nil {
		t.Fatal(err)
	}
	now, err := l.Fleet().Refresh(ctx, f.failing)
	if err != nil || now.Counts[PhaseCompleted] != 1 || now.Counts[PhaseFailed] != 0 {
		t.Fatalf("after the retry completed: %+v, %v", now, err)
	}
	f.clk.Advance(-time.Hour)
	if _, err := l.Fleet().Refresh(ctx, f.failing); err != nil {
		t.Fatal(err)
	}
	got, _ := l.Fleet().FleetSummary(ctx, f.failing)
	if !got.AsOf.Equal(now.AsOf) || got.Counts[PhaseCompleted] != 1 {
		t.Errorf("an older refresh overwrote a newer one: %+v", got)
	}
}

// TestFleetSummaryReadOnly: for a reader that may not write, a missing
// summary read by id is computed from the account's rows, as FleetSummary
// builds it, and not stored (neither the summary nor its name entry); a
// stored one is returned as stored; an unknown account is ErrNotFound.
func TestFleetSummaryReadOnly(t *testing.T) {
	ctx := context.Background()
	f := newSummaryFixture(t)
	l := f.l
	stored := func(sk string) bool {
		t.Helper()
		_, err := l.getItem(ctx, tableKey(summaryPK(f.failing), sk))
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	for range 2 {
		s, err := l.Fleet().FleetSummaryReadOnly(ctx, f.failing)
		if err != nil || s.Account != f.failing || s.Name != "alpha failing" || s.Counts[PhaseFailed] != 1 || s.Counts[PhaseQueued] != 1 ||
			s.OldestDue != "2026-03-02" || len(s.Failures) != 1 || !s.AsOf.Equal(f.clk.Now()) {
			t.Errorf("a missing summary read by id, read-only: %+v, %v", s, err)
		}
		if stored(skSummary) || stored(skSummaryName) {
			t.Fatal("a read-only read stored the summary it computed")
		}
	}
	ro, _ := l.Fleet().FleetSummaryReadOnly(ctx, f.failing)
	built, err := l.Fleet().FleetSummary(ctx, f.failing)
	if err != nil || !mapsEqual(built.Counts, ro.Counts) || built.OldestDue != ro.OldestDue || len(built.Failures) != len(ro.Failures) || !built.AsOf.Equal(ro.AsOf) {
		t.Errorf("FleetSummary built %+v (%v); the read-only read computed %+v", built, err, ro)
	}
	if !stored(skSummary) || !stored(skSummaryName) {
		t.Fatal("FleetSummary did not store the summary it built")
	}
	f.clk.Advance(time.Hour)
	if s, err := l.Fleet().FleetSummaryReadOnly(ctx, f.failing); err != nil || !s.AsOf.Equal(built.AsOf) {
		t.Errorf("a stored summary read-only: as of %s, %v; want the stored one, as of %s", s.AsOf, err, built.AsOf)
	}
	if _, err := l.Fleet().FleetSummaryReadOnly(ctx, "acct_nobodynobodynobo"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown account read-only: %v, want ErrNotFound", err)
	}
	if _, err := l.Fleet().FleetSummaryReadOnly(ctx, "acct_x#y"); err == nil || !strings.Contains(err.Error(), `"acct_x#y"`) {
		t.Errorf("a malformed id read-only: %v", err)
	}
}

// refreshStale is a sweep's refresh: every shard's marks.
func refreshStale(ctx context.Context, l *Ledger) error {
	for sh := range FleetShards {
		marks, _, err := l.Fleet().StaleSummaries(ctx, sh, 1000)
		if err != nil {
			return err
		}
		for _, m := range marks {
			if err := l.Fleet().RefreshMarked(ctx, m); err != nil {
				return err
			}
		}
	}
	return nil
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestSummaryRefreshesAtOneInstant: with the clock standing still, a
// refresh after a rename, and one after a transition, both store (the
// condition compared the refreshes' start times only, and refused the
// second at the same instant); a refresh of the same inputs that began to
// read earlier is still refused.
func TestSummaryRefreshesAtOneInstant(t *testing.T) {
	ctx := context.Background()
	f := newSummaryFixture(t)
	l := f.l
	if _, err := l.Fleet().Refresh(ctx, f.fine); err != nil {
		t.Fatal(err)
	}
	a, err := l.Accounts().GetAccount(ctx, f.fine)
	if err != nil {
		t.Fatal(err)
	}
	a.Name = "Alpine Renamed"
	if _, err := l.Accounts().UpdateAccount(ctx, a, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Fleet().Refresh(ctx, f.fine); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Fleet().FleetSummary(ctx, f.fine); err != nil || got.Name != "Alpine Renamed" {
		t.Errorf("after a rename and a refresh at the same instant: %+v, %v", got, err)
	}
	p, err := l.Fleet().SearchFleet(ctx, "alpine ren", "", 10)
	if err != nil || len(p.Summaries) != 1 || p.Summaries[0].Account != f.fine {
		t.Errorf("search by the new name: %+v, %v", p.Summaries, err)
	}

	k := partition.Key{AccountID: f.fine, Dataset: "events", Day: civil.MustParse("2026-03-02")}
	if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: k.AccountID, Dataset: k.Dataset, From: k.Day, To: k.Day, Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Fleet().Refresh(ctx, f.fine); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Fleet().FleetSummary(ctx, f.fine); got.Counts[PhaseQueued] != 1 || got.Counts[PhaseCompleted] != 1 {
		t.Errorf("after a requeue and a refresh at the same instant: %v", got.Counts)
	}

	stored, _ := l.Fleet().FleetSummary(ctx, f.fine)
	f.clk.Advance(-time.Minute)
	if _, err := l.Fleet().Refresh(ctx, f.fine); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Fleet().FleetSummary(ctx, f.fine); !got.AsOf.Equal(stored.AsOf) {
		t.Errorf("a refresh of the same inputs that read earlier stored as of %s over %s", got.AsOf, stored.AsOf)
	}
}
