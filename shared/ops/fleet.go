package ops

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Reader is what the ops read from the ledger; Ledger has it.
type Reader interface {
	ListAccounts(ctx context.Context) ([]account.Account, error)
	GetAccount(ctx context.Context, id string) (account.Account, error)
	List(ctx context.Context, accountID, dataset string, from, to civil.Date) ([]ledger.Row, error)
	Get(ctx context.Context, key partition.Key) (ledger.Row, error)
	History(ctx context.Context, key partition.Key) ([]ledger.Attempt, error)
	// SlicesOf reads the plan of a day exported in slices, or
	// ledger.ErrNotFound.
	SlicesOf(ctx context.Context, key partition.Key) (ledger.SlicePlan, []ledger.Slice, error)
}

var _ Reader = Ledger{}

// The widest day range a ledger read can name.
var (
	FirstDay = civil.MustParse("1970-01-01")
	LastDay  = civil.MustParse("9999-12-31")
)

// FleetLine is one account in the fleet view.
type FleetLine struct {
	Account      string        `json:"account"`
	Name         string        `json:"name"`
	Enabled      bool          `json:"enabled"`
	Datasets     []string      `json:"datasets"`
	Counts       map[Phase]int `json:"counts"`
	OldestDue    string        `json:"oldest_due_day,omitempty"`
	LastExport   string        `json:"last_export_day,omitempty"`
	LastExportAt string        `json:"last_export_at,omitempty"`
	// RecentFailures counts the attempts that failed, stopped or lost their
	// lease since FleetOptions.FailuresSince (when it is set).
	RecentFailures int `json:"recent_failures,omitempty"`
}

// Severity orders accounts worst first: stopped partitions, then failed
// ones, then work not exported yet, then none.
func (l FleetLine) Severity() int {
	return ledger.Severity(l.Counts[Stopped], l.Counts[Failed], l.OldestDue)
}

// Worse reports whether l goes before m in the worst-first order: higher
// severity, then the older oldest due day, then the account id.
func (l FleetLine) Worse(m FleetLine) bool {
	if si, sj := l.Severity(), m.Severity(); si != sj {
		return si > sj
	}
	if l.OldestDue != m.OldestDue {
		return l.OldestDue != "" && (m.OldestDue == "" || l.OldestDue < m.OldestDue)
	}
	return l.Account < m.Account
}

// FleetIndex is where the fleet view reads its pages: account summaries
// worst first, by name prefix, or by id (FleetSummary stores one it had
// to build; FleetSummaryReadOnly, for a reader that may not write, does
// not); Ledger has it.
type FleetIndex interface {
	FleetPage(ctx context.Context, token string, limit int) (ledger.FleetPage, error)
	SearchFleet(ctx context.Context, prefix, token string, limit int) (ledger.FleetPage, error)
	FleetSummary(ctx context.Context, accountID string) (ledger.Summary, error)
	FleetSummaryReadOnly(ctx context.Context, accountID string) (ledger.Summary, error)
}

var _ FleetIndex = Ledger{}

// FleetReader is what the fleet view reads.
type FleetReader interface {
	Reader
	FleetIndex
}

// DefaultFleetLimit is the accounts on a page of the fleet view unless
// FleetOptions.Limit says otherwise.
const DefaultFleetLimit = 50

// FleetOptions narrow the fleet view.
type FleetOptions struct {
	// Datasets, if any, counts only these datasets.
	Datasets []string
	// From and To bound the days counted; zero means unbounded.
	From, To civil.Date
	// States, if any, keeps only accounts with partitions in these phases,
	// and counts only those.
	States map[Phase]bool
	// FailuresSince, if set, counts the failed attempts since then.
	FailuresSince time.Time
	// Search, if set, finds the account with this id and the accounts
	// whose name starts with it (any case), instead of the worst first.
	Search string
	// Token is the page: "" for the first, else a FleetResult.Next.
	Token string
	// Limit is the accounts read per page (default DefaultFleetLimit).
	Limit int
	// Concurrency bounds the accounts read at once with Datasets, From or
	// To (default 8).
	Concurrency int
	// ReadOnly is for a reader that may not write the ledger (a read-only
	// console): an account found by id that has no summary yet is shown
	// from its rows, and its summary is not stored.
	ReadOnly bool
}

// FleetResult is one page of the fleet view.
type FleetResult struct {
	Lines []FleetLine
	// Next is the token of the following page, "" on the last.
	Next string
}

// Fleet reads one page of the fleet view, worst first (or a search), from
// the accounts' summaries: a bounded number of reads whatever the fleet
// size. With Datasets, From or To it counts the page's accounts from their
// rows instead (a Query per dataset of each). With States, accounts with
// no partition in those states are left out of the page.
func Fleet(ctx context.Context, r FleetReader, o FleetOptions) (FleetResult, error) {
	if o.Limit <= 0 {
		o.Limit = DefaultFleetLimit
	}
	var res FleetResult
	var sums []ledger.Summary
	if o.Search == "" {
		page, err := r.FleetPage(ctx, o.Token, o.Limit)
		if err != nil {
			return res, err
		}
		sums, res.Next = page.Summaries, page.Next
	} else {
		if o.Token == "" && !strings.ContainsAny(o.Search, "# ") {
			byID := r.FleetSummary
			if o.ReadOnly {
				byID = r.FleetSummaryReadOnly
			}
			sum, err := byID(ctx, o.Search)
			switch {
			case err == nil:
				sums = append(sums, sum)
			case !errors.Is(err, ledger.ErrNotFound):
				return res, err
			}
		}
		page, err := r.SearchFleet(ctx, o.Search, o.Token, o.Limit)
		if err != nil {
			return res, err
		}
		for _, s := range page.Summaries {
			if len(sums) == 0 || s.Account != sums[0].Account || o.Token != "" {
				sums = append(sums, s)
			}
		}
		res.Next = page.Next
	}
	lines := make([]FleetLine, len(sums))
	recount := len(o.Datasets) > 0 || !o.From.IsZero() || !o.To.IsZero()
	if o.From.IsZero() {
		o.From = FirstDay
	}
	if o.To.IsZero() {
		o.To = LastDay
	}
	idx := make([]int, len(sums))
	for i := range idx {
		idx[i] = i
	}
	err := forEach(ctx, o.Concurrency, idx, func(i int) error {
		if !recount {
			lines[i] = lineOf(sums[i], o.FailuresSince)
			return nil
		}
		s := sums[i]
		l, err := fleetLine(ctx, r, account.Account{ID: s.Account, Name: s.Name, Enabled: s.Enabled, Datasets: s.Datasets}, o)
		lines[i] = l
		return err
	})
	if err != nil {
		return res, err
	}
	for _, l := range lines {
		if len(o.States) > 0 {
			if !slices.ContainsFunc(Phases, func(p Phase) bool { return o.States[p] && l.Counts[p] > 0 }) {
				continue
			}
			maps.DeleteFunc(l.Counts, func(p Phase, _ int) bool { return !o.States[p] })
		}
		res.Lines = append(res.Lines, l)
	}
	if o.Search == "" {
		sort.SliceStable(res.Lines, func(i, j int) bool { return res.Lines[i].Worse(res.Lines[j]) })
	}
	return res, nil
}

// lineOf is a summary as a line of the fleet view.
func lineOf(s ledger.Summary, since time.Time) FleetLine {
	l := FleetLine{Account: s.Account, Name: s.Name, Enabled: s.Enabled, Datasets: s.Datasets, Counts: map[Phase]int{},
		OldestDue: s.OldestDue, LastExport: s.LastExport}
	for p, n := range s.Counts {
		if n > 0 {
			l.Counts[OfLedger(p)] = n
		}
	}
	if !s.LastExportAt.IsZero() {
		l.LastExportAt = FormatTime(s.LastExportAt)
	}
	if !since.IsZero() {
		l.RecentFailures = s.FailuresSince(since)
	}
	return l
}

func fleetLine(ctx context.Context, r Reader, acct account.Account, o FleetOptions) (FleetLine, error) {
	l := FleetLine{Account: acct.ID, Name: acct.Name, Enabled: acct.Enabled, Counts: map[Phase]int{}}
	for _, ds := range acct.Datasets {
		if len(o.Datasets) == 0 || slices.Contains(o.Datasets, ds) {
			l.Datasets = append(l.Datasets, ds)
		}
	}
	var recent []partition.Key
	for _, ds := range l.Datasets {
		rows, err := r.List(ctx, acct.ID, ds, o.From, o.To)
		if err != nil {
			return l, err
		}
		for _, row := range rows {
			p := Of(row)
			l.Counts[p]++
			d := row.Day.String()
			if p != Completed && (l.OldestDue == "" || d < l.OldestDue) {
				l.OldestDue = d
			}
			if p == Completed {
				at := FormatTime(row.CompletedAt)
				if d > l.LastExport || (d == l.LastExport && at > l.LastExportAt) {
					l.LastExport, l.LastExportAt = d, at
				}
			}
			if !o.FailuresSince.IsZero() && ledger.MayHaveFailedSince(row, o.FailuresSince) {
				recent = append(recent, row.Key)
			}
		}
	}
	if len(recent) > 0 {
		n, err := failuresSince(ctx, r, recent, o.FailuresSince)
		if err != nil {
			return l, err
		}
		l.RecentFailures = n
	}
	return l, nil
}

// failuresSince counts the attempts of keys that ended in failure (failed,
// stopped, lease expired) at or after t.
func failuresSince(ctx context.Context, r Reader, keys []partition.Key, t time.Time) (int, error) {
	var mu sync.Mutex
	total := 0
	err := forEach(ctx, 0, keys, func(k partition.Key) error {
		hist, err := r.History(ctx, k)
		if err != nil {
			return err
		}
		n := 0
		for _, a := range hist {
			if a.Outcome != ledger.OutcomeCompleted && !a.FinishedAt.Before(t) {
				n++
			}
		}
		mu.Lock()
		total += n
		mu.Unlock()
		return nil
	})
	return total, err
}

// forEach runs fn on every item, at most n at once (8 when n <= 0), and
// returns the first error; after an error no new item starts.
func forEach[T any](ctx context.Context, n int, items []T, fn func(T) error) error {
	if n <= 0 {
		n = 8
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, it := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(it); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		// The caller's context ended.
		return context.Cause(ctx)
	}
	return first
}
