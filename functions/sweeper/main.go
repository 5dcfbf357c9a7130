// Command sweeper is the sweeper Lambda: on a schedule it materializes closed
// days, claims due partitions and enqueues export jobs, and on its sweep
// queue it runs the shard messages a large sweep fans out. This file only
// wires.
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/logging"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/outbox"
	"github.com/daybook-dev/daybook/shared/startup"
)

func main() {
	startup.Run("sweeper", func(_ context.Context, awsCfg aws.Config) (any, *slog.Logger, error) {
		fn, err := build(os.Environ(), Options{AWS: awsCfg, Now: time.Now, Rand: rand.Reader, Stdout: os.Stdout})
		return fn.Handler.Invoke, fn.Log, err
	})
}

// Options are what the function's environment does not say. main passes
// the real ones (the SDK's default configuration, the system clock,
// crypto/rand, stdout); a test passes its own and gets the handler main
// runs.
type Options struct {
	AWS  aws.Config
	Now  func() time.Time
	Rand io.Reader // claim tokens and backoff jitter
	// Stdout receives the logs and the metric lines (embedded metric format).
	Stdout io.Writer
}

// Function is the function as main starts it.
type Function struct {
	Handler Handler
	Config  Config
	Log     *slog.Logger
}

// build is the function main runs: its configuration read once from
// environ (os.Environ), the catalog, its clients from o.AWS, then wire.
// Errors name the variable; Log is set even then.
func build(environ []string, o Options) (Function, error) {
	r := envvar.From(envvar.Environ(environ))
	cfg, err := loadConfig(r)
	log := logging.ForFunction(o.Stdout, cfg.LogLevel, "sweeper")
	fn := Function{Config: cfg, Log: log}
	if err != nil {
		return fn, fmt.Errorf("configuration: %w", err)
	}
	cat, err := dataset.FromEnv(r.Lookup) // DAYBOOK_CATALOG, or the shipped example
	if err != nil {
		return fn, fmt.Errorf("catalog: %w", err)
	}
	em := &metrics.Emitter{W: o.Stdout, Stage: cfg.Stage, Now: o.Now}
	pub := &events.Publisher{API: eventbridge.NewFromConfig(o.AWS), Bus: cfg.EventBus, Now: o.Now}
	ob := &outbox.Outbox{Bus: pub, On: pub.Enabled()} // its Store is the ledger, made with the hook
	cfg.Ledger.Catalog, cfg.Ledger.Now, cfg.Ledger.Rand = cat, o.Now, o.Rand
	if ob.On {
		cfg.Ledger.StoppedEvent = outbox.StoppedEvent // recorded with the transition that stops the partition
	}
	cfg.Ledger.Report = ledger.Reporter{Log: log, Metrics: em}
	led, err := ledger.New(dynamodb.NewFromConfig(o.AWS), cfg.Ledger)
	if err != nil {
		return fn, fmt.Errorf("ledger: %w", err)
	}
	ob.Store = led.Outbox()
	fn.Handler = wire(cfg, wiring{Ledger: ledgerOf(led), Queues: sqs.NewFromConfig(o.AWS), Outbox: ob, Now: o.Now, Metrics: em, Log: log})
	return fn, nil
}

// Queues is what the sweeper sends to (jobs, shard messages, checks) and
// reads the jobs queue's depth from: the SQS client.
type Queues interface {
	SQSAPI
	QueueAttributesAPI
}

var _ Queues = (*sqs.Client)(nil)

// FunctionLedger is what the deployed function needs from the ledger: the
// sweep's, the restatement pass's, the outbox's and the fleet summaries'.
type FunctionLedger interface {
	LedgerAPI
	RestateLedger
	outbox.Store
	Refresher
	Config() ledger.Config
}

var _ FunctionLedger = functionLedger{}

// wiring is what the function is wired with: its clients, clock, metrics
// and log.
type wiring struct {
	Ledger  FunctionLedger
	Queues  Queues
	Outbox  *outbox.Outbox
	Now     func() time.Time
	Metrics *metrics.Emitter
	Log     *slog.Logger
}

// wire is the deployed function as build makes it from its clients: the
// sweep with its claim budget and fan-out, followed by the restatement
// pass and the outbox's republishing, behind the handler. The fleet tests
// and benchmark run this on ledgers and queues of their own, not a part
// of it.
func wire(cfg Config, d wiring) Handler {
	led, q, ob, now, em, log := d.Ledger, d.Queues, d.Outbox, d.Now, d.Metrics, d.Log
	lc := led.Config()
	sw := &Sweeper{Catalog: lc.Catalog, Ledger: led, SQS: q, Queue: q, Config: SweepConfig{
		QueueURL:           cfg.QueueURL,
		PerAccountCap:      cfg.PerAccountCap,
		PerSweepCap:        cfg.PerSweepCap,
		DefaultSettleDelay: cfg.SettleDelay,
		MaxBackfillDays:    lc.MaxBackfillDays,
		MaterializeRows:    cfg.MaterializeRows,
		Capacity: &Capacity{
			ExporterConcurrency: cfg.ExporterConcurrency,
			ExporterTimeout:     cfg.ExporterTimeout,
			Interval:            cfg.SweepInterval,
			Lease:               lc.Lease,
		},
		SweepQueueURL:  cfg.SweepQueueURL,
		FanOutAccounts: cfg.FanOutAccounts,
		// Sweeps that start within half an interval of each other are the
		// same tick run twice: they share its budget.
		BudgetWindow: cfg.SweepInterval / 2,
		Now:          now,
		Log:          log,
	}, Outbox: ob, Metrics: em}
	rs := &Restater{Ledger: led, SQS: q, Config: RestateConfig{QueueURL: cfg.QueueURL, Restate: cfg.Restate,
		DefaultSettleDelay: cfg.SettleDelay, Now: now, Log: log}}
	// The restatement pass follows each scheduled sweep; shard messages of a
	// fanned-out sweep run without it (the scheduled sweep already ran it).
	// The outbox's pending events go out after both, and the fleet
	// summaries of the accounts changed are refreshed last.
	swept := withSummaries{Runner: withRepublish{Runner: withRestate{Runner: sw, Restate: rs, Metrics: em, Log: log}, Outbox: ob, Now: now, Metrics: em, Log: log},
		Summaries: led, Log: log}
	return Handler{Sweeper: swept, Shards: sw, Log: log, Metrics: em}
}
