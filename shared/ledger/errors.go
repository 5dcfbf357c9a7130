package ledger

import (
	"errors"
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/partition"
)

// The ledger's errors. Every one is returned wrapped (with the key or the
// account it is about): test for it with errors.Is. A transition that
// returns an error did not happen (or, for ErrStopped, ended the row as
// the error says); what fails after a recorded transition (lowering the
// wake time, writing the attempt's history) is reported to
// Config.Report instead, never returned.
var (
	// ErrClaimLost: a write guarded by a claim token found another token
	// (or none): the claim expired and was taken over, or the job's run was
	// already started (a second delivery).
	ErrClaimLost = errors.New("ledger: claim lost")
	// ErrNotFound: no such row or account.
	ErrNotFound = errors.New("ledger: not found")
	// ErrConflict: the transition is refused in the row's current state (for
	// example a claim on a completed row, or on a row running under a live claim).
	ErrConflict = errors.New("ledger: refused in the current state")
	// ErrBusy: a manual request found the row running under a live claim; the
	// request is recorded (rerun_requested) and runs after that claim completes.
	ErrBusy = errors.New("ledger: partition is running; re-run recorded")
	// ErrServed: a manual request whose claim or re-run was taken before
	// (ClaimManual): SQS sent its message again, and nothing is done twice.
	ErrServed = errors.New("ledger: the re-export request was served already")
	// ErrStopped: the partition (or a slice of it) used its last attempt and
	// stopped retrying: Claim retired a dead claim that had started on its
	// last attempt (the row is now failed and stopped, and waits for a
	// requeue; the error is a *StoppedError), or StartSlice found a slice
	// out of attempts.
	ErrStopped = errors.New("ledger: stopped retrying (out of attempts)")
	// ErrSliceDone is StartSlice's refusal of a slice already completed (a
	// second delivery of its message).
	ErrSliceDone = errors.New("ledger: slice already completed")
	// ErrMalformed marks a stored item the ledger cannot read. A value that
	// does not parse is an error naming the attribute, the item's key and
	// the value, never a zero value: a lease that read as the zero time
	// would look expired, and the row would be claimed again.
	ErrMalformed = errors.New("ledger: malformed item")
	// ErrNoDelete: the ledger's client cannot delete items.
	ErrNoDelete = errors.New("ledger: the DynamoDB client given to New cannot delete items")
	// ErrBadPageToken: a fleet page token the ledger did not return.
	ErrBadPageToken = errors.New("ledger: bad page token")
)

// errCondition marks a failed condition check inside the package (dynamo.go
// turns DynamoDB's ConditionalCheckFailedException into it).
var errCondition = errors.New("condition failed")

// errLanded is an ALL_OLD update refused by its own landing: its answer was
// lost and the SDK sent it again (kernel.update). The item returned with it
// is the row as the write left it; the row before it is gone.
var errLanded = errors.New("the write landed; its answer was lost")

// LiveClaimError is Claim's refusal of a row running under a live claim. It
// is ErrConflict (errors.Is); Ends says when that claim, if it dies, can be
// taken over, so a sweep that lost the row keeps its account woken until
// then rather than until its next day.
type LiveClaimError struct {
	Key        partition.Key
	LeaseUntil time.Time // the stored lease_until
}

func (e *LiveClaimError) Error() string {
	return fmt.Sprintf("%v: %s is running under a live claim until %s", ErrConflict, e.Key, fmtTime(e.LeaseUntil))
}

func (e *LiveClaimError) Unwrap() error { return ErrConflict }

// Ends is the lease's end: the first instant Claim takes the row over.
func (e *LiveClaimError) Ends() time.Time { return LeaseEnd(e.LeaseUntil) }

// ServedError is ClaimManual's ErrServed (errors.Is): Row is the row as
// the refused claim found it, so a caller can act on the day (rewrite its
// delivery manifest at rest) without reading it again.
type ServedError struct {
	RequestID string
	Row       Row
}

func (e *ServedError) Error() string {
	return fmt.Sprintf("%v: request %s for %s", ErrServed, e.RequestID, e.Row.Key)
}

func (e *ServedError) Unwrap() error { return ErrServed }

// StoppedError is Claim's ErrStopped for a dead claim it retired on its
// last attempt: Stop is the partition's stop, for the caller to publish
// (its event was recorded with the retirement when Config.StoppedEvent is
// set).
type StoppedError struct {
	Stop partition.Stop
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrStopped, e.Stop.Key, e.Stop.Error)
}

func (e *StoppedError) Unwrap() error { return ErrStopped }
