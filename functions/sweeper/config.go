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
	Restate       ledger.RestateConfig // RESTATE_LOOKBACK_DAYS, RESTATE_INTERVAL, RESTATE_PER_SWEEP_CAP
	EventBus      string               // EVENT_BUS_NAME
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
		Stage:               r.Stage(),
		QueueURL:            r.String("JOBS_QUEUE_URL"),
		Ledger:              ledger.ConfigFromEnv(r),
		PerAccountCap:       r.Int("PER_ACCOUNT_CAP", envvar.DefaultPerAccountCap),
		PerSweepCap:         r.Int("PER_SWEEP_CAP", envvar.DefaultPerSweepCap),
		SettleDelay:         r.SettleDelay(),
		LogLevel:            r.LogLevel(),
		MaterializeRows:     r.Int("MATERIALIZE_ROWS_PER_ACCOUNT", envvar.DefaultMaterializeRowsPerAccount),
		ExporterConcurrency: r.Int("EXPORTER_CONCURRENCY", envvar.DefaultExporterConcurrency),
		ExporterTimeout:     r.Seconds("EXPORTER_TIMEOUT_SECONDS", envvar.DefaultExporterTimeout),
		SweepQueueURL:       r.StringOr("SWEEP_QUEUE_URL", ""),
		FanOutAccounts:      r.Int("FAN_OUT_ACCOUNTS", envvar.DefaultFanOutAccounts),
		Restate:             ledger.RestateConfigFromEnv(r),
		EventBus:            r.EventBusName(),
	}
	interval, err := parseRate("SWEEP_SCHEDULE", r.StringOr("SWEEP_SCHEDULE", envvar.DefaultSweepSchedule))
	c.SweepInterval = interval
	return c, errors.Join(r.Err(), err, positive(r, "PER_ACCOUNT_CAP", c.PerAccountCap), positive(r, "PER_SWEEP_CAP", c.PerSweepCap),
		positive(r, "EXPORTER_CONCURRENCY", c.ExporterConcurrency), positive(r, "MATERIALIZE_ROWS_PER_ACCOUNT", c.MaterializeRows))
}

// positive refuses a setting of 0 with which the sweeper cannot work: no
// claim (the caps, the exporter concurrency the budget follows) or no
// materialized row would ever be made.
func positive(r *envvar.Reader, name string, v int) error {
	if raw, ok := r.Lookup(name); ok && raw != "" && v == 0 {
		return fmt.Errorf("environment variable %s=%q: want at least 1: with 0 the sweeper never claims or materializes anything", name, raw)
	}
	return nil
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
