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
		Stage:         r.StringOr("DAYBOOK_STAGE", "dev"),
		QueueURL:      r.String("JOBS_QUEUE_URL"),
		Ledger:        ledger.ConfigFromEnv(r),
		PerAccountCap: r.Int("PER_ACCOUNT_CAP", 10),
		PerSweepCap:   r.Int("PER_SWEEP_CAP", 200),
		SettleDelay:   r.Duration("SETTLE_DELAY", 2*time.Hour),
		LogLevel:      r.StringOr("AWS_LAMBDA_LOG_LEVEL", r.StringOr("LOG_LEVEL", "INFO")),
	}
	return c, r.Err()
}
