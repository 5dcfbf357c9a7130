package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
)

// PutAccount validates a and stores it (pk=ACCOUNTS, sk=<id>), replacing any
// earlier version. CreatedAt is set from the clock when zero.
func (l *Ledger) PutAccount(ctx context.Context, a account.Account) error {
	if err := a.ValidateShape(); err != nil {
		return fmt.Errorf("account %s: %w", a.ID, err)
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = l.now()
	}
	doc, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("account %s: %w", a.ID, err)
	}
	item := tableKey(pkAccounts, a.ID)
	item[attrAccountID] = s(a.ID)
	item[attrEnabled] = &types.AttributeValueMemberBOOL{Value: a.Enabled}
	item[attrDoc] = s(string(doc))
	item[attrUpdatedAt] = s(fmtTime(l.now()))
	if _, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.cfg.Table), Item: item}); err != nil {
		return fmt.Errorf("ledger: put account %s: %w", a.ID, err)
	}
	return nil
}

// GetAccount returns one account, or ErrNotFound.
func (l *Ledger) GetAccount(ctx context.Context, id string) (account.Account, error) {
	item, err := l.getItem(ctx, tableKey(pkAccounts, id))
	if errors.Is(err, ErrNotFound) {
		return account.Account{}, fmt.Errorf("%w: account %s", ErrNotFound, id)
	}
	if err != nil {
		return account.Account{}, err
	}
	return accountFromItem(item)
}

func accountFromItem(item map[string]types.AttributeValue) (account.Account, error) {
	var a account.Account
	rec, err := decodeItem[accountRecord](item)
	if err != nil {
		return a, err
	}
	if rec.Doc == "" {
		return a, fmt.Errorf("ledger: account %s has no doc", rec.SK)
	}
	if err := json.Unmarshal([]byte(rec.Doc), &a); err != nil {
		return a, fmt.Errorf("ledger: account %s: %s: %w", rec.SK, attrDoc, err)
	}
	return a, nil
}

// ListAccounts returns every account (enabled or not), ordered by id, reading
// pk=ACCOUNTS page by page.
func (l *Ledger) ListAccounts(ctx context.Context) ([]account.Account, error) {
	var out []account.Account
	_, err := l.queryPages(ctx, "list accounts", "", expression.Key(AttrPK).Equal(val(pkAccounts)), "", 0,
		func(page *dynamodb.QueryOutput) error {
			for _, it := range page.Items {
				a, err := accountFromItem(it)
				if err != nil {
					return err
				}
				out = append(out, a)
			}
			return nil
		})
	return out, err
}
