// Command exporter is the exporter Lambda: it reads export messages from SQS
// and writes each partition into its account's bucket. This file only wires.
//
// service.go routes a message; generation.go is one run's generation of a
// partition and the commit protocol it runs; slices.go and
// slicerun.go days exported in slices; restate.go restatement (the check
// message and what a generation records for the next check); reseed.go
// reseeds; lifecycle.go how both hook into a run.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/daybook-dev/daybook/shared/account"
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
	"github.com/daybook-dev/daybook/shared/startup"
)

func main() {
	startup.Run("exporter", func(ctx context.Context, awsCfg aws.Config) (any, *slog.Logger, error) {
		fn, err := build(ctx, os.Environ(), Options{AWS: awsCfg, Now: time.Now, Rand: rand.Reader, Stdout: os.Stdout})
		if err != nil {
			return nil, fn.Log, err
		}
		cfg := fn.Config
		partSize := cfg.Export().partSize()
		if limit := memoryLimit(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), os.Getenv("GOMEMLIMIT"), partSize, cfg.Concurrency); limit > 0 {
			debug.SetMemoryLimit(limit) // a guard; see memoryLimit
			fn.Log.Info("memory limit", "go_memory_limit_mib", limit>>20, "part_size_mib", partSize>>20)
		}
		return fn.Handler.Handle, fn.Log, nil
	})
}

// Options are what the function's environment does not say. main passes
// the real ones: the SDK's default configuration (the Lambda role's
// credentials, AWS's endpoints), the system clock, crypto/rand and stdout.
// A test passes its own (its emulator's endpoint behind the policy check,
// its clock, seeded randomness, its output) and gets the handler main runs.
type Options struct {
	AWS  aws.Config
	Now  func() time.Time
	Rand io.Reader
	// Stdout receives the logs and the metric lines (CloudWatch Logs
	// reads the function's stdout; embedded metric format).
	Stdout io.Writer
	// Tokens are where GCS and Azure destinations' tokens come from: the
	// zero value (main's) is Google's and Entra ID's endpoints; a test's
	// are its fakes of them.
	Tokens destination.TokenEndpoints
}

// Function is the function as main starts it.
type Function struct {
	Handler Handler
	Config  Config
	Log     *slog.Logger
}

// build is the function main runs: its configuration read once from
// environ (os.Environ: the variables loadConfig reads, the catalog, every
// source's connection string), then wired. Errors name the variable; Log
// is set even then, to report them.
func build(ctx context.Context, environ []string, o Options) (Function, error) {
	r := envvar.From(envvar.Environ(environ))
	cfg, err := loadConfig(r)
	log := logging.ForFunction(o.Stdout, cfg.LogLevel, "exporter")
	fn := Function{Config: cfg, Log: log}
	if err != nil {
		return fn, fmt.Errorf("configuration: %w", err)
	}
	// DAYBOOK_CATALOG, or the bundled catalog, or the shipped example.
	if fn.Config.Catalog, err = dataset.FromEnv(r.Lookup); err != nil {
		return fn, fmt.Errorf("catalog: %w", err)
	}
	// SOURCE_DSN[_PARAMETER] and one per further source or shard
	// (SOURCE_DSN_<SOURCE>[__<SHARD>], SOURCE_DSN_PARAMETER_..., SOURCE_DSN_PARAMETERS).
	if fn.Config.Sources, err = source.DSNsFromEnv(environ); err != nil {
		return fn, fmt.Errorf("configuration: %w", err)
	}
	if fn.Handler, err = wire(ctx, fn.Config, o, log); err != nil {
		return fn, err
	}
	return fn, nil
}

// wire builds the handler from its configuration: every client from
// o.AWS, once.
func wire(ctx context.Context, cfg Config, o Options, log *slog.Logger) (Handler, error) {
	awsCfg := o.AWS
	src, err := openSources(ctx, cfg, ssm.NewFromConfig(awsCfg))
	if err != nil {
		return Handler{}, err
	}
	em := &metrics.Emitter{W: o.Stdout, Stage: cfg.Stage, Now: o.Now}
	pub := &events.Publisher{API: eventbridge.NewFromConfig(awsCfg), Bus: cfg.EventBus}
	ob := &outbox.Outbox{Bus: pub, On: pub.Enabled()} // its Store is the ledger, made with the hook
	cfg.Ledger.Catalog, cfg.Ledger.Now, cfg.Ledger.Rand = cfg.Catalog, o.Now, o.Rand
	if ob.On {
		cfg.Ledger.StoppedEvent = outbox.StoppedEvent // recorded with the transition that stops the partition
	}
	cfg.Ledger.Report = ledger.Reporter{Log: log, Metrics: em}
	led, err := ledger.New(dynamodb.NewFromConfig(awsCfg), cfg.Ledger)
	if err != nil {
		return Handler{}, err
	}
	ob.Store = led.Outbox()
	queue := sqs.NewFromConfig(awsCfg)
	// Custom endpoints dial through the guard: private addresses only where
	// the deployment allows them, loopback only on a local stack.
	dest := buckets{&destination.Clients{Base: awsCfg, Now: o.Now, Endpoints: netguard.Policy{
		AllowPrivate: cfg.Rules.AllowPrivateEndpoints, AllowLoopback: cfg.Local,
	}, DeploymentAccountID: cfg.Rules.DeploymentAccountID}}
	// GCS and Azure destinations: tokens by federation from the function's
	// own AWS identity, or keys from Secrets Manager under the deployment's
	// secret pattern; kept per destination like S3's role sessions.
	dest.f.SetStoreCredentials(cfg.Rules.SecretPattern, o.Tokens)
	svc := &Service{
		Catalog:  cfg.Catalog,
		Ledger:   withSettle{serviceLedgerOf(led), cfg.SettleDelay},
		Queue:    queue,
		QueueURL: cfg.QueueURL,
		Exporter: &Exporter{
			Catalog:             cfg.Catalog,
			Source:              src,
			Buckets:             dest,
			Stores:              dest.f,
			GlueClients:         dest,
			Config:              cfg.Export(),
			Now:                 o.Now,
			DeploymentAccountID: cfg.Rules.DeploymentAccountID,
			docs:                &docsSeen{},
			Schemas:             schemaLedgerOf(led),
			schemas:             &schemasSeen{},
		},
		Log:         log,
		Now:         o.Now,
		Rand:        o.Rand,
		Metrics:     em,
		SettleDelay: cfg.SettleDelay,
		Lifecycle:   &Lifecycle{Ledger: lifecycleLedgerOf(led), Outbox: ob, Restate: cfg.Restate},
	}
	h := Handler{Processor: svc, Log: log}
	if cfg.DLQURL != "" {
		h.DeadLetters, h.DLQURL = queue, cfg.DLQURL
	}
	return h, nil
}

// openSources opens one SQL source per connection string cfg.Sources
// names (an SSM parameter is read here, once) and checks every dataset of
// the catalog has its source. Errors name the variable.
func openSources(ctx context.Context, cfg Config, params *ssm.Client) (*source.Router, error) {
	dialect := map[string]string{"pgx": "postgres", "sqlite": "sqlite"}[cfg.SourceDriver]
	if dialect == "" {
		return nil, fmt.Errorf("environment variable SOURCE_DRIVER=%q: want pgx or sqlite", cfg.SourceDriver)
	}
	if len(cfg.Sources) == 0 {
		return nil, errors.New("environment variable SOURCE_DSN is required (or SOURCE_DSN_PARAMETER)")
	}
	srcs := map[source.Key]*source.SQL{}
	for k, d := range cfg.Sources {
		dsn := d.Value
		if dsn == "" {
			out, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(d.Parameter), WithDecryption: aws.Bool(true)})
			if err != nil {
				return nil, fmt.Errorf("read the DSN of source %s from SSM parameter %s (%s): %w", k, d.Parameter, d.Var, err)
			}
			dsn = aws.ToString(out.Parameter.Value)
		}
		db, err := sql.Open(cfg.SourceDriver, dsn)
		if err != nil {
			return nil, fmt.Errorf("open source %s (%s, SOURCE_DRIVER=%s): %w", k, d.Var, cfg.SourceDriver, err)
		}
		if srcs[k], err = source.NewSQL(db, dialect, cfg.SourceDriver+":"+k.String()); err != nil {
			return nil, err
		}
	}
	r, err := source.NewRouter(srcs)
	if err != nil {
		return nil, err
	}
	if err := r.Covers(cfg.Catalog.Datasets()); err != nil {
		return nil, fmt.Errorf("the catalog's sources: %w", err)
	}
	return r, nil
}

// buckets adapts destination.Clients to Buckets.
type buckets struct{ f *destination.Clients }

func (b buckets) Client(id string, d account.Destination) bucket.API { return b.f.Client(id, d) }

// Glue is the Glue client acting in the destination, for GlueClients.
func (b buckets) Glue(id string, d account.Destination) icetable.GlueAPI { return b.f.Glue(id, d) }
