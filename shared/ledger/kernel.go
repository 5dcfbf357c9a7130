package ledger

// The kernel: what every part of the ledger writes and reads through. Keys
// (tableKey, rowKey), one conditional UpdateItem (update) or the same as a
// transaction's item (updateItem), a partition row's transition (the same
// write with the row's stale mark), one consistent GetItem, key-condition
// queries page by page (queryPages), the clock and claim tokens. decode.go
// turns stored items back into values, naming what does not parse;
// errors.go holds the named errors; lifecycle.go the run states partitions
// and slices share.

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/partition"
)

// kernel is what every aggregate holds: the client, the configuration and
// the lock on the random source.
type kernel struct {
	db  DynamoAPI
	cfg Config
	mu  sync.Mutex // guards cfg.Rand
}

func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// update runs one conditional UpdateItem and returns the attributes asked
// for by rv. A failed condition is errCondition, returned with the item as it
// was (ReturnValuesOnConditionCheckFailure ALL_OLD; empty if there is no
// item), so a caller can say why without a second read.
//
// A write whose answer was lost took effect all the same, and the SDK
// sends it again: the copy's condition is then refused by the write's own
// landing. So a conditional update writes a fresh write_id, and a refusal
// whose item holds it is the write's success: the item as it stands for
// ALL_NEW and NONE, and errLanded with it for ALL_OLD, whose old item is
// gone.
func (l *kernel) update(ctx context.Context, key map[string]types.AttributeValue, upd expression.UpdateBuilder, cond expression.ConditionBuilder, rv types.ReturnValue) (map[string]types.AttributeValue, error) {
	var id string
	if cond.IsSet() {
		var err error
		if id, err = l.token(); err != nil {
			return nil, err
		}
		upd = upd.Set(name(attrWriteID), val(id))
	}
	return l.updateOwn(ctx, key, upd, cond, rv, id)
}

// ownWrite reports whether item (as a refused write found it, or as read
// after it) holds id, the fresh write_id the write set: the write landed.
func ownWrite(item map[string]types.AttributeValue, id string) bool {
	v, ok := item[attrWriteID].(*types.AttributeValueMemberS)
	return ok && v.Value == id
}

// updateOwn is update whose write_id, if any, the caller set in upd: id is
// that value ("" for none, and no landing is told from a refusal).
func (l *kernel) updateOwn(ctx context.Context, key map[string]types.AttributeValue, upd expression.UpdateBuilder, cond expression.ConditionBuilder, rv types.ReturnValue, id string) (map[string]types.AttributeValue, error) {
	b := expression.NewBuilder().WithUpdate(upd)
	if cond.IsSet() {
		b = b.WithCondition(cond)
	}
	expr, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("ledger: build expression: %w", err)
	}
	out, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.cfg.Table),
		Key:                       key,
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ReturnValues:              rv,

		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		switch {
		case errors.As(err, &ccf) && id != "" && ownWrite(ccf.Item, id) && rv == types.ReturnValueAllOld:
			return ccf.Item, errLanded
		case errors.As(err, &ccf) && id != "" && ownWrite(ccf.Item, id):
			return ccf.Item, nil
		case errors.As(err, &ccf):
			return ccf.Item, errCondition
		}
		return nil, fmt.Errorf("ledger: update %s/%s: %w", avString(key[AttrPK]), avString(key[AttrSK]), err)
	}
	return out.Attributes, nil
}

func avString(v types.AttributeValue) string {
	if sv, ok := v.(*types.AttributeValueMemberS); ok {
		return sv.Value
	}
	return ""
}

func (l *kernel) getItem(ctx context.Context, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.cfg.Table),
		Key:            key,
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: get %s/%s: %w", avString(key[AttrPK]), avString(key[AttrSK]), err)
	}
	if len(out.Item) == 0 {
		return nil, ErrNotFound
	}
	return out.Item, nil
}

// name and val shorten expression building.
func name(a string) expression.NameBuilder { return expression.Name(a) }

func val(v any) expression.ValueBuilder { return expression.Value(v) }

// queryPages runs one key-condition Query (on index, or on the table if index
// is empty) page by page until the result ends or limit items were returned
// (limit <= 0: no limit), handing each page to fn. It counts what the query
// read; the error names what.
func (l *kernel) queryPages(ctx context.Context, what, index string, kc expression.KeyConditionBuilder, sel types.Select, limit int, fn func(*dynamodb.QueryOutput) error) (ReadStats, error) {
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

// rowMark adds the row's own stale mark to a transition's update: the row
// enters the fleet index under Z#<nn> with fleet_key <stamp>#<account>#<dataset>#<day>.
// A stopped row's entry (X#, stopped.go) is replaced, so only a transition
// out of the stopped state, or one that cannot start from it, takes one.
func (l *kernel) rowMark(upd expression.UpdateBuilder, key partition.Key) expression.UpdateBuilder {
	return upd.Set(name(AttrFleetShard), val(summaryShard(fleetStale, Shard(key.AccountID)))).
		Set(name(AttrFleetKey), val(fmtTime(l.now())+"#"+stoppedKey(key)))
}

// transition is a row's conditional write that may change its phase; the
// write marks the row stale in the same update (rowMark), so the mark
// exists if and only if the transition landed: a refused transition leaves
// none, and no crash can come between the two.
func (l *kernel) transition(ctx context.Context, key partition.Key, upd expression.UpdateBuilder, cond expression.ConditionBuilder, rv types.ReturnValue) (map[string]types.AttributeValue, error) {
	return l.update(ctx, rowKey(key), l.rowMark(upd, key), cond, rv)
}

func (l *kernel) updateItem(key map[string]types.AttributeValue, upd expression.UpdateBuilder, cond expression.ConditionBuilder) (types.TransactWriteItem, error) {
	b := expression.NewBuilder().WithUpdate(upd)
	if cond.IsSet() {
		b = b.WithCondition(cond)
	}
	expr, err := b.Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("ledger: build expression: %w", err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(l.cfg.Table), Key: key,
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}, nil
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: fmt.Sprint(v)}
}

func tableKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: s(pk), AttrSK: s(sk)}
}

// validateKey checks a key can be stored: no part empty, no "#" in an
// id (the item keys join them with "#").
func validateKey(k partition.Key) error {
	if k.AccountID == "" || strings.Contains(k.AccountID, "#") {
		return fmt.Errorf("ledger: account id %q", k.AccountID)
	}
	if k.Dataset == "" || strings.Contains(k.Dataset, "#") {
		return fmt.Errorf("ledger: dataset %q", k.Dataset)
	}
	if k.Day.IsZero() {
		return fmt.Errorf("ledger: %s: day is empty", k)
	}
	return nil
}

func rowKey(k partition.Key) map[string]types.AttributeValue {
	return tableKey(partitionPK(k.AccountID, k.Dataset), k.Day.String())
}

func partitionPK(account, dataset string) string {
	return pkPartPrefix + account + "#" + dataset
}

func fmtTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func (l *kernel) now() time.Time { return l.cfg.Now().UTC().Truncate(time.Second) }

func (l *kernel) token() (string, error) {
	var b [16]byte
	l.mu.Lock()
	_, err := io.ReadFull(l.cfg.Rand, b[:])
	l.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("ledger: claim token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
