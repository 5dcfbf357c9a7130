package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// DatasetDays is one dataset's partitions in an account view: the days in
// the window, and the counts before and after it.
type DatasetDays struct {
	Dataset string        `json:"dataset"`
	Counts  map[Phase]int `json:"counts"`
	Before  map[Phase]int `json:"before_window,omitempty"`
	After   map[Phase]int `json:"after_window,omitempty"`
	Days    []Day         `json:"days"`
}

// AccountDays is one account's partitions by dataset and day.
type AccountDays struct {
	Account       string        `json:"account"`
	Name          string        `json:"name"`
	Enabled       bool          `json:"enabled"`
	TimeZone      string        `json:"time_zone"`
	StartDate     string        `json:"start_date"`
	ClosedThrough string        `json:"closed_through"`
	From          string        `json:"from"`
	To            string        `json:"to"`
	Datasets      []DatasetDays `json:"datasets"`
}

// Window is the days an account view shows: from and to when given, else
// to is the account's last closed day (at now, with the deployment's settle
// delay for an account without its own) and from is days before it (90
// when days is 0), never before the account's start date.
func Window(acct account.Account, settle time.Duration, now time.Time, from, to civil.Date, days int) (civil.Date, civil.Date) {
	if to.IsZero() {
		to = acct.WithDefaults(settle).ClosedThrough(now)
	}
	if from.IsZero() {
		if days <= 0 {
			days = 90
		}
		from = to.AddDays(-days + 1)
		if from.Before(acct.StartDate) {
			from = acct.StartDate
		}
	}
	return from, to
}

// ErrNoDatasets: the account exports none of the datasets asked for.
var ErrNoDatasets = errors.New("no such dataset in the account")

// AccountView reads an account's partitions of datasets (all of the
// account's when empty) from `from` through `to`, keeping only states when
// given; the rows outside the window are counted in Before and After. A
// dataset the account does not export is an error naming its datasets.
func AccountView(ctx context.Context, catalog *dataset.Set, r Reader, acct account.Account, settle time.Duration, now time.Time,
	datasets []string, states map[Phase]bool, from, to civil.Date) (AccountDays, error) {
	d := acct.WithDefaults(settle)
	res := AccountDays{Account: acct.ID, Name: acct.Name, Enabled: acct.Enabled, TimeZone: d.TimeZone,
		StartDate: acct.StartDate.String(), ClosedThrough: d.ClosedThrough(now).String(), From: from.String(), To: to.String()}
	shown := acct.Datasets
	if len(datasets) > 0 {
		shown = slices.DeleteFunc(slices.Clone(acct.Datasets), func(ds string) bool { return !slices.Contains(datasets, ds) })
		if len(shown) == 0 {
			return res, fmt.Errorf("%w: account %s exports none of %s; its datasets: %s", ErrNoDatasets, acct.ID, strings.Join(datasets, ", "), strings.Join(acct.Datasets, ", "))
		}
	}
	for _, ds := range shown {
		rows, err := r.List(ctx, acct.ID, catalog.Current(ds), FirstDay, LastDay) // the rows still delivered, at a later contract too
		if err != nil {
			return res, err
		}
		st := DatasetDays{Dataset: ds, Counts: map[Phase]int{}, Before: map[Phase]int{}, After: map[Phase]int{}, Days: []Day{}}
		for _, row := range rows {
			p := Of(row)
			if len(states) > 0 && !states[p] {
				continue
			}
			switch {
			case row.Day.Before(from):
				st.Before[p]++
			case row.Day.After(to):
				st.After[p]++
			default:
				st.Counts[p]++
				st.Days = append(st.Days, DayOf(row, now))
			}
		}
		res.Datasets = append(res.Datasets, st)
	}
	return res, nil
}
