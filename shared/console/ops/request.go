package ops

import (
	"context"
	"errors"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// AccountGetter reads one account; *ledger.Ledger has it.
type AccountGetter interface {
	GetAccount(ctx context.Context, id string) (account.Account, error)
}

// CheckForm is the part of the exporter's check of a manual request
// (jobs.CheckRequest) that needs no account: it returns the *jobs.FieldError
// of a malformed value (jobs.ErrMalformed), or nil when the request is well
// formed. Callers run it before they look for a deployment.
func CheckForm(m jobs.Manual, lim jobs.Limits) error {
	if _, _, err := jobs.CheckRequest(m, nil, lim); !errors.Is(err, jobs.ErrRefused) {
		return err // nil, malformed, or the catalog unreadable
	}
	return nil
}

// CheckRequest is the exporter's own check of a manual re-export or requeue
// (jobs.CheckRequest), before anything is written or sent: it reads the
// account m names and checks the request against it (an unknown or disabled
// account, a dataset it does not export, a day before its start date or not
// closed yet, a malformed value). lim.SettleDelay is the deployment's. It
// returns the account and the days asked for, or the *jobs.FieldError that
// names the field at fault.
func CheckRequest(ctx context.Context, g AccountGetter, m jobs.Manual, lim jobs.Limits) (account.Account, civil.Date, civil.Date, error) {
	if err := CheckForm(m, lim); err != nil {
		return account.Account{}, civil.Date{}, civil.Date{}, err
	}
	var acct *account.Account
	switch got, err := g.GetAccount(ctx, m.AccountID); {
	case err == nil:
		acct = &got
	case !errors.Is(err, ledger.ErrNotFound):
		return account.Account{}, civil.Date{}, civil.Date{}, err
	}
	from, to, err := jobs.CheckRequest(m, acct, lim)
	if err != nil {
		return account.Account{}, from, to, err
	}
	return *acct, from, to, nil
}
