package ledger

import (
	"context"
	"time"
)

// Stop describes a partition that stopped retrying: it waits, failed and
// stopped (the 9# class of the due index), until an operator requeues it.
type Stop struct {
	Key
	// Attempts is the number of attempts it used.
	Attempts int
	// Generation is the last committed generation (0: never committed).
	Generation int64
	// Reason is why the partition was being exported.
	Reason Reason
	// Cause is how the last attempt ended: StopFailed (the exporter recorded
	// an error) or StopLeaseExpired (the run never finished: its claim lease
	// expired, and a sweep retired it).
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

// notifyStopped tells Config.Stopped of a partition that stopped retrying.
// Its callers pass the attempt the transition ended: Fail's (only the
// outcome stopped notifies), or a dead claim's that Claim retired on its
// last attempt (outcome lease_expired). The hook runs after the transition,
// with a context that outlives the caller's, and cannot undo it.
func (l *Ledger) notifyStopped(ctx context.Context, a Attempt, generation int64) {
	if l.cfg.Stopped == nil {
		return
	}
	cause := ""
	switch a.Outcome {
	case OutcomeStopped:
		cause = StopFailed
	case OutcomeLeaseExpired:
		cause = StopLeaseExpired
	default:
		return
	}
	at := a.FinishedAt
	if at.IsZero() {
		at = l.now()
	}
	l.cfg.Stopped(context.WithoutCancel(ctx), Stop{Key: a.Key, Attempts: a.Attempt, Generation: generation,
		Reason: a.Reason, Cause: cause, Error: a.Error, At: at})
}
