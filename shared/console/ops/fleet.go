package ops

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Reader is what the ops read from the ledger; *ledger.Ledger has it.
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

var _ Reader = (*ledger.Ledger)(nil)

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
	switch {
	case l.Counts[Stopped] > 0:
		return 3
	case l.Counts[Failed] > 0:
		return 2
	case l.OldestDue != "":
		return 1
	}
	return 0
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

// FleetOptions narrow the fleet view.
type FleetOptions struct {
	// Datasets, if any, counts only these datasets.
	Datasets []string
	// From and To bound the days counted; zero means unbounded.
	From, To civil.Date
	// States, if any, keeps only accounts with partitions in these phases,
	// and counts only those.
	States map[Phase]bool
	// FailuresSince, if set, counts the failed attempts since then (from the
	// attempt history of the partitions that changed since).
	FailuresSince time.Time
	// Concurrency bounds the accounts read at once (default 8).
	Concurrency int
}

// Fleet summarizes every account, worst first. It reads each account's rows
// once (a Query per dataset), and with FailuresSince the attempt history of
// the rows that changed since then.
func Fleet(ctx context.Context, r Reader, o FleetOptions) ([]FleetLine, error) {
	if o.From.IsZero() {
		o.From = FirstDay
	}
	if o.To.IsZero() {
		o.To = LastDay
	}
	accts, err := r.ListAccounts(ctx)
	if err != nil {
		return nil, err
	}
	lines := make([]FleetLine, len(accts))
	keep := make([]bool, len(accts))
	idx := make([]int, len(accts))
	for i := range idx {
		idx[i] = i
	}
	err = forEach(ctx, o.Concurrency, idx, func(i int) error {
		l, err := fleetLine(ctx, r, accts[i], o)
		if err != nil {
			return err
		}
		lines[i] = l
		keep[i] = len(o.States) == 0 || slices.ContainsFunc(Phases, func(p Phase) bool { return o.States[p] && l.Counts[p] > 0 })
		if len(o.States) > 0 {
			maps.DeleteFunc(lines[i].Counts, func(p Phase, _ int) bool { return !o.States[p] })
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []FleetLine
	for i, l := range lines {
		if keep[i] {
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Worse(out[j]) })
	return out, nil
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
			if !o.FailuresSince.IsZero() && mayHaveFailedSince(row, o.FailuresSince) {
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

// mayHaveFailedSince: a row that ended an attempt in failure since t was
// updated since t (every transition sets updated_at). A row completed on its
// first attempt of a scheduled run had no failure since it was created.
func mayHaveFailedSince(r ledger.Row, t time.Time) bool {
	if r.UpdatedAt.Before(t) {
		return false
	}
	return !(r.State == ledger.StateCompleted && r.Attempts <= 1 && r.Reason == partition.ReasonScheduled)
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
