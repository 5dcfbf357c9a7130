package ledger

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"

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
	// Catalog is the deployment's dataset catalog (required): an account
	// is saved only with datasets of it, and a fleet summary reads each
	// dataset's rows under the contract it delivers now.
	Catalog *dataset.Set
	// Lease is how long a claim lives; see LeaseFrom.
	Lease time.Duration
	// MaxAttempts is the number of attempts after which a failed row stops
	// retrying until requeued. Default 6.
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
	// StoppedEvent, if set, makes the outbox event of a partition that
	// stops retrying; the ledger records it, pending, in the same
	// transaction as the transition that stops the partition, so a crash
	// right after that transition loses no event (stoptransition.go).
	StoppedEvent func(s partition.Stop) (Event, error)
	// Report logs and counts what fails after a recorded transition (the
	// account's wake time not lowered, the attempt's history item not
	// written); the transition stands. Default: warnings on
	// slog.Default(), nothing counted.
	Report Reporter
	// MaxBackfillDays is the oldest start date PutAccount accepts for a new
	// backfill, in days before today. Default
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
// Lambda cannot outlive it) plus a margin.
func LeaseFrom(exporterTimeout, margin time.Duration) time.Duration {
	return exporterTimeout + margin
}

// Ledger is the partition ledger: its aggregates (aggregates.go), each a
// part of the table with its own methods, share one kernel (kernel.go).
type Ledger struct {
	*kernel
}

// New returns a Ledger on db.
func New(db DynamoAPI, cfg Config) (*Ledger, error) {
	if cfg.Table == "" {
		return nil, errors.New("ledger: table name is empty")
	}
	if cfg.Catalog == nil {
		return nil, errors.New("ledger: no dataset catalog (Config.Catalog)")
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
	cfg.MaxBackfillDays = cmp.Or(cfg.MaxBackfillDays, envvar.DefaultMaxBackfillDays)
	cfg.Stage = cmp.Or(cfg.Stage, envvar.DefaultStage)
	if cfg.MaxBackfillDays < 1 {
		return nil, fmt.Errorf("ledger: max backfill days %d < 1", cfg.MaxBackfillDays)
	}
	return &Ledger{&kernel{db: db, cfg: cfg}}, nil
}

// Config returns the effective configuration.
func (l *Ledger) Config() Config { return l.cfg }

// Backoff returns the delay before the next attempt after `attempt` failed
// attempts: capped exponential with full jitter, uniform over [1s,
// min(cap, base*2^(attempt-1))] drawn from the injected random source.
func (l Partitions) Backoff(attempt int) (time.Duration, error) {
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
// the lease from EXPORTER_TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS, and
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
