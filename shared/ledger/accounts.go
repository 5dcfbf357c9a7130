package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
)

// GetAccount returns one account, or ErrNotFound.
func (l Accounts) GetAccount(ctx context.Context, id string) (account.Account, error) {
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
		return a, fmt.Errorf("%w %s/%s: no %s", ErrMalformed, rec.PK, rec.SK, attrDoc)
	}
	if err := json.Unmarshal([]byte(rec.Doc), &a); err != nil {
		return a, malformed(item, attrDoc, "(JSON of account.Account)", err)
	}
	if a.ID != rec.SK {
		return a, malformed(item, attrDoc, "(JSON of account.Account)", fmt.Errorf("id %q is not the record's", a.ID))
	}
	a.Version = rec.Version
	return a, nil
}

// ListAccounts returns every account (enabled or not), ordered by id, reading
// pk=ACCOUNTS page by page. A record that cannot be read does not hide the
// others: they are returned, with an error (errors.Is ErrMalformed) naming
// each unreadable one.
func (l Accounts) ListAccounts(ctx context.Context) ([]account.Account, error) {
	var out []account.Account
	var bad []error
	_, err := l.queryPages(ctx, "list accounts", "", expression.Key(AttrPK).Equal(val(pkAccounts)), "", 0,
		func(page *dynamodb.QueryOutput) error {
			for _, it := range page.Items {
				a, err := accountFromItem(it)
				if err != nil {
					bad = append(bad, err)
					continue
				}
				out = append(out, a)
			}
			return nil
		})
	return out, errors.Join(append(bad, err)...)
}

// checkStart applies the start-date rule (account.ValidateStart) at now
// with the configured backfill limit. The limit bounds a backfill an account
// put would start: an account already stored from the same start date or an
// earlier one keeps it when it is updated (disabled, enabled, given another
// dataset), however old the start date has become since. So the stored
// account is read, only when the limit alone refuses a.
func (l *kernel) checkStart(ctx context.Context, a account.Account, now time.Time) error {
	err := a.ValidateStart(now, l.cfg.MaxBackfillDays)
	if err == nil || a.ValidateStart(now, 0) != nil {
		return err
	}
	old, gerr := l.accounts().GetAccount(ctx, a.ID)
	switch {
	case gerr == nil && !a.StartDate.Before(old.StartDate):
		return nil
	case gerr != nil && !errors.Is(gerr, ErrNotFound):
		return fmt.Errorf("%w (and the stored account, which may keep its start date, cannot be read: %w)", err, gerr)
	}
	return err
}
