package ledger

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/civil"
)

const maxErrorLen = 1000

// Materialize creates a pending row for every day from `from` through `to`
// that has none (conditional put: two sweeps create a day once) and returns
// how many it created. The last day of the range is reason scheduled, earlier
// days backfill. Existing rows are never touched.
func (l *Ledger) Materialize(ctx context.Context, accountID, dataset string, from, to civil.Date) (int, error) {
	days := civil.Range(from, to)
	for _, d := range days {
		if err := (Key{accountID, dataset, d}).validate(); err != nil {
			return 0, err
		}
	}
	var created atomic.Int64
	nowS := fmtTime(l.now())
	err := forEach(ctx, l.cfg.Concurrency, days, func(d civil.Date) error {
		reason := ReasonBackfill
		if d == to {
			reason = ReasonScheduled
		}
		item := rowKey(Key{accountID, dataset, d})
		item["account_id"] = s(accountID)
		item["dataset"] = s(dataset)
		item["day"] = s(d.String())
		item["state"] = s(string(StatePending))
		item["attempts"] = n(0)
		item["generation"] = n(0)
		item["reason"] = s(string(reason))
		item["updated_at"] = s(nowS)
		item[AttrDueAccount] = s(accountID)
		item[AttrDueKey] = s(dueKey(StatePending, d, dataset, time.Time{}))
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
			return fmt.Errorf("ledger: materialize %s: %w", Key{accountID, dataset, d}, err)
		}
		return nil
	})
	return int(created.Load()), err
}

// Watermark returns the last day materialized for (account, dataset), or the
// zero civil.Date if none was.
func (l *Ledger) Watermark(ctx context.Context, accountID, dataset string) (civil.Date, error) {
	item, err := l.getItem(ctx, tableKey(pkWMPrefix+accountID, dataset))
	if errors.Is(err, ErrNotFound) {
		return civil.Date{}, nil
	}
	if err != nil {
		return civil.Date{}, err
	}
	sv, _ := item["through"].(*types.AttributeValueMemberS)
	if sv == nil {
		return civil.Date{}, nil
	}
	return civil.Parse(sv.Value)
}

// AdvanceWatermark moves the watermark forward to through; it never moves it
// back (a conditional write, so concurrent sweeps are safe). It reports
// whether it moved.
func (l *Ledger) AdvanceWatermark(ctx context.Context, accountID, dataset string, through civil.Date) (bool, error) {
	if through.IsZero() {
		return false, errors.New("ledger: advance watermark to an empty day")
	}
	upd := expression.Set(name("through"), val(through.String())).
		Set(name("account_id"), val(accountID)).
		Set(name("dataset"), val(dataset)).
		Set(name("updated_at"), val(fmtTime(l.now())))
	cond := expression.Or(name(AttrPK).AttributeNotExists(), name("through").LessThan(val(through.String())))
	_, err := l.update(ctx, tableKey(pkWMPrefix+accountID, dataset), upd, cond, types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return false, nil
	}
	return err == nil, err
}

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
	sort.SliceStable(mid, func(i, j int) bool {
		if c := mid[i].Day.Compare(mid[j].Day); c != 0 {
			return c < 0
		}
		return mid[i].Dataset < mid[j].Dataset
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

// queryPages runs one key-condition Query (on index, or on the table if index
// is empty) page by page until the result ends or limit items were returned
// (limit <= 0: no limit), handing each page to fn. It counts what the query
// read (L5); the error names what.
func (l *Ledger) queryPages(ctx context.Context, what, index string, kc expression.KeyConditionBuilder, sel types.Select, limit int, fn func(*dynamodb.QueryOutput) error) (ReadStats, error) {
	var stats ReadStats
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return stats, fmt.Errorf("ledger: %s: build query: %w", what, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(l.cfg.Table),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		Select:                    sel,
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	if index != "" {
		in.IndexName = aws.String(index)
	}
	for got := 0; limit <= 0 || got < limit; {
		if limit > 0 {
			in.Limit = aws.Int32(int32(min(limit-got, 1000)))
		}
		out, err := l.db.Query(ctx, in)
		if err != nil {
			return stats, fmt.Errorf("ledger: %s: %w", what, err)
		}
		stats.Queries++
		stats.Items += int(out.ScannedCount)
		if out.ConsumedCapacity != nil {
			stats.CapacityUnits += aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
		}
		got += int(out.Count)
		if err := fn(out); err != nil {
			return stats, err
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return stats, nil
}

// appendRows is a queryPages page handler that decodes partition rows.
func appendRows(rows *[]Row) func(*dynamodb.QueryOutput) error {
	return func(out *dynamodb.QueryOutput) error {
		for _, it := range out.Items {
			r, err := rowFromItem(it)
			if err != nil {
				return err
			}
			*rows = append(*rows, r)
		}
		return nil
	}
}

func stateName() expression.NameBuilder { return name("state") }

// claimableNow: queued, pending, failed with attempts left (due key 2#) and
// next_attempt_at <= now, or running with an expired lease that either never
// started (its attempt was not used) or started with attempts left.
func (l *Ledger) claimableNow(nowS string) expression.ConditionBuilder {
	st := stateName()
	return expression.And(
		name(AttrPK).AttributeExists(),
		expression.Or(
			st.In(val(string(StateQueued)), val(string(StatePending))),
			expression.And(st.Equal(val(string(StateFailed))), name(AttrDueKey).BeginsWith(dueFailed), name("next_attempt_at").LessThanEqual(val(nowS))),
			expression.And(st.Equal(val(string(StateRunning))), name("lease_until").LessThan(val(nowS)),
				expression.Or(name("started_at").AttributeNotExists(), name("attempts").LessThan(val(l.cfg.MaxAttempts)))),
		),
	)
}

// notLive: absent, or not running, or running under an expired lease.
func notLive(nowS string) expression.ConditionBuilder {
	return expression.Or(name(AttrPK).AttributeNotExists(), stateName().NotEqual(val(string(StateRunning))), name("lease_until").LessThan(val(nowS)))
}

func live(nowS string) expression.ConditionBuilder {
	return expression.And(stateName().Equal(val(string(StateRunning))), name("lease_until").GreaterThanEqual(val(nowS)))
}

func holds(token string) expression.ConditionBuilder {
	return expression.And(name("claim_token").Equal(val(token)), stateName().Equal(val(string(StateRunning))))
}

func runningUpdate(k Key, token, nowS string, lease time.Time) expression.UpdateBuilder {
	return expression.Set(stateName(), val(string(StateRunning))).
		Set(name("claim_token"), val(token)).
		Set(name("claimed_at"), val(nowS)).
		Set(name("lease_until"), val(fmtTime(lease))).
		Set(name(AttrDueAccount), val(k.AccountID)).
		Set(name(AttrDueKey), val(dueKey(StateRunning, k.Day, k.Dataset, lease))).
		Set(name("updated_at"), val(nowS)).
		Remove(name("next_attempt_at")).
		Remove(name("rerun_requested"))
}

// Claim claims a row that is claimable now (queued, pending, failed and due,
// or running under a dead claim) with a new random token. reason, if not
// empty, replaces the row's reason (the sweeper passes retry for failed rows
// and dead claims; queued and pending rows keep the reason they were created
// with). A row in any other state is refused with ErrConflict; an absent row
// is ErrNotFound; a dead claim that started on the last attempt becomes
// failed+exhausted and returns ErrExhausted.
//
// Claim does not use an attempt: Start does, when the run begins. Claim
// returns the attempt number the run will be (attempts+1) for the job
// message. A dead claim that never started (its job waited in the queue
// longer than the lease) is reclaimed without having used an attempt; its old
// message is dropped at Start by the token check.
func (l *Ledger) Claim(ctx context.Context, key Key, reason Reason) (Claim, error) {
	if err := key.validate(); err != nil {
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
	lease := now.Add(l.cfg.Lease)
	upd := runningUpdate(key, token, nowS, lease).Remove(name("started_at"))
	if reason != "" {
		upd = upd.Set(name("reason"), val(string(reason)))
	}
	old, err := l.update(ctx, rowKey(key), upd, l.claimableNow(nowS), types.ReturnValueAllOld)
	if errors.Is(err, errCondition) {
		return Claim{}, l.refusedClaim(ctx, key, now, old)
	}
	if err != nil {
		return Claim{}, err
	}
	prev, err := rowFromItem(old)
	if err != nil {
		return Claim{}, err
	}
	l.noteDeadClaim(ctx, prev, now)
	if reason == "" {
		reason = prev.Reason
		if reason == "" {
			reason = ReasonScheduled
		}
	}
	return Claim{Key: key, Token: token, Attempt: prev.Attempts + 1, Generation: prev.nextGeneration(),
		Reason: reason, ClaimedAt: now, LeaseUntil: lease, Prev: prev}, nil
}

// refusedClaim explains a failed claim condition from the row as the refused
// write found it (item; empty if there is no row), and retires a dead claim
// that started on its last attempt.
func (l *Ledger) refusedClaim(ctx context.Context, key Key, now time.Time, item map[string]types.AttributeValue) error {
	if len(item) == 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	row, err := rowFromItem(item)
	if err != nil {
		return err
	}
	switch {
	case row.State == StateRunning && row.LeaseUntil.Before(now) && !row.StartedAt.IsZero() && row.Attempts >= l.cfg.MaxAttempts && row.RerunRequested:
		// The dead claim used its last attempt, but someone asked for a
		// re-run while it ran: honour the request (as Requeue would) rather
		// than retire the row and lose it.
		upd := expression.Set(stateName(), val(string(StateQueued))).
			Set(name("attempts"), val(0)).
			Set(name("reason"), val(string(ReasonManual))).
			Set(name("exhausted"), val(false)).
			Set(name("last_error"), val(fmt.Sprintf("claim lease expired at %s on attempt %d; re-run requested", fmtTime(row.LeaseUntil), row.Attempts))).
			Set(name("updated_at"), val(fmtTime(now))).
			Set(name(AttrDueAccount), val(key.AccountID)).
			Set(name(AttrDueKey), val(dueKey(StateQueued, key.Day, key.Dataset, now))).
			Remove(name("claim_token")).Remove(name("lease_until")).Remove(name("next_attempt_at")).
			Remove(name("started_at")).Remove(name("rerun_requested"))
		cond := expression.And(holds(row.ClaimToken), name("lease_until").Equal(val(fmtTime(row.LeaseUntil))))
		if _, err := l.update(ctx, rowKey(key), upd, cond, types.ReturnValueNone); err != nil && !errors.Is(err, errCondition) {
			return err
		}
		return fmt.Errorf("%w: %s: dead claim on its last attempt had a re-run requested; queued it", ErrConflict, key)
	case row.State == StateRunning && row.LeaseUntil.Before(now) && !row.StartedAt.IsZero() && row.Attempts >= l.cfg.MaxAttempts:
		msg := fmt.Sprintf("claim lease expired at %s on attempt %d of %d", fmtTime(row.LeaseUntil), row.Attempts, l.cfg.MaxAttempts)
		upd := expression.Set(stateName(), val(string(StateFailed))).
			Set(name("exhausted"), val(true)).
			Set(name("last_error"), val(msg)).
			Set(name("updated_at"), val(fmtTime(now))).
			Set(name(AttrDueAccount), val(key.AccountID)).
			Set(name(AttrDueKey), val(exhaustedDueKey(key.Day, key.Dataset))).
			Remove(name("claim_token")).Remove(name("lease_until")).Remove(name("next_attempt_at"))
		cond := expression.And(holds(row.ClaimToken), name("lease_until").Equal(val(fmtTime(row.LeaseUntil))),
			name("started_at").AttributeExists())
		if _, err := l.update(ctx, rowKey(key), upd, cond, types.ReturnValueNone); err != nil {
			if errors.Is(err, errCondition) {
				return fmt.Errorf("%w: %s changed while retiring its dead claim", ErrConflict, key)
			}
			return err
		}
		l.noteDeadClaim(ctx, row, now)
		return fmt.Errorf("%w: %s: %s", ErrExhausted, key, msg)
	case row.State == StateRunning && !row.LeaseUntil.Before(now):
		return fmt.Errorf("%w: %s is running under a live claim until %s", ErrConflict, key, fmtTime(row.LeaseUntil))
	case row.State == StateFailed && row.Exhausted:
		return fmt.Errorf("%w: %s failed %d times and waits for a requeue", ErrConflict, key, row.Attempts)
	case row.State == StateFailed:
		return fmt.Errorf("%w: %s failed; next attempt at %s", ErrConflict, key, fmtTime(row.NextAttemptAt))
	default:
		return fmt.Errorf("%w: %s is %s", ErrConflict, key, row.State)
	}
}

// ClaimManual serves a manual re-export request (E1): it creates the row if
// absent and claims it from any state (completed, exhausted, ...) with
// reason manual and a fresh attempt count. If the row is running under a live
// claim, it sets rerun_requested on it instead and returns ErrBusy: the
// request is recorded and the row is queued again when that claim completes.
func (l *Ledger) ClaimManual(ctx context.Context, key Key) (Claim, error) {
	if err := key.validate(); err != nil {
		return Claim{}, err
	}
	for range 5 {
		now := l.now()
		nowS := fmtTime(now)
		token, err := l.token()
		if err != nil {
			return Claim{}, err
		}
		lease := now.Add(l.cfg.Lease)
		upd := runningUpdate(key, token, nowS, lease).
			Set(name("attempts"), val(1)).
			Set(name("reason"), val(string(ReasonManual))).
			Set(name("account_id"), val(key.AccountID)).
			Set(name("dataset"), val(key.Dataset)).
			Set(name("day"), val(key.Day.String())).
			Set(name("generation"), name("generation").IfNotExists(val(0))).
			Set(name("started_at"), val(nowS)). // the manual claimant runs it itself
			Remove(name("exhausted"))
		old, err := l.update(ctx, rowKey(key), upd, notLive(nowS), types.ReturnValueAllOld)
		if err == nil {
			prev := Row{Key: key}
			if len(old) > 0 {
				if prev, err = rowFromItem(old); err != nil {
					return Claim{}, err
				}
			}
			l.noteDeadClaim(ctx, prev, now)
			return Claim{Key: key, Token: token, Attempt: 1, Generation: prev.nextGeneration(),
				Reason: ReasonManual, ClaimedAt: now, LeaseUntil: lease, Prev: prev}, nil
		}
		if !errors.Is(err, errCondition) {
			return Claim{}, err
		}
		ok, err := l.requestRerun(ctx, key, nowS)
		if err != nil {
			return Claim{}, err
		}
		if ok {
			return Claim{}, fmt.Errorf("%w: %s", ErrBusy, key)
		}
		// The live claim ended between the two writes: try again.
	}
	return Claim{}, fmt.Errorf("%w: %s kept changing under a manual claim", ErrConflict, key)
}

// requestRerun sets rerun_requested on a row running under a live claim.
func (l *Ledger) requestRerun(ctx context.Context, key Key, nowS string) (bool, error) {
	upd := expression.Set(name("rerun_requested"), val(true)).Set(name("updated_at"), val(nowS))
	_, err := l.update(ctx, rowKey(key), upd, live(nowS), types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return false, nil
	}
	return err == nil, err
}

// Start marks a claim taken by the sweeper as started by the exporter that
// received its job, once per claim, and counts the attempt (attempts+1): a
// run uses an attempt when it starts, not when it is claimed. A second
// delivery of the same SQS message, or the message of a claim that was
// reclaimed meanwhile, gets ErrClaimLost, so a duplicated delivery never runs
// the partition twice (L2). The lease is renewed from now (the job may have waited in the queue),
// so a live exporter always holds a live lease. It returns the claim as the
// ledger holds it (attempt, the generation the run will commit, reason).
func (l *Ledger) Start(ctx context.Context, key Key, token string) (Claim, error) {
	if err := key.validate(); err != nil {
		return Claim{}, err
	}
	now := l.now()
	nowS := fmtTime(now)
	lease := now.Add(l.cfg.Lease)
	upd := expression.Set(name("started_at"), val(nowS)).
		Add(name("attempts"), val(1)).
		Set(name("lease_until"), val(fmtTime(lease))).
		Set(name(AttrDueAccount), val(key.AccountID)).
		Set(name(AttrDueKey), val(dueKey(StateRunning, key.Day, key.Dataset, lease))).
		Set(name("updated_at"), val(nowS))
	cond := expression.And(holds(token), name("started_at").AttributeNotExists())
	out, err := l.update(ctx, rowKey(key), upd, cond, types.ReturnValueAllNew)
	if errors.Is(err, errCondition) {
		return Claim{}, fmt.Errorf("%w: start %s: claim already started, finished or taken over", ErrClaimLost, key)
	}
	if err != nil {
		return Claim{}, err
	}
	row, err := rowFromItem(out)
	if err != nil {
		return Claim{}, err
	}
	reason := row.Reason
	if reason == "" {
		reason = ReasonScheduled
	}
	return Claim{Key: key, Token: token, Attempt: row.Attempts, Generation: row.nextGeneration(), Reason: reason,
		ClaimedAt: row.ClaimedAt, LeaseUntil: lease, Prev: row}, nil
}

// NoteCommitted records a generation found committed in the bucket that the
// ledger never heard of (a run wrote `_SUCCESS` and died before Complete).
// A run calls it, under its claim, before it removes that `_SUCCESS`, so
// that if it fails too, the next claim is still numbered above it and no
// generation is ever committed twice; a failed run that found nothing new
// leaves no gap in the numbers.
func (l *Ledger) NoteCommitted(ctx context.Context, key Key, token string, generation int64) error {
	if err := key.validate(); err != nil {
		return err
	}
	upd := expression.Set(name("generation_reserved"), val(generation)).Set(name("updated_at"), val(fmtTime(l.now())))
	cond := expression.And(holds(token), expression.Or(name("generation_reserved").AttributeNotExists(),
		name("generation_reserved").LessThan(val(generation))),
		expression.Or(name("generation").AttributeNotExists(), name("generation").LessThan(val(generation))))
	old, err := l.update(ctx, rowKey(key), upd, cond, types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		row, rerr := rowFromItem(old)
		if rerr == nil && row.ClaimToken == token && row.State == StateRunning {
			return fmt.Errorf("%w: %s: generation %d is not above %d (completed) and %d (noted)", ErrConflict, key, generation, row.Generation, row.GenReserved)
		}
		return fmt.Errorf("%w: note committed generation of %s", ErrClaimLost, key)
	}
	return err
}

// Release gives back a claim whose run has not started (the sweeper could
// not enqueue its job): the row returns to the due state it was claimed from
// (a claim uses no attempt, so the count is unchanged). A reclaimed dead
// claim returns as failed and due now. A claim that has started (its job got
// through after all, and an exporter runs it) or is no longer held is
// ErrClaimLost and the row is left alone: releasing a running row would let
// a second exporter run it (L2). Manual claims start at once, so they are
// never released.
func (l *Ledger) Release(ctx context.Context, c Claim) error {
	now := l.now()
	st, at := StateFailed, now
	switch {
	case c.Reason == ReasonManual || c.Prev.State == StateQueued:
		st = StateQueued
	case c.Prev.State == StatePending:
		st = StatePending
	case c.Prev.State == StateFailed && !c.Prev.NextAttemptAt.IsZero():
		at = c.Prev.NextAttemptAt
	}
	upd := expression.Set(stateName(), val(string(st))).
		Set(name(AttrDueAccount), val(c.AccountID)).
		Set(name(AttrDueKey), val(dueKey(st, c.Day, c.Dataset, at))).
		Set(name("updated_at"), val(fmtTime(now))).
		Remove(name("claim_token")).Remove(name("lease_until"))
	if st == StateFailed {
		upd = upd.Set(name("next_attempt_at"), val(fmtTime(at)))
	}
	switch {
	case c.Reason == ReasonManual:
		upd = upd.Set(name("reason"), val(string(ReasonManual)))
	case c.Prev.Reason != "":
		upd = upd.Set(name("reason"), val(string(c.Prev.Reason)))
	}
	old, err := l.update(ctx, rowKey(c.Key), upd, expression.And(holds(c.Token), name("started_at").AttributeNotExists()), types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		if row, rerr := rowFromItem(old); rerr == nil && row.State == StateRunning && row.ClaimToken == c.Token {
			return fmt.Errorf("%w: release %s: its run started at %s", ErrClaimLost, c.Key, fmtTime(row.StartedAt))
		}
		return fmt.Errorf("%w: release %s", ErrClaimLost, c.Key)
	}
	return err
}

func rerunIs(v bool) expression.ConditionBuilder {
	if v {
		return name("rerun_requested").Equal(val(true))
	}
	return expression.Or(name("rerun_requested").AttributeNotExists(), name("rerun_requested").Equal(val(false)))
}

// Complete records a successful export under the claim token: the
// generation (res.Generation if > 0, else the stored one + 1), the result's
// stats, and the row leaves the due index as completed. If a re-run was
// requested while it ran, the row is queued (reason manual) instead, with the
// stats and generation still recorded. A token that no longer holds the row
// is ErrClaimLost; a res.Generation not above the stored generation is
// ErrConflict (a generation only ever increases and never repeats).
func (l *Ledger) Complete(ctx context.Context, key Key, token string, res Result) (Row, error) {
	if err := key.validate(); err != nil {
		return Row{}, err
	}
	if res.Generation < 0 {
		return Row{}, fmt.Errorf("ledger: complete %s: generation %d", key, res.Generation)
	}
	nowS := fmtTime(l.now())
	upd := func(rerun bool) expression.UpdateBuilder {
		u := expression.Set(name("rows"), val(res.Rows)).
			Set(name("bytes"), val(res.Bytes)).
			Set(name("files"), val(res.Files)).
			Set(name("manifest_key"), val(res.ManifestKey)).
			Set(name("duration_ms"), val(res.Duration.Milliseconds())).
			Set(name("completed_at"), val(nowS)).
			Set(name("updated_at"), val(nowS)).
			Remove(name("claim_token")).Remove(name("lease_until")).Remove(name("next_attempt_at")).
			Remove(name("last_error")).Remove(name("exhausted")).Remove(name("rerun_requested"))
		if res.Generation > 0 {
			u = u.Set(name("generation"), val(res.Generation))
		} else {
			u = u.Add(name("generation"), val(1))
		}
		if rerun {
			return u.Set(stateName(), val(string(StateQueued))).
				Set(name("reason"), val(string(ReasonManual))).
				Set(name("attempts"), val(0)).
				Set(name(AttrDueAccount), val(key.AccountID)).
				Set(name(AttrDueKey), val(dueKey(StateQueued, key.Day, key.Dataset, time.Time{})))
		}
		return u.Set(stateName(), val(string(StateCompleted))).Remove(name(AttrDueAccount)).Remove(name(AttrDueKey))
	}
	cond := func(rerun bool) expression.ConditionBuilder {
		c := expression.And(holds(token), rerunIs(rerun))
		if res.Generation > 0 {
			c = c.And(expression.Or(name("generation").AttributeNotExists(), name("generation").LessThan(val(res.Generation))))
		}
		return c
	}
	rerun := false // the common case; a refusal says which it is
	for range 3 {
		out, err := l.update(ctx, rowKey(key), upd(rerun), cond(rerun), types.ReturnValueAllNew)
		if err == nil {
			l.noteCompleted(ctx, out)
			return rowFromItem(out)
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
		case row.State != StateRunning || row.ClaimToken != token:
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
// failed and exhausted: it leaves the ranges Due reads for the 9# class that
// CountExhausted counts, until requeued. A claim that failed without Start
// having counted its attempt (a caller that skipped Start) counts it here. If a re-run was
// requested while it ran, the row is queued (manual) with a fresh attempt
// count. A token that no longer holds the row is ErrClaimLost.
func (l *Ledger) Fail(ctx context.Context, key Key, token string, cause error) (Row, error) {
	if err := key.validate(); err != nil {
		return Row{}, err
	}
	msg := "unknown error"
	if cause != nil {
		msg = cause.Error()
	}
	if len(msg) > maxErrorLen {
		msg = msg[:maxErrorLen]
	}
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
		if row.State != StateRunning || row.ClaimToken != token {
			return Row{}, fmt.Errorf("%w: fail %s", ErrClaimLost, key)
		}
		attempts := row.Attempts
		if row.StartedAt.IsZero() {
			attempts++ // it ran, so it used an attempt, though Start was not called
		}
		now := l.now()
		nowS := fmtTime(now)
		upd := expression.Set(name("last_error"), val(msg)).
			Set(name("updated_at"), val(nowS)).
			Remove(name("claim_token")).Remove(name("lease_until"))
		switch {
		case row.RerunRequested:
			upd = upd.Set(stateName(), val(string(StateQueued))).
				Set(name("reason"), val(string(ReasonManual))).
				Set(name("attempts"), val(0)).
				Set(name(AttrDueAccount), val(key.AccountID)).
				Set(name(AttrDueKey), val(dueKey(StateQueued, key.Day, key.Dataset, time.Time{}))).
				Remove(name("rerun_requested")).Remove(name("next_attempt_at"))
		case attempts >= l.cfg.MaxAttempts:
			upd = upd.Set(stateName(), val(string(StateFailed))).
				Set(name("exhausted"), val(true)).
				Set(name("attempts"), val(attempts)).
				Set(name(AttrDueAccount), val(key.AccountID)).
				Set(name(AttrDueKey), val(exhaustedDueKey(key.Day, key.Dataset))).
				Remove(name("next_attempt_at"))
		default:
			delay, err := l.Backoff(attempts)
			if err != nil {
				return Row{}, err
			}
			next := now.Add(delay)
			upd = upd.Set(stateName(), val(string(StateFailed))).
				Set(name("attempts"), val(attempts)).
				Set(name("next_attempt_at"), val(fmtTime(next))).
				Set(name(AttrDueAccount), val(key.AccountID)).
				Set(name(AttrDueKey), val(dueKey(StateFailed, key.Day, key.Dataset, next)))
		}
		cond := expression.And(holds(token), name("attempts").Equal(val(row.Attempts)), rerunIs(row.RerunRequested))
		out, err := l.update(ctx, rowKey(key), upd, cond, types.ReturnValueAllNew)
		if errors.Is(err, errCondition) {
			continue // a re-run request landed in between, or the claim was lost: look again
		}
		if err != nil {
			return Row{}, err
		}
		l.noteFailed(ctx, out, attempts)
		return rowFromItem(out)
	}
	return Row{}, fmt.Errorf("%w: fail %s: row kept changing", ErrClaimLost, key)
}

// RequeueResult counts what Requeue did.
type RequeueResult struct {
	Queued         int `json:"queued"`          // rows now queued
	Created        int `json:"created"`         // of which created (no row existed)
	RerunRequested int `json:"rerun_requested"` // rows running under a live claim, marked to run again
}

// Requeue marks every day from `from` through `to` queued with reason (manual
// or backfill), creating missing rows and resetting attempts (this is how an
// exhausted row retries again). A row running under a live claim gets
// rerun_requested instead, so it is queued again when that claim completes.
func (l *Ledger) Requeue(ctx context.Context, accountID, dataset string, from, to civil.Date, reason Reason) (RequeueResult, error) {
	if !reason.Valid() {
		return RequeueResult{}, fmt.Errorf("ledger: reason %q", reason)
	}
	days := civil.Range(from, to)
	if len(days) == 0 {
		return RequeueResult{}, fmt.Errorf("ledger: requeue range %s..%s is empty", from, to)
	}
	var queued, created, rerun atomic.Int64
	err := forEach(ctx, l.cfg.Concurrency, days, func(d civil.Date) error {
		key := Key{accountID, dataset, d}
		if err := key.validate(); err != nil {
			return err
		}
		for range 5 {
			nowS := fmtTime(l.now())
			upd := expression.Set(stateName(), val(string(StateQueued))).
				Set(name("account_id"), val(accountID)).
				Set(name("dataset"), val(dataset)).
				Set(name("day"), val(d.String())).
				Set(name("reason"), val(string(reason))).
				Set(name("attempts"), val(0)).
				Set(name("generation"), name("generation").IfNotExists(val(0))).
				Set(name(AttrDueAccount), val(accountID)).
				Set(name(AttrDueKey), val(dueKey(StateQueued, d, dataset, time.Time{}))).
				Set(name("updated_at"), val(nowS)).
				Remove(name("claim_token")).Remove(name("lease_until")).Remove(name("next_attempt_at")).
				Remove(name("exhausted")).Remove(name("rerun_requested")).Remove(name("started_at"))
			old, err := l.update(ctx, rowKey(key), upd, notLive(nowS), types.ReturnValueAllOld)
			if err == nil {
				queued.Add(1)
				if len(old) == 0 {
					created.Add(1)
				}
				return nil
			}
			if !errors.Is(err, errCondition) {
				return err
			}
			ok, err := l.requestRerun(ctx, key, nowS)
			if err != nil {
				return err
			}
			if ok {
				rerun.Add(1)
				return nil
			}
		}
		return fmt.Errorf("%w: requeue %s: row kept changing", ErrConflict, key)
	})
	return RequeueResult{Queued: int(queued.Load()), Created: int(created.Load()), RerunRequested: int(rerun.Load())}, err
}

// Get returns one row (strongly consistent), or ErrNotFound.
func (l *Ledger) Get(ctx context.Context, key Key) (Row, error) {
	if err := key.validate(); err != nil {
		return Row{}, err
	}
	item, err := l.getItem(ctx, rowKey(key))
	if errors.Is(err, ErrNotFound) {
		return Row{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return Row{}, err
	}
	return rowFromItem(item)
}

// List returns the rows of (account, dataset) from `from` through `to`, oldest
// first (a Query on the partition key, for status).
func (l *Ledger) List(ctx context.Context, accountID, dataset string, from, to civil.Date) ([]Row, error) {
	kc := expression.Key(AttrPK).Equal(val(partitionPK(accountID, dataset))).
		And(expression.Key(AttrSK).Between(val(from.String()), val(to.String())))
	var rows []Row
	_, err := l.queryPages(ctx, "list "+accountID+"/"+dataset, "", kc, "", 0, appendRows(&rows))
	return rows, err
}
