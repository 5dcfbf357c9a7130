package ledger

// A slice's run (slice.go has the design and the items): claiming a slice,
// recording its outcome, the one commit claim, and the partition's hold
// that every slice run renews.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/partition"
)

// renewPartition holds the partition's claim token for SliceHold from now,
// so the partition stays running while its slices work, and while a slice
// whose run died waits to come back from the queue: the sweeper takes a
// sliced partition over only when no slice was heard of for that long.
func (l *kernel) renewPartition(ctx context.Context, key partition.Key, token string) error {
	return l.holdPartition(ctx, key, token, false)
}

// holdPartition is renewPartition, marking the row SlicePlanned when
// planned.
func (l *kernel) holdPartition(ctx context.Context, key partition.Key, token string, planned bool) error {
	now := l.now()
	lease := now.Add(l.cfg.SliceHold)
	upd := expression.Set(name(attrLeaseUntil), val(fmtTime(lease))).
		Set(name(AttrDueAccount), val(key.AccountID)).
		Set(name(AttrDueKey), val(dueKey(StateRunning, key.Day, key.Dataset, lease))).
		Set(name(attrUpdatedAt), val(fmtTime(now)))
	if planned {
		upd = upd.Set(name(attrSlicePlanned), val(true))
	}
	_, err := l.update(ctx, rowKey(key), upd, holds(token), types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return fmt.Errorf("%w: %s is no longer held by the plan's claim", ErrClaimLost, key)
	}
	return err
}

// ofPlan: the slice item belongs to the plan of the partition claim token.
func ofPlan(token string) expression.ConditionBuilder {
	return name(attrPartitionToken).Equal(val(token))
}

// StartSlice claims slice i of the plan of the partition claim token for a
// run, counting an attempt: a queued slice, a failed one with attempts left,
// or a running one whose lease expired (its run died) with attempts left. It
// renews the partition's lease first. A completed slice is ErrSliceDone; a
// slice running under a live lease is ErrConflict; a dead run on the last
// attempt, or a failed slice out of attempts, is ErrStopped; a plan that
// is gone or was replaced, or a partition no longer held by token, is
// ErrClaimLost.
func (l Slices) StartSlice(ctx context.Context, key partition.Key, token string, i int) (Slice, error) {
	if err := validateKey(key); err != nil {
		return Slice{}, err
	}
	if err := l.renewPartition(ctx, key, token); err != nil {
		return Slice{}, fmt.Errorf("start slice %d: %w", i, err)
	}
	run, err := l.token()
	if err != nil {
		return Slice{}, err
	}
	now := l.now()
	nowS := fmtTime(now)
	st := name(attrState)
	startable := expression.And(ofPlan(token), name(attrAttempts).LessThan(val(l.cfg.MaxAttempts)), expression.Or(
		st.Equal(val(string(StateQueued))),
		st.Equal(val(string(StateFailed))),
		deadRun(nowS)))
	upd := expression.Set(st, val(string(StateRunning))).
		Set(name(attrClaimToken), val(run)).
		Set(name(attrStartedAt), val(nowS)).
		Set(name(attrLeaseUntil), val(fmtTime(now.Add(l.cfg.Lease)))).
		Set(name(attrUpdatedAt), val(nowS)).
		Add(name(attrAttempts), val(1))
	out, err := l.update(ctx, sliceKey(key, i), upd, startable, types.ReturnValueAllNew)
	if errors.Is(err, errCondition) {
		return Slice{}, l.sliceRefused(key, token, i, out, now)
	}
	if err != nil {
		return Slice{}, err
	}
	return sliceFromItem(out)
}

// sliceRefused says why StartSlice was refused, from the item as found.
func (l *kernel) sliceRefused(key partition.Key, token string, i int, item map[string]types.AttributeValue, now time.Time) error {
	what := fmt.Sprintf("slice %d of %s", i, key)
	if len(item) == 0 {
		return fmt.Errorf("%w: %s: no such slice", ErrClaimLost, what)
	}
	sl, err := sliceFromItem(item)
	switch {
	case err != nil:
		return err
	case sl.Token != token:
		return fmt.Errorf("%w: %s belongs to a newer plan", ErrClaimLost, what)
	case sl.State == StateCompleted:
		return fmt.Errorf("%w: %s", ErrSliceDone, what)
	case sl.State == StateRunning && !sl.LeaseUntil.Before(now):
		return fmt.Errorf("%w: %s is running under a live claim until %s", ErrConflict, what, fmtTime(sl.LeaseUntil))
	case sl.Attempts >= l.cfg.MaxAttempts:
		return fmt.Errorf("%w: %s failed %d times: %s", ErrStopped, what, sl.Attempts, sl.LastError)
	}
	return fmt.Errorf("%w: %s is %s", ErrConflict, what, sl.State)
}

// holdsSlice: slice item held by the run token of the plan's claim.
func holdsSlice(token, run string) expression.ConditionBuilder {
	return expression.And(ofPlan(token), holds(run))
}

// CompleteSlice renews the partition's hold and records a slice run's
// result under its run token. A run that no longer holds the slice (it was
// taken over, or the plan replaced), or a partition no longer held by
// token, is ErrClaimLost.
func (l Slices) CompleteSlice(ctx context.Context, key partition.Key, token string, i int, run string, res SliceResult) error {
	if err := validateKey(key); err != nil {
		return err
	}
	// The partition first: a slice recorded completed under a partition
	// that is gone could never be committed.
	if err := l.renewPartition(ctx, key, token); err != nil {
		return fmt.Errorf("complete slice %d: %w", i, err)
	}
	nowS := fmtTime(l.now())
	upd := endRun(expression.Set(name(attrState), val(string(StateCompleted))).
		Set(name(attrRows), val(res.Rows)).
		Set(name(attrBytes), val(res.Bytes)).
		Set(name(attrSliceFiles), val(res.Files)).
		Set(name(attrFinishedAt), val(nowS)), nowS).
		Remove(name(attrLastError))
	_, err := l.update(ctx, sliceKey(key, i), upd, holdsSlice(token, run), types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return fmt.Errorf("%w: complete slice %d of %s", ErrClaimLost, i, key)
	}
	return err
}

// FailSlice records a slice run's error under its run token and renews the
// partition's hold while the slice waits for its retry; the slice is
// stopped once it has used MaxAttempts attempts (the partition's attempt
// then fails: the exporter records that with FailAfter). It returns the
// slice as recorded. A run that no longer holds the slice, or a partition
// no longer held by token, is ErrClaimLost.
func (l Slices) FailSlice(ctx context.Context, key partition.Key, token string, i int, run string, cause error) (Slice, error) {
	if err := validateKey(key); err != nil {
		return Slice{}, err
	}
	msg := errorText(cause)
	nowS := fmtTime(l.now())
	upd := endRun(expression.Set(name(attrState), val(string(StateFailed))).
		Set(name(attrLastError), val(msg)).
		Set(name(attrFinishedAt), val(nowS)), nowS)
	out, err := l.update(ctx, sliceKey(key, i), upd, holdsSlice(token, run), types.ReturnValueAllNew)
	if errors.Is(err, errCondition) {
		return Slice{}, fmt.Errorf("%w: fail slice %d of %s", ErrClaimLost, i, key)
	}
	if err != nil {
		return Slice{}, err
	}
	sl, err := sliceFromItem(out)
	if err != nil {
		return Slice{}, err
	}
	sl.Stopped = sl.Attempts >= l.cfg.MaxAttempts
	// Held on while the slice waits for its retry.
	return sl, l.renewPartition(ctx, key, token)
}

// ClaimSliceCommit makes the caller the one run that commits the plan of
// the partition claim token, for a lease: it returns the commit's token. A
// commit claimed by another run whose lease has not expired is ErrConflict
// (that run commits); a plan replaced or gone is ErrClaimLost. Commit
// itself is Complete under the partition's claim, which succeeds once.
func (l Slices) ClaimSliceCommit(ctx context.Context, key partition.Key, token string) (string, error) {
	if err := validateKey(key); err != nil {
		return "", err
	}
	commit, err := l.token()
	if err != nil {
		return "", err
	}
	now := l.now()
	cond := expression.And(ofPlan(token), expression.Or(name(attrCommitToken).AttributeNotExists(),
		name(attrCommitLeaseUntil).LessThan(val(fmtTime(now)))))
	upd := expression.Set(name(attrCommitToken), val(commit)).
		Set(name(attrCommitLeaseUntil), val(fmtTime(now.Add(l.cfg.Lease)))).
		Set(name(attrUpdatedAt), val(fmtTime(now)))
	out, err := l.update(ctx, planKey(key), upd, cond, types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		if len(out) == 0 {
			return "", fmt.Errorf("%w: commit slices of %s: no plan", ErrClaimLost, key)
		}
		plan, perr := planFromItem(out)
		if perr != nil {
			return "", perr
		}
		if plan.Token != token {
			return "", fmt.Errorf("%w: commit slices of %s: the plan was replaced", ErrClaimLost, key)
		}
		return "", fmt.Errorf("%w: commit of %s's slices is claimed until %s", ErrConflict, key, fmtTime(plan.CommitLeaseUntil))
	}
	if err != nil {
		return "", err
	}
	return commit, nil
}

// HeldClaim returns the claim token holds on the partition, as Start
// returned it, for the run that finishes a sliced partition. A token that
// no longer holds the row is ErrClaimLost.
func (l Partitions) HeldClaim(ctx context.Context, key partition.Key, token string) (Claim, error) {
	row, err := l.Get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return Claim{}, fmt.Errorf("%w: %s: no such row", ErrClaimLost, key)
	}
	if err != nil {
		return Claim{}, err
	}
	if !row.heldBy(token) {
		return Claim{}, fmt.Errorf("%w: %s", ErrClaimLost, key)
	}
	return row.started(token), nil
}
