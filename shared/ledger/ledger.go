// Package ledger is the partition ledger (L1–L5) and the only package
// that knows the layout of the daybook DynamoDB table.
//
// # Table layout
//
// One table (template.yaml, LedgerTable) holds these kinds of item:
//
//	account record:  pk=ACCOUNTS           sk=<account id>   doc (JSON of account.Account), enabled,
//	                                                         account_id, updated_at, wake_seq,
//	                                                         woken_at, closed_through,
//	                                                         fleet_shard, fleet_key (while enabled)
//	watermark:       pk=WM#<account>       sk=<dataset>      through (last materialized day),
//	                                                         account_id, dataset, updated_at
//	partition row:   pk=P#<account>#<ds>   sk=YYYY-MM-DD     account_id, dataset, day, state, attempts,
//	                                                         claim_token, claimed_at, started_at, lease_until,
//	                                                         next_attempt_at, last_error, exhausted,
//	                                                         generation, generation_reserved, rows, bytes,
//	                                                         files, manifest_key, duration_ms, completed_at,
//	                                                         reason, rerun_requested, updated_at,
//	                                                         due_account, due_key (while due),
//	                                                         fleet_shard, fleet_key (while stopped, or
//	                                                         marked stale by a transition: summary.go)
//	history item:    pk=H#<account>#<ds>#<day>               account_id, dataset, day, attempt, outcome,
//	                 sk=<started_at>#<attempt>               reason, claimed_at, started_at, finished_at,
//	                                                         generation, rows, bytes, files, duration_ms,
//	                                                         manifest_key, error, expires_at (TTL)
//	export stats:    pk=STATS              sk=EXPORTS#<hour> exports, export_ms, expires_at (TTL), updated_at
//	reconcile mark:  pk=STATS              sk=RECONCILE      reconciled_at, updated_at
//	claim budget:    pk=STATS              sk=BUDGET#<scope> budget_until, budget_total, budget_used (budget.go)
//	seed item:       pk=SEED#<account>     sk=<dataset>      seed_epoch, state, seed_first_day, seed_last_day,
//	                                                         seed_days, seed_done_days, ... (reseed.go)
//	slice plan:      pk=SL#<acct>#<ds>#<day>  sk=PLAN        partition_token, slice_count, generation, run_id,
//	                                                         destination, fingerprint, commit_token, ... (slice.go)
//	slice:           pk=SL#<acct>#<ds>#<day>  sk=S#<nnnn>    slice_index, state, claim_token, attempts,
//	                                                         lease_until, rows, bytes, slice_files, ... (slice.go)
//	issued token:    pk=T#<acct>#<ds>#<day>   sk=<token>     the claim tokens handed out, kept 30 days
//	                                                         (expires_at TTL), so a forged token is told
//	                                                         from a redelivered one (token.go)
//	isolation guard: pk=GUARDS             sk=<guard key>    owner, under, what: one per store, bucket and
//	                                                         prefix segment, and per role (accountwrite.go)
//	account change:  pk=AE#<account>       sk=<at>#<version> who changed what of an account (accountwrite.go)
//	outbox event:    pk=OB#<acct>#<ds>#<day>  sk=C#<gen> | S#<gen>#<at>  one partition event, recorded once,
//	                                                         pending (due_account=OB#<n>) until published (outbox.go)
//	fleet summary:   pk=FS#<account>       sk=SUMMARY | NAME | STALE  the account's line of the fleet view, its
//	                                                         name entry and its stale mark, in the fleet index
//	                                                         under F#<nn>, N#<nn>, Z#<nn> (summary.go)
//
// A history item records how one attempt ended (history.go); it is written
// after the transition that ended it ([Ledger.Complete], [Ledger.Fail], or a [Ledger.Claim] or
// [Ledger.ClaimManual] that took over a dead started claim), best effort. Export
// stats feed the sweeper's claim budget (stats.go). Both expire through the
// table's one TTL attribute, expires_at.
//
// Code names every attribute through one constant ([AttrPK], [AttrSK],
// [AttrDueAccount], [AttrDueKey] and [AttrExpiresAt] are exported), and a test
// checks the constants against the struct tags of the items' stored forms
// (stats bucket and reconcile marker share one). A stored value that does
// not parse (a time, a day, a number, a value of the wrong type) is an error
// naming the attribute, the item's key and the value, never a zero value: a
// lease read as zero would look expired.
//
// # The sparse "due" index (L5)
//
// A partition row carries due_account=<account> and due_key only while it has
// work to do or waits for an operator; the GSI `due` (hash due_account, range
// due_key) holds nothing else, so finding due work never reads completed
// rows, whatever the size of the ledger:
//
//	pending, newest closed day   S#<day>#<dataset>   (MaterializeDays' priority day; read first, L6)
//	queued                       0#<day>#<dataset>
//	pending                      1#<day>#<dataset>
//	failed, attempts left        2#<next_attempt_at>#<day>#<dataset>
//	running                      3#<lease_until>#<day>#<dataset>
//	failed, stopped            9#<day>#<dataset>
//	completed                    (no due_account/due_key: not in the index)
//
// Times in keys and attributes are RFC 3339 UTC at second precision
// (2006-01-02T15:04:05Z): fixed width, so string order is time order.
// [Ledger.DueWork] (and [Ledger.Due]) reads one key range per class with key conditions only
// (no filter): begins_with S#, 0#, 1#, 2# and 3#, the failed and running
// classes from their start so that the first row not yet due gives the
// account's next wake time, and merges them in S1 order after the
// scheduled class. It never reads the 9# class: a stopped row waits for
// a requeue (L1). [Ledger.CountStopped] counts that class for one account (a COUNT
// Query on begins_with 9#); the sweeper reads the fleet's level of stopped
// partitions from the fleet index instead ([Ledger.StoppedByAccount]), so "stopped
// retrying" is a level it publishes every sweep (O3) at a cost that grows
// with the stopped rows only.
//
// # The sparse "fleet" index (L6)
//
// GSI `fleet` (hash fleet_shard, range fleet_key) holds enabled accounts by
// wake time (W#<nn> / <wake time>) and stopped partitions (X#<nn> /
// <account>#<dataset>#<day>), nn = [Shard](account) of [FleetShards], so a sweep
// reads the accounts that may have work, and the stopped level, in a fixed
// number of queries whatever the fleet. wake.go describes who moves the wake
// time and how no wake-up is lost; stopped.go the stopped entries. The index
// also holds the accounts' fleet summaries worst first (F#<nn>), by name
// (N#<nn>), and the marks of the summaries to refresh (Z#<nn>), so a page of
// the fleet view is FleetShards queries whatever the fleet (summary.go); a
// row that a transition changed is itself a mark until a sweep refreshed
// its account.
//
// # States and transitions (L1, L2)
//
// Every transition is one conditional write:
//
//	Materialize     (absent)                          -> pending     attribute_not_exists(pk)
//	Claim           queued | pending | failed-and-due
//	                | running with lease_until < now,
//	                  not started or attempts left    -> running     state condition, new random token
//	ClaimManual     anything but a live running claim -> running, started, attempts=1 (absent rows are created)
//	                live running claim                -> rerun_requested=true, ErrBusy
//	Start           running (token), not started      -> started_at set, attempts+1, lease renewed
//	                (a second delivery of the job, or a reclaimed job's old message, gets ErrClaimLost)
//	NoteCommitted   running (token), generation above
//	                the stored and the noted one      -> generation_reserved = generation (claims number above it)
//	                running (token), not above        -> ErrConflict
//	ExpireClaim     running (token)                   -> lease_until in the past (a claim known dead is reclaimable now; its slices' too)
//	Release         running (token), not started      -> previous due state (a reclaimed dead claim: failed, due now)
//	                started                           -> ErrClaimLost (the job got through; row untouched)
//	Complete        running (token)                   -> completed, generation = res.Generation or +1
//	                running (token), rerun_requested  -> queued (manual), generation as above, stats kept
//	                res.Generation not above stored   -> ErrConflict (the claim still holds)
//	Fail            running (token)                   -> failed with backoff, or failed+stopped (9#)
//	                                                     after MaxAttempts
//	                running (token), rerun_requested  -> queued (manual)
//	Requeue         anything but a live running claim -> queued (absent rows are created)
//	                live running claim                -> rerun_requested=true
//	NoteReexportRequested
//	                an existing row, no live claim    -> reexport_requested_at/_by set, state unchanged (reexport.go);
//	                                                     ClaimManual, its re-run and Requeue remove them
//
// After its row write, every transition that leaves a row due at some time
// lowers the account's wake time to it ([Ledger.Requeue], [Ledger.ClaimManual], [Ledger.Fail],
// [Ledger.Complete] and [Ledger.Release], and [Ledger.Claim]'s re-run path; see wake.go); [Ledger.Fail]'s
// stopping branch and [Ledger.Claim]'s retirement add the row to the stopped shard,
// [Ledger.Requeue] and [Ledger.ClaimManual] remove it. [Ledger.Materialize] and [Ledger.Claim] do not wake: only
// the sweeper calls them, and it sets the account's next wake time itself.
//
// A write guarded by a claim token that no longer matches returns [ErrClaimLost].
// A dead claim (lease expired) that started on attempt MaxAttempts is not
// reclaimed: [Ledger.Claim] marks it failed+stopped (9#) and returns [ErrStopped],
// or, if a re-run was requested while it ran, queues it (manual, attempts=0)
// and returns [ErrConflict].
//
// attempts counts runs started since the row was last queued or
// materialized: a run uses an attempt when it starts ([Ledger.Start], or [Ledger.ClaimManual],
// which starts at once), not when it is claimed, so a job that waits in SQS
// longer than the lease is reclaimed without losing an attempt, and a row
// never uses up its attempts without having run. [Ledger.Claim] returns the attempt
// number the run will be. generation counts successful exports and only ever
// increases; [Ledger.Claim] returns the generation the run will commit at least.
//
// # Where each part lives
//
// errors.go holds every error the package returns; reexport.go the note of a
// re-export request on its way; restate.go the restate
// index (late data) and its transitions; reseed.go reseeds; slice.go and
// slicerun.go days exported in slices; wake.go the wake half of the fleet
// index, stopped.go its stopped half and stophook.go [Config].Stopped;
// history.go the attempt history.
package ledger

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/partition"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// DynamoAPI is the part of the DynamoDB client the ledger uses.
type DynamoAPI interface {
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, params *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	// TransactWriteItems writes an account with its isolation guards
	// (accountwrite.go).
	TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Config configures a Ledger.
type Config struct {
	Table string
	// Lease is how long a claim lives (L3); see LeaseFrom.
	Lease time.Duration
	// MaxAttempts is the number of attempts after which a failed row stops
	// retrying until requeued (L1). Default 6.
	MaxAttempts int
	// BackoffBase and BackoffCap bound the retry delay: attempt n waits a
	// uniformly random time in [1s, min(cap, base*2^(n-1))] (full jitter).
	// Defaults 5m and 6h.
	BackoffBase, BackoffCap time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Rand is the source of claim tokens and jitter (default crypto/rand).
	Rand io.Reader
	// Concurrency bounds parallel writes in Materialize and Requeue (default 16).
	Concurrency int
	// Stopped, if set, is told of every partition that stops retrying, right
	// after the transition (Fail on the last attempt, or Claim retiring a
	// dead claim on its last attempt); see stopped.go.
	Stopped func(ctx context.Context, s partition.Stop)
	// StoppedEvent, if set, makes the outbox event of a partition that
	// stops retrying; the ledger records it, pending, in the same
	// transaction as the transition that stops the partition, so a crash
	// right after that transition loses no event (stophook.go).
	StoppedEvent func(s partition.Stop) (Event, error)
	// WakeFailed is told when a transition was recorded but the account's
	// wake time could not be lowered after it (wake.go). The transition
	// stands and returns nil: a sweep finds the row at the account's next
	// wake (its next day close at the latest). Default: a warning on
	// slog.Default().
	WakeFailed func(ctx context.Context, accountID string, err error)
	// HistoryFailed is told when the history item of an attempt that
	// ended could not be written (history.go); the transition it follows
	// stands. Default: a warning on slog.Default().
	HistoryFailed func(ctx context.Context, key partition.Key, err error)
	// MaxBackfillDays is the oldest start date PutAccount accepts for a new
	// backfill, in days before today (L6). Default
	// envvar.DefaultMaxBackfillDays.
	MaxBackfillDays int
	// Stage is the deployment stage, which renders account prefixes
	// ({{.Stage}}) for the isolation guards of account writes. Default
	// envvar.DefaultStage, as DAYBOOK_STAGE's.
	Stage string
	// SliceHold is how long a partition exported in slices (slice.go)
	// stays held after its last news from a slice: a slice whose run died
	// comes back when its message's visibility timeout ends and must find
	// its partition still held to run again, alone. Default
	// DefaultRedelivery + Lease.
	SliceHold time.Duration
}

// DefaultRedelivery is the jobs queue's visibility timeout (template.yaml's
// JobsQueue, JOBS_VISIBILITY_TIMEOUT_SECONDS): how long a message whose
// run died waits before it is delivered again.
const DefaultRedelivery = 90 * time.Minute

// LeaseFrom derives the claim lease from the exporter's timeout (a live
// Lambda cannot outlive it) plus a margin (L3).
func LeaseFrom(exporterTimeout, margin time.Duration) time.Duration {
	return exporterTimeout + margin
}

// Ledger is the partition ledger.
type Ledger struct {
	db  DynamoAPI
	cfg Config
	mu  sync.Mutex // guards cfg.Rand
}

// New returns a Ledger on db.
func New(db DynamoAPI, cfg Config) (*Ledger, error) {
	if cfg.Table == "" {
		return nil, errors.New("ledger: table name is empty")
	}
	if cfg.Lease <= 0 {
		return nil, fmt.Errorf("ledger: lease %s must be positive (ledger.LeaseFrom)", cfg.Lease)
	}
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, envvar.DefaultMaxAttempts)
	if cfg.MaxAttempts < 1 {
		return nil, fmt.Errorf("ledger: max attempts %d < 1", cfg.MaxAttempts)
	}
	cfg.BackoffBase = cmp.Or(cfg.BackoffBase, 5*time.Minute)
	cfg.BackoffCap = cmp.Or(cfg.BackoffCap, 6*time.Hour)
	if cfg.BackoffBase < 0 || cfg.BackoffCap < cfg.BackoffBase {
		return nil, fmt.Errorf("ledger: backoff base %s / cap %s", cfg.BackoffBase, cfg.BackoffCap)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Rand = cmp.Or(cfg.Rand, rand.Reader)
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	cfg.SliceHold = cmp.Or(cfg.SliceHold, DefaultRedelivery+cfg.Lease)
	if cfg.SliceHold < cfg.Lease {
		return nil, fmt.Errorf("ledger: slice hold %s is shorter than the lease %s", cfg.SliceHold, cfg.Lease)
	}
	if cfg.WakeFailed == nil {
		cfg.WakeFailed = func(ctx context.Context, accountID string, err error) {
			slog.Default().WarnContext(ctx, "ledger: transition recorded, but the account's wake time was not lowered", "account", accountID, "cause", err.Error())
		}
	}
	if cfg.HistoryFailed == nil {
		cfg.HistoryFailed = func(ctx context.Context, key partition.Key, err error) {
			slog.Default().WarnContext(ctx, "ledger: attempt history not written; the transition stands", "partition", key.String(), "cause", err.Error())
		}
	}
	cfg.MaxBackfillDays = cmp.Or(cfg.MaxBackfillDays, envvar.DefaultMaxBackfillDays)
	cfg.Stage = cmp.Or(cfg.Stage, envvar.DefaultStage)
	if cfg.MaxBackfillDays < 1 {
		return nil, fmt.Errorf("ledger: max backfill days %d < 1", cfg.MaxBackfillDays)
	}
	return &Ledger{db: db, cfg: cfg}, nil
}

// Config returns the effective configuration.
func (l *Ledger) Config() Config { return l.cfg }

func (l *Ledger) now() time.Time { return l.cfg.Now().UTC().Truncate(time.Second) }

func (l *Ledger) token() (string, error) {
	var b [16]byte
	l.mu.Lock()
	_, err := io.ReadFull(l.cfg.Rand, b[:])
	l.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("ledger: claim token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Backoff returns the delay before the next attempt after `attempt` failed
// attempts: capped exponential with full jitter, uniform over [1s,
// min(cap, base*2^(attempt-1))] drawn from the injected random source.
func (l *Ledger) Backoff(attempt int) (time.Duration, error) {
	ceil := l.cfg.BackoffBase
	for i := 1; i < attempt && ceil < l.cfg.BackoffCap; i++ {
		ceil *= 2
	}
	ceil = min(ceil, l.cfg.BackoffCap)
	var b [8]byte
	l.mu.Lock()
	_, err := io.ReadFull(l.cfg.Rand, b[:])
	l.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("ledger: jitter: %w", err)
	}
	secs := int64(ceil / time.Second)
	if secs <= 1 {
		return time.Second, nil
	}
	// Uniform over whole seconds in [1s, ceil]: a failed row is never due
	// again in the same second it failed.
	return time.Duration(1+binary.BigEndian.Uint64(b[:])%uint64(secs)) * time.Second, nil
}

// ConfigFromEnv reads the ledger's deployment configuration, the same in
// both functions and the CLI: LEDGER_TABLE, MAX_ATTEMPTS, MAX_BACKFILL_DAYS,
// the lease from EXPORTER_TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS (L3), and
// the slice hold from JOBS_VISIBILITY_TIMEOUT_SECONDS + the lease.
// Problems are collected in r, naming the variable.
func ConfigFromEnv(r *envvar.Reader) Config {
	lease := LeaseFrom(r.Seconds("EXPORTER_TIMEOUT_SECONDS", envvar.DefaultExporterTimeout), r.Seconds("LEASE_MARGIN_SECONDS", envvar.DefaultLeaseMargin))
	return Config{
		Table:           r.String("LEDGER_TABLE"),
		Lease:           lease,
		MaxAttempts:     r.Int("MAX_ATTEMPTS", envvar.DefaultMaxAttempts),
		MaxBackfillDays: r.MaxBackfillDays(),
		Stage:           r.Stage(),
		SliceHold:       r.Seconds("JOBS_VISIBILITY_TIMEOUT_SECONDS", DefaultRedelivery) + lease,
	}
}

// forEach runs fn over items with at most n at once and joins the errors.
func forEach[T any](ctx context.Context, n int, items []T, fn func(T) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, n)
	)
	for _, it := range items {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) == 0 {
		return ctx.Err()
	}
	return errors.Join(errs...)
}
