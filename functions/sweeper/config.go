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
	}
	return c, r.Err()
}
