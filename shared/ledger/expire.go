package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/partition"
)

// ExpireClaim ends the lease of the claim with token now, as if it had run
// out, and those of the running slices of its plan if it exports the day in
// slices: the row stays running under that claim, and the next sweep may
// reclaim it as a dead claim, attempts counted as for any dead claim.
// It is for a claim whose exporter is known to be dead (a fault-injection
// run that killed it, or an operator who saw the Lambda die), never for a
// live one, whose run would then overlap the next. A token that no longer
// holds the row is ErrClaimLost.
func (l Partitions) ExpireClaim(ctx context.Context, key partition.Key, token string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	now := l.now()
	past := now.Add(-time.Second)
	upd := expression.Set(name(attrLeaseUntil), val(fmtTime(past))).
		Set(name(AttrDueKey), val(dueKey(StateRunning, key.Day, key.Dataset, past))).
		Set(name(attrUpdatedAt), val(fmtTime(now)))
	_, err := l.update(ctx, rowKey(key), upd, holds(token), types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return fmt.Errorf("%w: expire claim on %s", ErrClaimLost, key)
	}
	if err != nil {
		return err
	}
	// The claim's slices died with it: their leases end too, or they would
	// fence the next run out of the partition until they ran out.
	if err := l.expireSlices(ctx, key, token, past); err != nil {
		return err
	}
	// The dead claim is due now: wake the account, as every transition that
	// leaves work due does, or no sweep would read it before the old lease end.
	return l.schedule().Wake(ctx, key.AccountID, now)
}

// expireSlices ends the lease of every running slice of the claim's plan,
// each conditional on its run token, so a run that took one over meanwhile
// keeps it.
func (l *kernel) expireSlices(ctx context.Context, key partition.Key, token string, past time.Time) error {
	_, sls, err := l.sliceItems(ctx, key)
	if err != nil {
		return err
	}
	for _, sl := range sls {
		if sl.Token != token || sl.State != StateRunning || sl.LeaseUntil.Before(past) {
			continue
		}
		upd := expression.Set(name(attrLeaseUntil), val(fmtTime(past))).Set(name(attrUpdatedAt), val(fmtTime(l.now())))
		if _, err := l.update(ctx, sliceKey(key, sl.Index), upd, holdsSlice(token, sl.RunToken), types.ReturnValueNone); err != nil && !errors.Is(err, errCondition) {
			return err
		}
	}
	return nil
}
