package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Who asked for a manual action (a re-export, a retry, and the re-run they
// may request) is a parameter of the transitions that serve one
// (ClaimManual, Requeue): they store it on the row as requested_by, every
// claim of the row carries it (Claim.RequestedBy), and the attempt's
// history records it. "" names nobody and clears an earlier requester, as
// a scheduled materialization or a restatement does.

// ManualRequest is a manual re-export request as ClaimManual serves it:
// who asked ("" names nobody) and the request's id (ReexportNote.ID, carried
// by its message), or "" for a message written by hand.
type ManualRequest struct {
	By string
	ID string
}

// ClaimManual serves a manual re-export request: it creates the row if
// absent and claims it from any state (completed, stopped, ...) with
// reason manual and a fresh attempt count. If the row is running under a
// live claim, it sets rerun_requested on it instead and returns ErrBusy:
// the request is recorded and the row is queued again when that claim
// completes.
//
// A request with an id is served once per day: the claim or the re-run
// adds the id to the row's served requests (reexports_served, the last
// servedCap of them), conditional on the row not holding it already, and a
// request whose id the row holds is ErrServed (a *ServedError with the row)
// and changes nothing. SQS
// sends a message at least once, so a request's message can arrive twice,
// late, after other requests took the day, and its range can be fanned out
// twice.
func (l Partitions) ClaimManual(ctx context.Context, key partition.Key, req ManualRequest) (Claim, error) {
	if err := validateKey(key); err != nil {
		return Claim{}, err
	}
	restart := false // the row's served requests are full: they start again with this one
	for range 5 {
		now := l.now()
		nowS := fmtTime(now)
		token, err := l.token()
		if err != nil {
			return Claim{}, err
		}
		lease := now.Add(l.cfg.Lease)
		upd := runningUpdate(key, token, nowS, lease).
			Set(name(attrAttempts), val(1)).
			Set(name(attrReason), val(string(partition.ReasonManual))).
			Set(name(attrAccountID), val(key.AccountID)).
			Set(name(attrDataset), val(key.Dataset)).
			Set(name(attrDay), val(key.Day.String())).
			Set(name(attrGeneration), name(attrGeneration).IfNotExists(val(0))).
			Set(name(attrStartedAt), val(nowS)). // the manual claimant runs it itself
			Remove(name(attrStopped))
		upd = clearReexport(upd)          // the request noted when it was sent is taken (reexport.go)
		upd = setRequestedBy(upd, req.By) // the transition's stale mark replaces a stopped row's entry (stopped.go)
		upd, cond := req.serve(upd, notLive(nowS), restart)
		old, err := l.transition(ctx, key, upd, cond, types.ReturnValueAllOld)
		own := errors.Is(err, errLanded) // the claim landed and its answer was lost (kernel.update)
		if err == nil || own {
			prev := Row{Key: key}
			switch {
			case own:
				if prev, err = landedPrev("manual claim", key, old); err != nil {
					return Claim{}, err
				}
			case len(old) > 0:
				if prev, err = readBack("manual claim", key, old); err != nil {
					return Claim{}, err
				}
			}
			// If the manual run dies, a sweep takes the dead claim over at its
			// lease end. The claim holds and runs now either way, so a failed
			// wake only delays that takeover to the account's next wake (its
			// next day close at the latest); it does not fail the claim.
			_ = l.schedule().Wake(ctx, key.AccountID, lease)
			if !own {
				l.noteDeadClaim(ctx, prev, now)
			}
			return Claim{Key: key, Token: token, Attempt: 1, Generation: prev.nextGeneration(),
				Reason: partition.ReasonManual, RequestedBy: req.By, ClaimedAt: now, LeaseUntil: lease, Prev: prev}, nil
		}
		if !errors.Is(err, errCondition) {
			return Claim{}, err
		}
		if req.servedBy(old) {
			row, err := readBack("manual claim", key, old)
			if err != nil {
				return Claim{}, err
			}
			return Claim{}, &ServedError{RequestID: req.ID, Row: row}
		}
		restart = restart || req.full(old)
		ok, err := l.requestRerun(ctx, key, nowS, req, restart)
		if err != nil {
			return Claim{}, err
		}
		if ok {
			return Claim{}, fmt.Errorf("%w: %s", ErrBusy, key)
		}
		// The live claim ended between the two writes, or the request was
		// served meanwhile: try again (the claim's refusal says which).
	}
	return Claim{}, fmt.Errorf("%w: %s kept changing under a manual claim", ErrConflict, key)
}

// servedCap bounds the ids a row keeps of the requests it served: a full
// set starts again with the next request (restart), so a copy of a request
// that arrives after servedCap other requests took the day runs once more.
const servedCap = 32

// serve adds the request's id to the row's served requests in a transition
// that takes it, conditional on the row not holding it yet; restart
// replaces a full set with the id alone (full). A request without an id
// changes nothing.
func (r ManualRequest) serve(upd expression.UpdateBuilder, cond expression.ConditionBuilder, restart bool) (expression.UpdateBuilder, expression.ConditionBuilder) {
	if r.ID == "" {
		return upd, cond
	}
	ids := name(attrServedIDs)
	notServed := expression.And(expression.Not(expression.Contains(ids, r.ID)),
		// the one id a row kept before the set (reexport_served)
		expression.Or(name(attrReexportServed).AttributeNotExists(), name(attrReexportServed).NotEqual(val(r.ID))))
	id := &types.AttributeValueMemberSS{Value: []string{r.ID}}
	if restart {
		return upd.Set(ids, val(id)), expression.And(cond, notServed)
	}
	roomy := expression.Or(ids.AttributeNotExists(), ids.Size().LessThan(val(servedCap)))
	return upd.Add(ids, val(id)), expression.And(cond, notServed, roomy)
}

// servedBy reports whether the row item (as a refused write returned it)
// holds the request's id: a claim or re-run took the request before.
func (r ManualRequest) servedBy(item map[string]types.AttributeValue) bool {
	if r.ID == "" {
		return false
	}
	if v, ok := item[attrReexportServed].(*types.AttributeValueMemberS); ok && v.Value == r.ID {
		return true
	}
	ids, _ := item[attrServedIDs].(*types.AttributeValueMemberSS)
	return ids != nil && slices.Contains(ids.Value, r.ID)
}

// full reports whether the row item's served requests are at servedCap,
// so that a request with an id is refused until it restarts them.
func (r ManualRequest) full(item map[string]types.AttributeValue) bool {
	ids, _ := item[attrServedIDs].(*types.AttributeValueMemberSS)
	return r.ID != "" && ids != nil && len(ids.Value) >= servedCap
}

// requestRerun sets rerun_requested on a row running under a live claim,
// and its requester when req names one, taking the request (serve, which
// restart passes on).
func (l *kernel) requestRerun(ctx context.Context, key partition.Key, nowS string, req ManualRequest, restart bool) (bool, error) {
	upd := clearReexport(expression.Set(name(attrRerunRequested), val(true)).Set(name(attrUpdatedAt), val(nowS)))
	if req.By != "" {
		upd = upd.Set(name(attrRequestedBy), val(req.By))
	}
	upd, cond := req.serve(upd, live(nowS), restart)
	_, err := l.update(ctx, rowKey(key), upd, cond, types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return false, nil
	}
	return err == nil, err
}

// RequeueResult counts what Requeue did.
type RequeueResult struct {
	Queued         int `json:"queued"`          // rows now queued
	Created        int `json:"created"`         // of which created (no row existed)
	RerunRequested int `json:"rerun_requested"` // rows running under a live claim, marked to run again
}

// RequeueRange is what Requeue makes due again: the days From through To
// of one dataset of one account, the reason the attempts record (manual,
// backfill, reseed) and who asked ("" names nobody).
type RequeueRange struct {
	AccountID, Dataset string
	From, To           civil.Date
	Reason             partition.Reason
	RequestedBy        string
}

// Requeue marks every day of r queued with r's reason and requester,
// creating missing rows and resetting attempts (this is how a stopped row
// retries again). A row running under a live claim gets
// rerun_requested instead, so it is queued again when that claim completes.
func (l Partitions) Requeue(ctx context.Context, r RequeueRange) (RequeueResult, error) {
	accountID, dataset, from, to, reason, requestedBy := r.AccountID, r.Dataset, r.From, r.To, r.Reason, r.RequestedBy
	if !reason.Valid() {
		return RequeueResult{}, fmt.Errorf("ledger: reason %q", reason)
	}
	days := civil.Range(from, to)
	if len(days) == 0 {
		return RequeueResult{}, fmt.Errorf("ledger: requeue range %s..%s is empty", from, to)
	}
	if err := l.markStale(ctx, accountID); err != nil {
		return RequeueResult{}, err
	}
	var queued, created, rerun atomic.Int64
	err := forEach(ctx, l.cfg.Concurrency, days, func(d civil.Date) error {
		key := partition.Key{AccountID: accountID, Dataset: dataset, Day: d}
		if err := validateKey(key); err != nil {
			return err
		}
		for range 5 {
			nowS := fmtTime(l.now())
			upd := expression.Set(name(attrState), val(string(StateQueued))).
				Set(name(attrAccountID), val(accountID)).
				Set(name(attrDataset), val(dataset)).
				Set(name(attrDay), val(d.String())).
				Set(name(attrReason), val(string(reason))).
				Set(name(attrAttempts), val(0)).
				Set(name(attrGeneration), name(attrGeneration).IfNotExists(val(0))).
				Set(name(AttrDueAccount), val(accountID)).
				Set(name(AttrDueKey), val(dueKey(StateQueued, d, dataset, time.Time{}))).
				Set(name(attrUpdatedAt), val(nowS)).
				Remove(name(attrClaimToken)).Remove(name(attrLeaseUntil)).Remove(name(attrNextAttemptAt)).
				Remove(name(attrStopped)).Remove(name(attrRerunRequested)).Remove(name(attrStartedAt))
			upd = clearReexport(upd)
			upd = setRequestedBy(upd, requestedBy)
			upd = unmarkStopped(upd)
			old, err := l.update(ctx, rowKey(key), upd, notLive(nowS), types.ReturnValueAllOld)
			if errors.Is(err, errLanded) {
				// Its answer was lost: queued, whether it created the row
				// is not known (counted as not).
				queued.Add(1)
				return nil
			}
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
			ok, err := l.requestRerun(ctx, key, nowS, ManualRequest{By: requestedBy}, false)
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
	res := RequeueResult{Queued: int(queued.Load()), Created: int(created.Load()), RerunRequested: int(rerun.Load())}
	if res.Queued > 0 {
		// Once for the range, after its rows: they are due now.
		l.wakeAfter(ctx, accountID, l.now())
	}
	return res, err
}

// setRequestedBy records who asks on a manual transition's update, or
// clears an earlier requester when nobody is named.
func setRequestedBy(upd expression.UpdateBuilder, by string) expression.UpdateBuilder {
	if by == "" {
		return upd.Remove(name(attrRequestedBy))
	}
	return upd.Set(name(attrRequestedBy), val(by))
}
