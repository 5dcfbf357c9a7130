// Command sweeper is the sweeper Lambda: on a schedule it materializes closed
// days, claims due partitions and enqueues export jobs, and on its sweep
// queue it runs the shard messages a large sweep fans out. This file only
// wires.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/logging"
	"github.com/daybook-dev/daybook/shared/metrics"
)

func main() {
	cfg, err := loadConfig(envvar.New())
	log := logging.New(os.Stdout, logging.ParseLevel(cfg.LogLevel)).With("function", "sweeper")
	if err != nil {
		log.Error("configuration", "error", err.Error())
		os.Exit(2)
	}
	awsCfg, err := awsclient.Load(context.Background())
	if err != nil {
		log.Error("aws configuration", "error", err.Error())
		os.Exit(2)
	}
	em := &metrics.Emitter{W: os.Stdout, Stage: cfg.Stage}
	cfg.Ledger.Stopped = stoppedHook(&events.Publisher{API: eventbridge.NewFromConfig(awsCfg), Bus: cfg.EventBus}, em, log)
	cfg.Ledger.ReportFailures(em, log)
	led, err := ledger.New(dynamodb.NewFromConfig(awsCfg), cfg.Ledger)
	if err != nil {
		log.Error("ledger", "error", err.Error())
		os.Exit(2)
	}
	q := sqs.NewFromConfig(awsCfg)
	sw := &Sweeper{Ledger: led, SQS: q, Queue: q, Config: SweepConfig{
		QueueURL:           cfg.QueueURL,
		PerAccountCap:      cfg.PerAccountCap,
		PerSweepCap:        cfg.PerSweepCap,
		DefaultSettleDelay: cfg.SettleDelay,
		MaxBackfillDays:    led.Config().MaxBackfillDays,
		MaterializeRows:    cfg.MaterializeRows,
		Capacity: &Capacity{
			ExporterConcurrency: cfg.ExporterConcurrency,
			ExporterTimeout:     cfg.ExporterTimeout,
			Interval:            cfg.SweepInterval,
			Lease:               led.Config().Lease,
		},
		SweepQueueURL:  cfg.SweepQueueURL,
		FanOutAccounts: cfg.FanOutAccounts,
		// Sweeps that start within half an interval of each other are the
		// same tick run twice: they share its budget.
		BudgetWindow: cfg.SweepInterval / 2,
		Now:          time.Now,
		Log:          log,
	}}
	rs := &Restater{Ledger: led, SQS: q, Config: RestateConfig{QueueURL: cfg.QueueURL, Restate: cfg.Restate,
		DefaultSettleDelay: cfg.SettleDelay, Now: time.Now, Log: log}}
	// The restatement pass follows each scheduled sweep; shard messages of a
	// fanned-out sweep run without it (the scheduled sweep already ran it).
	lambda.Start(Handler{Sweeper: withRestate{Runner: sw, Restate: rs, Metrics: em, Log: log}, Shards: sw, Log: log, Metrics: em}.Invoke)
}
