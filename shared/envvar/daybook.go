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
