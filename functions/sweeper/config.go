package main

import (
	"time"

	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// Config is the sweeper's configuration, read once at start-up.
type Config struct {
	Stage         string
	Table         string
	QueueURL      string
	Lease         time.Duration
	MaxAttempts   int
	PerAccountCap int
	PerSweepCap   int
	SettleDelay   time.Duration
	LogLevel      string
}

func loadConfig(r *envvar.Reader) (Config, error) {
	c := Config{
		Stage:         r.StringOr("DAYBOOK_STAGE", "dev"),
		Table:         r.String("LEDGER_TABLE"),
		QueueURL:      r.String("JOBS_QUEUE_URL"),
		MaxAttempts:   r.Int("MAX_ATTEMPTS", 6),
		PerAccountCap: r.Int("PER_ACCOUNT_CAP", 10),
		PerSweepCap:   r.Int("PER_SWEEP_CAP", 200),
		SettleDelay:   r.Duration("SETTLE_DELAY", 2*time.Hour),
		LogLevel:      r.StringOr("AWS_LAMBDA_LOG_LEVEL", r.StringOr("LOG_LEVEL", "INFO")),
	}
	c.Lease = ledger.LeaseFrom(r.Seconds("EXPORTER_TIMEOUT_SECONDS", 900*time.Second), r.Seconds("LEASE_MARGIN_SECONDS", 300*time.Second))
	return c, r.Err()
}
