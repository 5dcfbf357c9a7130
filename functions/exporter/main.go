// Command exporter is the exporter Lambda: it reads export messages from SQS
// and writes each partition into its account's bucket. This file only wires.
//
// service.go routes a message; run.go is one partition's run; slices.go and
// slicerun.go days exported in slices; restate.go restatement (the check
// message and what a generation records for the next check); reseed.go
// reseeds; lifecycle.go how both hook into a run.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/logging"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/netguard"
	"github.com/daybook-dev/daybook/shared/outbox"
	"github.com/daybook-dev/daybook/shared/source"
)

func main() {
	cfg, err := loadConfig(envvar.New())
	log := logging.New(os.Stdout, logging.ParseLevel(cfg.LogLevel)).With("function", "exporter")
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
	h, err := wire(context.Background(), cfg, log)
	if err != nil {
		log.Error("start-up", "error", err.Error())
		os.Exit(2)
	}
	partSize := cfg.Export().partSize()
	if limit := memoryLimit(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), os.Getenv("GOMEMLIMIT"), partSize, cfg.Concurrency); limit > 0 {
		debug.SetMemoryLimit(limit) // a guard; see memoryLimit
		log.Info("memory limit", "go_memory_limit_mib", limit>>20, "part_size_mib", partSize>>20)
	}
	lambda.Start(h.Handle)
}

func wire(ctx context.Context, cfg Config, log *slog.Logger) (Handler, error) {
	awsCfg, err := awsclient.Load(ctx)
	if err != nil {
		return Handler{}, err
	}
	dsn := cfg.SourceDSN
	if dsn == "" {
		out, err := ssm.NewFromConfig(awsCfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(cfg.DSNParameter), WithDecryption: aws.Bool(true)})
		if err != nil {
			return Handler{}, fmt.Errorf("read source DSN from SSM parameter %s (SOURCE_DSN_PARAMETER): %w", cfg.DSNParameter, err)
		}
		dsn = aws.ToString(out.Parameter.Value)
	}
	dialect := map[string]string{"pgx": "postgres", "sqlite": "sqlite"}[cfg.SourceDriver]
	if dialect == "" {
		return Handler{}, fmt.Errorf("environment variable SOURCE_DRIVER=%q: want pgx or sqlite", cfg.SourceDriver)
	}
	db, err := sql.Open(cfg.SourceDriver, dsn)
	if err != nil {
		return Handler{}, fmt.Errorf("open source (SOURCE_DRIVER=%s): %w", cfg.SourceDriver, err)
	}
	src, err := source.NewSQL(db, dialect, cfg.SourceDriver)
	if err != nil {
		return Handler{}, err
	}
	em := &metrics.Emitter{W: os.Stdout, Stage: cfg.Stage}
	pub := &events.Publisher{API: eventbridge.NewFromConfig(awsCfg), Bus: cfg.EventBus}
	ob := &outbox.Outbox{Bus: pub, On: pub.Enabled()} // its Store is the ledger, made with the hook
	cfg.Ledger.Stopped = stoppedHook(ob, em, log)
	cfg.Ledger.ReportFailures(em, log)
	led, err := ledger.New(dynamodb.NewFromConfig(awsCfg), cfg.Ledger)
	if err != nil {
		return Handler{}, err
	}
	ob.Store = led
	queue := sqs.NewFromConfig(awsCfg)
	// Custom endpoints dial through the guard: private addresses only where
	// the deployment allows them, loopback only on a local stack.
	dest := buckets{&destination.Clients{Base: awsCfg, Endpoints: netguard.Policy{
		AllowPrivate: cfg.Rules.AllowPrivateEndpoints, AllowLoopback: cfg.Local,
	}}}
	svc := &Service{
		Ledger:   withSettle{led, cfg.SettleDelay},
		Queue:    queue,
		QueueURL: cfg.QueueURL,
		Exporter: &Exporter{
			Source:              src,
			Buckets:             dest,
			Catalogs:            dest,
			Scripts:             loadScripts,
			Config:              cfg.Export(),
			Now:                 time.Now,
			DeploymentAccountID: cfg.Rules.DeploymentAccountID,
		},
		Log:         log,
		Now:         time.Now,
		Metrics:     em,
		SettleDelay: cfg.SettleDelay,
		Lifecycle:   &Lifecycle{Ledger: led, Outbox: ob, Restate: cfg.Restate},
	}
	h := Handler{Processor: svc, Log: log}
	if cfg.DLQURL != "" {
		h.DeadLetters, h.DLQURL = queue, cfg.DLQURL
	}
	return h, nil
}

// buckets adapts destination.Clients to Buckets.
type buckets struct{ f *destination.Clients }

func (b buckets) Client(id string, d account.Destination) bucket.API { return b.f.Client(id, d) }

// Glue is the Glue client acting in the destination, for Catalogs.
func (b buckets) Glue(id string, d account.Destination) icetable.GlueAPI { return b.f.Glue(id, d) }
