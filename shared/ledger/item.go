package ledger

import (
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Table layout names, exported so tests can check the deployed table.
const (
	AttrPK         = "pk"
	AttrSK         = "sk"
	IndexDue       = "due"
	AttrDueAccount = "due_account"
	AttrDueKey     = "due_key"
	// The sparse restate index (restate.go): completed rows whose
	// restatement check is scheduled, sharded like the fleet index
	// (restate_account = R#<nn>).
	IndexRestate       = "restate"
	AttrRestateAccount = "restate_account"
	AttrRestateKey     = "restate_key"
	IndexFleet         = "fleet"
	AttrFleetShard     = "fleet_shard"
	AttrFleetKey       = "fleet_key"
)

// Attribute names. Every expression, key map and hand-built item names an
// attribute through these constants (or the exported Attr* above); the
// struct tags of rowRecord, accountRecord, watermarkRecord, statsRecord,
// attemptRecord and seedRecord must spell the same names, which
// TestAttributeNamesMatchRecords checks.
const (
	attrAccountID      = "account_id"
	attrDataset        = "dataset"
	attrDay            = "day"
	attrState          = "state"
	attrAttempts       = "attempts"
	attrClaimToken     = "claim_token"
	attrClaimedAt      = "claimed_at"
	attrStartedAt      = "started_at"
	attrWriteID        = "write_id" // every item a conditional update wrote: that write's fresh id, to know it when its answer is lost (kernel.update)
	attrLeaseUntil     = "lease_until"
	attrNextAttemptAt  = "next_attempt_at"
	attrLastError      = "last_error"
	attrTableError     = "table_error" // the committed generation's Iceberg table could not take it
	attrStopped        = "exhausted"   // stored name kept for existing tables (the row stopped retrying)
	attrGeneration     = "generation"
	attrGenReserved    = "generation_reserved"
	attrRows           = "rows"
	attrBytes          = "bytes"
	attrFiles          = "files"
	attrManifestKey    = "manifest_key"
	attrDurationMS     = "duration_ms"
	attrCompletedAt    = "completed_at"
	attrReason         = "reason"
	attrRequestedBy    = "requested_by"
	attrRerunRequested = "rerun_requested"
	attrReexportAt     = "reexport_requested_at" // rows: when an operator sent a re-export request not claimed yet (reexport.go)
	attrReexportBy     = "reexport_requested_by" // rows: who sent it
	attrReexportServed = "reexport_served"       // rows: the one re-export request id a row kept before reexports_served (read, no longer written)
	attrServedIDs      = "reexports_served"      // rows: the ids (a string set) of the last re-export requests manual claims and re-runs took (manual.go)
	attrUpdatedAt      = "updated_at"
	attrEnabled        = "enabled"        // account records
	attrDoc            = "doc"            // account records: JSON of account.Account
	attrThrough        = "through"        // watermarks: the last materialized day
	attrWakeSeq        = "wake_seq"       // account records: bumped by every write of the wake time
	attrWokenAt        = "woken_at"       // account records: when a writer last woke the account
	attrClosedThrough  = "closed_through" // account records: every dataset materialized through this day
	attrExportMS       = "export_ms"      // stats buckets: summed export durations
	attrExports        = "exports"        // stats buckets: number of exports
	attrReconciledAt   = "reconciled_at"  // the reconcile marker
	attrAttempt        = "attempt"        // history items: the attempt's number
	attrOutcome        = "outcome"        // history items: how the attempt ended
	attrFinishedAt     = "finished_at"    // history items
	attrError          = "error"          // history items: the attempt's error
	attrVersion        = "version"        // account records, account events: bumped by every write of the account
	attrGuards         = "guards"         // account records: the isolation guards held, "<hold>:<key>"
	attrOwner          = "owner"          // guard items: the account holding the guard as account.GuardOwn
	attrUnder          = "under"          // guard items: the accounts holding it as account.GuardUnder (a string set)
	attrWhat           = "what"           // guard items: what is guarded, in words
	attrAt             = "at"             // account events: when
	attrBy             = "by"             // account events: who made the change
	attrAction         = "action"         // account events: created, updated, enabled, disabled, deleted
	attrChanges        = "changes"        // account events: JSON of []account.Change

	attrFingerprint   = "fingerprint"     // rows: the source fingerprint the generation was exported with
	attrFingerprintAt = "fingerprint_at"  // rows: when it was taken
	attrRestatedFrom  = "restated_from"   // rows: the generation a restatement replaces
	attrRestatedRows  = "restated_rows"   // rows: that generation's rows
	attrSeedEpoch     = "seed_epoch"      // rows: the reseed epoch of the generation; seed items: the epoch
	attrSeedFirstDay  = "seed_first_day"  // seed items (reseed.go)
	attrSeedLastDay   = "seed_last_day"   // seed items
	attrSeedDays      = "seed_days"       // seed items: days in the rebuild
	attrSeedDoneDays  = "seed_done_days"  // seed items: days rebuilt (a string set)
	attrSeedRequestID = "seed_request_id" // seed items
	attrSeedRequestBy = "seed_requested_by"

	attrPartitionToken   = "partition_token"    // slice items (slice.go): the partition claim the plan belongs to
	attrSlice            = "slice_index"        // slice items: the slice's number (-1 on the plan)
	attrSlices           = "slice_count"        // slice items: the plan's number of slices
	attrRunID            = "run_id"             // slice plans: the planning run's id
	attrExpectedRows     = "expected_rows"      // slice plans
	attrDestination      = "destination"        // slice items: where the plan's files go
	attrCommitToken      = "commit_token"       // slice plans: the run committing the partition
	attrCommitLeaseUntil = "commit_lease_until" // slice plans
	attrSliceFiles       = "slice_files"        // slice items: the completed slice's files
	attrTokenJob         = "token_job"          // issued tokens: Claim's, carried by a job message
	attrAsOf             = "as_of"              // account summaries (summary.go): when the refresh began to read
	attrAccountVersion   = "account_version"    // account summaries: the account's version the refresh read
	attrRowsAt           = "rows_at"            // account summaries: the newest updated_at of the rows it read

	// AttrExpiresAt is the table's TTL attribute (epoch seconds), the one
	// DynamoDB TTL reads: history items, export-stats buckets and slice items carry it.
	AttrExpiresAt = "expires_at"
)

const (
	pkAccounts      = "ACCOUNTS"
	pkWMPrefix      = "WM#"
	pkHistoryPrefix = "H#"
	pkPartPrefix    = "P#"
	pkSeedPrefix    = "SEED#"
	pkGuards        = "GUARDS" // isolation guards (accountwrite.go), sk=account.Guard.Key
	pkEventPrefix   = "AE#"    // + account id: the account's history of changes
	timeFormat      = "2006-01-02T15:04:05Z"
	dueQueued       = "0#"
	duePending      = "1#"
	dueFailed       = "2#"
	dueRunning      = "3#"
	dueStopped      = "9#" // counted by CountStopped, never read by Due
	dueScheduled    = "S#" // pending, the newest closed day of a live account: read first
	dueUpperBound   = "$"  // sorts after '#': "2#<now>$" includes every key stamped <= now

	// FleetShards is the number of shards of the fleet index: an account's
	// wake entry and its stopped partitions live under fleet_shard W#<nn> and
	// X#<nn>, nn = Shard(account), so no index partition key is hot.
	FleetShards   = 16
	fleetWake     = "W#"
	fleetStopped  = "X#"
	pkStats       = "STATS"
	skExports     = "EXPORTS#" // + YYYY-MM-DDTHH: one bucket per hour
	skReconcile   = "RECONCILE"
	statsLifetime = 7 * 24 * time.Hour
)

// rowRecord is the stored form of a partition row.
type rowRecord struct {
	PK             string `dynamodbav:"pk"`
	SK             string `dynamodbav:"sk"`
	AccountID      string `dynamodbav:"account_id"`
	Dataset        string `dynamodbav:"dataset"`
	Day            string `dynamodbav:"day"`
	State          string `dynamodbav:"state"`
	Attempts       int    `dynamodbav:"attempts"`
	ClaimToken     string `dynamodbav:"claim_token"`
	ClaimedAt      string `dynamodbav:"claimed_at"`
	StartedAt      string `dynamodbav:"started_at"`
	WriteID        string `dynamodbav:"write_id"`
	LeaseUntil     string `dynamodbav:"lease_until"`
	NextAttemptAt  string `dynamodbav:"next_attempt_at"`
	LastError      string `dynamodbav:"last_error"`
	TableError     string `dynamodbav:"table_error"`
	Stopped        bool   `dynamodbav:"exhausted"`               // attrStopped
	SlicePlanned   bool   `dynamodbav:"slice_planned,omitempty"` // attrSlicePlanned (slice.go)
	Generation     int64  `dynamodbav:"generation"`
	GenReserved    int64  `dynamodbav:"generation_reserved"`
	Rows           int64  `dynamodbav:"rows"`
	Bytes          int64  `dynamodbav:"bytes"`
	Files          int    `dynamodbav:"files"`
	ManifestKey    string `dynamodbav:"manifest_key"`
	DurationMS     int64  `dynamodbav:"duration_ms"`
	CompletedAt    string `dynamodbav:"completed_at"`
	Reason         string `dynamodbav:"reason"`
	RequestedBy    string `dynamodbav:"requested_by"`
	RerunRequested bool   `dynamodbav:"rerun_requested"`
	ReexportAt     string `dynamodbav:"reexport_requested_at"`
	ReexportBy     string `dynamodbav:"reexport_requested_by"`
	ReexportServed string `dynamodbav:"reexport_served"`
	UpdatedAt      string `dynamodbav:"updated_at"`
	DueAccount     string `dynamodbav:"due_account"`
	DueKey         string `dynamodbav:"due_key"`
	FleetShard     string `dynamodbav:"fleet_shard"` // X#<nn> while failed and stopped
	FleetKey       string `dynamodbav:"fleet_key"`   // <account>#<dataset>#<day> while failed and stopped

	// The ids of the last re-export requests served (manual.go).
	ReexportsServed []string `dynamodbav:"reexports_served,stringset,omitempty"`

	// Late data and reseeds (restate.go, reseed.go).
	Fingerprint    string `dynamodbav:"fingerprint"`
	FingerprintAt  string `dynamodbav:"fingerprint_at"`
	RestateAccount string `dynamodbav:"restate_account"`
	RestateKey     string `dynamodbav:"restate_key"`
	RestatedFrom   int64  `dynamodbav:"restated_from"`
	RestatedRows   int64  `dynamodbav:"restated_rows"`
	SeedEpoch      int64  `dynamodbav:"seed_epoch"`
}

// accountRecord is the stored form of an account (pk=ACCOUNTS, sk=<id>).
// An enabled account is in the fleet index under fleet_shard=W#<nn> with
// fleet_key=<wake time>.
type accountRecord struct {
	PK            string   `dynamodbav:"pk"`
	SK            string   `dynamodbav:"sk"`
	AccountID     string   `dynamodbav:"account_id"`
	Enabled       bool     `dynamodbav:"enabled"`
	Doc           string   `dynamodbav:"doc"`
	UpdatedAt     string   `dynamodbav:"updated_at"`
	FleetShard    string   `dynamodbav:"fleet_shard"`
	FleetKey      string   `dynamodbav:"fleet_key"`
	WakeSeq       int64    `dynamodbav:"wake_seq"`
	WokenAt       string   `dynamodbav:"woken_at"`
	ClosedThrough string   `dynamodbav:"closed_through"`
	Version       int64    `dynamodbav:"version"`
	Guards        []string `dynamodbav:"guards"`
}

// guardRecord is an isolation guard (pk=GUARDS, sk=account.Guard.Key; see
// accountwrite.go).
type guardRecord struct {
	PK    string   `dynamodbav:"pk"`
	SK    string   `dynamodbav:"sk"`
	Owner string   `dynamodbav:"owner"`
	Under []string `dynamodbav:"under,stringset"`
	What  string   `dynamodbav:"what"`
}

// eventRecord is one change of an account (pk=AE#<id>, sk=<at>#<version>).
type eventRecord struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	AccountID string `dynamodbav:"account_id"`
	Version   int64  `dynamodbav:"version"`
	At        string `dynamodbav:"at"`
	By        string `dynamodbav:"by"`
	Action    string `dynamodbav:"action"`
	Changes   string `dynamodbav:"changes"`
}

// statsRecord is the stored form of an hourly export-stats bucket
// (pk=STATS, sk=EXPORTS#YYYY-MM-DDTHH) and of the reconcile marker
// (pk=STATS, sk=RECONCILE).
type statsRecord struct {
	PK           string `dynamodbav:"pk"`
	SK           string `dynamodbav:"sk"`
	ExportMS     int64  `dynamodbav:"export_ms"`
	Exports      int64  `dynamodbav:"exports"`
	ExpiresAt    int64  `dynamodbav:"expires_at"`
	ReconciledAt string `dynamodbav:"reconciled_at"`
	UpdatedAt    string `dynamodbav:"updated_at"`
}

// watermarkRecord is the stored form of a watermark (pk=WM#<account>,
// sk=<dataset>).
type watermarkRecord struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	AccountID string `dynamodbav:"account_id"`
	Dataset   string `dynamodbav:"dataset"`
	Through   string `dynamodbav:"through"`
	UpdatedAt string `dynamodbav:"updated_at"`
}

// attemptRecord is the stored form of an attempt's history item
// (pk=H#<account>#<dataset>#<day>, sk=<started_at>#<attempt>#<generation>); see history.go.
type attemptRecord struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	AccountID   string `dynamodbav:"account_id"`
	Dataset     string `dynamodbav:"dataset"`
	Day         string `dynamodbav:"day"`
	Attempt     int    `dynamodbav:"attempt"`
	Outcome     string `dynamodbav:"outcome"`
	Reason      string `dynamodbav:"reason,omitempty"`
	RequestedBy string `dynamodbav:"requested_by,omitempty"`
	ClaimedAt   string `dynamodbav:"claimed_at,omitempty"`
	StartedAt   string `dynamodbav:"started_at,omitempty"`
	FinishedAt  string `dynamodbav:"finished_at"`
	Generation  int64  `dynamodbav:"generation,omitempty"`
	Rows        int64  `dynamodbav:"rows,omitempty"`
	Bytes       int64  `dynamodbav:"bytes,omitempty"`
	Files       int    `dynamodbav:"files,omitempty"`
	DurationMS  int64  `dynamodbav:"duration_ms,omitempty"`
	ManifestKey string `dynamodbav:"manifest_key,omitempty"`
	Error       string `dynamodbav:"error,omitempty"`
	ExpiresAt   int64  `dynamodbav:"expires_at"`
}

// scheduledDueKey is the due key of the pending newest closed day of a live
// account (Materialize with a priority day): Due reads it before every other
// class, and the sweeper takes every account's before any backfill.
func scheduledDueKey(day civil.Date, dataset string) string {
	return dueScheduled + day.String() + "#" + dataset
}

// stoppedKey is the fleet key of a failed, stopped row in the stopped
// shard of its account.
func stoppedKey(k partition.Key) string { return k.AccountID + "#" + k.Dataset + "#" + k.Day.String() }

func dueKey(state State, day civil.Date, dataset string, at time.Time) string {
	switch state {
	case StateQueued:
		return dueQueued + day.String() + "#" + dataset
	case StatePending:
		return duePending + day.String() + "#" + dataset
	case StateFailed:
		return dueFailed + fmtTime(at) + "#" + day.String() + "#" + dataset
	case StateRunning:
		return dueRunning + fmtTime(at) + "#" + day.String() + "#" + dataset
	}
	return ""
}

// stoppedDueKey is the due key of a failed row that stopped retrying: in
// the index so CountStopped can count it, outside every range Due reads.
func stoppedDueKey(day civil.Date, dataset string) string {
	return dueStopped + day.String() + "#" + dataset
}
