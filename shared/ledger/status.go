package ledger

// Reads and deletions for operators (`daybook status`, `daybook account
// delete`). None of them is on the sweep's path: the sweep's costs are in
// the fleet index (WokenAccounts, StoppedByAccount, wake.go and stopped.go)
// and DueWork.

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// DeleteAPI is what deleting items needs besides DynamoAPI; the DynamoDB
// client has it.
type DeleteAPI interface {
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ DeleteAPI = (*dynamodb.Client)(nil)

// Open returns every row of the account that is in the due index: the rows
// with work to do or waiting for an operator (pending, queued, failed,
// running, stopped), every dataset and day, oldest day first within each
// class. Index items carry the projected attributes only: key, state,
// attempts, claim token and claimed_at, and the time in the due key. Its
// cost grows with the account's open rows, never with its completed ones.
func (l Partitions) Open(ctx context.Context, accountID string) ([]Row, error) {
	var rows []Row
	kc := expression.Key(AttrDueAccount).Equal(val(accountID))
	_, err := l.queryPages(ctx, "open rows of "+accountID, IndexDue, kc, "", 0, appendRows(&rows))
	return rows, err
}

// Count counts the rows of (account, dataset) from `from` through `to` (a
// COUNT Query: it returns no items, but reads them).
func (l Partitions) Count(ctx context.Context, accountID, dataset string, from, to civil.Date) (int, error) {
	kc := expression.Key(AttrPK).Equal(val(partitionPK(accountID, dataset))).
		And(expression.Key(AttrSK).Between(val(from.String()), val(to.String())))
	total := 0
	_, err := l.queryPages(ctx, "count "+accountID+"/"+dataset, "", kc, types.SelectCount, 0,
		func(out *dynamodb.QueryOutput) error { total += int(out.Count); return nil })
	return total, err
}

// LastCompleted returns the newest day of (account, dataset) at or before
// `to` whose row is completed, reading newest first and stopping at the
// first one; ok is false when there is none.
func (l Partitions) LastCompleted(ctx context.Context, accountID, dataset string, to civil.Date) (Row, bool, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(expression.Key(AttrPK).Equal(val(partitionPK(accountID, dataset))).
		And(expression.Key(AttrSK).LessThanEqual(val(to.String())))).Build()
	if err != nil {
		return Row{}, false, fmt.Errorf("ledger: last completed: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(l.cfg.Table),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(32),
	}
	for {
		out, err := l.db.Query(ctx, in)
		if err != nil {
			return Row{}, false, fmt.Errorf("ledger: last completed of %s/%s: %w", accountID, dataset, err)
		}
		for _, it := range out.Items {
			r, err := rowFromItem(it)
			if err != nil {
				return Row{}, false, err
			}
			if r.State == StateCompleted {
				return r, true, nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return Row{}, false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// PurgeResult counts what PurgeAccount deleted.
type PurgeResult struct {
	Rows       int `json:"rows"`
	History    int `json:"history"`
	Watermarks int `json:"watermarks"`
	Events     int `json:"events"` // the account's history of changes (AccountHistory)
	// Other counts the partitions' other items: issued claim tokens,
	// slice plans and slices, outbox events.
	Other int `json:"other"`
}

// PurgeAccount deletes the account's partition rows of the given datasets
// (ledger names: a dataset at a later contract has rows of its own), each
// row's attempt history, issued tokens, slice plan and slices and outbox
// events, the datasets' reseed state, the account's watermarks, fleet
// summary and history of changes: once it returns, no item of the ledger
// is the account's (its guards went with DeleteAccount). It does not look
// at claims: the caller makes sure nothing runs (Open). A row is deleted
// after its other items, so a purge that failed half way finds them again
// when run again.
func (l Accounts) PurgeAccount(ctx context.Context, accountID string, datasets []string) (PurgeResult, error) {
	var res PurgeResult
	api, ok := l.db.(DeleteAPI)
	if !ok {
		return res, ErrNoDelete
	}
	del := func(pk, sk string) error {
		_, err := api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(l.cfg.Table), Key: tableKey(pk, sk)})
		if err != nil {
			return fmt.Errorf("ledger: delete %s/%s: %w", pk, sk, err)
		}
		return nil
	}
	keysOf := func(pk string) ([]string, error) {
		var sks []string
		_, err := l.queryPages(ctx, "keys of "+pk, "", expression.Key(AttrPK).Equal(val(pk)), "", 0, func(out *dynamodb.QueryOutput) error {
			for _, it := range out.Items {
				sks = append(sks, avString(it[AttrSK]))
			}
			return nil
		})
		return sks, err
	}
	for _, ds := range datasets {
		if err := validateKey(partition.Key{AccountID: accountID, Dataset: ds, Day: civil.MustParse("2000-01-01")}); err != nil {
			return res, err
		}
		if err := del(pkSeedPrefix+accountID, ds); err != nil { // its reseed state, if any (reseed.go)
			return res, err
		}
		days, err := keysOf(partitionPK(accountID, ds))
		if err != nil {
			return res, err
		}
		for _, day := range days {
			d, err := civil.Parse(day)
			if err != nil {
				return res, fmt.Errorf("ledger: row %s/%s: %w", partitionPK(accountID, ds), day, err)
			}
			k := partition.Key{AccountID: accountID, Dataset: ds, Day: d}
			for _, pk := range []string{historyPK(k), tokenPK(k), slicePK(k), outboxPK(k)} {
				sks, err := keysOf(pk)
				if err != nil {
					return res, err
				}
				for _, sk := range sks {
					if err := del(pk, sk); err != nil {
						return res, err
					}
					if pk == historyPK(k) {
						res.History++
					} else {
						res.Other++
					}
				}
			}
			if err := del(partitionPK(accountID, ds), day); err != nil {
				return res, err
			}
			res.Rows++
		}
	}
	wms, err := keysOf(pkWMPrefix + accountID)
	if err != nil {
		return res, err
	}
	for _, sk := range wms {
		if err := del(pkWMPrefix+accountID, sk); err != nil {
			return res, err
		}
		res.Watermarks++
	}
	for _, sk := range []string{skSummary, skSummaryName, skSummaryStale} { // its fleet summary (summary.go)
		if err := del(summaryPK(accountID), sk); err != nil {
			return res, err
		}
	}
	evs, err := keysOf(pkEventPrefix + accountID)
	if err != nil {
		return res, err
	}
	for _, sk := range evs {
		if err := del(pkEventPrefix+accountID, sk); err != nil {
			return res, err
		}
		res.Events++
	}
	return res, nil
}
