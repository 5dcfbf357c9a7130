package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/source"
	"github.com/daybook-dev/daybook/shared/upload"
)

// Config is the exporter's configuration, read once at start-up.
type Config struct {
	Stage        string
	QueueURL     string
	DLQURL       string
	Ledger       ledger.Config
	SettleDelay  time.Duration
	SourceDriver string
	SourceDSN    string // SOURCE_DSN, or read from SSM SOURCE_DSN_PARAMETER
	DSNParameter string
	// Sources are the connection strings of every source and shard, the
	// default one (SOURCE_DSN or SOURCE_DSN_PARAMETER) included: main.go
	// reads them from the environment (source.DSNsFromEnv).
	Sources      map[source.Key]source.DSN
	MaxFileBytes int64
	PartSize     int64
	Concurrency  int
	SliceRows    int64 // SLICE_ROWS: rows-per-slice target (0: never slice)
	MaxSlices    int   // MAX_SLICES
	LogLevel     string
	Restate      ledger.RestateConfig // RESTATE_LOOKBACK_DAYS, RESTATE_INTERVAL
	EventBus     string               // EVENT_BUS_NAME
	// Rules are the deployment's account rules (account.RulesFromEnv):
	// its own AWS account id, the customer role pattern and whether custom
	// endpoints may be private.
	Rules account.Rules
	// Local is true when the SDK's endpoint is on this machine (a local
	// stack; awsclient.Local): only then may custom endpoints be loopback.
	Local bool
	// Catalog is the deployment's datasets (DAYBOOK_CATALOG, the bundled
	// catalog.yaml, or the shipped example): build reads it.
	Catalog *dataset.Set
}

func loadConfig(r *envvar.Reader) (Config, error) {
	c := Config{
		Stage:        r.Stage(),
		QueueURL:     r.String("JOBS_QUEUE_URL"),
		DLQURL:       r.StringOr("JOBS_DLQ_URL", ""),
		Ledger:       ledger.ConfigFromEnv(r),
		SettleDelay:  r.SettleDelay(),
		SourceDriver: r.StringOr("SOURCE_DRIVER", "pgx"),
		SourceDSN:    r.StringOr("SOURCE_DSN", ""),
		DSNParameter: r.StringOr("SOURCE_DSN_PARAMETER", ""),
		MaxFileBytes: int64(r.Int("MAX_FILE_BYTES", int(DefaultMaxFileBytes))),
		PartSize:     int64(r.Int("PART_SIZE_BYTES", 0)), // 0: derived from MAX_FILE_BYTES (ExportConfig.partSize)
		Concurrency:  r.Int("UPLOAD_CONCURRENCY", upload.DefaultConcurrency),
		SliceRows:    int64(r.Int("SLICE_ROWS", int(DefaultSliceRows))),
		MaxSlices:    r.Int("MAX_SLICES", DefaultMaxSlices),
		LogLevel:     r.LogLevel(),
		Restate:      ledger.RestateConfigFromEnv(r),
		EventBus:     r.EventBusName(),
	}
	if c.SourceDSN == "" && c.DSNParameter == "" {
		r.String("SOURCE_DSN") // records "SOURCE_DSN is required"
	}
	var serr []error
	if t, ok := r.Lookup("EXPORTER_TIMEOUT_SECONDS"); ok && t != "" {
		if d := r.Seconds("EXPORTER_TIMEOUT_SECONDS", envvar.DefaultExporterTimeout); d < MinTimeout {
			serr = append(serr, fmt.Errorf("environment variable EXPORTER_TIMEOUT_SECONDS=%q: want at least %d: a day exported in slices commits only in an invocation with %d s left, so a shorter timeout hands its commit on forever",
				t, int(MinTimeout/time.Second), int((MinTimeout-commitStartup)/time.Second)))
		}
	}
	if c.MaxSlices < 2 || c.MaxSlices > partition.MaxSlices {
		serr = append(serr, fmt.Errorf("environment variable MAX_SLICES=\"%d\": want 2 to %d", c.MaxSlices, partition.MaxSlices))
	}
	rules, rerr := account.RulesFromEnv(r.Lookup) // its errors name the variable
	c.Rules, c.Local = rules, awsclient.Local(r.Lookup)
	return c, errors.Join(append([]error{r.Err(), rerr}, serr...)...)
}

// Export is the configuration of the Exporter.
func (c Config) Export() ExportConfig {
	return ExportConfig{Stage: c.Stage, MaxFileBytes: c.MaxFileBytes, PartSize: c.PartSize, Concurrency: c.Concurrency,
		SliceRows: c.SliceRows, MaxSlices: c.MaxSlices}
}

// withSettle applies the deployment's default settle delay to accounts
// that set none.
type withSettle struct {
	serviceLedger
	settle time.Duration
}

func (l withSettle) GetAccount(ctx context.Context, id string) (account.Account, error) {
	a, err := l.serviceLedger.GetAccount(ctx, id)
	if err != nil {
		return a, err
	}
	return a.WithDefaults(l.settle), nil
}
