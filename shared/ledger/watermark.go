package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Materialize creates a pending row for every day from `from` through `to`
// that has none (conditional put: two sweeps create a day once) and returns
// how many it created. The last day of the range is reason scheduled, earlier
// days backfill. Existing rows are never touched.
func (l Schedule) Materialize(ctx context.Context, accountID, dataset string, from, to civil.Date) (int, error) {
	return l.materialize(ctx, accountID, dataset, civil.Range(from, to), to, false)
}

// MaterializeDays creates a pending row for each of days that has none,
// like Materialize. priority, if among days, is the newest closed day of a
// live account: it is reason scheduled and goes in the scheduled class of
// the due index, which Due reads first and the sweeper takes before any
// backfill; every other day is reason backfill.
func (l Schedule) MaterializeDays(ctx context.Context, accountID, dataset string, days []civil.Date, priority civil.Date) (int, error) {
	return l.materialize(ctx, accountID, dataset, days, priority, !priority.IsZero())
}

func (l *kernel) materialize(ctx context.Context, accountID, dataset string, days []civil.Date, scheduled civil.Date, prio bool) (int, error) {
	for _, d := range days {
		if err := validateKey(partition.Key{AccountID: accountID, Dataset: dataset, Day: d}); err != nil {
			return 0, err
		}
	}
	if len(days) > 0 {
		if err := l.markStale(ctx, accountID); err != nil {
			return 0, err
		}
	}
	var created atomic.Int64
	nowS := fmtTime(l.now())
	err := forEach(ctx, l.cfg.Concurrency, days, func(d civil.Date) error {
		reason, dk := partition.ReasonBackfill, dueKey(StatePending, d, dataset, time.Time{})
		if d == scheduled {
			reason = partition.ReasonScheduled
			if prio {
				dk = scheduledDueKey(d, dataset)
			}
		}
		item := rowKey(partition.Key{AccountID: accountID, Dataset: dataset, Day: d})
		item[attrAccountID] = s(accountID)
		item[attrDataset] = s(dataset)
		item[attrDay] = s(d.String())
		item[attrState] = s(string(StatePending))
		item[attrAttempts] = n(0)
		item[attrGeneration] = n(0)
		item[attrReason] = s(string(reason))
		item[attrUpdatedAt] = s(nowS)
		item[AttrDueAccount] = s(accountID)
		item[AttrDueKey] = s(dk)
		_, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:           aws.String(l.cfg.Table),
			Item:                item,
			ConditionExpression: aws.String("attribute_not_exists(" + AttrPK + ")"),
		})
		switch {
		case err == nil:
			created.Add(1)
		case isConditionFailed(err):
		default:
			return fmt.Errorf("ledger: materialize %s: %w", partition.Key{AccountID: accountID, Dataset: dataset, Day: d}, err)
		}
		return nil
	})
	return int(created.Load()), err
}

// Watermark returns the last day materialized for (account, dataset), or the
// zero civil.Date if none was.
func (l Schedule) Watermark(ctx context.Context, accountID, dataset string) (civil.Date, error) {
	item, err := l.getItem(ctx, tableKey(pkWMPrefix+accountID, dataset))
	if errors.Is(err, ErrNotFound) {
		return civil.Date{}, nil
	}
	if err != nil {
		return civil.Date{}, err
	}
	w, err := decodeItem[watermarkRecord](item)
	if err != nil {
		return civil.Date{}, err
	}
	d, err := civil.Parse(w.Through)
	if err != nil {
		// An empty through is as wrong as a bad one: AdvanceWatermark always
		// sets it, and a watermark without one would never move again.
		return civil.Date{}, malformed(item, attrThrough, strconv.Quote(w.Through), err)
	}
	return d, nil
}

// AdvanceWatermark moves the watermark forward to through; it never moves it
// back (a conditional write, so concurrent sweeps are safe). It reports
// whether it moved.
func (l Schedule) AdvanceWatermark(ctx context.Context, accountID, dataset string, through civil.Date) (bool, error) {
	if through.IsZero() {
		return false, errors.New("ledger: advance watermark to an empty day")
	}
	upd := expression.Set(name(attrThrough), val(through.String())).
		Set(name(attrAccountID), val(accountID)).
		Set(name(attrDataset), val(dataset)).
		Set(name(attrUpdatedAt), val(fmtTime(l.now())))
	cond := expression.Or(name(AttrPK).AttributeNotExists(), name(attrThrough).LessThan(val(through.String())))
	_, err := l.update(ctx, tableKey(pkWMPrefix+accountID, dataset), upd, cond, types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return false, nil
	}
	return err == nil, err
}
