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
	"github.com/daybook-dev/daybook/shared/outbox"
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
	pub := &events.Publisher{API: eventbridge.NewFromConfig(awsCfg), Bus: cfg.EventBus}
	ob := &outbox.Outbox{Bus: pub, On: pub.Enabled()} // its Store is the ledger, made with the hook
	cfg.Ledger.Stopped = stoppedHook(ob, em, log)
	cfg.Ledger.ReportFailures(em, log)
	led, err := ledger.New(dynamodb.NewFromConfig(awsCfg), cfg.Ledger)
	if err != nil {
		log.Error("ledger", "error", err.Error())
		os.Exit(2)
	}
	ob.Store = led
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
		Now:            time.Now,
		Log:            log,
	}}
	rs := &Restater{Ledger: led, SQS: q, Config: RestateConfig{QueueURL: cfg.QueueURL, Restate: cfg.Restate,
		DefaultSettleDelay: cfg.SettleDelay, Now: time.Now, Log: log}}
	// The restatement pass follows each scheduled sweep; shard messages of a
	// fanned-out sweep run without it (the scheduled sweep already ran it).
	// The outbox's pending events go out after both.
	swept := withRepublish{Runner: withRestate{Runner: sw, Restate: rs, Metrics: em, Log: log}, Outbox: ob, Now: time.Now, Metrics: em, Log: log}
	lambda.Start(Handler{Sweeper: swept, Shards: sw, Log: log, Metrics: em}.Invoke)
}
