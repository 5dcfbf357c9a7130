package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/partition"
)

// stopTransition is a transition that stops the partition (Fail on the
// last attempt, Claim retiring a dead claim on its last attempt). A
// stopped row's fleet entry is its stopped one (stopped.go), so its
// account's stale mark is a separate put: with Config.StoppedEvent, one
// transaction of the row's conditional update, the mark and the
// conditional put of st's outbox event, so the event and the mark are
// recorded if and only if the partition stopped; without it, the mark,
// then the update (a crash between leaves a mark whose refresh finds
// nothing new). It returns the row as written (read back after a
// transaction, which cannot return it), or errCondition when the row's
// condition failed. writeID is the write_id upd sets, for the caller to
// tell a transaction refused by its own landing ("": none; an update sets
// its own).
func (l *kernel) stopTransition(ctx context.Context, key partition.Key, upd expression.UpdateBuilder, cond expression.ConditionBuilder, writeID string, st partition.Stop) (map[string]types.AttributeValue, error) {
	if l.cfg.StoppedEvent == nil {
		if err := l.markStale(ctx, key.AccountID); err != nil {
			return nil, err
		}
		if writeID == "" {
			return l.update(ctx, rowKey(key), upd, cond, types.ReturnValueAllNew)
		}
		return l.updateOwn(ctx, rowKey(key), upd, cond, types.ReturnValueAllNew, writeID)
	}
	ev, err := l.cfg.StoppedEvent(st)
	if err != nil {
		return nil, fmt.Errorf("ledger: stopped event of %s: %w", key, err)
	}
	put, err := l.outboxPut(ev)
	if err != nil {
		return nil, err
	}
	rowUpd, err := l.updateItem(rowKey(key), upd, cond)
	if err != nil {
		return nil, err
	}
	items := []types.TransactWriteItem{rowUpd, {Put: put}, {Put: l.staleMark(key.AccountID)}}
	_, err = l.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		if len(tce.CancellationReasons) > 0 && aws.ToString(tce.CancellationReasons[0].Code) == "ConditionalCheckFailed" {
			return nil, errCondition
		}
		return nil, fmt.Errorf("ledger: stop %s with its event %s: %w", key, ev.ID, err)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: stop %s with its event %s: %w", key, ev.ID, err)
	}
	return l.getItem(ctx, rowKey(key))
}
