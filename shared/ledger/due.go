package ledger

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DueWork is an account's due work as one sweep reads it.
type DueWork struct {
	// Rows are at most the limit, in order: scheduled (the newest closed day
	// of a live account), then queued, pending and failed-and-due by
	// day, dead claims; oldest day first within each class.
	Rows []Row
	// More reports due rows beyond Rows, or classes left unread because the
	// limit was reached: the account has work for the next sweep.
	More bool
	// NextAt is the earliest time a failed row read becomes due or a live
	// claim read ends its lease (LeaseEnd: when Claim takes it); zero if
	// none (or More).
	NextAt time.Time
	// Malformed names each index entry that could not be read. It is
	// skipped, not the rows around it.
	Malformed []error
	Stats     ReadStats
}

// DueWork reads up to limit due rows of accountID from the sparse due index
// with key conditions only: one query per class, each asking one row
// more than it may return (so More is exact within a class), the failed and
// running classes from their start (so the first row not yet due gives
// NextAt). It stops at the class that fills the limit.
func (l Partitions) DueWork(ctx context.Context, accountID string, limit int) (DueWork, error) {
	var w DueWork
	if limit <= 0 {
		w.More = true
		return w, nil
	}
	now := l.now()
	acct := expression.Key(AttrDueAccount).Equal(val(accountID))
	dk := expression.Key(AttrDueKey)
	q := func(prefix string, max int) ([]Row, error) {
		var rows []Row
		st, err := l.queryPages(ctx, "query due index", IndexDue, acct.And(dk.BeginsWith(prefix)), "", max,
			func(out *dynamodb.QueryOutput) error {
				for _, it := range out.Items {
					r, err := rowFromItem(it)
					if err != nil {
						w.Malformed = append(w.Malformed, err)
						continue
					}
					rows = append(rows, r)
				}
				return nil
			})
		w.Stats = w.Stats.Add(st)
		return rows, err
	}
	// take appends rows up to the limit and reports whether it is reached.
	take := func(rows []Row) bool {
		rem := limit - len(w.Rows)
		if len(rows) > rem {
			w.Rows, w.More = append(w.Rows, rows[:rem]...), true
			return true
		}
		w.Rows = append(w.Rows, rows...)
		if len(w.Rows) == limit {
			w.More = true // the classes not read may hold more
			return true
		}
		return false
	}
	// dueUntil splits a time-stamped class at now: due rows first, and the
	// first one not due yet.
	dueUntil := func(rows []Row, at func(Row) time.Time) ([]Row, time.Time) {
		for i, r := range rows {
			if at(r).After(now) {
				return rows[:i], at(r)
			}
		}
		return rows, time.Time{}
	}
	next := func(t time.Time) {
		if !t.IsZero() && (w.NextAt.IsZero() || t.Before(w.NextAt)) {
			w.NextAt = t
		}
	}
	var err error
	done := func(e error, full bool) bool {
		err = e
		return e != nil || full
	}

	sched, e := q(dueScheduled, limit+1)
	if done(e, take(sched)) {
		return w.finish(err)
	}
	queued, e := q(dueQueued, limit-len(w.Rows)+1)
	if done(e, take(queued)) {
		return w.finish(err)
	}
	rem := limit - len(w.Rows)
	pending, e := q(duePending, rem+1)
	if done(e, false) {
		return w.finish(err)
	}
	failed, e := q(dueFailed, rem+1)
	if done(e, false) {
		return w.finish(err)
	}
	failedDue, failedNext := dueUntil(failed, func(r Row) time.Time { return r.NextAttemptAt })
	mid := append(pending, failedDue...)
	slices.SortStableFunc(mid, func(a, b Row) int {
		return cmp.Or(a.Day.Compare(b.Day), cmp.Compare(a.Dataset, b.Dataset))
	})
	if take(mid) {
		return w.finish(nil)
	}
	next(failedNext)
	running, e := q(dueRunning, limit-len(w.Rows)+1)
	if e != nil {
		return w.finish(e)
	}
	dead, leaseEnd := dueUntil(running, func(r Row) time.Time { return LeaseEnd(r.LeaseUntil) })
	if take(dead) {
		return w.finish(nil)
	}
	next(leaseEnd)
	return w.finish(nil)
}

func (w DueWork) finish(err error) (DueWork, error) {
	if w.More {
		w.NextAt = time.Time{}
	}
	return w, err
}

// Due returns up to limit rows of accountID with work to do, in the order
// DueWork reads them; an index entry that cannot be read is skipped and
// named in the error, with the other rows returned.
func (l Partitions) Due(ctx context.Context, accountID string, limit int) ([]Row, ReadStats, error) {
	w, err := l.DueWork(ctx, accountID, limit)
	return w.Rows, w.Stats, errors.Join(append(w.Malformed, err)...)
}

// CountStopped counts the account's partitions that stopped retrying
// (failed after MaxAttempts, waiting for a requeue): a COUNT Query on the due
// index over begins_with(due_key, "9#"). It reads only stopped rows,
// which are few: each one is an alarm. The sweeper reads the fleet's
// level from StoppedByAccount instead, without a query per account.
func (l Schedule) CountStopped(ctx context.Context, accountID string) (int, ReadStats, error) {
	kc := expression.Key(AttrDueAccount).Equal(val(accountID)).
		And(expression.Key(AttrDueKey).BeginsWith(dueStopped))
	total := 0
	stats, err := l.queryPages(ctx, "count stopped of "+accountID, IndexDue, kc, types.SelectCount, 0,
		func(out *dynamodb.QueryOutput) error { total += int(out.Count); return nil })
	return total, stats, err
}
