package envvar

import "time"

// Defaults of the deployment settings, each defined here once. template.yaml
// sets every one of them on a deployed function (its parameter defaults
// repeat these values); a program reading an unset variable, such as the CLI
// without --env-file or a test, gets the value here.
const (
	// DefaultStage is DAYBOOK_STAGE's default.
	DefaultStage = "dev"
	// DefaultSettleDelay is SETTLE_DELAY's default: how long after midnight
	// in an account's zone a day waits for late data when the account sets
	// no delay of its own.
	DefaultSettleDelay = 2 * time.Hour
	// DefaultLogLevel is the log level when neither AWS_LAMBDA_LOG_LEVEL nor
	// LOG_LEVEL is set.
	DefaultLogLevel = "INFO"
	// DefaultExporterTimeout is EXPORTER_TIMEOUT_SECONDS's default, the
	// exporter Lambda's timeout; with DefaultLeaseMargin
	// (LEASE_MARGIN_SECONDS) it makes the claim lease.
	DefaultExporterTimeout = 900 * time.Second
	DefaultLeaseMargin     = 300 * time.Second
	// DefaultMaxAttempts is MAX_ATTEMPTS's default, and the ledger's when its
	// configuration leaves the number of attempts at zero.
	DefaultMaxAttempts = 6
	// DefaultMaxBackfillDays is MAX_BACKFILL_DAYS's default: an account's
	// start date may be at most this many days before the day it is saved.
	DefaultMaxBackfillDays = 400

	// The sweeper's claim budget and fleet-scale settings.

	// DefaultSweepSchedule is SWEEP_SCHEDULE's default, the sweeper's rate.
	DefaultSweepSchedule = "rate(15 minutes)"
	// DefaultPerAccountCap is PER_ACCOUNT_CAP's default: the most partitions
	// one account may have claimed per sweep.
	DefaultPerAccountCap = 10
	// DefaultPerSweepCap is PER_SWEEP_CAP's default: the upper bound of one
	// sweep's claim budget (below it, the budget is what the exporters can
	// run before the next sweep).
	DefaultPerSweepCap = 3000
	// DefaultExporterConcurrency is EXPORTER_CONCURRENCY's default: the most
	// exporters running at once.
	DefaultExporterConcurrency = 100
	// DefaultMaterializeRowsPerAccount is MATERIALIZE_ROWS_PER_ACCOUNT's
	// default: the most ledger rows one sweep creates for one account.
	DefaultMaterializeRowsPerAccount = 400
	// DefaultFanOutAccounts is FAN_OUT_ACCOUNTS's default: the woken
	// accounts one sweeper invocation handles before a sweep fans out.
	DefaultFanOutAccounts = 2000
)

// The variables more than one program reads, each read here once with its
// default.

// Stage reads DAYBOOK_STAGE, the deployment stage (default DefaultStage).
func (r *Reader) Stage() string { return r.StringOr("DAYBOOK_STAGE", DefaultStage) }

// SettleDelay reads SETTLE_DELAY, the settle delay of accounts that set none
// (default DefaultSettleDelay).
func (r *Reader) SettleDelay() time.Duration {
	return r.Duration("SETTLE_DELAY", DefaultSettleDelay)
}

// LogLevel reads the log level: AWS_LAMBDA_LOG_LEVEL (set by Lambda's
// advanced logging controls), else LOG_LEVEL, else DefaultLogLevel.
func (r *Reader) LogLevel() string {
	return r.StringOr("AWS_LAMBDA_LOG_LEVEL", r.StringOr("LOG_LEVEL", DefaultLogLevel))
}

// MaxBackfillDays reads MAX_BACKFILL_DAYS, the deployment's backfill limit
// in days (default DefaultMaxBackfillDays; 0 is refused: a deployment always
// has a limit). The ledger's PutAccount and the account rules
// (account.RulesFromEnv) read it here, so they agree.
func (r *Reader) MaxBackfillDays() int {
	const name = "MAX_BACKFILL_DAYS"
	n := r.Int(name, DefaultMaxBackfillDays)
	if n == 0 {
		v, _ := r.lookup(name)
		r.fail(name, v, "want a whole number of days >= 1")
		return DefaultMaxBackfillDays
	}
	return n
}
