package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset/example"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// reader is rows and history in memory; it counts History reads.
type reader struct {
	accounts  []account.Account
	rows      []ledger.Row
	history   map[partition.Key][]ledger.Attempt
	histReads atomic.Int64
	gets      atomic.Int64
	// byID counts the summaries read by id that may be stored (FleetSummary)
	// and that may not (FleetSummaryReadOnly).
	byID, byIDReadOnly atomic.Int64
}

func (r *reader) ListAccounts(context.Context) ([]account.Account, error) { return r.accounts, nil }

func (r *reader) GetAccount(_ context.Context, id string) (account.Account, error) {
	r.gets.Add(1)
	for _, a := range r.accounts {
		if a.ID == id {
			return a, nil
		}
	}
	return account.Account{}, fmt.Errorf("%w: %s", ledger.ErrNotFound, id)
}

func (r *reader) List(_ context.Context, acct, ds string, from, to civil.Date) ([]ledger.Row, error) {
	var out []ledger.Row
	for _, row := range r.rows {
		if row.AccountID == acct && row.Dataset == ds && !row.Day.Before(from) && !row.Day.After(to) {
			out = append(out, row)
		}
	}
	return out, nil
}

func (r *reader) Get(_ context.Context, k partition.Key) (ledger.Row, error) {
	for _, row := range r.rows {
		if row.Key == k {
			return row, nil
		}
	}
	return ledger.Row{}, ledger.ErrNotFound
}

func (r *reader) History(_ context.Context, k partition.Key) ([]ledger.Attempt, error) {
	r.histReads.Add(1)
	return r.history[k], nil
}

// The reader's fleet index: every account summarized from its rows and
// history as ledger.Refresh does, worst first, paged by offset.
func (r *reader) summaries(ctx context.Context) ([]ledger.Summary, error) {
	var out []ledger.Summary
	for _, a := range r.accounts {
		var rows []ledger.Row
		var hist []ledger.Attempt
		for _, ds := range a.Datasets {
			rs, _ := r.List(ctx, a.ID, ds, FirstDay, LastDay)
			rows = append(rows, rs...)
			for _, row := range rs {
				if ledger.MayHaveFailedSince(row, now.Add(-ledger.FailureWindow)) {
					hist = append(hist, r.history[row.Key]...) // not counted: the ledger's Refresh reads these
				}
			}
		}
		out = append(out, ledger.Summarize(a, rows, hist, now))
	}
	slices.SortFunc(out, func(x, y ledger.Summary) int {
		if c := y.Severity() - x.Severity(); c != 0 {
			return c
		}
		ox, oy := cmpOrTilde(x.OldestDue), cmpOrTilde(y.OldestDue)
		if c := strings.Compare(ox, oy); c != 0 {
			return c
		}
		return strings.Compare(x.Account, y.Account)
	})
	return out, nil
}

func cmpOrTilde(s string) string {
	if s == "" {
		return "~"
	}
	return s
}

func pageOf(all []ledger.Summary, token string, limit int) (ledger.FleetPage, error) {
	from := 0
	if token != "" {
		if _, err := fmt.Sscan(token, &from); err != nil {
			return ledger.FleetPage{}, fmt.Errorf("%w: %q", ledger.ErrBadPageToken, token)
		}
	}
	to := min(from+limit, len(all))
	p := ledger.FleetPage{Summaries: all[from:to]}
	if to < len(all) {
		p.Next = fmt.Sprint(to)
	}
	return p, nil
}

func (r *reader) FleetPage(ctx context.Context, token string, limit int) (ledger.FleetPage, error) {
	all, err := r.summaries(ctx)
	if err != nil {
		return ledger.FleetPage{}, err
	}
	return pageOf(all, token, limit)
}

func (r *reader) SearchFleet(ctx context.Context, prefix, token string, limit int) (ledger.FleetPage, error) {
	all, err := r.summaries(ctx)
	if err != nil {
		return ledger.FleetPage{}, err
	}
	all = slices.DeleteFunc(all, func(s ledger.Summary) bool {
		return !strings.HasPrefix(strings.ToLower(s.Name), strings.ToLower(prefix))
	})
	slices.SortFunc(all, func(x, y ledger.Summary) int {
		return strings.Compare(strings.ToLower(x.Name), strings.ToLower(y.Name))
	})
	return pageOf(all, token, limit)
}

func (r *reader) FleetSummary(ctx context.Context, id string) (ledger.Summary, error) {
	r.byID.Add(1)
	return r.summary(ctx, id)
}

func (r *reader) FleetSummaryReadOnly(ctx context.Context, id string) (ledger.Summary, error) {
	r.byIDReadOnly.Add(1)
	return r.summary(ctx, id)
}

func (r *reader) summary(ctx context.Context, id string) (ledger.Summary, error) {
	all, err := r.summaries(ctx)
	if err != nil {
		return ledger.Summary{}, err
	}
	for _, s := range all {
		if s.Account == id {
			return s, nil
		}
	}
	return ledger.Summary{}, fmt.Errorf("%w: account %s", ledger.ErrNotFound, id)
}

func row(acct, ds, d string, st ledger.State, mod func(*ledger.Row)) ledger.Row {
	r := ledger.Row{Key: partition.Key{AccountID: acct, Dataset: ds, Day: civil.MustParse(d)}, State: st, Attempts: 1, Reason: partition.ReasonScheduled,
		UpdatedAt: now.Add(-48 * time.Hour)}
	if st == ledger.StateCompleted {
		r.CompletedAt = r.UpdatedAt
	}
	if mod != nil {
		mod(&r)
	}
	return r
}

func TestFleetCountsRecentFailuresFromTheHistoryOfChangedRows(t *testing.T) {
	t.Parallel()
	const a, b = "acct_aaaaaaaaaaaaaaaa", "acct_bbbbbbbbbbbbbbbb"
	recent := func(r *ledger.Row) { r.UpdatedAt = now.Add(-time.Hour) }
	r := &reader{
		accounts: []account.Account{{ID: a, Datasets: []string{"events", "profiles"}}, {ID: b, Datasets: []string{"events"}}},
		rows: []ledger.Row{
			row(a, "events", "2026-11-27", ledger.StateCompleted, nil),
			// completed on its first scheduled attempt today: no history read
			row(a, "events", "2026-11-28", ledger.StateCompleted, recent),
			// completed on a second attempt today: one failure, 3 h ago
			row(a, "events", "2026-11-29", ledger.StateCompleted, func(r *ledger.Row) { recent(r); r.Attempts, r.Reason = 2, partition.ReasonRetry }),
			// failed twice, once 30 h ago (outside the window)
			row(a, "profiles", "2026-11-29", ledger.StateFailed, func(r *ledger.Row) { recent(r); r.Attempts = 2 }),
			// an old failure whose row has not changed since
			row(b, "events", "2026-11-20", ledger.StateFailed, func(r *ledger.Row) { r.Stopped = true }),
			row(b, "events", "2026-11-21", ledger.StatePending, nil),
		},
		history: map[partition.Key][]ledger.Attempt{},
	}
	k := func(acct, ds, d string) partition.Key {
		return partition.Key{AccountID: acct, Dataset: ds, Day: civil.MustParse(d)}
	}
	r.history[k(a, "events", "2026-11-29")] = []ledger.Attempt{
		{Outcome: ledger.OutcomeFailed, FinishedAt: now.Add(-3 * time.Hour)}, {Outcome: ledger.OutcomeCompleted, FinishedAt: now.Add(-time.Hour)}}
	r.history[k(a, "profiles", "2026-11-29")] = []ledger.Attempt{
		{Outcome: ledger.OutcomeFailed, FinishedAt: now.Add(-30 * time.Hour)}, {Outcome: ledger.OutcomeLeaseExpired, FinishedAt: now.Add(-time.Hour)}}
	r.history[k(b, "events", "2026-11-20")] = []ledger.Attempt{{Outcome: ledger.OutcomeStopped, FinishedAt: now.Add(-48 * time.Hour)}}

	res, err := Fleet(context.Background(), r, FleetOptions{FailuresSince: now.Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	lines := res.Lines
	if len(lines) != 2 || lines[0].Account != b || lines[1].Account != a {
		t.Fatalf("order %+v, want b (stopped) before a (failed)", lines)
	}
	if lines[1].RecentFailures != 2 || lines[0].RecentFailures != 0 {
		t.Errorf("recent failures a=%d b=%d, want 2 and 0", lines[1].RecentFailures, lines[0].RecentFailures)
	}
	if n := r.histReads.Load(); n != 0 {
		t.Errorf("%d history reads by the fleet view, want 0 (the summaries count the failures)", n)
	}
	if l := lines[1]; l.Counts[Completed] != 3 || l.Counts[Failed] != 1 || l.OldestDue != "2026-11-29" || l.LastExport != "2026-11-29" {
		t.Errorf("a: %+v", l)
	}
	if l := lines[0]; l.Counts[Stopped] != 1 || l.Counts[Queued] != 1 || l.OldestDue != "2026-11-20" || l.LastExport != "" {
		t.Errorf("b: %+v", l)
	}

	// Without FailuresSince nothing is read from the history; filters narrow.
	r.histReads.Store(0)
	res, err = Fleet(context.Background(), r, FleetOptions{Datasets: []string{"profiles"}, States: map[Phase]bool{Failed: true}})
	lines = res.Lines
	if err != nil || len(lines) != 1 || lines[0].Account != a || lines[0].Counts[Completed] != 0 || r.histReads.Load() != 0 {
		t.Errorf("filtered: %+v %v, %d history reads", lines, err, r.histReads.Load())
	}
}

// TestFleetSearchByIDReadOnly: a search by id reads the account's summary
// with FleetSummary (which stores one the ledger had to build), and with
// ReadOnly (a reader that may not write) with FleetSummaryReadOnly.
func TestFleetSearchByIDReadOnly(t *testing.T) {
	t.Parallel()
	const a = "acct_aaaaaaaaaaaaaaaa"
	for _, readOnly := range []bool{false, true} {
		r := &reader{accounts: []account.Account{{ID: a, Name: "Alpha", Datasets: []string{"events"}}},
			rows: []ledger.Row{row(a, "events", "2026-11-27", ledger.StateFailed, nil)}}
		res, err := Fleet(context.Background(), r, FleetOptions{Search: a, ReadOnly: readOnly})
		if err != nil || len(res.Lines) != 1 || res.Lines[0].Account != a || res.Lines[0].Counts[Failed] != 1 {
			t.Errorf("read-only %v: %+v %v", readOnly, res.Lines, err)
		}
		want, wantRO := int64(1), int64(0)
		if readOnly {
			want, wantRO = 0, 1
		}
		if r.byID.Load() != want || r.byIDReadOnly.Load() != wantRO {
			t.Errorf("read-only %v: %d FleetSummary, %d FleetSummaryReadOnly; want %d, %d", readOnly, r.byID.Load(), r.byIDReadOnly.Load(), want, wantRO)
		}
	}
}

// requeuer records the ranges it is asked for.
type requeuer struct {
	calls    []string
	datasets []string // the dataset of each call, as the ledger is asked
	fail     int      // fail on this call (1-based), 0 never
	by       []string // who each call names as asking
}

func (q *requeuer) Requeue(_ context.Context, r ledger.RequeueRange) (ledger.RequeueResult, error) {
	ds, from, to := r.Dataset, r.From, r.To
	q.by = append(q.by, r.RequestedBy)
	q.calls = append(q.calls, from.String()+".."+to.String())
	q.datasets = append(q.datasets, ds)
	if len(q.calls) == q.fail {
		return ledger.RequeueResult{}, errors.New("throttled")
	}
	n := from.DaysUntil(to) + 1
	return ledger.RequeueResult{Queued: n}, nil
}

type count int

func (c *count) Add(n int) { *c += count(n) }

func TestRetryCallsPerRunOfDays(t *testing.T) {
	t.Parallel()
	days := func(ds ...string) []civil.Date {
		var out []civil.Date
		for _, d := range ds {
			out = append(out, civil.MustParse(d))
		}
		return out
	}
	tests := []struct {
		name  string
		days  []civil.Date
		calls string
	}{
		{"one day", days("2026-11-05"), "2026-11-05..2026-11-05"},
		{"gaps split the calls", days("2026-11-01", "2026-11-02", "2026-11-05", "2026-11-07", "2026-11-08"),
			"2026-11-01..2026-11-02 2026-11-05..2026-11-05 2026-11-07..2026-11-08"},
		{"a long run goes a week at a time", civil.Range(civil.MustParse("2026-11-01"), civil.MustParse("2026-11-16")),
			"2026-11-01..2026-11-07 2026-11-08..2026-11-14 2026-11-15..2026-11-16"},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &requeuer{}
			var p count
			res, err := Retry(context.Background(), datasettest.Example(t), q, "acct_aaaaaaaaaaaaaaaa", "events", tt.days, partition.ReasonManual, "tester", &p)
			if err != nil || strings.Join(q.calls, " ") != tt.calls || res.Queued != len(tt.days) || int(p) != len(tt.days) {
				t.Errorf("calls %q, queued %d, progress %d (%v); want %q", q.calls, res.Queued, p, err, tt.calls)
			}
			for _, by := range q.by {
				if by != "tester" {
					t.Errorf("a call names %q as asking, want tester", by)
				}
			}
		})
	}
	q := &requeuer{fail: 2}
	res, err := Retry(context.Background(), datasettest.Example(t), q, "acct_aaaaaaaaaaaaaaaa", "events", civil.Range(civil.MustParse("2026-11-01"), civil.MustParse("2026-11-20")), partition.ReasonManual, "tester", nil)
	if err == nil || !strings.Contains(err.Error(), "retry stopped after 7 of 20 days: throttled") || res.Queued != 7 || len(q.calls) != 2 {
		t.Errorf("a failure part way: %+v %v, calls %v", res, err, q.calls)
	}
}

func TestCheckRequestRefusesMalformedValuesBeforeAnyRead(t *testing.T) {
	t.Parallel()
	acct := account.Account{ID: "acct_aaaaaaaaaaaaaaaa", Enabled: true, StartDate: civil.MustParse("2026-11-01"), Datasets: []string{"events"}}
	r := &reader{accounts: []account.Account{acct}}
	lim := jobs.Limits{Now: now, SettleDelay: 2 * time.Hour}
	for _, tt := range []struct {
		name  string
		m     jobs.Manual
		field string
		kind  error
		reads int64
	}{
		{"malformed day", jobs.Manual{AccountID: acct.ID, Dataset: "events", Day: "2026-02-30"}, "day", jobs.ErrMalformed, 0},
		{"malformed account", jobs.Manual{AccountID: "acct_x", Dataset: "events", Day: "2026-11-20"}, "account_id", jobs.ErrMalformed, 0},
		{"unknown account", jobs.Manual{AccountID: "acct_bbbbbbbbbbbbbbbb", Dataset: "events", Day: "2026-11-20"}, "account_id", jobs.ErrRefused, 1},
		{"not closed", jobs.Manual{AccountID: acct.ID, Dataset: "events", Day: "2026-11-30"}, "day", jobs.ErrRefused, 1},
		{"fine", jobs.Manual{AccountID: acct.ID, Dataset: "events", From: "2026-11-01", To: "2026-11-29"}, "", nil, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r.gets.Store(0)
			got, from, to, err := CheckRequest(context.Background(), datasettest.Example(t), r, tt.m, lim)
			var fe *jobs.FieldError
			switch {
			case tt.kind == nil && (err != nil || got.ID != acct.ID || from.String() != "2026-11-01" || to.String() != "2026-11-29"):
				t.Errorf("%+v %s..%s %v", got, from, to, err)
			case tt.kind != nil && (!errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, tt.kind)):
				t.Errorf("error %v, want a %v on %s", err, tt.kind, tt.field)
			}
			if r.gets.Load() != tt.reads {
				t.Errorf("%d account reads, want %d", r.gets.Load(), tt.reads)
			}
		})
	}
}

func TestForEachStopsAtTheFirstError(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	items := make([]int, 100)
	for i := range items {
		items[i] = i
	}
	err := forEach(context.Background(), 2, items, func(i int) error {
		ran.Add(1)
		if i == 3 {
			return fmt.Errorf("item %d", i)
		}
		time.Sleep(time.Millisecond)
		return nil
	})
	if err == nil || err.Error() != "item 3" || ran.Load() > 10 {
		t.Errorf("error %v after %d items", err, ran.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := forEach(ctx, 2, items, func(int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
}

func TestParsePhases(t *testing.T) {
	t.Parallel()
	got, err := ParsePhases([]string{"failed, stopped", "running"})
	if err != nil || len(got) != 3 || !got[Failed] || !got[Stopped] || !got[Running] {
		t.Errorf("%v %v", got, err)
	}
	if _, err := ParsePhases([]string{"done"}); err == nil || !strings.Contains(err.Error(), `"done": unknown state; valid: completed, running, in-queue, requested, due, failed, stopped`) {
		t.Errorf("error %v", err)
	}
	// The names of earlier releases still select their phase: an
	// operator's scripts keep working.
	if got, err := ParsePhases([]string{"claimed,queued", "pending"}); err != nil || len(got) != 2 || !got[Claimed] || !got[Queued] {
		t.Errorf("old names: %v %v", got, err)
	}
	// Each name says where the partition is; the ledger's names are mapped.
	for ledgerName, want := range map[string]string{ledger.PhaseClaimed: "in-queue", ledger.PhaseQueued: "due", ledger.PhaseRunning: "running"} {
		if got := OfLedger(ledgerName); string(got) != want || !got.Valid() {
			t.Errorf("OfLedger(%q) = %q, want %q", ledgerName, got, want)
		}
	}
	if !slices.Equal(Phases, []Phase{Completed, Running, Claimed, Requested, Queued, Failed, Stopped}) {
		t.Error("display order changed")
	}
	// Every phase the ledger tells (ledger.PhaseOf) is listed, with a
	// symbol of its own and a legend.
	symbols := map[byte]Phase{}
	for _, p := range Phases {
		if !p.Valid() || p.Legend() == "" || p.Symbol() == 0 {
			t.Errorf("phase %s: symbol %q, legend %q", p, p.Symbol(), p.Legend())
		}
		if q, dup := symbols[p.Symbol()]; dup {
			t.Errorf("phases %s and %s share the symbol %q", q, p, p.Symbol())
		}
		symbols[p.Symbol()] = p
	}
	for _, r := range []ledger.Row{{State: ledger.StateCompleted}, {State: ledger.StateRunning}, {State: ledger.StateRunning, StartedAt: time.Unix(1, 0)},
		{State: ledger.StatePending}, {State: ledger.StateQueued}, {State: ledger.StateFailed}, {State: ledger.StateFailed, Stopped: true},
		{State: ledger.StateCompleted, ReexportRequestedAt: time.Unix(1, 0)}} {
		if !Of(r).Valid() {
			t.Errorf("row %+v: phase %q is not listed", r, Of(r))
		}
	}
}

// store is an AccountStore in memory that counts writes.
type store struct {
	reader
	puts int
}

func (s *store) UpdateAccount(_ context.Context, a account.Account, _ string) (account.Account, error) {
	s.puts++
	for i := range s.accounts {
		if s.accounts[i].ID == a.ID {
			s.accounts[i] = a
		}
	}
	return a, nil
}

func TestSetEnabled(t *testing.T) {
	t.Parallel()
	s := &store{reader: reader{accounts: []account.Account{{ID: "acct_aaaaaaaaaaaaaaaa", Enabled: true}}}}
	for _, tt := range []struct {
		enable  bool
		changed bool
		puts    int
	}{{true, false, 0}, {false, true, 1}, {false, false, 1}, {true, true, 2}} {
		acct, changed, err := SetEnabled(context.Background(), s, "acct_aaaaaaaaaaaaaaaa", tt.enable, "tester")
		if err != nil || changed != tt.changed || acct.Enabled != tt.enable || s.puts != tt.puts {
			t.Errorf("enable %v: changed %v, enabled %v, %d puts (%v)", tt.enable, changed, acct.Enabled, s.puts, err)
		}
	}
	if _, _, err := SetEnabled(context.Background(), s, "acct_bbbbbbbbbbbbbbbb", true, "tester"); !errors.Is(err, ErrNoAccount) {
		t.Errorf("unknown account: %v", err)
	}
}

func (r *reader) SlicesOf(_ context.Context, k partition.Key) (ledger.SlicePlan, []ledger.Slice, error) {
	return ledger.SlicePlan{}, nil, ledger.ErrNotFound
}

// TestAccountViewAtALaterContract: once a dataset moves to contract v2 its
// partitions are the events.v2 rows; the account view (console and
// daybook status --account) shows those under the dataset's name, not the
// retired v1 rows, which it showed before.
func TestAccountViewAtALaterContract(t *testing.T) {
	t.Parallel()
	cat := datasettest.Catalog(t, []byte(strings.Replace(string(example.YAML()), "  - name: events\n    version: 1\n", "  - name: events\n    version: 1\n    contract: v2\n", 1)))
	day := civil.MustParse("2026-11-20")
	a := account.Account{ID: "acct_contractcontract", Enabled: true, StartDate: day, Datasets: []string{"events"}}
	r := &reader{accounts: []account.Account{a}, rows: []ledger.Row{
		{Key: partition.Key{AccountID: a.ID, Dataset: "events", Day: day}, State: ledger.StateCompleted, Generation: 1},
		{Key: partition.Key{AccountID: a.ID, Dataset: "events.v2", Day: day}, State: ledger.StateFailed, Generation: 1},
	}}
	v, err := AccountView(context.Background(), cat, r, a, 0, now, nil, nil, day, day)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Datasets) != 1 || v.Datasets[0].Dataset != "events" || len(v.Datasets[0].Days) != 1 || v.Datasets[0].Counts[Failed] != 1 {
		t.Fatalf("the view of events at v2: %+v", v.Datasets)
	}
	// A retry of events (the CLI's and the console's) asks for the v2 rows.
	q := &requeuer{}
	if _, err := Retry(context.Background(), cat, q, a.ID, "events", []civil.Date{day}, partition.ReasonManual, "tester", nil); err != nil || len(q.datasets) != 1 || q.datasets[0] != "events.v2" {
		t.Fatalf("retry of events at v2 asked the ledger for %v (%v); want events.v2", q.datasets, err)
	}
}
