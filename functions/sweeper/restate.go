package main

// Restatement checks (late data). After each sweep the sweeper queues
// restate_check messages for completed partitions of recently closed days
// whose fingerprint is due to be compared again (the exporter, which has
// the source, compares it; the sweeper never touches the source). The pass
// is bounded three ways: it reads only the sparse restate index, sharded
// like the fleet index (one key-condition Query per shard, never a Scan and
// never a listing of the accounts: an idle fleet costs FleetShards queries
// whatever its size), each partition is checked at most once per interval
// (MoveRestateCheck, a conditional write, before its message is sent), and
// at most PerSweepCap checks are queued per sweep, the oldest due first
// across the shards, so every check comes round. It reads the record of
// each account whose checks it takes, and no other: which accounts a sweep
// wakes for due work has no say in which are checked for late data.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
)

// RestateLedger is what the restatement pass needs from the ledger.
type RestateLedger interface {
	GetAccount(ctx context.Context, id string) (account.Account, error)
	RestateDue(ctx context.Context, shard, limit int) ([]ledger.Row, ledger.ReadStats, error)
	MoveRestateCheck(ctx context.Context, r ledger.Row, next time.Time) error
	DropRestateCheck(ctx context.Context, r ledger.Row) error
}

var _ RestateLedger = functionLedger{}

// RestateConfig configures a Restater.
type RestateConfig struct {
	QueueURL string
	// Restate is the deployment's lookback, interval and per-sweep cap.
	Restate ledger.RestateConfig
	// DefaultSettleDelay applies to accounts that set none (SETTLE_DELAY).
	DefaultSettleDelay time.Duration
	Now                func() time.Time
	Log                *slog.Logger
}

// Restater queues restatement checks.
type Restater struct {
	Ledger RestateLedger
	SQS    SQSAPI
	Config RestateConfig
}

// RestateSummary describes one restatement pass.
type RestateSummary struct {
	Accounts  int  `json:"accounts"`   // accounts whose due checks were taken (each record read once)
	Due       int  `json:"due"`        // due checks read
	Sent      int  `json:"sent"`       // checks queued
	Dropped   int  `json:"dropped"`    // rows taken out of the restate index: day outside the window, not completed, dataset not exported
	Skipped   int  `json:"skipped"`    // rows that changed after they were read
	Disabled  int  `json:"disabled"`   // checks of disabled accounts, moved an interval ahead unsent
	Deferred  int  `json:"deferred"`   // checks of accounts whose record could not be read, moved an interval ahead unsent
	Capped    bool `json:"capped"`     // the per-sweep cap ended the pass
	ItemsRead int  `json:"items_read"` // items read from the table and index
	Errors    int  `json:"errors"`
}

// Run performs one restatement pass for the sweep's tick (zero: none): the
// lookback window ends at the day closed at the tick, as the sweep's
// (closesAsOf); checks move an interval ahead of the clock. Problems with
// one account or row are counted and joined into the error, and do not
// stop it.
func (r *Restater) Run(ctx context.Context, tick time.Time) (sum RestateSummary, err error) {
	c := r.Config
	if !c.Restate.Enabled() {
		return sum, nil
	}
	if c.Restate.PerSweepCap < 1 || c.QueueURL == "" {
		return sum, fmt.Errorf("restate: per-sweep cap %d and queue URL %q", c.Restate.PerSweepCap, c.QueueURL)
	}
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	asOf := closesAsOf(tick, now)
	var errs []error
	fail := func(err error) {
		sum.Errors++
		errs = append(errs, err)
	}
	due, err := r.readDue(ctx, &sum)
	if err != nil {
		fail(err)
	}
	next := now.Add(c.Restate.Interval)
	accounts, gone, err := r.accountsOf(ctx, due)
	sum.Accounts, sum.ItemsRead = len(accounts), sum.ItemsRead+len(accounts)+len(gone)
	switch {
	case errors.Is(err, ledger.ErrMalformed):
		// An account record that cannot be read does not hide the others;
		// the sweep reports it, naming it, so the pass only notes that it
		// skipped its checks.
		if c.Log != nil {
			c.Log.WarnContext(ctx, "restatement pass skipped unreadable account records", "error", err.Error())
		}
	case err != nil:
		fail(err)
	}
	// Each due check is one conditional write (drop, or move an interval
	// ahead), restateWrites at once; the outcomes are counted in due order.
	const (
		dropped = iota + 1
		deferred
		disabled
		check
	)
	kinds := make([]int, len(due))
	werrs := make([]error, len(due))
	var g errgroup.Group
	g.SetLimit(restateWrites)
	for i, row := range due {
		g.Go(func() error {
			a, ok := accounts[row.AccountID]
			switch {
			case gone[row.AccountID]:
				kinds[i], werrs[i] = dropped, r.Ledger.DropRestateCheck(ctx, row)
			case !ok:
				// Its record could not be read: the check waits an interval,
				// so that an account that stays unreadable cannot hold the
				// oldest places under the cap and starve every other check.
				kinds[i], werrs[i] = deferred, r.Ledger.MoveRestateCheck(ctx, row, next)
			case !a.Enabled:
				// Not checked while disabled; kept, an interval ahead, for when
				// it is enabled again.
				kinds[i], werrs[i] = disabled, r.Ledger.MoveRestateCheck(ctx, row, next)
			case row.State != ledger.StateCompleted || !c.Restate.InWindow(row.Day, a.ClosedThrough(asOf)) || !exports(a, row.Dataset):
				kinds[i], werrs[i] = dropped, r.Ledger.DropRestateCheck(ctx, row)
			default:
				kinds[i], werrs[i] = check, r.Ledger.MoveRestateCheck(ctx, row, next)
			}
			return nil
		})
	}
	_ = g.Wait()
	var checks []ledger.Row
	for i, row := range due {
		switch err := werrs[i]; {
		case errors.Is(err, ledger.ErrConflict):
			sum.Skipped++
		case err != nil:
			fail(fmt.Errorf("restate check %s: %w", row.Key, err))
		case kinds[i] == dropped:
			sum.Dropped++
		case kinds[i] == deferred:
			sum.Deferred++
		case kinds[i] == disabled:
			sum.Disabled++
		case kinds[i] == check:
			checks = append(checks, row)
		}
	}
	sent, sendErrs := r.send(ctx, checks, next)
	sum.Sent = sent
	for _, err := range sendErrs {
		fail(err)
	}
	return sum, errors.Join(errs...)
}

// readDue reads the due checks of every shard of the restate index, at
// most the cap from each, at once, and keeps the cap's worth whose check is
// oldest: what is left is due for the next sweep (Capped).
func (r *Restater) readDue(ctx context.Context, sum *RestateSummary) ([]ledger.Row, error) {
	capN := r.Config.Restate.PerSweepCap
	rows := make([][]ledger.Row, ledger.FleetShards)
	stats := make([]ledger.ReadStats, ledger.FleetShards)
	errs := make([]error, ledger.FleetShards)
	var wg sync.WaitGroup
	for shard := range ledger.FleetShards {
		wg.Go(func() {
			rows[shard], stats[shard], errs[shard] = r.Ledger.RestateDue(ctx, shard, capN)
			if errs[shard] != nil {
				errs[shard] = fmt.Errorf("restate checks of shard %d: %w", shard, errs[shard])
			}
		})
	}
	wg.Wait()
	var all []ledger.Row
	for shard := range ledger.FleetShards {
		sum.ItemsRead += stats[shard].Items
		all = append(all, rows[shard]...)
	}
	sum.Due = len(all)
	slices.SortStableFunc(all, func(a, b ledger.Row) int {
		return cmp.Or(a.Fingerprint.CheckAt.Compare(b.Fingerprint.CheckAt), strings.Compare(a.Key.String(), b.Key.String()))
	})
	if len(all) > capN {
		all, sum.Capped = all[:capN], true
	}
	return all, errors.Join(errs...)
}

// accountsOf reads the record of each account the rows belong to, 32 at
// once. gone holds the accounts that no longer exist (their checks are
// dropped); a record that cannot be read is left out and its error joined.
func (r *Restater) accountsOf(ctx context.Context, rows []ledger.Row) (accounts map[string]account.Account, gone map[string]bool, err error) {
	var ids []string
	for _, row := range rows {
		if !slices.Contains(ids, row.AccountID) {
			ids = append(ids, row.AccountID)
		}
	}
	accounts, gone = map[string]account.Account{}, map[string]bool{}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 32)
	)
	for _, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			a, err := r.Ledger.GetAccount(ctx, id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, ledger.ErrNotFound):
				gone[id] = true
			case err != nil:
				errs = append(errs, fmt.Errorf("account %s: restate checks: %w", id, err))
			default:
				accounts[id] = a.WithDefaults(r.Config.DefaultSettleDelay)
			}
		})
	}
	wg.Wait()
	return accounts, gone, errors.Join(errs...)
}

func exports(a account.Account, ds string) bool {
	for _, d := range a.Datasets {
		if d == ds {
			return true
		}
	}
	return false
}

// restateWrites bounds the restate index writes a pass makes at once.
const restateWrites = 8

// send queues the checks (jobs.Queue.SendAll: ten to a request). A check
// whose message was not accepted is moved back to its old time, so the
// next sweep queues it.
func (r *Restater) send(ctx context.Context, checks []ledger.Row, next time.Time) (sent int, errs []error) {
	msgs := make([]jobs.Outgoing, len(checks))
	for i, row := range checks {
		body, err := json.Marshal(jobs.RestateCheck{Kind: jobs.KindRestateCheck, AccountID: row.AccountID, Dataset: row.Dataset,
			Day: row.Day.String(), Generation: row.Generation})
		if err != nil {
			return sent, append(errs, err)
		}
		msgs[i] = jobs.Outgoing{Body: string(body)}
	}
	for i, res := range (jobs.Queue{API: r.SQS, URL: r.Config.QueueURL}).SendAll(ctx, msgs...) {
		if res.Err == nil {
			sent++
			continue
		}
		row, why := checks[i], res.Err.Error()
		moved := row
		moved.Fingerprint.CheckAt = next.UTC().Truncate(time.Second)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := r.Ledger.MoveRestateCheck(rctx, moved, row.Fingerprint.CheckAt)
		cancel()
		errs = append(errs, fmt.Errorf("send restate check %s: %s", row.Key, why))
		if err != nil && !errors.Is(err, ledger.ErrConflict) {
			errs = append(errs, fmt.Errorf("restate check %s waits a full interval: %w", row.Key, err))
		}
	}
	return sent, errs
}

// withRestate runs a restatement pass after each sweep: the Runner the
// handler gets. The sweep's summary is returned as it was; the pass's is
// logged and its checks counted (RestateChecksSent), and its errors join
// the sweep's, so a failing pass fails the invocation like a failing sweep.
type withRestate struct {
	Runner
	Restate *Restater
	Metrics *metrics.Emitter
	Log     *slog.Logger
}

func (w withRestate) Run(ctx context.Context, tick time.Time) (Summary, error) {
	sum, err := w.Runner.Run(ctx, tick)
	rs, rerr := w.Restate.Run(ctx, tick)
	_ = w.Metrics.Emit(nil, metrics.Metric{Name: "RestateChecksSent", Unit: metrics.Count, Value: float64(rs.Sent)})
	if rerr != nil {
		w.Log.ErrorContext(ctx, "restatement checks finished with errors", "restate", rs, "error", rerr.Error())
		return sum, errors.Join(err, fmt.Errorf("restatement checks: %w", rerr))
	}
	w.Log.InfoContext(ctx, "restatement checks queued", "restate", rs)
	return sum, err
}
