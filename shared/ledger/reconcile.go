package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ReconcileResult says what ReconcileWake did.
type ReconcileResult struct {
	Accounts int `json:"accounts"` // account records read
	Added    int `json:"added"`    // enabled accounts put into the wake index, woken now
	Removed  int `json:"removed"`  // disabled accounts taken out of it
	// Malformed names each record that could not be read; the others are
	// reconciled all the same.
	Malformed []error `json:"-"`
}

// ClaimReconcile moves the reconcile marker to now if the last reconcile
// began at or before now-every (or never), and reports whether it did: of
// two sweeps asking at once, one reconciles.
func (l Schedule) ClaimReconcile(ctx context.Context, every time.Duration) (bool, error) {
	now := l.now()
	upd := expression.Set(name(attrReconciledAt), val(fmtTime(now))).Set(name(attrUpdatedAt), val(fmtTime(now)))
	cond := expression.Or(name(attrReconciledAt).AttributeNotExists(), name(attrReconciledAt).LessThanEqual(val(fmtTime(now.Add(-every)))))
	_, err := l.update(ctx, tableKey(pkStats, skReconcile), upd, cond, types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return false, nil
	}
	return err == nil, err
}

// ReconcileWake reads every account record (one query page per megabyte of
// records) and repairs its place in the wake index: an enabled account that
// is missing from it (a record written before the index existed, or by hand)
// is added and woken now; a disabled one still in it is taken out. Each
// repair is conditional on the record's enabled flag as read.
func (l Schedule) ReconcileWake(ctx context.Context) (ReconcileResult, ReadStats, error) {
	var res ReconcileResult
	var errs []error
	nowS := fmtTime(l.now())
	stats, err := l.queryPages(ctx, "reconcile accounts", "", expression.Key(AttrPK).Equal(val(pkAccounts)), "", 0,
		func(page *dynamodb.QueryOutput) error {
			for _, it := range page.Items {
				res.Accounts++
				rec, err := decodeItem[accountRecord](it)
				if err == nil {
					_, err = accountFromItem(it)
				}
				if err != nil {
					res.Malformed = append(res.Malformed, err)
					continue
				}
				want := wakeShard(Shard(rec.SK))
				key := tableKey(pkAccounts, rec.SK)
				var upd expression.UpdateBuilder
				var cond expression.ConditionBuilder
				switch {
				case rec.Enabled && rec.FleetShard != want:
					upd = expression.Set(name(AttrFleetShard), val(want)).Set(name(AttrFleetKey), val(nowS)).
						Add(name(attrWakeSeq), val(1))
					cond = expression.And(name(attrEnabled).Equal(val(true)),
						expression.Or(name(AttrFleetShard).AttributeNotExists(), name(AttrFleetShard).NotEqual(val(want))))
				case !rec.Enabled && rec.FleetShard != "":
					upd = expression.Remove(name(AttrFleetShard)).Remove(name(AttrFleetKey)).Add(name(attrWakeSeq), val(1))
					cond = name(attrEnabled).Equal(val(false))
				default:
					continue
				}
				_, err = l.update(ctx, key, upd, cond, types.ReturnValueNone)
				switch {
				case err == nil && rec.Enabled:
					res.Added++
				case err == nil:
					res.Removed++
				case !errors.Is(err, errCondition): // changed meanwhile: its writer put it right
					errs = append(errs, err)
				}
			}
			return nil
		})
	return res, stats, errors.Join(append(errs, err)...)
}
