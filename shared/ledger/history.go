package ledger

// Attempt history: one small item per attempt outcome, so an operator can
// see every run of a partition (`daybook history`), not only the last one
// the partition row keeps.
//
//	history item:  pk=H#<account>#<dataset>#<day>   sk=<started_at>#<attempt, 3 digits>
//	               account_id, dataset, day, attempt, outcome, reason, claimed_at,
//	               started_at, finished_at, generation, rows, bytes, files,
//	               duration_ms, manifest_key, error, expires_at (TTL)
//
// Outcomes: completed (Complete), failed (Fail with attempts left, or a
// failure while a re-run was requested), stopped (Fail on the last attempt),
// lease_expired (a started claim whose lease ran out: taken over by a new
// claim, or retired as stopped by Claim).
//
// The item is written right after the transition that ends the attempt, not
// in the same transaction. The transitions are single conditional
// UpdateItem calls that return the row they wrote (ALL_NEW or ALL_OLD), and
// the history item is built from that row; a TransactWriteItems cannot
// return the written item, would double the write cost of every transition,
// and would tie history into the claim protocol. The partition row stays the
// source of truth: the history is an audit trail, written best effort. A
// failed history write never fails the transition that already happened
// (its caller acts on that outcome); it is reported to Config.Report
// (the sweeper and the exporter log and count it: HistoryWriteFailures). The
// key is the attempt's start time and number, so writing the same outcome
// twice stores one item. Items expire (DynamoDB TTL on expires_at) after
// HistoryRetention.
//
// History items carry no due_account/due_key, so they are never in the due
// index, and their pk prefix (H#) never matches a partition, watermark or
// account query.

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/partition"
)

// HistoryRetention is how long an attempt's history item is kept.
const HistoryRetention = 400 * 24 * time.Hour

// Outcome is how an attempt ended.
type Outcome string

// Outcomes.
const (
	OutcomeCompleted    Outcome = "completed"
	OutcomeFailed       Outcome = "failed"
	OutcomeStopped      Outcome = "stopped"
	OutcomeLeaseExpired Outcome = "lease_expired"
)

// Attempt is one attempt's outcome as recorded in the history.
type Attempt struct {
	partition.Key
	Attempt     int
	Outcome     Outcome
	Reason      partition.Reason
	ClaimedAt   time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	Generation  int64
	Rows        int64
	Bytes       int64
	Files       int
	DurationMS  int64
	ManifestKey string
	Error       string
	// RequestedBy is who asked for the attempt's manual action, if any.
	RequestedBy string
}

func historyPK(k partition.Key) string {
	return pkHistoryPrefix + k.AccountID + "#" + k.Dataset + "#" + k.Day.String()
}

// noteCompleted records the outcome of the attempt Complete just ended;
// item is the row Complete wrote (ALL_NEW).
func (l *kernel) noteCompleted(ctx context.Context, item map[string]types.AttributeValue) {
	row, err := rowFromItem(item)
	if err != nil {
		l.cfg.Report.HistoryFailed(ctx, row.Key, fmt.Errorf("read back the completed row: %w", err))
		return
	}
	l.putAttempt(ctx, Attempt{
		Key: row.Key, Attempt: row.Attempts, Outcome: OutcomeCompleted, Reason: row.Reason,
		ClaimedAt: row.ClaimedAt, StartedAt: row.StartedAt, FinishedAt: row.CompletedAt,
		Generation: row.Generation, Rows: row.Rows, Bytes: row.Bytes, Files: row.Files,
		DurationMS: row.DurationMS, ManifestKey: row.ManifestKey, RequestedBy: row.RequestedBy,
	})
}

// noteFailed records the outcome of the attempt Fail just ended; item is the
// row Fail wrote (ALL_NEW) and attempt the attempt's number (Fail resets the
// row's count when a re-run was requested).
func (l *kernel) noteFailed(ctx context.Context, item map[string]types.AttributeValue, attempt int) {
	row, err := rowFromItem(item)
	if err != nil {
		l.cfg.Report.HistoryFailed(ctx, row.Key, fmt.Errorf("read back the failed row: %w", err))
		return
	}
	outcome := OutcomeFailed
	if row.State == StateFailed && row.Stopped {
		outcome = OutcomeStopped
	}
	a := Attempt{
		Key: row.Key, Attempt: attempt, Outcome: outcome, Reason: row.Reason,
		ClaimedAt: row.ClaimedAt, StartedAt: row.StartedAt, FinishedAt: row.UpdatedAt, Error: row.LastError,
		RequestedBy: row.RequestedBy,
	}
	l.putAttempt(ctx, a)
}

// noteDeadClaim records a started run whose claim lease expired, found by a
// transition that took the row over (prev is the row before it). Rows that
// were not a started run are ignored, so callers need no check.
func (l *kernel) noteDeadClaim(ctx context.Context, prev Row, now time.Time) {
	if prev.State != StateRunning || prev.StartedAt.IsZero() || !prev.LeaseUntil.Before(now) {
		return
	}
	l.putAttempt(ctx, Attempt{
		Key: prev.Key, Attempt: prev.Attempts, Outcome: OutcomeLeaseExpired, Reason: prev.Reason,
		ClaimedAt: prev.ClaimedAt, StartedAt: prev.StartedAt, FinishedAt: prev.LeaseUntil, RequestedBy: prev.RequestedBy,
		Error: fmt.Sprintf("the run did not finish: its claim lease expired at %s (the exporter timed out or crashed)", fmtTime(prev.LeaseUntil)),
	})
}

func (l *kernel) putAttempt(ctx context.Context, a Attempt) {
	if err := validateKey(a.Key); err != nil {
		l.cfg.Report.HistoryFailed(ctx, a.Key, err)
		return
	}
	started := a.StartedAt
	if started.IsZero() {
		started = a.ClaimedAt
	}
	if started.IsZero() {
		started = a.FinishedAt
	}
	finished := a.FinishedAt
	if finished.IsZero() {
		finished = l.now()
	}
	rec := attemptRecord{
		PK: historyPK(a.Key), SK: attemptSK(started, a.Attempt, a.Generation),
		AccountID: a.AccountID, Dataset: a.Dataset, Day: a.Day.String(), Attempt: a.Attempt,
		Outcome: string(a.Outcome), Reason: string(a.Reason), FinishedAt: fmtTime(finished),
		Generation: a.Generation, Rows: a.Rows, Bytes: a.Bytes, Files: a.Files, DurationMS: a.DurationMS,
		ManifestKey: a.ManifestKey, Error: a.Error, RequestedBy: a.RequestedBy, ExpiresAt: finished.Add(HistoryRetention).Unix(),
	}
	if !a.ClaimedAt.IsZero() {
		rec.ClaimedAt = fmtTime(a.ClaimedAt)
	}
	if !a.StartedAt.IsZero() {
		rec.StartedAt = fmtTime(a.StartedAt)
	}
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		l.cfg.Report.HistoryFailed(ctx, a.Key, fmt.Errorf("encode the history item: %w", err))
		return
	}
	// The transition is done: its caller's context may be about to end (the
	// exporter's deadline reserve), so the write gets its own short budget.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.cfg.Table), Item: item}); err != nil {
		l.cfg.Report.HistoryFailed(ctx, a.Key, fmt.Errorf("write the history item: %w", err))
	}
}

// History returns the recorded attempts of one partition, oldest first.
func (l Partitions) History(ctx context.Context, key partition.Key) ([]Attempt, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	var out []Attempt
	kc := expression.Key(AttrPK).Equal(val(historyPK(key)))
	_, err := l.queryPages(ctx, "history of "+key.String(), "", kc, "", 0, func(page *dynamodb.QueryOutput) error {
		for _, it := range page.Items {
			a, err := attemptFromItem(key, it)
			if err != nil {
				return err
			}
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

// attemptSK orders a partition's attempts by start time, then number, then
// generation: two runs started in the same second with the same attempt
// number (a manual re-export request whose message SQS sent twice: each claim starts at
// attempt 1) are two items, while the same outcome written twice is one.
func attemptSK(started time.Time, attempt int, generation int64) string {
	return fmtTime(started) + "#" + fmt.Sprintf("%03d#%010d", attempt, generation)
}
