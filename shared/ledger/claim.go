package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/partition"
)

// claimableNow: queued, pending, failed with attempts left (due key 2#) and
// next_attempt_at <= now, or running with an expired lease that either never
// started (its attempt was not used) or started with attempts left.
func (l *kernel) claimableNow(nowS string) expression.ConditionBuilder {
	st := name(attrState)
	return expression.And(
		name(AttrPK).AttributeExists(),
		expression.Or(
			st.In(val(string(StateQueued)), val(string(StatePending))),
			expression.And(st.Equal(val(string(StateFailed))), name(AttrDueKey).BeginsWith(dueFailed), name(attrNextAttemptAt).LessThanEqual(val(nowS))),
			expression.And(deadRun(nowS),
				expression.Or(name(attrStartedAt).AttributeNotExists(), name(attrAttempts).LessThan(val(l.cfg.MaxAttempts)))),
		),
	)
}

// holdsUnstarted: held by token, and its run has not started.
func holdsUnstarted(token string) expression.ConditionBuilder {
	return expression.And(holds(token), name(attrStartedAt).AttributeNotExists())
}

// sameClaim: still the claim a refused write found in row (same token and
// lease), so a follow-up write cannot act on a claim taken since.
func sameClaim(row Row) expression.ConditionBuilder {
	return expression.And(holds(row.ClaimToken), name(attrLeaseUntil).Equal(val(fmtTime(row.LeaseUntil))))
}

func runningUpdate(k partition.Key, token, nowS string, lease time.Time) expression.UpdateBuilder {
	return expression.Set(name(attrState), val(string(StateRunning))).
		Set(name(attrClaimToken), val(token)).
		Set(name(attrClaimedAt), val(nowS)).
		Set(name(attrLeaseUntil), val(fmtTime(lease))).
		Set(name(AttrDueAccount), val(k.AccountID)).
		Set(name(AttrDueKey), val(dueKey(StateRunning, k.Day, k.Dataset, lease))).
		Set(name(attrUpdatedAt), val(nowS)).
		Remove(name(attrNextAttemptAt)).
		Remove(name(attrRerunRequested))
}

// Claim claims a row that is claimable now (queued, pending, failed and due,
// or running under a dead claim) with a new random token. reason, if not
// empty, replaces the row's reason (the sweeper passes retry for failed rows
// and dead claims; queued and pending rows keep the reason they were created
// with). A row in any other state is refused with ErrConflict; an absent row
// is ErrNotFound; a dead claim that started on the last attempt becomes
// failed+stopped and returns ErrStopped, as a *StoppedError whose Stop the
// caller publishes.
//
// Claim does not use an attempt: Start does, when the run begins. Claim
// returns the attempt number the run will be (attempts+1) for the job
// message. A dead claim that never started (its job waited in the queue
// longer than the lease) is reclaimed without having used an attempt; its old
// message is dropped at Start by the token check.
func (l Partitions) Claim(ctx context.Context, key partition.Key, reason partition.Reason) (Claim, error) {
	if err := validateKey(key); err != nil {
		return Claim{}, err
	}
	if reason != "" && !reason.Valid() {
		return Claim{}, fmt.Errorf("ledger: reason %q", reason)
	}
	now := l.now()
	nowS := fmtTime(now)
	token, err := l.token()
	if err != nil {
		return Claim{}, err
	}
	// The token is on record before any job can carry it (token.go).
	if err := l.issueJobToken(ctx, key, token, now); err != nil {
		return Claim{}, err
	}
	lease := now.Add(l.cfg.Lease)
	upd := runningUpdate(key, token, nowS, lease).Remove(name(attrStartedAt))
	if reason != "" {
		upd = upd.Set(name(attrReason), val(string(reason)))
	}
	old, err := l.transition(ctx, key, upd, l.claimableNow(nowS), types.ReturnValueAllOld)
	var prev Row
	switch {
	case errors.Is(err, errLanded):
		if prev, err = landedPrev("claim", key, old); err != nil {
			return Claim{}, err
		}
	case errors.Is(err, errCondition):
		return Claim{}, l.refusedClaim(ctx, key, now, old)
	case err != nil:
		return Claim{}, err
	default:
		if prev, err = readBack("claim", key, old); err != nil {
			return Claim{}, err
		}
		l.noteDeadClaim(ctx, prev, now)
	}
	return Claim{Key: key, Token: token, Attempt: prev.Attempts + 1, Generation: prev.nextGeneration(),
		Reason: cmp.Or(reason, prev.Reason, partition.ReasonScheduled), RequestedBy: prev.RequestedBy, ClaimedAt: now, LeaseUntil: lease, Prev: prev}, nil
}

// landedPrev is the row before a claim whose write landed and whose answer
// was lost (errLanded; item is the row as the claim left it). That row is
// gone; the one returned for it (Claim.Prev) keeps what the claim did not
// write (generation, stats, restatement, slice plan, attempts, requester)
// and is queued, due now, as a Release of the claim leaves it. A dead run
// the claim took over is not noted in the history then.
func landedPrev(what string, key partition.Key, item map[string]types.AttributeValue) (Row, error) {
	row, err := readBack(what, key, item)
	if err != nil {
		return Row{}, err
	}
	row.State, row.ClaimToken, row.DueKey, row.RerunRequested = StateQueued, "", "", false
	row.ClaimedAt, row.StartedAt, row.LeaseUntil, row.NextAttemptAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return row, nil
}

// refusedClaim explains a failed claim condition from the row as the refused
// write found it (item; empty if there is no row), and retires a dead claim
// that started on its last attempt.
func (l *kernel) refusedClaim(ctx context.Context, key partition.Key, now time.Time, item map[string]types.AttributeValue) error {
	if len(item) == 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	row, err := rowFromItem(item)
	if err != nil {
		return err
	}
	switch {
	case row.deadOnLastAttempt(now, l.cfg.MaxAttempts) && row.RerunRequested:
		// The dead claim used its last attempt, but someone asked for a
		// re-run while it ran: honour the request (as Requeue would) rather
		// than retire the row and lose it.
		upd := expression.Set(name(attrState), val(string(StateQueued))).
			Set(name(attrAttempts), val(0)).
			Set(name(attrReason), val(string(partition.ReasonManual))).
			Set(name(attrStopped), val(false)).
			Set(name(attrLastError), val(fmt.Sprintf("claim lease expired at %s on attempt %d; re-run requested", fmtTime(row.LeaseUntil), row.Attempts))).
			Set(name(attrUpdatedAt), val(fmtTime(now))).
			Set(name(AttrDueAccount), val(key.AccountID)).
			Set(name(AttrDueKey), val(dueKey(StateQueued, key.Day, key.Dataset, now))).
			Remove(name(attrClaimToken)).Remove(name(attrLeaseUntil)).Remove(name(attrNextAttemptAt)).
			Remove(name(attrStartedAt)).Remove(name(attrRerunRequested))
		cond := sameClaim(row)
		_, err := l.transition(ctx, key, upd, cond, types.ReturnValueNone)
		switch {
		case err == nil:
			l.wakeAfter(ctx, key.AccountID, now)
		case !errors.Is(err, errCondition):
			return err
		}
		return fmt.Errorf("%w: %s: dead claim on its last attempt had a re-run requested; queued it", ErrConflict, key)
	case row.deadOnLastAttempt(now, l.cfg.MaxAttempts):
		msg := fmt.Sprintf("claim lease expired at %s on attempt %d of %d", fmtTime(row.LeaseUntil), row.Attempts, l.cfg.MaxAttempts)
		upd := markStopped(expression.Set(name(attrState), val(string(StateFailed))).
			Set(name(attrStopped), val(true)).
			Set(name(attrLastError), val(msg)).
			Set(name(attrUpdatedAt), val(fmtTime(now))).
			Set(name(AttrDueAccount), val(key.AccountID)).
			Set(name(AttrDueKey), val(stoppedDueKey(key.Day, key.Dataset))).
			Remove(name(attrClaimToken)).Remove(name(attrLeaseUntil)).Remove(name(attrNextAttemptAt)), key)
		cond := sameClaim(row).And(name(attrStartedAt).AttributeExists())
		st := partition.Stop{Key: key, Attempts: row.Attempts, Generation: row.Generation, Reason: row.Reason,
			Cause: partition.StopLeaseExpired, Error: msg, At: now}
		if _, err := l.stopTransition(ctx, key, upd, cond, "", st); err != nil {
			if errors.Is(err, errCondition) {
				return fmt.Errorf("%w: %s changed while retiring its dead claim", ErrConflict, key)
			}
			return err
		}
		l.noteDeadClaim(ctx, row, now)
		return &StoppedError{Stop: st}
	case row.liveAt(now):
		return &LiveClaimError{Key: key, LeaseUntil: row.LeaseUntil}
	case row.State == StateFailed && row.Stopped:
		return fmt.Errorf("%w: %s failed %d times and waits for a requeue", ErrConflict, key, row.Attempts)
	case row.State == StateFailed:
		return fmt.Errorf("%w: %s failed; next attempt at %s", ErrConflict, key, fmtTime(row.NextAttemptAt))
	default:
		return fmt.Errorf("%w: %s is %s", ErrConflict, key, row.State)
	}
}

// Release gives back a claim whose run has not started (the sweeper could
// not enqueue its job): the row returns to the due state it was claimed from
// (a claim uses no attempt, so the count is unchanged). A reclaimed dead
// claim returns as failed and due now. A claim that has started (its job got
// through after all, and an exporter runs it) or is no longer held is
// ErrClaimLost and the row is left alone: releasing a running row would let
// a second exporter run it. Manual claims start at once, so they are
// never released.
func (l Partitions) Release(ctx context.Context, c Claim) error {
	now := l.now()
	st, at := StateFailed, now
	switch {
	case c.Reason == partition.ReasonManual || c.Prev.State == StateQueued:
		st = StateQueued
	case c.Prev.State == StatePending:
		st = StatePending
	case c.Prev.State == StateFailed && !c.Prev.NextAttemptAt.IsZero():
		at = c.Prev.NextAttemptAt
	}
	dk := dueKey(st, c.Day, c.Dataset, at)
	if st == StatePending && strings.HasPrefix(c.Prev.DueKey, dueScheduled) {
		dk = scheduledDueKey(c.Day, c.Dataset) // it keeps its place before the backfill
	}
	upd := expression.Set(name(attrState), val(string(st))).
		Set(name(AttrDueAccount), val(c.AccountID)).
		Set(name(AttrDueKey), val(dk)).
		Set(name(attrUpdatedAt), val(fmtTime(now))).
		Remove(name(attrClaimToken)).Remove(name(attrLeaseUntil))
	if st == StateFailed {
		upd = upd.Set(name(attrNextAttemptAt), val(fmtTime(at)))
	}
	switch {
	case c.Reason == partition.ReasonManual:
		upd = upd.Set(name(attrReason), val(string(partition.ReasonManual)))
	case c.Prev.Reason != "":
		upd = upd.Set(name(attrReason), val(string(c.Prev.Reason)))
	}
	old, err := l.transition(ctx, c.Key, upd, holdsUnstarted(c.Token), types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		// Refused: the claim is no longer held unstarted, whatever the row
		// now says, so the error is ErrClaimLost even if it cannot be read.
		row, rerr := rowFromItem(old)
		switch {
		case rerr != nil:
			return fmt.Errorf("%w: release %s: %w", ErrClaimLost, c.Key, rerr)
		case row.heldBy(c.Token):
			return fmt.Errorf("%w: release %s: its run started at %s", ErrClaimLost, c.Key, fmtTime(row.StartedAt))
		}
		return fmt.Errorf("%w: release %s", ErrClaimLost, c.Key)
	}
	if err != nil {
		return err
	}
	l.wakeAfter(ctx, c.AccountID, at)
	return nil
}
