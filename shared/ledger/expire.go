package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ExpireClaim ends the lease of the claim with token now, as if it had run
// out: the row stays running under that claim, and the next sweep may
// reclaim it as a dead claim (L3), attempts counted as for any dead claim.
// It is for a claim whose exporter is known to be dead (a fault-injection
// run that killed it, or an operator who saw the Lambda die), never for a
// live one, whose run would then overlap the next. A token that no longer
// holds the row is ErrClaimLost.
func (l *Ledger) ExpireClaim(ctx context.Context, key Key, token string) error {
	if err := key.validate(); err != nil {
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
	return err
}
