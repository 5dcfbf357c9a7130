package ledger

// A re-export request on its way. An operator's re-export (the
// console's button, `daybook reexport`) is a manual request on the jobs
// queue, which the exporter claims when it gets there (ClaimManual). Until
// then the day's row would say what it said before (completed, failed), as
// if nothing had been asked; so the sender notes the request on the row
// first (NoteReexportRequested: reexport_requested_at and _by), and the row
// is in the requested phase (PhaseOf) until a transition takes it:
//
//	NoteReexportRequested  an existing row, not under a live claim -> reexport_requested_at, _by set
//	                       a live running claim, or no row          -> nothing (the claim is not disturbed;
//	                                                                   the exporter records a re-run when the request arrives)
//	ClaimManual, the re-run it records (ErrBusy), Requeue           -> both removed
//	ClearReexportRequest   the note, when its request was never sent, or the exporter refused it -> both removed
//
// The note also names the request (ReexportNote.ID): its messages carry the
// id, and ClaimManual or its re-run adds it to the row's served requests
// (reexports_served), so that a message of the request SQS sends again,
// however late, is served once (ErrServed; manual.go).
//
// The note is written before the request is sent, so the exporter's claim,
// which removes it, always comes after it. A request that is never claimed
// (its queue purged) leaves the note until the day is requeued or
// re-exported again. The note changes no state and no due key: the sweep
// schedules the row as before.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// ReexportNote is what NoteReexportRequested wrote.
type ReexportNote struct {
	// At is the time noted on the rows (the ledger's clock, to the second);
	// By who asks.
	At time.Time
	By string
	// ID names the request: its messages carry it (request_id), so that
	// each day is served once however often SQS sends them (ClaimManual).
	ID string
	// Noted are the days whose rows now carry the note; the others had no
	// row or a live claim.
	Noted []civil.Date
}

// NoteReexportRequested notes on the rows of (account, dataset) for days
// that a re-export request is about to be sent for them, by by (who asks;
// "" names nobody), so that they show as requested until the exporter
// claims them, and returns the request's id (ReexportNote.ID) for its
// messages. A row under a live claim, or a day without a row, is left as
// it is. The account's summary is marked stale first, as Requeue does. On
// an error the note returned holds the days noted before it.
func (l Partitions) NoteReexportRequested(ctx context.Context, accountID, dataset string, days []civil.Date, by string) (ReexportNote, error) {
	now := l.now()
	id, err := l.token()
	if err != nil {
		return ReexportNote{}, err
	}
	note := ReexportNote{At: now.UTC().Truncate(time.Second), By: by, ID: id}
	for _, d := range days {
		if err := validateKey(partition.Key{AccountID: accountID, Dataset: dataset, Day: d}); err != nil {
			return note, err
		}
	}
	if len(days) == 0 {
		return note, nil
	}
	if err := l.markStale(ctx, accountID); err != nil {
		return note, err
	}
	nowS := fmtTime(now)
	noted := make([]bool, len(days)) // each goroutine writes its own element
	idx := make([]int, len(days))
	for i := range idx {
		idx[i] = i
	}
	err = forEach(ctx, l.cfg.Concurrency, idx, func(i int) error {
		key := partition.Key{AccountID: accountID, Dataset: dataset, Day: days[i]}
		upd := expression.Set(name(attrReexportAt), val(nowS)).Set(name(attrUpdatedAt), val(nowS))
		if note.By != "" {
			upd = upd.Set(name(attrReexportBy), val(note.By))
		} else {
			upd = upd.Remove(name(attrReexportBy))
		}
		cond := expression.And(name(AttrPK).AttributeExists(), notLive(nowS))
		_, err := l.update(ctx, rowKey(key), upd, cond, types.ReturnValueNone)
		switch {
		case errors.Is(err, errCondition):
			return nil
		case err != nil:
			return fmt.Errorf("ledger: note the re-export request of %s: %w", key, err)
		}
		noted[i] = true
		return nil
	})
	for i, ok := range noted {
		if ok {
			note.Noted = append(note.Noted, days[i])
		}
	}
	return note, err
}

// ClearReexportRequest removes the note of a re-export request from the
// row of key: the request note names (at and by, as NoteReexportRequested
// returned them) when it was never sent, or, with a zero note, whatever
// request is noted, when the exporter refused one for the day. A row
// without that note is left as it is.
func (l Partitions) ClearReexportRequest(ctx context.Context, key partition.Key, note ReexportNote) error {
	if err := validateKey(key); err != nil {
		return err
	}
	cond := name(attrReexportAt).AttributeExists()
	if !note.At.IsZero() {
		cond = name(attrReexportAt).Equal(val(fmtTime(note.At)))
		if note.By != "" {
			cond = cond.And(name(attrReexportBy).Equal(val(note.By)))
		} else {
			cond = cond.And(name(attrReexportBy).AttributeNotExists())
		}
	}
	_, err := l.update(ctx, rowKey(key), clearReexport(expression.Set(name(attrUpdatedAt), val(fmtTime(l.now())))), cond, types.ReturnValueNone)
	if errors.Is(err, errCondition) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ledger: clear the re-export request of %s: %w", key, err)
	}
	return nil
}

// clearReexport removes a re-export request's note in a transition that
// takes the request (ClaimManual, the re-run it records, Requeue).
func clearReexport(upd expression.UpdateBuilder) expression.UpdateBuilder {
	return upd.Remove(name(attrReexportAt)).Remove(name(attrReexportBy))
}
