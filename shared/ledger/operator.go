package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Get returns one row (strongly consistent), or ErrNotFound.
func (l Partitions) Get(ctx context.Context, key partition.Key) (Row, error) {
	if err := validateKey(key); err != nil {
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
func (l Partitions) List(ctx context.Context, accountID, dataset string, from, to civil.Date) ([]Row, error) {
	kc := expression.Key(AttrPK).Equal(val(partitionPK(accountID, dataset))).
		And(expression.Key(AttrSK).Between(val(from.String()), val(to.String())))
	var rows []Row
	_, err := l.queryPages(ctx, "list "+accountID+"/"+dataset, "", kc, "", 0, appendRows(&rows))
	return rows, err
}
