package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// update runs one conditional UpdateItem and returns the attributes asked
// for by rv. A failed condition is errCondition, returned with the item as it
// was (ReturnValuesOnConditionCheckFailure ALL_OLD; empty if there is no
// item), so a caller can say why without a second read.
func (l *Ledger) update(ctx context.Context, key map[string]types.AttributeValue, upd expression.UpdateBuilder, cond expression.ConditionBuilder, rv types.ReturnValue) (map[string]types.AttributeValue, error) {
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
		if errors.As(err, &ccf) {
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

func (l *Ledger) getItem(ctx context.Context, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
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
