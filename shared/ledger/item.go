package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/civil"
)

// record is the stored form of a partition row.
type record struct {
	PK             string `dynamodbav:"pk"`
	SK             string `dynamodbav:"sk"`
	AccountID      string `dynamodbav:"account_id"`
	Dataset        string `dynamodbav:"dataset"`
	Day            string `dynamodbav:"day"`
	State          string `dynamodbav:"state"`
	Attempts       int    `dynamodbav:"attempts"`
	ClaimToken     string `dynamodbav:"claim_token"`
	ClaimedAt      string `dynamodbav:"claimed_at"`
	StartedAt      string `dynamodbav:"started_at"`
	LeaseUntil     string `dynamodbav:"lease_until"`
	NextAttemptAt  string `dynamodbav:"next_attempt_at"`
	LastError      string `dynamodbav:"last_error"`
	Exhausted      bool   `dynamodbav:"exhausted"`
	Generation     int64  `dynamodbav:"generation"`
	GenReserved    int64  `dynamodbav:"generation_reserved"`
	Rows           int64  `dynamodbav:"rows"`
	Bytes          int64  `dynamodbav:"bytes"`
	Files          int    `dynamodbav:"files"`
	ManifestKey    string `dynamodbav:"manifest_key"`
	DurationMS     int64  `dynamodbav:"duration_ms"`
	CompletedAt    string `dynamodbav:"completed_at"`
	Reason         string `dynamodbav:"reason"`
	RerunRequested bool   `dynamodbav:"rerun_requested"`
	UpdatedAt      string `dynamodbav:"updated_at"`
	DueAccount     string `dynamodbav:"due_account"`
	DueKey         string `dynamodbav:"due_key"`
}

func rowFromItem(item map[string]types.AttributeValue) (Row, error) {
	var r record
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return Row{}, fmt.Errorf("ledger: decode row: %w", err)
	}
	row := Row{
		Key:            Key{AccountID: r.AccountID, Dataset: r.Dataset},
		State:          State(r.State),
		Attempts:       r.Attempts,
		ClaimToken:     r.ClaimToken,
		ClaimedAt:      parseTime(r.ClaimedAt),
		StartedAt:      parseTime(r.StartedAt),
		LeaseUntil:     parseTime(r.LeaseUntil),
		NextAttemptAt:  parseTime(r.NextAttemptAt),
		LastError:      r.LastError,
		Exhausted:      r.Exhausted,
		Generation:     r.Generation,
		GenReserved:    r.GenReserved,
		Rows:           r.Rows,
		Bytes:          r.Bytes,
		Files:          r.Files,
		ManifestKey:    r.ManifestKey,
		DurationMS:     r.DurationMS,
		CompletedAt:    parseTime(r.CompletedAt),
		Reason:         Reason(r.Reason),
		RerunRequested: r.RerunRequested,
		UpdatedAt:      parseTime(r.UpdatedAt),
		DueKey:         r.DueKey,
	}
	day := r.Day
	if day == "" {
		day = r.SK
	}
	if day != "" {
		d, err := civil.Parse(day)
		if err != nil {
			return Row{}, fmt.Errorf("ledger: row %s: %w", r.PK, err)
		}
		row.Day = d
	}
	// Index items project only some attributes; the due key carries the time.
	if parts := strings.SplitN(r.DueKey, "#", 3); len(parts) == 3 {
		switch parts[0] + "#" {
		case dueFailed:
			if row.NextAttemptAt.IsZero() {
				row.NextAttemptAt = parseTime(parts[1])
			}
		case dueRunning:
			if row.LeaseUntil.IsZero() {
				row.LeaseUntil = parseTime(parts[1])
			}
		}
	}
	return row, nil
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: fmt.Sprint(v)}
}

func tableKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: s(pk), AttrSK: s(sk)}
}

func rowKey(k Key) map[string]types.AttributeValue {
	return tableKey(partitionPK(k.AccountID, k.Dataset), k.Day.String())
}

// errCondition marks a failed condition check inside the package.
var errCondition = errors.New("condition failed")

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
