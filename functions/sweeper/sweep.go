package main

// Sweeper is the heart of the sweeper Lambda (S1–S4, L6). A sweep reads only
// the accounts that may have work: those whose wake time in the fleet index
// has passed (ledger.WokenAccounts, one query per shard). For each of them,
// concurrently and under a bound:
//
//  1. it materializes pending rows for the closed days since the last
//     materialization, at most MaterializeRows rows per account per sweep
//     (the watermark advancing per chunk), the newest closed day of a live
//     account first and in the scheduled class; never today (L4). A start
//     date beyond the backfill limit is clamped;
//  2. it reads the account's due work from the sparse due index, capped per
//     account (ledger.DueWork: scheduled, then S1).
//
// Then, across accounts: every account's scheduled rows first, then the rest
// round-robin from an account that rotates with the clock (S2, L6), under
// the claim budget (what the exporters can drain before the next sweep,
// budget.go). Each selected row is claimed (a conditional write; a race
// lost to another sweep or a manual claim is skipped; S3) and sent as a job
// in batches of 10; a claim whose message could not be sent is released.
// Last, each handled account gets its next wake time (ledger.SetNextWake):
// now if it still has due rows or days to materialize, else the earliest of
// its next day close, its failed rows' next attempts and its claims' lease
// ends.
//
// A sweep runs for a schedule tick and closes days as of it (closesAsOf):
// the days it materializes are the ones closed at the tick, not at whatever
// instant it happens to run, so a retried or late sweep closes what its tick
// did. Everything else (which accounts are woken, leases, retries, the
// budget) runs by the clock.
//
// When more accounts are woken than one invocation handles comfortably, the
// scheduled sweep does not handle them itself: it sends one message per
// group of shards to the sweep queue, whose event source runs this same
// function on each (fanout.go).
//
// Running twice at once is safe (S4): materialization, watermarks, wake
// times and claims are conditional writes. A crash leaves accounts woken and
// claims that die with their lease; a later sweep takes them over.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/outbox"
	"github.com/daybook-dev/daybook/shared/partition"
)

// LedgerAPI is what the sweeper needs from the ledger.
type LedgerAPI interface {
	WokenAccounts(ctx context.Context, shard int, now time.Time, limit int) ([]ledger.Woken, ledger.ReadStats, error)
	CountWoken(ctx context.Context, shard int, now time.Time) (int, ledger.ReadStats, error)
	SetNextWake(ctx context.Context, w ledger.Woken, next time.Time, closedThrough civil.Date, readAt time.Time) (bool, error)
	Watermark(ctx context.Context, accountID, dataset string) (civil.Date, error)
	AdvanceWatermark(ctx context.Context, accountID, dataset string, through civil.Date) (bool, error)
	MaterializeDays(ctx context.Context, accountID, dataset string, days []civil.Date, priority civil.Date) (int, error)
	DueWork(ctx context.Context, accountID string, limit int) (ledger.DueWork, error)
	Claim(ctx context.Context, key partition.Key, reason partition.Reason) (ledger.Claim, error)
	Release(ctx context.Context, c ledger.Claim) error
	ReserveClaims(ctx context.Context, scope string, window time.Duration, total, want int) (int, error)
	StoppedByAccount(ctx context.Context, shard int) (map[string]int, ledger.ReadStats, error)
	FleetStats(ctx context.Context, window time.Duration) (ledger.FleetStats, ledger.ReadStats, error)
	ClaimReconcile(ctx context.Context, every time.Duration) (bool, error)
	ReconcileWake(ctx context.Context) (ledger.ReconcileResult, ledger.ReadStats, error)
}

var _ LedgerAPI = functionLedger{}

// SQSAPI is what the sweeper needs from SQS to send messages (jobs, and
// shard messages to itself).
type SQSAPI interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// QueueAttributesAPI reads the jobs queue's depth for the claim budget.
type QueueAttributesAPI interface {
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ QueueAttributesAPI = (*sqs.Client)(nil)

// SweepConfig configures a Sweeper. Zero values take the defaults named.
type SweepConfig struct {
	QueueURL string
	// PerAccountCap is the most rows one account may have claimed per sweep.
	PerAccountCap int
	// PerSweepCap bounds the claim budget of a sweep (all its shards).
	PerSweepCap int
	// DefaultSettleDelay applies to accounts that set none (SETTLE_DELAY).
	DefaultSettleDelay time.Duration
	// MaxBackfillDays clamps start dates further back (default 400).
	MaxBackfillDays int
	// MaterializeRows is the most rows materialized per account per sweep
	// (default 400).
	MaterializeRows int
	// ClaimConcurrency bounds parallel claims (default 32);
	// AccountConcurrency parallel account handling (default 32).
	ClaimConcurrency, AccountConcurrency int
	// Capacity models the exporters for the claim budget; without it the
	// budget is PerSweepCap.
	Capacity *Capacity
	// SweepQueueURL is the queue of shard messages; empty: never fan out.
	SweepQueueURL string
	// FanOutAccounts is how many woken accounts one invocation handles
	// before the scheduled sweep fans out (default 2000).
	FanOutAccounts int
	// Reserve is the time kept before the invocation's deadline: no account
	// is started later (default 60 s).
	Reserve time.Duration
	// BudgetWindow, if set, makes the fan-out workers of the sweeps that
	// fan out within it of each other (a scheduled sweep delivered twice,
	// two ticks at once) draw their claims from one budget, the first
	// sweep's (ledger.ReserveClaims); zero, or a sweep that does not fan
	// out: each claims up to its own budget. BudgetScope names that budget
	// (default "claims").
	BudgetWindow time.Duration
	BudgetScope  string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives one line per problem (default slog.Default()).
	Log *slog.Logger
}

// Sweeper runs sweeps.
type Sweeper struct {
	// Catalog is the deployment's dataset catalog (the ledger's).
	Catalog *dataset.Set
	Ledger  LedgerAPI
	SQS     SQSAPI
	// Queue reads the jobs queue's depth; needed with Config.Capacity.
	Queue  QueueAttributesAPI
	Config SweepConfig
	// Outbox publishes the stopped event of a dead claim a sweep retires
	// on its last attempt; nil publishes none (a recorded event then goes
	// out with the outbox's republish).
	Outbox *outbox.Outbox
	// Metrics counts the publishes that failed; nil counts none.
	Metrics *metrics.Emitter
}

// Job is the message the sweeper sends for a claimed partition; its shape
// belongs to package jobs, which the exporter parses with.
type Job = jobs.Job

// JobKind is Job.Kind.
const JobKind = jobs.KindJob

// Summary describes one sweep (or one fan-out worker); it is logged and
// returned as JSON.
type Summary struct {
	Woken          int `json:"woken"`           // accounts read from the fleet index (wake time passed)
	Accounts       int `json:"accounts"`        // accounts handled
	Materialized   int `json:"materialized"`    // rows created
	Due            int `json:"due"`             // due rows read (each account capped)
	Budget         int `json:"budget"`          // rows this sweep could claim
	Claimed        int `json:"claimed"`         // rows claimed
	Enqueued       int `json:"enqueued"`        // jobs sent (including jobs an exporter started although the send reported an error)
	Released       int `json:"released"`        // claims given back after a failed send
	Skipped        int `json:"skipped"`         // claims lost to a concurrent sweep or manual run
	Capped         int `json:"capped"`          // due rows left for a later sweep by the budget
	CappedAccounts int `json:"capped_accounts"` // accounts with more due rows than the per-account cap
	Clamped        int `json:"clamped"`         // accounts whose start date was clamped to the backfill limit
	Deferred       int `json:"deferred"`        // woken accounts left for the next sweep (deadline)
	FanOut         int `json:"fan_out"`         // shard messages sent to the sweep queue
	ItemsRead      int `json:"items_read"`      // items read from the table and indexes
	// Stopped is the number of partitions of the fleet that currently
	// stopped retrying and wait for an operator's retry (a level, not the ones that
	// stopped during this sweep); it feeds PartitionsStopped.
	Stopped int `json:"stopped"`
	Retired int `json:"retired"` // dead claims retired as stopped by this sweep (included in Stopped)
	// StoppedCounted is false when a shard's count failed (or this is a
	// fan-out worker, which does not count): Stopped is then not
	// published, so the alarm keeps its state instead of clearing.
	StoppedCounted bool `json:"stopped_counted"`
	Errors         int  `json:"errors"`
	// AsOf is the instant the sweep closed days as of: its tick, or the
	// clock when it had none that could be used (closesAsOf).
	AsOf time.Time `json:"as_of"`
	// OldestDueAgeSeconds is how long the oldest due partition seen has been
	// closed (its day's end in the account's zone); 0 when nothing is due.
	// Due rows are read capped, so it is a lower bound.
	OldestDueAgeSeconds int64 `json:"oldest_due_age_seconds"`
	DurationMS          int64 `json:"duration_ms"`
}

func (s *Sweeper) now() time.Time {
	if s.Config.Now != nil {
		return s.Config.Now()
	}
	return time.Now()
}

func (s *Sweeper) log() *slog.Logger {
	if s.Config.Log != nil {
		return s.Config.Log
	}
	return slog.Default()
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// problems collects a sweep's errors: each is counted, logged and joined
// into the sweep's error, and none stops the sweep.
type problems struct {
	mu   sync.Mutex
	log  *slog.Logger
	sum  *Summary
	errs []error
}

func (p *problems) add(err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sum.Errors++
	p.errs = append(p.errs, err)
	p.log.Error("sweep problem", "error", err.Error())
}

func (s *Sweeper) check() error {
	c := s.Config
	if c.PerAccountCap < 1 || c.PerSweepCap < 1 {
		return fmt.Errorf("sweeper: caps must be positive (per account %d, per sweep %d)", c.PerAccountCap, c.PerSweepCap)
	}
	if c.QueueURL == "" {
		return errors.New("sweeper: queue URL is empty")
	}
	if c.Capacity != nil && s.Queue == nil {
		return errors.New("sweeper: a capacity model needs the jobs queue's attributes")
	}
	return nil
}

// Run performs one scheduled sweep for tick (zero: none): it reads the
// woken accounts of every shard and handles them, closing days as of the
// tick, or fans them out to the sweep queue with the tick when there are
// more than FanOutAccounts; then it counts the fleet's stopped partitions.
// Problems with one account or one row are logged, counted and joined into
// the error; they do not stop the sweep.
func (s *Sweeper) Run(ctx context.Context, tick time.Time) (sum Summary, err error) {
	started := time.Now()
	defer func() { sum.DurationMS = time.Since(started).Milliseconds() }()
	if err := s.check(); err != nil {
		return sum, err
	}
	p := &problems{log: s.log(), sum: &sum}
	now := s.now()
	sum.AsOf = closesAsOf(tick, now)

	stats, st, err := s.Ledger.FleetStats(ctx, statsWindow)
	sum.ItemsRead += st.Items
	p.add(err)
	p.add(s.reconcile(ctx, stats, &sum))
	budget, err := s.budget(ctx, stats)
	p.add(err)

	// With a sweep queue, a shard is read up to one account past what one
	// invocation handles: more than that in total, and the sweep fans out.
	limit, per := 0, orDefault(s.Config.FanOutAccounts, defaultFanOutAccounts)
	if s.Config.SweepQueueURL != "" {
		limit = per + 1
	}
	woken, full, err := s.readShards(ctx, allShards(), now, limit, &sum)
	p.add(err)
	if s.Config.SweepQueueURL != "" && (len(full) > 0 || sum.Woken > per) {
		n, err := s.fanOut(ctx, woken, full, sweepInstants{now: now, asOf: sum.AsOf}, budget, &sum)
		p.add(err)
		sum.FanOut = n
	} else {
		// A sweep that does not fan out claims from its own budget, which
		// the jobs still queued already reduce (Capacity): one that follows
		// it a minute later, as a demo's or an operator's does, sees them.
		s.sweepAccounts(ctx, woken, claimBudget{claims: budget}, sweepInstants{now: now, asOf: sum.AsOf}, &sum, p)
	}
	s.countStopped(ctx, &sum, p)
	return sum, errors.Join(p.errs...)
}

// RunShards is a fan-out worker: it handles the woken accounts of the
// job's shards under the job's budget, closing days as of the tick of the
// sweep that sent it (job.Sweep), as that sweep would have.
func (s *Sweeper) RunShards(ctx context.Context, job ShardJob) (sum Summary, err error) {
	started := time.Now()
	defer func() { sum.DurationMS = time.Since(started).Milliseconds() }()
	if err := s.check(); err != nil {
		return sum, err
	}
	if err := job.validate(); err != nil {
		return sum, err
	}
	p := &problems{log: s.log().With("sweep", job.Sweep, "shards", job.Shards), sum: &sum}
	now := s.now()
	sum.AsOf = closesAsOf(job.tick(), now)
	woken, _, err := s.readShards(ctx, job.Shards, now, 0, &sum)
	p.add(err)
	s.sweepAccounts(ctx, woken, claimBudget{claims: job.Budget, shared: true}, sweepInstants{now: now, asOf: sum.AsOf}, &sum, p)
	return sum, errors.Join(p.errs...)
}

func allShards() []int {
	out := make([]int, ledger.FleetShards)
	for i := range out {
		out[i] = i
	}
	return out
}

// readShards reads the woken accounts of shards concurrently, earliest wake
// first within each, at most limit per shard (0: all). full lists the shards
// whose read stopped at the limit.
func (s *Sweeper) readShards(ctx context.Context, shards []int, now time.Time, limit int, sum *Summary) (woken [][]ledger.Woken, full []int, err error) {
	woken = make([][]ledger.Woken, len(shards))
	items := make([]int, len(shards))
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, shard := range shards {
		wg.Go(func() {
			var st ledger.ReadStats
			woken[i], st, errs[i] = s.Ledger.WokenAccounts(ctx, shard, now, limit)
			items[i] = st.Items
		})
	}
	wg.Wait()
	for i := range shards {
		sum.ItemsRead += items[i]
		sum.Woken += len(woken[i])
		if limit > 0 && len(woken[i]) >= limit {
			full = append(full, shards[i])
		}
	}
	return woken, full, errors.Join(errs...)
}

// countStopped reads the fleet's level of stopped partitions (O3).
func (s *Sweeper) countStopped(ctx context.Context, sum *Summary, p *problems) {
	counts := make([]map[string]int, ledger.FleetShards)
	items := make([]int, ledger.FleetShards)
	errs := make([]error, ledger.FleetShards)
	var wg sync.WaitGroup
	for shard := range ledger.FleetShards {
		wg.Go(func() {
			var st ledger.ReadStats
			counts[shard], st, errs[shard] = s.Ledger.StoppedByAccount(ctx, shard)
			items[shard] = st.Items
		})
	}
	wg.Wait()
	sum.StoppedCounted = true
	for shard := range ledger.FleetShards {
		sum.ItemsRead += items[shard]
		if errs[shard] != nil {
			p.add(fmt.Errorf("count stopped partitions: %w", errs[shard]))
			sum.StoppedCounted = false
			continue
		}
		for acct, n := range counts[shard] {
			sum.Stopped += n
			s.log().Warn("partitions stopped retrying; fix the cause and retry them (daybook retry)", "account", acct, "stopped", n)
		}
	}
}

// reconcile puts account records that predate the fleet index (or were
// written by hand) into it, at most once per reconcileEvery for the fleet.
func (s *Sweeper) reconcile(ctx context.Context, stats ledger.FleetStats, sum *Summary) error {
	if !stats.ReconciledAt.IsZero() && s.now().Sub(stats.ReconciledAt) < reconcileEvery {
		return nil
	}
	ok, err := s.Ledger.ClaimReconcile(ctx, reconcileEvery)
	if err != nil || !ok {
		return err
	}
	res, st, err := s.Ledger.ReconcileWake(ctx)
	sum.ItemsRead += st.Items
	s.log().Info("fleet index reconciled", "accounts", res.Accounts, "added", res.Added, "removed", res.Removed, "malformed", len(res.Malformed))
	return errors.Join(append(res.Malformed, err)...)
}

const (
	statsWindow           = 2 * time.Hour
	reconcileEvery        = 24 * time.Hour
	defaultFanOutAccounts = envvar.DefaultFanOutAccounts
)
