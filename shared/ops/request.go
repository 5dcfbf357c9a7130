package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// AccountGetter reads one account; Ledger has it.
type AccountGetter interface {
	GetAccount(ctx context.Context, id string) (account.Account, error)
}

// CheckForm is the part of the exporter's check of a manual request
// (jobs.CheckRequest) that needs no account: it returns the *jobs.FieldError
// of a malformed value (jobs.ErrMalformed), or nil when the request is well
// formed. Callers run it before they look for a deployment.
func CheckForm(catalog *dataset.Set, m jobs.Manual, lim jobs.Limits) error {
	if _, _, err := jobs.CheckRequest(catalog, m, nil, lim); !errors.Is(err, jobs.ErrRefused) {
		return err // nil, malformed, or the catalog unreadable
	}
	return nil
}

// CheckRequest is the exporter's own check of a manual re-export or retry
// (jobs.CheckRequest), before anything is written or sent: it reads the
// account m names and checks the request against it (an unknown or disabled
// account, a dataset it does not export, a day before its start date or not
// closed yet, a malformed value). lim.SettleDelay is the deployment's. It
// returns the account and the days asked for, or the *jobs.FieldError that
// names the field at fault.
func CheckRequest(ctx context.Context, catalog *dataset.Set, g AccountGetter, m jobs.Manual, lim jobs.Limits) (account.Account, civil.Date, civil.Date, error) {
	if err := CheckForm(catalog, m, lim); err != nil {
		return account.Account{}, civil.Date{}, civil.Date{}, err
	}
	var acct *account.Account
	switch got, err := g.GetAccount(ctx, m.AccountID); {
	case err == nil:
		acct = &got
	case !errors.Is(err, ledger.ErrNotFound):
		return account.Account{}, civil.Date{}, civil.Date{}, err
	}
	from, to, err := jobs.CheckRequest(catalog, m, acct, lim)
	if err != nil {
		return account.Account{}, from, to, err
	}
	return *acct, from, to, nil
}

// Planned is the days of one dataset a request covers.
type Planned struct {
	Dataset  string
	From, To civil.Date
}

// Days are the planned days, in order.
func (p Planned) Days() []civil.Date { return civil.Range(p.From, p.To) }

// LeftOut is a dataset, or some of its days, that a request for every
// dataset of an account leaves out, and why.
type LeftOut struct {
	Dataset string `json:"dataset"`
	Reason  string `json:"reason"`
}

// ErrNothingToQueue: a request for every dataset of an account leaves
// every one of them out; the error says why for each.
var ErrNothingToQueue = errors.New("nothing to queue")

// CheckRequests is CheckRequest for the dataset m names or, when it names
// none, for every dataset of the account, over m's day or range; the CLI's
// retry and reexport and the console's actions without a dataset call
// it. It returns the account and the days of each dataset to queue. A
// snapshot dataset has a copy of the newest closed day only (a copy taken
// now of an older day would be today's table under that date), so without
// a dataset it takes that day alone when the range holds it and is left
// out otherwise, said in the []LeftOut, instead of refusing the whole
// request; named, it is refused as ever (jobs.CheckRequest). A request that
// leaves every dataset out is ErrNothingToQueue, naming why. Any other
// refusal is CheckRequest's *jobs.FieldError.
func CheckRequests(ctx context.Context, catalog *dataset.Set, g AccountGetter, m jobs.Manual, lim jobs.Limits) (account.Account, []Planned, []LeftOut, error) {
	if m.Dataset != "" {
		acct, from, to, err := CheckRequest(ctx, catalog, g, m, lim)
		return acct, []Planned{{m.Dataset, from, to}}, nil, err
	}
	names := catalog.Names()
	if len(names) == 0 {
		return account.Account{}, nil, nil, errors.New("the dataset catalog is empty")
	}
	probe := m
	probe.Dataset = names[0] // the form alone, and the refusal of an account that is not there
	if err := CheckForm(catalog, probe, lim); err != nil {
		return account.Account{}, nil, nil, err
	}
	from, to, err := requestRange(m)
	if err != nil {
		return account.Account{}, nil, nil, err
	}
	acct, err := g.GetAccount(ctx, m.AccountID)
	if errors.Is(err, ledger.ErrNotFound) {
		_, _, _, err = CheckRequest(ctx, catalog, g, probe, lim)
		return account.Account{}, nil, nil, err
	}
	if err != nil {
		return account.Account{}, nil, nil, err
	}
	if len(acct.Datasets) == 0 {
		return acct, nil, nil, &jobs.FieldError{Field: "account_id", Value: acct.ID, Reason: "exports no dataset", Kind: jobs.ErrRefused}
	}
	newest := acct.WithDefaults(lim.SettleDelay).ClosedThrough(lim.Now)
	var plan []Planned
	var left []LeftOut
	for _, ds := range acct.Datasets {
		q := m
		q.Dataset = ds
		if d, err := catalog.Get(ds); err == nil && d.IsSnapshot() && (from != newest || to != newest) {
			if newest.Before(from) || to.Before(newest) {
				left = append(left, LeftOut{ds, fmt.Sprintf("a snapshot dataset is copied for the newest closed day only (%s), which is outside %s..%s", newest, from, to)})
				continue
			}
			left = append(left, LeftOut{ds, fmt.Sprintf("a snapshot dataset is copied for the newest closed day only: %s alone, the other days of %s..%s left out", newest, from, to)})
			q.Day, q.From, q.To = newest.String(), "", ""
		}
		f, t, err := jobs.CheckRequest(catalog, q, &acct, lim)
		if err != nil {
			return acct, nil, nil, err
		}
		plan = append(plan, Planned{ds, f, t})
	}
	if len(plan) == 0 {
		reasons := make([]string, len(left))
		for i, l := range left {
			reasons[i] = l.Dataset + ": " + l.Reason
		}
		return acct, nil, left, fmt.Errorf("%w for account %s: %s", ErrNothingToQueue, acct.ID, strings.Join(reasons, "; "))
	}
	return acct, plan, left, nil
}

// requestRange is the days a well-formed request names: its day, or from
// through to.
func requestRange(m jobs.Manual) (civil.Date, civil.Date, error) {
	if m.Day != "" {
		d, err := civil.Parse(m.Day)
		return d, d, err
	}
	from, err := civil.Parse(m.From)
	if err != nil {
		return from, from, err
	}
	to, err := civil.Parse(m.To)
	return from, to, err
}
