// Package partition is the vocabulary that the ledger ([ledger]), the
// queue's messages ([jobs]) and the bus's events ([events]) share about one
// partition: which one it is ([Key]), why it is exported ([Reason]), how many
// slices a day may be exported in ([MaxSlices]) and why it stopped retrying
// ([Stop]). It sits below all three, so the wire formats do not depend on
// the storage: it imports nothing of daybook's but [civil].
//
// [ledger]: github.com/daybook-dev/daybook/shared/ledger
// [jobs]: github.com/daybook-dev/daybook/shared/jobs
// [events]: github.com/daybook-dev/daybook/shared/events
package partition

import (
	"slices"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

// Key names one partition: an account's dataset on one day.
type Key struct {
	AccountID string
	Dataset   string
	Day       civil.Date
}

func (k Key) String() string { return k.AccountID + "/" + k.Dataset + "/" + k.Day.String() }

// Reason says why a partition is exported (F3).
type Reason string

// Reasons.
const (
	ReasonScheduled Reason = "scheduled"
	ReasonBackfill  Reason = "backfill"
	ReasonRetry     Reason = "retry"
	ReasonManual    Reason = "manual"
	// ReasonRestatement: the source's rows of the day changed after its
	// export (R1).
	ReasonRestatement Reason = "restatement"
	// ReasonReseed: the dataset is rebuilt from the account's start date
	// (R3).
	ReasonReseed Reason = "reseed"
)

// Valid reports whether r is a known reason.
func (r Reason) Valid() bool {
	return slices.Contains([]Reason{ReasonScheduled, ReasonBackfill, ReasonRetry, ReasonManual, ReasonRestatement, ReasonReseed}, r)
}

// MaxSlices bounds the slices one partition is exported in (E7).
const MaxSlices = 1000

// Stop describes a partition that stopped retrying: it waits, failed and
// stopped, until an operator retries it.
type Stop struct {
	Key
	// Attempts is the number of attempts it used.
	Attempts int
	// Generation is the last committed generation (0: never committed).
	Generation int64
	// Reason is why the partition was being exported.
	Reason Reason
	// Cause is how the last attempt ended: [StopFailed] (the exporter
	// recorded an error) or [StopLeaseExpired] (the run never finished: its
	// claim lease expired, and a sweep retired it).
	Cause string
	// Error is the last error as recorded in the ledger.
	Error string
	At    time.Time
}

// Causes of a Stop.
const (
	StopFailed       = "failed"
	StopLeaseExpired = "lease_expired"
)
