package ledger

// The wake half of the fleet index. An enabled account's record carries
// fleet_shard=W#<nn> and fleet_key=<wake time>: the earliest time the account
// may have work (its next day close, its earliest failed row's next attempt,
// its earliest live claim's lease end, or a time already past when work is
// waiting). A sweep queries each shard for fleet_key <= now and reads no
// other account, so an idle account costs a sweep nothing.
//
// Two kinds of writer move the wake time:
//
//   - a waker (Requeue, ClaimManual, Fail, Complete or Release that leave a
//     row due, PutAccount) only lowers it: Wake sets fleet_key = t if it is
//     later than t. Every waker bumps wake_seq and sets woken_at, also when
//     it did not lower the time, if a sweep may be handling the account;
//   - the sweeper, after handling an account, sets the next wake time with
//     SetNextWake, conditional on wake_seq being the one it read and on no
//     waker having written in the minute before it read the account's due
//     rows (the due index is eventually consistent). If either changed, the
//     account keeps the earlier of its current wake time and the sweeper's.
//
// A waker always writes its row first and the wake time second, so a sweep
// that did not see the row sees the bump, and no wake-up is lost.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
)

const (
	// wakeSkew bounds the clock difference between writers: a waker that
	// finds the wake time more than this ahead of its clock knows no sweep
	// is handling the account.
	wakeSkew = time.Minute
	// wakeGrace is how long a waker's write keeps a sweep from raising the
	// wake time: the time its row change may take to reach the due index.
	wakeGrace = time.Minute
)

// Shard returns the fleet-index shard of an account: FNV-1a of its id
// modulo FleetShards.
func Shard(accountID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(accountID))
	return int(h.Sum32() % FleetShards)
}

func wakeShard(shard int) string    { return fmt.Sprintf("%s%02d", fleetWake, shard) }
func stoppedShard(shard int) string { return fmt.Sprintf("%s%02d", fleetStopped, shard) }

// Woken is an account the fleet index says may have work now.
type Woken struct {
	ID string
	// Account is the stored account; zero when Err is set.
	Account account.Account
	// WakeAt is the wake time that made it due; Seq the wake_seq read with it.
	WakeAt time.Time
	Seq    int64
	// ClosedThrough is the day through which every dataset was materialized
	// when a sweep last finished with the account (zero: unknown).
	ClosedThrough civil.Date
	// Err is set when the record cannot be read: the sweeper reports the
	// account and goes on with the others.
	Err error
}

// WokenAccounts returns the accounts of shard whose wake time is at or
// before now, earliest first, at most limit (<= 0: all). One malformed
// record is returned with Err set, never an error for the whole shard.
func (l Schedule) WokenAccounts(ctx context.Context, shard int, now time.Time, limit int) ([]Woken, ReadStats, error) {
	var out []Woken
	stats, err := l.queryPages(ctx, "woken accounts of "+wakeShard(shard), IndexFleet, wokenKC(shard, now), "", limit,
		func(page *dynamodb.QueryOutput) error {
			for _, it := range page.Items {
				out = append(out, wokenFromItem(it))
			}
			return nil
		})
	return out, stats, err
}

// CountWoken counts the accounts WokenAccounts would return (a COUNT query:
// it reads the index entries but returns none), to size a fan-out.
func (l Schedule) CountWoken(ctx context.Context, shard int, now time.Time) (int, ReadStats, error) {
	total := 0
	stats, err := l.queryPages(ctx, "count woken accounts of "+wakeShard(shard), IndexFleet, wokenKC(shard, now), types.SelectCount, 0,
		func(out *dynamodb.QueryOutput) error { total += int(out.Count); return nil })
	return total, stats, err
}

func wokenKC(shard int, now time.Time) expression.KeyConditionBuilder {
	return expression.Key(AttrFleetShard).Equal(val(wakeShard(shard))).
		And(expression.Key(AttrFleetKey).LessThanEqual(val(fmtTime(now))))
}

func wokenFromItem(item map[string]types.AttributeValue) Woken {
	w := Woken{ID: avString(item[AttrSK])}
	rec, err := decodeItem[accountRecord](item)
	if err == nil {
		w.Account, err = accountFromItem(item)
	}
	if err == nil {
		w.Seq = rec.WakeSeq
		if w.WakeAt, err = parseTime(rec.FleetKey); err != nil {
			err = malformed(item, AttrFleetKey, strconv.Quote(rec.FleetKey), err)
		}
	}
	if err == nil && rec.ClosedThrough != "" {
		if w.ClosedThrough, err = civil.Parse(rec.ClosedThrough); err != nil {
			err = malformed(item, attrClosedThrough, strconv.Quote(rec.ClosedThrough), err)
		}
	}
	if err != nil {
		return Woken{ID: w.ID, Err: err}
	}
	return w
}

// Wake lowers the account's wake time to at (it never raises it), so a
// sweep reads the account at or after at. A disabled or unknown account is
// left alone. Callers write their row first, then Wake.
func (l Schedule) Wake(ctx context.Context, accountID string, at time.Time) error {
	now := l.now()
	atS, nowS := fmtTime(at), fmtTime(now)
	key := tableKey(pkAccounts, accountID)
	// An UpdateBuilder shares its operations with copies: build each anew.
	bump := func() expression.UpdateBuilder {
		return expression.Set(name(attrWokenAt), val(nowS)).Add(name(attrWakeSeq), val(1))
	}
	lower := expression.And(name(AttrFleetShard).AttributeExists(), name(AttrFleetKey).GreaterThan(val(atS)))
	old, err := l.update(ctx, key, bump().Set(name(AttrFleetKey), val(atS)), lower, types.ReturnValueNone)
	if !errors.Is(err, errCondition) {
		return err
	}
	// Already due at or before at, or not in the index. A sweep handling
	// the account now may not have seen the caller's row: bump wake_seq so
	// that it cannot raise the wake time past it. Not needed when the wake
	// time is ahead of every clock (no sweep read it) or the account is not
	// in the index.
	if len(old) > 0 {
		if _, in := old[AttrFleetShard]; !in {
			return nil
		}
		if cur := avString(old[AttrFleetKey]); cur > fmtTime(now.Add(wakeSkew)) {
			return nil
		}
	}
	_, err = l.update(ctx, key, bump(), name(AttrFleetShard).AttributeExists(), types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return nil
	}
	return err
}

// wakeAfter is Wake for a transition that already took effect: the
// transition stands whatever happens here, so a failure is reported to
// Config.Report, not returned (a sweep finds the row at the account's
// next wake, its next day close at the latest).
func (l *kernel) wakeAfter(ctx context.Context, accountID string, at time.Time) {
	if err := l.schedule().Wake(ctx, accountID, at); err != nil {
		l.cfg.Report.WakeFailed(ctx, accountID, fmt.Errorf("lower the wake time of account %s to %s: %w", accountID, fmtTime(at), err))
	}
}

// SetNextWake records the sweeper's next wake time for an account it
// handled: next, and closedThrough (if not zero: every dataset is
// materialized through it, so the next sweep need not read the watermarks
// until a later day closes). It applies only if no waker wrote since w was
// read and none in the minute before readAt, the time the sweep began
// reading the account's rows; otherwise the account keeps the earlier of its
// wake time and next (closedThrough is then not recorded: an account put may
// have changed the datasets). It reports whether next was applied as is.
func (l Schedule) SetNextWake(ctx context.Context, w Woken, next time.Time, closedThrough civil.Date, readAt time.Time) (bool, error) {
	nextS := fmtTime(next)
	key := tableKey(pkAccounts, w.ID)
	upd := expression.Set(name(AttrFleetKey), val(nextS)).Add(name(attrWakeSeq), val(1))
	if !closedThrough.IsZero() {
		upd = upd.Set(name(attrClosedThrough), val(closedThrough.String()))
	}
	seq := name(attrWakeSeq).Equal(val(w.Seq))
	if w.Seq == 0 {
		seq = name(attrWakeSeq).AttributeNotExists()
	}
	quiet := expression.Or(name(attrWokenAt).AttributeNotExists(), name(attrWokenAt).LessThan(val(fmtTime(readAt.Add(-wakeGrace)))))
	cond := expression.And(name(AttrFleetShard).AttributeExists(), seq, quiet)
	_, err := l.update(ctx, key, upd, cond, types.ReturnValueNone)
	if !errors.Is(err, errCondition) {
		return err == nil, err
	}
	lower := expression.And(name(AttrFleetShard).AttributeExists(), name(AttrFleetKey).GreaterThan(val(nextS)))
	_, err = l.update(ctx, key, expression.Set(name(AttrFleetKey), val(nextS)).Add(name(attrWakeSeq), val(1)), lower, types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		err = nil
	}
	return false, err
}
