package jobs

// Messages about delivered partitions, beside claimed jobs and manual
// requests: a restatement check the sweeper queues for a recently closed
// day, and the two steps of a reseed (the request `daybook reseed` sends,
// and the exporter's own note that every day was rebuilt). The exporter
// handles all of them; none carries a claim.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// Kinds of lifecycle message.
const (
	KindRestateCheck = "restate_check"
	KindReseed       = "reseed"
	KindReseedDone   = "reseed_done"
)

// RestateCheck asks the exporter to compare a completed partition's
// fingerprint in the source with the one its generation was exported with.
type RestateCheck struct {
	Kind      string `json:"kind"`
	AccountID string `json:"account_id"`
	Dataset   string `json:"dataset"`
	Day       string `json:"day"`
	// Generation is the generation the sweeper found completed; a check of
	// a partition that moved on since is dropped.
	Generation int64 `json:"generation"`
}

// Validate checks the check's fields as strictly as the sweeper writes
// them. Errors are *FieldError wrapping ErrMalformed.
func (c RestateCheck) Validate(catalog *dataset.Set) error {
	if err := checkAccountID(c.AccountID); err != nil {
		return err
	}
	if _, err := knownDataset(catalog, c.Dataset); err != nil {
		return err
	}
	if _, err := parseDay("day", c.Day); err != nil {
		return err
	}
	if c.Generation < 1 {
		return malformed("generation", fmt.Sprint(c.Generation), "is not a committed generation (want >= 1)")
	}
	return nil
}

// DayValue is the check's day, parsed.
func (c RestateCheck) DayValue() civil.Date { d, _ := civil.Parse(c.Day); return d }

// Reseed asks for a rebuild of an incremental dataset of an account from
// its start date (`daybook reseed`).
type Reseed struct {
	Kind      string `json:"kind"`
	AccountID string `json:"account_id"`
	Dataset   string `json:"dataset"`
	// RequestID identifies the request, so a redelivered message continues
	// the reseed it started instead of starting another.
	RequestID   string `json:"request_id"`
	RequestedBy string `json:"requested_by,omitempty"`
}

// Validate checks the request's form. Errors are *FieldError wrapping
// ErrMalformed; whether the account may reseed the dataset is CheckReseed's.
func (r Reseed) Validate(catalog *dataset.Set) error {
	if err := checkAccountID(r.AccountID); err != nil {
		return err
	}
	if _, err := knownDataset(catalog, r.Dataset); err != nil {
		return err
	}
	if err := checkRequestID(r.RequestID); err != nil {
		return err
	}
	return checkRequestedBy(r.RequestedBy)
}

// ReseedDone says that every day of a seed epoch was rebuilt: the exporter
// finishes the epoch and rewrites the days' delivery manifests.
type ReseedDone struct {
	Kind      string `json:"kind"`
	AccountID string `json:"account_id"`
	Dataset   string `json:"dataset"`
	Epoch     int64  `json:"epoch"`
}

// Validate checks the note's fields. Errors are *FieldError wrapping
// ErrMalformed.
func (d ReseedDone) Validate(catalog *dataset.Set) error {
	if err := checkAccountID(d.AccountID); err != nil {
		return err
	}
	if _, err := knownDataset(catalog, d.Dataset); err != nil {
		return err
	}
	if d.Epoch < 1 {
		return malformed("epoch", fmt.Sprint(d.Epoch), "is not a seed epoch (want >= 1)")
	}
	return nil
}

// parseLifecycle decodes the lifecycle kinds for Parse; ok is false for any
// other kind.
func parseLifecycle(catalog *dataset.Set, kind, body string) (m Message, ok bool, err error) {
	decode := func(v interface{ Validate(*dataset.Set) error }) error {
		if err := decodeObject(kind, body, v, true); err != nil {
			return err
		}
		return v.Validate(catalog)
	}
	switch kind {
	case KindRestateCheck:
		var c RestateCheck
		err = decode(&c)
		return Message{RestateCheck: &c}, true, err
	case KindReseed:
		var r Reseed
		err = decode(&r)
		return Message{Reseed: &r}, true, err
	case KindReseedDone:
		var d ReseedDone
		err = decode(&d)
		return Message{ReseedDone: &d}, true, err
	case KindSlice:
		var sl Slice
		err = decode(&sl)
		return Message{Slice: &sl}, true, err
	}
	return Message{}, false, nil
}

// CheckReseed is the one check of a reseed request against its account
// (nil when there is none), for the exporter and `daybook reseed` alike. It
// returns the days to rebuild: the account's start date through its last
// closed day at lim.Now. Errors are *FieldError naming the field and the
// value: ErrMalformed for a malformed request; ErrRefused for no such
// account, a disabled one, a dataset it does not export, a dataset that is
// read as a union of days that never change once closed (those are
// re-exported, not reseeded), or an account with no closed day yet.
func CheckReseed(catalog *dataset.Set, r Reseed, acct *account.Account, lim Limits) (from, through civil.Date, err error) {
	if err := r.Validate(catalog); err != nil {
		return from, through, err
	}
	ds, err := catalog.Get(r.Dataset)
	if err != nil {
		return from, through, fmt.Errorf("dataset catalog: %w", err)
	}
	switch {
	case !ds.Reseedable():
		return from, through, refused("dataset", r.Dataset,
			"is read as a union of immutable days (what a day means: %s; read: %s): a reseed only applies to incremental feeds of states such as profiles; re-export the days that changed instead (daybook reexport)",
			ds.Partition, ds.Read)
	case acct == nil:
		return from, through, refused("account_id", r.AccountID, "is not an account (no such account)")
	case acct.ID != r.AccountID:
		return from, through, fmt.Errorf("jobs: CheckReseed for account_id %q was given account %s", r.AccountID, acct.ID)
	case !acct.Enabled:
		return from, through, refused("account_id", r.AccountID, "is disabled")
	case !slices.Contains(acct.Datasets, bareName(r.Dataset)):
		return from, through, refused("dataset", r.Dataset, "is not enabled for account %s (enabled: %s)", acct.ID, strings.Join(acct.Datasets, ", "))
	}
	a := acct.WithDefaults(lim.SettleDelay)
	from, through = a.StartDate, a.ClosedThrough(lim.Now)
	if through.Before(from) {
		return from, through, refused("account_id", r.AccountID, "has no closed day yet (start date %s, last closed day %s): there is nothing to reseed", from, through)
	}
	return from, through, nil
}
