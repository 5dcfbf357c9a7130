package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Start marks a claim taken by the sweeper as started by the exporter that
// received its job, once per claim, and counts the attempt (attempts+1): a
// run uses an attempt when it starts, not when it is claimed. A second
// delivery of the same SQS message, or the message of a claim that was
// reclaimed meanwhile, gets ErrClaimLost, so a duplicated delivery never runs
// the partition twice. The lease is renewed from now (the job may have waited in the queue),
// so a live exporter always holds a live lease. It returns the claim as the
// ledger holds it (attempt, the generation the run will commit, reason).
func (l Partitions) Start(ctx context.Context, key partition.Key, token string) (Claim, error) {
	if err := validateKey(key); err != nil {
		return Claim{}, err
	}
	now := l.now()
	nowS := fmtTime(now)
	lease := now.Add(l.cfg.Lease)
	upd := expression.Set(name(attrStartedAt), val(nowS)).
		Add(name(attrAttempts), val(1)).
		Set(name(attrLeaseUntil), val(fmtTime(lease))).
		Set(name(AttrDueAccount), val(key.AccountID)).
		Set(name(AttrDueKey), val(dueKey(StateRunning, key.Day, key.Dataset, lease))).
		Set(name(attrUpdatedAt), val(nowS))
	cond := holdsUnstarted(token)
	out, err := l.transition(ctx, key, upd, cond, types.ReturnValueAllNew)
	if errors.Is(err, errCondition) {
		return Claim{}, fmt.Errorf("%w: start %s: claim already started, finished or taken over", ErrClaimLost, key)
	}
	if err != nil {
		return Claim{}, err
	}
	row, err := readBack("start", key, out)
	if err != nil {
		return Claim{}, err
	}
	return row.started(token), nil
}

// started is the claim token holds on a started row, as the run sees it:
// the attempt it counts, the generation it will commit, its reason.
func (r Row) started(token string) Claim {
	return Claim{Key: r.Key, Token: token, Attempt: r.Attempts, Generation: r.nextGeneration(), Reason: cmp.Or(r.Reason, partition.ReasonScheduled),
		RequestedBy: r.RequestedBy, ClaimedAt: r.ClaimedAt, LeaseUntil: r.LeaseUntil, Prev: r}
}

// NoteCommitted records a generation found committed in the bucket that the
// ledger never heard of (a run wrote `_SUCCESS` and died before Complete).
// A run calls it, under its claim, before it removes that `_SUCCESS`, so
// that if it fails too, the next claim is still numbered above it and no
// generation is ever committed twice; a failed run that found nothing new
// leaves no gap in the numbers.
func (l Partitions) NoteCommitted(ctx context.Context, key partition.Key, token string, generation int64) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if err := checkGeneration("note committed "+key.String()+":", generation); err != nil {
		return err
	}
	upd := expression.Set(name(attrGenReserved), val(generation)).Set(name(attrUpdatedAt), val(fmtTime(l.now())))
	cond := expression.And(holds(token), expression.Or(name(attrGenReserved).AttributeNotExists(),
		name(attrGenReserved).LessThan(val(generation))),
		expression.Or(name(attrGeneration).AttributeNotExists(), name(attrGeneration).LessThan(val(generation))))
	old, err := l.update(ctx, rowKey(key), upd, cond, types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		// Refused because the claim is lost or the generation is not new;
		// only the row as found can say which.
		row, rerr := rowFromItem(old)
		if rerr != nil {
			return fmt.Errorf("ledger: note committed generation of %s: refused: %w", key, rerr)
		}
		if row.heldBy(token) {
			return fmt.Errorf("%w: %s: generation %d is not above %d (completed) and %d (noted)", ErrConflict, key, generation, row.Generation, row.GenReserved)
		}
		return fmt.Errorf("%w: note committed generation of %s", ErrClaimLost, key)
	}
	return err
}

func rerunIs(v bool) expression.ConditionBuilder {
	if v {
		return name(attrRerunRequested).Equal(val(true))
	}
	return expression.Or(name(attrRerunRequested).AttributeNotExists(), name(attrRerunRequested).Equal(val(false)))
}

// Complete records a successful export under the claim token: the
// generation (res.Generation if > 0, else the stored one + 1), the result's
// stats, and the row leaves the due index as completed. If a re-run was
// requested while it ran, the row is queued (reason manual) instead, with the
// stats and generation still recorded. A token that no longer holds the row
// is ErrClaimLost (a write whose answer was lost is not refused by its own
// landing: kernel.update); a res.Generation not above the stored generation is ErrConflict (a generation only ever
// increases and never repeats).
func (l Partitions) Complete(ctx context.Context, key partition.Key, token string, res Result) (Row, error) {
	if err := validateKey(key); err != nil {
		return Row{}, err
	}
	if res.Generation != 0 {
		if err := checkGeneration("complete "+key.String()+":", res.Generation); err != nil {
			return Row{}, err
		}
	}
	nowS := fmtTime(l.now())
	upd := func(rerun bool) expression.UpdateBuilder {
		u := expression.Set(name(attrRows), val(res.Rows)).
			Set(name(attrBytes), val(res.Bytes)).
			Set(name(attrFiles), val(res.Files)).
			Set(name(attrManifestKey), val(res.ManifestKey)).
			Set(name(attrDurationMS), val(res.Duration.Milliseconds())).
			Set(name(attrCompletedAt), val(nowS)).
			Set(name(attrUpdatedAt), val(nowS)).
			Remove(name(attrClaimToken)).Remove(name(attrLeaseUntil)).Remove(name(attrNextAttemptAt)).
			Remove(name(attrLastError)).Remove(name(attrStopped)).Remove(name(attrRerunRequested))
		if res.Generation > 0 {
			u = u.Set(name(attrGeneration), val(res.Generation))
		} else {
			u = u.Add(name(attrGeneration), val(1))
		}
		if res.TableError != "" {
			u = u.Set(name(attrTableError), val(res.TableError))
		} else {
			u = u.Remove(name(attrTableError))
		}
		u = res.withLateData(u, key)
		if rerun {
			return u.Set(name(attrState), val(string(StateQueued))).
				Set(name(attrReason), val(string(partition.ReasonManual))).
				Set(name(attrAttempts), val(0)).
				Set(name(AttrDueAccount), val(key.AccountID)).
				Set(name(AttrDueKey), val(dueKey(StateQueued, key.Day, key.Dataset, time.Time{})))
		}
		return u.Set(name(attrState), val(string(StateCompleted))).Remove(name(AttrDueAccount)).Remove(name(AttrDueKey))
	}
	cond := func(rerun bool) expression.ConditionBuilder {
		c := expression.And(holds(token), rerunIs(rerun))
		if res.Generation > 0 {
			c = c.And(expression.Or(name(attrGeneration).AttributeNotExists(), name(attrGeneration).LessThan(val(res.Generation))))
		}
		return c
	}
	// completed follows the recorded write: out is the row it wrote.
	completed := func(out map[string]types.AttributeValue, rerun bool) (Row, error) {
		row, err := readBack("complete", key, out)
		if err == nil && rerun {
			// The wake first: a re-run waits for it; the history item
			// and the export stats after it are best effort.
			l.wakeAfter(ctx, key.AccountID, l.now())
		}
		l.noteCompleted(ctx, out)
		l.recordExport(ctx, res.Duration)
		return row, err
	}
	rerun := false // the common case; a refusal says which it is
	for range 3 {
		out, err := l.transition(ctx, key, upd(rerun), cond(rerun), types.ReturnValueAllNew)
		if err == nil {
			return completed(out, rerun)
		}
		if !errors.Is(err, errCondition) {
			return Row{}, err
		}
		if len(out) == 0 {
			return Row{}, fmt.Errorf("%w: complete %s: no such row", ErrClaimLost, key)
		}
		row, err := rowFromItem(out)
		if err != nil {
			return Row{}, err
		}
		switch {
		case !row.heldBy(token):
			return Row{}, fmt.Errorf("%w: complete %s", ErrClaimLost, key)
		case res.Generation > 0 && row.Generation >= res.Generation:
			return Row{}, fmt.Errorf("%w: complete %s: generation %d is not above the stored generation %d", ErrConflict, key, res.Generation, row.Generation)
		}
		rerun = row.RerunRequested
	}
	return Row{}, fmt.Errorf("%w: complete %s: row kept changing", ErrClaimLost, key)
}

// Fail records a failed attempt under the claim token. With attempts left the
// row is failed with next_attempt_at from the backoff; after MaxAttempts it is
// failed and stopped: it leaves the ranges Due reads for the 9# class that
// CountStopped counts, until requeued. A claim that failed without Start
// having counted its attempt (a caller that skipped Start) counts it here. If a re-run was
// requested while it ran, the row is queued (manual) with a fresh attempt
// count. A token that no longer holds the row is ErrClaimLost (a write
// whose answer was lost is not refused by its own landing: kernel.update).
func (l Partitions) Fail(ctx context.Context, key partition.Key, token string, cause error) (Row, error) {
	return l.FailAfter(ctx, key, token, cause, time.Time{})
}

// FailAfter is Fail with the next attempt no earlier than notBefore: a
// partition whose slices may still write until then (SliceFence) is not
// run again before they are gone.
func (l Partitions) FailAfter(ctx context.Context, key partition.Key, token string, cause error, notBefore time.Time) (Row, error) {
	if err := validateKey(key); err != nil {
		return Row{}, err
	}
	msg := errorText(cause)
	// recorded follows the recorded write: out is the row it wrote, now
	// its time and attempts the attempts it counted.
	recorded := func(out map[string]types.AttributeValue, now time.Time, attempts int) (Row, error) {
		row, err := readBack("fail", key, out)
		switch { // the wake first, the history item after it (best effort)
		case err != nil:
		case row.State == StateQueued:
			l.wakeAfter(ctx, key.AccountID, now)
		case !row.Stopped:
			l.wakeAfter(ctx, key.AccountID, row.NextAttemptAt)
		}
		l.noteFailed(ctx, out, attempts)
		return row, err
	}
	// The stop's transaction is no kernel.update: it carries this call's
	// write_id itself, and a refusal is told from its landing by reading
	// the row again.
	id, err := l.token()
	if err != nil {
		return Row{}, err
	}
	var refusedAt time.Time // the time of the last write refused, and the attempts it counted
	refusedAttempts := 0
	for range 5 {
		item, err := l.getItem(ctx, rowKey(key))
		if errors.Is(err, ErrNotFound) {
			return Row{}, fmt.Errorf("%w: fail %s: no such row", ErrClaimLost, key)
		}
		if err != nil {
			return Row{}, err
		}
		row, err := rowFromItem(item)
		if err != nil {
			return Row{}, err
		}
		if !refusedAt.IsZero() && ownWrite(item, id) {
			// The refused stop had landed: the row holds this very
			// failure.
			return recorded(item, refusedAt, refusedAttempts)
		}
		if !row.heldBy(token) {
			return Row{}, fmt.Errorf("%w: fail %s", ErrClaimLost, key)
		}
		attempts := row.Attempts
		if row.StartedAt.IsZero() {
			attempts++ // it ran, so it used an attempt, though Start was not called
		}
		now := l.now()
		nowS := fmtTime(now)
		upd := endRun(expression.Set(name(attrLastError), val(msg)), nowS)
		switch {
		case row.RerunRequested:
			upd = upd.Set(name(attrState), val(string(StateQueued))).
				Set(name(attrReason), val(string(partition.ReasonManual))).
				Set(name(attrAttempts), val(0)).
				Set(name(AttrDueAccount), val(key.AccountID)).
				Set(name(AttrDueKey), val(dueKey(StateQueued, key.Day, key.Dataset, time.Time{}))).
				Remove(name(attrRerunRequested)).Remove(name(attrNextAttemptAt))
		case attempts >= l.cfg.MaxAttempts:
			upd = markStopped(upd.Set(name(attrState), val(string(StateFailed))).
				Set(name(attrStopped), val(true)).
				Set(name(attrAttempts), val(attempts)).
				Set(name(AttrDueAccount), val(key.AccountID)).
				Set(name(AttrDueKey), val(stoppedDueKey(key.Day, key.Dataset))).
				Remove(name(attrNextAttemptAt)), key)
		default:
			delay, err := l.Backoff(attempts)
			if err != nil {
				return Row{}, err
			}
			next := now.Add(delay)
			if notBefore.After(next) {
				next = notBefore.UTC().Truncate(time.Second).Add(time.Second)
			}
			upd = upd.Set(name(attrState), val(string(StateFailed))).
				Set(name(attrAttempts), val(attempts)).
				Set(name(attrNextAttemptAt), val(fmtTime(next))).
				Set(name(AttrDueAccount), val(key.AccountID)).
				Set(name(AttrDueKey), val(dueKey(StateFailed, key.Day, key.Dataset, next)))
		}
		cond := expression.And(holds(token), name(attrAttempts).Equal(val(row.Attempts)), rerunIs(row.RerunRequested))
		var out map[string]types.AttributeValue
		if !row.RerunRequested && attempts >= l.cfg.MaxAttempts {
			// Stopping: its event is recorded in the same write.
			out, err = l.stopTransition(ctx, key, upd.Set(name(attrWriteID), val(id)), cond, id, partition.Stop{Key: key, Attempts: attempts, Generation: row.Generation,
				Reason: row.Reason, Cause: partition.StopFailed, Error: msg, At: now})
		} else {
			out, err = l.transition(ctx, key, upd, cond, types.ReturnValueAllNew)
		}
		if errors.Is(err, errCondition) {
			// A re-run request landed in between, the claim was lost, or
			// this write's answer was lost: look again.
			refusedAt, refusedAttempts = now, attempts
			continue
		}
		if err != nil {
			return Row{}, err
		}
		return recorded(out, now, attempts)
	}
	return Row{}, fmt.Errorf("%w: fail %s: row kept changing", ErrClaimLost, key)
}
