package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/partition"
)

// ClearTableError removes the table error (Row.TableError) of the row at
// key whose committed generation is generation: the repair of the
// dataset's Iceberg table now holds that generation. A row whose generation
// moved on (its own Complete decided its table error) or that has no table
// error is left as it is, and false is returned.
func (l Partitions) ClearTableError(ctx context.Context, key partition.Key, generation int64) (bool, error) {
	if err := validateKey(key); err != nil {
		return false, err
	}
	upd := expression.Remove(name(attrTableError)).Set(name(attrUpdatedAt), val(fmtTime(l.now())))
	cond := name(attrGeneration).Equal(val(generation)).And(name(attrTableError).AttributeExists())
	_, err := l.transition(ctx, key, upd, cond, types.ReturnValueNone)
	switch {
	case errors.Is(err, errCondition):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("ledger: clear the table error of %s: %w", key, err)
	}
	return true, nil
}
