package main

import (
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
}

func loadConfig(r *envvar.Reader) (Config, error) {
	c := Config{
		Stage:         r.Stage(),
		QueueURL:      r.String("JOBS_QUEUE_URL"),
		Ledger:        ledger.ConfigFromEnv(r),
		PerAccountCap: r.Int("PER_ACCOUNT_CAP", 10),
		PerSweepCap:   r.Int("PER_SWEEP_CAP", 200),
		SettleDelay:   r.SettleDelay(),
		LogLevel:      r.LogLevel(),
		Restate:       ledger.RestateConfigFromEnv(r),
		EventBus:      r.EventBusName(),
	}
	return c, r.Err()
}
