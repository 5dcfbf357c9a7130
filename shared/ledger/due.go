package ledger

import (
	"cmp"
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Due returns up to limit rows of accountID with work to do, in SPEC S1
// order: queued (oldest day first), then pending and failed-and-due merged by
// day, then dead claims (lease expired). It reads the sparse due index only,
// with key conditions (no filter), and skips the lower tiers once the higher
// ones fill the limit; stats counts the items read and the capacity consumed.
func (l *Ledger) Due(ctx context.Context, accountID string, limit int) ([]Row, ReadStats, error) {
	var stats ReadStats
	if limit <= 0 {
		return nil, stats, nil
	}
	nowS := fmtTime(l.now())
	acct := expression.Key(AttrDueAccount).Equal(val(accountID))
	dk := expression.Key(AttrDueKey)
	q := func(kc expression.KeyConditionBuilder, max int) ([]Row, error) {
		rows, st, err := l.queryIndex(ctx, acct.And(kc), max)
		stats = stats.Add(st)
		return rows, err
	}
	out, err := q(dk.BeginsWith(dueQueued), limit)
	if err != nil || len(out) >= limit {
		return out, stats, err
	}
	rem := limit - len(out)
	pending, err := q(dk.BeginsWith(duePending), rem)
	if err != nil {
		return out, stats, err
	}
	failed, err := q(dk.Between(val(dueFailed), val(dueFailed+nowS+dueUpperBound)), rem)
	if err != nil {
		return out, stats, err
	}
	mid := append(pending, failed...)
	slices.SortStableFunc(mid, func(a, b Row) int {
		return cmp.Or(a.Day.Compare(b.Day), cmp.Compare(a.Dataset, b.Dataset))
	})
	out = append(out, mid[:min(rem, len(mid))]...)
	if len(out) >= limit {
		return out, stats, nil
	}
	dead, err := q(dk.Between(val(dueRunning), val(dueRunning+nowS+dueUpperBound)), limit-len(out))
	out = append(out, dead...)
	return out, stats, err
}

func (l *Ledger) queryIndex(ctx context.Context, kc expression.KeyConditionBuilder, max int) ([]Row, ReadStats, error) {
	var rows []Row
	stats, err := l.queryPages(ctx, "query due index", IndexDue, kc, "", max, appendRows(&rows))
	return rows, stats, err
}

// CountExhausted counts the account's partitions that stopped retrying
// (failed after MaxAttempts, waiting for a requeue): a COUNT Query on the due
// index over begins_with(due_key, "9#"). It reads only exhausted rows (L5),
// which are few: each one is an alarm (O3).
func (l *Ledger) CountExhausted(ctx context.Context, accountID string) (int, ReadStats, error) {
	kc := expression.Key(AttrDueAccount).Equal(val(accountID)).
		And(expression.Key(AttrDueKey).BeginsWith(dueExhausted))
	total := 0
	stats, err := l.queryPages(ctx, "count exhausted of "+accountID, IndexDue, kc, types.SelectCount, 0,
		func(out *dynamodb.QueryOutput) error { total += int(out.Count); return nil })
	return total, stats, err
}
