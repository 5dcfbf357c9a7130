package ledger

import (
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/partition"
)

// State is a partition row's state.
type State string

// States.
const (
	StatePending   State = "pending"
	StateQueued    State = "queued"
	StateRunning   State = "running"
	StateCompleted State = "completed"
	StateFailed    State = "failed"
)

// Row is one partition row. Rows returned by Due come from the index and
// carry only the key, state, attempts, claim fields, and the time in the due
// key (NextAttemptAt for failed rows, LeaseUntil for running ones).
type Row struct {
	partition.Key
	State      State
	Attempts   int
	ClaimToken string
	ClaimedAt  time.Time
	// StartedAt is when the current (or last) claim's run started; zero for
	// a claim not started yet.
	StartedAt     time.Time
	LeaseUntil    time.Time
	NextAttemptAt time.Time
	LastError     string
	// TableError is set on a completed row whose generation was delivered
	// while the dataset's Iceberg table could not take it (its metadata
	// cannot be used): "table_broken: ..." naming the object at fault and
	// the repair command (manifest.CodeTableBroken). It belongs to the
	// generation: the row keeps it in any state (queued, running, failed
	// again) until the next Complete replaces it or the repair clears it
	// (ClearTableError), which it does once the table holds the generation
	// or the generation is no longer committed in the bucket.
	TableError string
	Stopped    bool
	// SlicePlanned: a plan of slices was recorded for the partition at
	// some point (PlanSlices sets it, nothing clears it), so a slice of an
	// earlier plan may still write into it: only then does a run need
	// SliceFence.
	SlicePlanned bool
	Generation   int64
	// GenReserved is the highest generation found committed in the bucket
	// without a Complete (NoteCommitted); the next claim is numbered above it.
	GenReserved int64
	Rows        int64
	Bytes       int64
	Files       int
	ManifestKey string
	DurationMS  int64
	CompletedAt time.Time
	Reason      partition.Reason
	// RequestedBy is who asked for the manual action the row is queued or
	// running for (manual.go); "" for scheduled work.
	RequestedBy    string
	RerunRequested bool
	// ReexportRequestedAt is when an operator sent a re-export request for
	// the day that no exporter has claimed yet (reexport.go), and
	// ReexportRequestedBy who; zero when none waits.
	ReexportRequestedAt time.Time
	ReexportRequestedBy string
	UpdatedAt           time.Time
	// DueKey is the row's key in the due index ("" when not due).
	DueKey string

	// Late data and reseeds (restate.go, reseed.go): the fingerprint
	// the generation was exported with and its next check, the generation a
	// restatement replaces, and the seed epoch of the generation.
	Fingerprint Fingerprint
	Restatement *Restatement
	SeedEpoch   int64
}

// Claim is a held claim on a row: the exporter carries Token in every write
// and writes Generation into the manifest.
type Claim struct {
	partition.Key
	Token      string
	Attempt    int
	Generation int64
	Reason     partition.Reason
	// RequestedBy is who asked for a manual claim ("" for scheduled work).
	RequestedBy string
	ClaimedAt   time.Time
	LeaseUntil  time.Time
	// Prev is the row as it was before the claim (State "" if it did not
	// exist); Release restores its due state.
	Prev Row
}

// Result is what a completed export records.
type Result struct {
	Rows        int64
	Bytes       int64
	Files       int
	ManifestKey string
	Duration    time.Duration
	// Generation, if > 0, is the generation the run committed (the exporter
	// takes max(claim generation, generation in the old _SUCCESS + 1), so a
	// crash between _SUCCESS and Complete never repeats a number). Complete
	// stores it and refuses one not above the stored generation. 0 means
	// stored generation + 1.
	Generation int64

	// TableError, when set, is recorded with the generation: the dataset's
	// Iceberg table could not take it (Row.TableError); empty clears it.
	TableError string

	// Fingerprint, Restated and SeedEpoch are recorded with the generation
	// (restate.go, reseed.go).
	Fingerprint Fingerprint
	Restated    bool
	SeedEpoch   int64
}

// ReadStats counts what a read cost.
type ReadStats struct {
	Queries       int
	Items         int
	CapacityUnits float64
}

// Add returns s+o.
func (s ReadStats) Add(o ReadStats) ReadStats {
	return ReadStats{Queries: s.Queries + o.Queries, Items: s.Items + o.Items, CapacityUnits: s.CapacityUnits + o.CapacityUnits}
}

// Scheduled reports whether r is in the scheduled class of the due index:
// the pending newest closed day of a live account, which the sweeper takes
// before any backfill.
func (r Row) Scheduled() bool { return strings.HasPrefix(r.DueKey, dueScheduled) }

// nextGeneration is the generation the next run of r commits at least.
func (r Row) nextGeneration() int64 { return max(r.Generation, r.GenReserved) + 1 }

// heldBy reports whether the claim with token holds r: r is running under
// that token. It is the row-side reading of the holds condition, for
// explaining a refused write from the item it returned.
func (r Row) heldBy(token string) bool { return r.State == StateRunning && r.ClaimToken == token }

// liveAt reports whether r runs under a claim whose lease has not expired
// at now (the row-side reading of the live condition).
func (r Row) liveAt(now time.Time) bool { return r.State == StateRunning && !r.LeaseUntil.Before(now) }

// LeaseEnd is the first instant at which a lease stored as until has ended.
// lease_until is stored to the second and the claim conditions compare it
// with the second of now (live: lease_until >= now; claimable: lease_until <
// now), so a lease is live through its whole last second and ends one second
// after the stored value. DueWork, Claim and the sweeper's wake all use this
// one boundary.
func LeaseEnd(until time.Time) time.Time { return until.Truncate(time.Second).Add(time.Second) }

// deadOnLastAttempt reports whether r is a dead claim (running, lease
// expired at now) whose run started and used the last of maxAttempts: the
// running branch of claimableNow refuses exactly these, and Claim retires
// them as stopped (or queues them, if a re-run was requested).
func (r Row) deadOnLastAttempt(now time.Time, maxAttempts int) bool {
	return r.State == StateRunning && r.LeaseUntil.Before(now) && !r.StartedAt.IsZero() && r.Attempts >= maxAttempts
}

// FailedStop is the stop of a row that Fail (FailAfter) left stopped, for
// the caller to publish: its event was recorded with the transition when
// Config.StoppedEvent is set, under the same id. ok is false for a row
// that did not stop.
func (r Row) FailedStop() (st partition.Stop, ok bool) {
	if r.State != StateFailed || !r.Stopped {
		return partition.Stop{}, false
	}
	return partition.Stop{Key: r.Key, Attempts: r.Attempts, Generation: r.Generation, Reason: r.Reason,
		Cause: partition.StopFailed, Error: r.LastError, At: r.UpdatedAt}, true
}
