package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// Config is the sweeper's configuration, read once at start-up.
type Config struct {
	Stage         string
	QueueURL      string
	Ledger        ledger.Config
	PerAccountCap int
	PerSweepCap   int
	SettleDelay   time.Duration
	LogLevel      string
	// MaterializeRows is the most rows materialized per account per sweep.
	MaterializeRows int
	// ExporterConcurrency, ExporterTimeout and SweepInterval feed the claim
	// budget (Capacity).
	ExporterConcurrency int
	ExporterTimeout     time.Duration
	SweepInterval       time.Duration
	// SweepQueueURL is the fan-out queue ("" : never fan out);
	// FanOutAccounts the woken accounts one invocation handles.
	SweepQueueURL  string
	FanOutAccounts int
}

func loadConfig(r *envvar.Reader) (Config, error) {
	c := Config{
		Stage:               r.StringOr("DAYBOOK_STAGE", "dev"),
		QueueURL:            r.String("JOBS_QUEUE_URL"),
		Ledger:              ledger.ConfigFromEnv(r),
		PerAccountCap:       r.Int("PER_ACCOUNT_CAP", 10),
		PerSweepCap:         r.Int("PER_SWEEP_CAP", 200),
		SettleDelay:         r.Duration("SETTLE_DELAY", 2*time.Hour),
		LogLevel:            r.StringOr("AWS_LAMBDA_LOG_LEVEL", r.StringOr("LOG_LEVEL", "INFO")),
		MaterializeRows:     r.Int("MATERIALIZE_ROWS_PER_ACCOUNT", defaultMaterializeRows),
		ExporterConcurrency: r.Int("EXPORTER_CONCURRENCY", 20),
		ExporterTimeout:     r.Seconds("EXPORTER_TIMEOUT_SECONDS", 900*time.Second),
		SweepQueueURL:       r.StringOr("SWEEP_QUEUE_URL", ""),
		FanOutAccounts:      r.Int("FAN_OUT_ACCOUNTS", defaultFanOutAccounts),
	}
	interval, err := parseRate("SWEEP_SCHEDULE", r.StringOr("SWEEP_SCHEDULE", "rate(15 minutes)"))
	c.SweepInterval = interval
	return c, errors.Join(r.Err(), err)
}

var rateRE = regexp.MustCompile(`^rate\(([1-9][0-9]*) (minute|minutes|hour|hours|day|days)\)$`)

// parseRate reads an EventBridge Scheduler rate expression: the claim budget
// needs the time between sweeps, which a cron expression does not give.
func parseRate(name, v string) (time.Duration, error) {
	m := rateRE.FindStringSubmatch(v)
	if m == nil {
		return 0, fmt.Errorf("environment variable %s=%q: want a rate expression such as rate(15 minutes)", name, v)
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour, "hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}[m[2]]
	return time.Duration(n) * unit, nil
}
