package envdoc

// meanings says what each environment variable is for: one line of
// Markdown each, the table cell of docs/configuration.md.
var meanings = map[string]string{
	// Every function (template Globals).
	"LEDGER_TABLE":               "ledger table name",
	"JOBS_QUEUE_URL":             "jobs queue URL",
	"DAYBOOK_STAGE":              "stage, usable in prefix templates",
	"EXPORTER_TIMEOUT_SECONDS":   "exporter timeout; the claim lease is this plus the margin",
	"LEASE_MARGIN_SECONDS":       "lease margin",
	"MAX_ATTEMPTS":               "failed attempts before a partition stops retrying",
	"SETTLE_DELAY":               "default wait after midnight for late data, e.g. `2h`",
	"MAX_BACKFILL_DAYS":          "oldest start date a new account may have, in days before today (default 400); the sweeper never materializes further back",
	"DEPLOYMENT_ACCOUNT_ID":      "the deployment's AWS account (`AWS::AccountId`): the expected owner of buckets written with daybook's own role",
	"CUSTOMER_ROLE_PATTERN":      "ARN pattern of the customer roles the exporter may assume, as in its IAM policy",
	"ALLOW_PRIVATE_ENDPOINTS":    "`true` lets an account's custom endpoint be on a private address",
	"DESTINATION_SECRET_PATTERN": "ARN pattern of the Secrets Manager secrets a GCS or Azure destination's `secret_arn` may name, as in the exporter's policy",
	"RESTATE_LOOKBACK_DAYS":      "closed days checked for late data (default 7; 0 turns the checks off)",
	"RESTATE_INTERVAL":           "least time between two late-data checks of one partition (default 6h)",
	"EVENT_BUS_NAME":             "EventBridge bus of partition events; unset publishes none",

	// The sweeper.
	"PER_ACCOUNT_CAP":              "partitions claimed per account per sweep",
	"PER_SWEEP_CAP":                "upper bound of a sweep's claim budget (default 3000); below it a sweep claims what the exporters can run before the next one",
	"EXPORTER_CONCURRENCY":         "most exporters running at once; also the jobs event source's maximum concurrency, and the claim budget's capacity (default 100)",
	"SWEEP_SCHEDULE":               "the sweep's rate expression, read for the claim budget's interval",
	"MATERIALIZE_ROWS_PER_ACCOUNT": "most ledger rows one sweep creates for one account; a longer backfill continues next sweep (default 400)",
	"SWEEP_QUEUE_URL":              "the sweep queue: a sweep with more woken accounts than `FAN_OUT_ACCOUNTS` fans out through it",
	"FAN_OUT_ACCOUNTS":             "woken accounts one sweeper invocation handles before a sweep fans out (default 2000)",
	"RESTATE_PER_SWEEP_CAP":        "most late-data checks one sweep queues (default 50)",

	// The exporter.
	"SOURCE_DRIVER":                   "`pgx` (PostgreSQL, Aurora, Redshift) or `sqlite`",
	"SOURCE_DSN_PARAMETER":            "SSM parameter holding the default source's DSN",
	"SOURCE_DSN_PARAMETERS":           "further sources and shards, `source=/ssm/parameter` or `source/shard=/ssm/parameter`, comma separated",
	"SOURCE_DSN":                      "the default source's DSN itself (local development; wins over the parameter)",
	"SOURCE_DSN_":                     "prefix of `SOURCE_DSN_<SOURCE>[__<SHARD>]`: the DSN of a catalog's named source or of one shard (below)",
	"SOURCE_DSN_PARAMETER_":           "prefix of `SOURCE_DSN_PARAMETER_<SOURCE>[__<SHARD>]`: the SSM parameter of a named source's or shard's DSN (below)",
	"JOBS_DLQ_URL":                    "malformed or rejected messages are moved here at once, with the reason in the `daybook_error` attribute",
	"JOBS_VISIBILITY_TIMEOUT_SECONDS": "the jobs queue's visibility timeout: a sliced day stays held this long (plus a lease) after its last slice's news",
	"SLICE_ROWS":                      "rows-per-slice target: a day expected to hold more rows is exported in slices, time ranges of the day on separate invocations, committed once (default 200000000; 0 never slices)",
	"MAX_SLICES":                      "most slices one day is exported in (default 100, at most 1000)",
	"MAX_FILE_BYTES":                  "roll to the next `part-NNNNN` file past this size (default 268435456)",
	"PART_SIZE_BYTES":                 "multipart part size (default `MAX_FILE_BYTES` / 32 in whole MiB, at least 5 MiB: 8 MiB for 256 MiB files); a file's upload holds `UPLOAD_CONCURRENCY` + 1 parts in memory",
	"UPLOAD_CONCURRENCY":              "concurrent part uploads per file (default 4)",
	"GOMEMLIMIT":                      "Go's soft memory limit; unset, the exporter derives one from the function's memory size as a guard ([performance.md](performance.md))",
	"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "set by Lambda: the function's memory, from which the exporter derives its memory limit",

	// The console.
	"CONSOLE_ACTIONS": "`true` serves the actions (re-export, retry, enable, disable); otherwise the console is read-only",

	// Several programs, not set by the template.
	"DAYBOOK_CATALOG":       "the dataset catalog file; unset, the shipped example (a function's build puts the file beside its bootstrap)",
	"LAMBDA_TASK_ROOT":      "set by Lambda: the directory of the bootstrap, where the build put the catalog",
	"AWS_LAMBDA_LOG_LEVEL":  "set by Lambda from the template's `ApplicationLogLevel`: the log level",
	"LOG_LEVEL":             "the log level where Lambda sets none (local runs; default `INFO`)",
	"AWS_ENDPOINT_URL":      "custom endpoint of every AWS service (emulators, S3-compatible stores); `AWS_ENDPOINT_URL_<SERVICE>` per service",
	"AWS_ENDPOINT_URL_S3":   "custom S3 endpoint; with it, or `AWS_ENDPOINT_URL`, S3 uses path-style addressing",
	"AWS_REGION":            "the AWS region (the CLI's env file, the SDK)",
	"AWS_ACCESS_KEY_ID":     "static credentials in the CLI's env file (a local stack's)",
	"AWS_SECRET_ACCESS_KEY": "static credentials in the CLI's env file (a local stack's)",
	"AWS_SESSION_TOKEN":     "static credentials in the CLI's env file (a local stack's)",

	// The CLI: what it reads besides the functions' variables, from the
	// stack's outputs (--stack) or an env file.
	"SWEEPER_DLQ_URL":              "the sweeper's dead-letter queue (`daybook dlq list --queue sweeper`)",
	"DIRECT_BUCKET_PATTERN":        "buckets an account without a role may name (`account put`)",
	"DIRECT_GLUE_DATABASE_PATTERN": "Glue databases an account without a role may register tables in (`account put`)",
	"EXPORTER_ROLE_ARN":            "the exporter's role, which `account put` and `account test` print the customer's trust of",
	"CONSOLE_ROLE_ARN":             "the console's role, which `account put` and `account test` print a GCS or Azure customer's trust of",
	"DAYBOOK_LOCAL_START":          "local stack only: the command that starts it again, which the CLI names when it is down",
	"DAYBOOK_LOCAL_DRAIN":          "local stack only: the command that runs what its queues hold, which `daybook reexport` names",
	"NO_COLOR":                     "set: the CLI prints no colour",
	"TERM":                         "`dumb`: the CLI prints no colour",
	"USER":                         "the local user's name where the OS gives none: `requested_by` is `cli:<user>` when the caller's AWS identity is unknown",

	// The exporter's benchmark child (make bench only).
	"DAYBOOK_BENCH_EXPORT_CHILD": "`make bench` only: runs the exporter binary as a benchmark child",
	"DAYBOOK_BENCH_CPUPROFILE":   "`make bench` only: directory for CPU profiles of the exports measured",
	"DAYBOOK_BENCH_MEMPROFILE":   "`make bench` only: directory for heap profiles and memory over time",
	"DAYBOOK_BENCH_TRACE":        "`make bench` only: directory for execution traces",
}

// notVariables are names in the shape of a variable that the product code
// uses for something else.
var notVariables = map[string]string{
	"DEPLOYMENT_ACCOUNT":    "a placeholder in a printed command (shared/destination/gcpauth)",
	"EXPORTER_ROLE":         "a placeholder in a printed command (shared/destination/gcpauth)",
	"SERVICE_ACCOUNT_EMAIL": "a placeholder in a printed command",
	"ERROR_CODE":            "an SQS message attribute (cmd/daybook dlq)",
	"ERROR_MESSAGE":         "an SQS message attribute (cmd/daybook dlq)",
	"EXTERNAL_TABLE":        "a BigQuery table type",
	"TIMESTAMP_TZ":          "a Snowflake column type",
}
