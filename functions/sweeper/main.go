// Command sweeper is the sweeper Lambda: on a schedule it materializes closed
// days, claims due partitions and enqueues export jobs, and on its sweep
// queue it runs the shard messages a large sweep fans out. This file only
// wires.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/logging"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/outbox"
)

func main() {
	cfg, err := loadConfig(envvar.New())
	log := logging.New(os.Stdout, logging.ParseLevel(cfg.LogLevel)).With("function", "sweeper")
	if err != nil {
		log.Error("configuration", "error", err.Error())
		os.Exit(2)
	}
	cat, err := dataset.FromEnv(os.LookupEnv) // DAYBOOK_CATALOG, or the shipped example
	if err != nil {
		log.Error("catalog", "error", err.Error())
		os.Exit(2)
	}
	dataset.Use(cat)
	awsCfg, err := awsclient.Load(context.Background())
	if err != nil {
		log.Error("aws configuration", "error", err.Error())
		os.Exit(2)
	}
	em := &metrics.Emitter{W: os.Stdout, Stage: cfg.Stage}
	pub := &events.Publisher{API: eventbridge.NewFromConfig(awsCfg), Bus: cfg.EventBus}
	ob := &outbox.Outbox{Bus: pub, On: pub.Enabled()} // its Store is the ledger, made with the hook
	cfg.Ledger.Stopped = stoppedHook(ob, em, log)
	if ob.On {
		cfg.Ledger.StoppedEvent = outbox.StoppedEvent // recorded with the transition that stops the partition
	}
	cfg.Ledger.ReportFailures(em, log)
	led, err := ledger.New(dynamodb.NewFromConfig(awsCfg), cfg.Ledger)
	if err != nil {
		log.Error("ledger", "error", err.Error())
		os.Exit(2)
	}
	ob.Store = led
	lambda.Start(wire(cfg, wiring{Ledger: led, Queues: sqs.NewFromConfig(awsCfg), Outbox: ob, Now: time.Now, Metrics: em, Log: log}).Invoke)
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

var _ FunctionLedger = (*ledger.Ledger)(nil)

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

// wire is the deployed function as main runs it: the sweep with its claim
// budget and fan-out, followed by the restatement pass and the outbox's
// republishing, behind the handler. The fleet tests and benchmark run this,
// not a part of it.
func wire(cfg Config, d wiring) Handler {
	led, q, ob, now, em, log := d.Ledger, d.Queues, d.Outbox, d.Now, d.Metrics, d.Log
	lc := led.Config()
	sw := &Sweeper{Ledger: led, SQS: q, Queue: q, Config: SweepConfig{
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
	}}
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
