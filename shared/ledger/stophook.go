package ledger

import (
	"context"

	"github.com/daybook-dev/daybook/shared/partition"
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
		cause = partition.StopFailed
	case OutcomeLeaseExpired:
		cause = partition.StopLeaseExpired
	default:
		return
	}
	at := a.FinishedAt
	if at.IsZero() {
		at = l.now()
	}
	l.cfg.Stopped(context.WithoutCancel(ctx), partition.Stop{Key: a.Key, Attempts: a.Attempt, Generation: generation,
		Reason: a.Reason, Cause: cause, Error: a.Error, At: at})
}
