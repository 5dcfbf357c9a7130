package jobs

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// ErrRefused marks a well-formed request that its account cannot take: no
// such account, a disabled one, a dataset it does not export, a day before
// its start date or not closed yet. Like a malformed message it can never
// succeed as sent.
var ErrRefused = errors.New("request refused")

// FieldError is one refused field of a message or request. Field is the
// message's field name (account_id, dataset, day, from, to, claim_token,
// attempt, generation); a flag-driven caller maps it to its flag (from ->
// --from). Value is the value refused ("" when it is missing), Reason says
// why, and Kind is ErrMalformed or ErrRefused, which errors.Is sees.
type FieldError struct {
	Field  string
	Value  string
	Reason string
	Kind   error
}

// Error reads `malformed message: day "2026-02-30" is not a date
// (YYYY-MM-DD)`, or `...: dataset is required` when the value is empty.
func (e *FieldError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%v: %s %s", e.Kind, e.Field, e.Reason)
	}
	return fmt.Sprintf("%v: %s %q %s", e.Kind, e.Field, e.Value, e.Reason)
}

func (e *FieldError) Unwrap() error { return e.Kind }

func malformed(field, value, reason string) error {
	return &FieldError{Field: field, Value: value, Reason: reason, Kind: ErrMalformed}
}

func refused(field, value, format string, args ...any) error {
	return &FieldError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...), Kind: ErrRefused}
}

var (
	claimTokenRE = regexp.MustCompile(`^[0-9a-f]{32}$`)
	requestIDRE  = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
	// A dataset name, or a ledger name `<name>.<contract>` of a dataset at a
	// later contract than v1 (dataset.LedgerName).
	datasetNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}(\.v[1-9][0-9]{0,2})?$`)
)

func checkAccountID(id string) error {
	switch {
	case strings.TrimSpace(id) == "":
		return malformed("account_id", "", "is required")
	case !account.ValidID(id):
		return malformed("account_id", id, "is not an account id (acct_ and 16 lowercase base32 characters)")
	}
	return nil
}

func checkDatasetName(ds string) error {
	switch {
	case strings.TrimSpace(ds) == "":
		return malformed("dataset", "", "is required")
	case !datasetNameRE.MatchString(ds):
		return malformed("dataset", ds, "is not a dataset name (lowercase letters, digits, _; .v2 and on for a later contract)")
	}
	return nil
}

// knownDataset is the catalog's dataset that ds names, by its catalog name
// or a ledger name (events.v2).
func knownDataset(catalog *dataset.Set, ds string) (dataset.Dataset, error) {
	if err := checkDatasetName(ds); err != nil {
		return dataset.Dataset{}, err
	}
	d, err := catalog.Get(ds)
	if err != nil {
		return dataset.Dataset{}, malformed("dataset", ds, "is not a dataset (unknown dataset; known: "+strings.Join(catalog.Names(), ", ")+")")
	}
	return d, nil
}

// checkRequestedBy accepts who asked for a request: at most MaxRequestedBy
// printable characters (no control or formatting characters, no line
// breaks), or none.
func checkRequestedBy(v string) error {
	if n := utf8.RuneCountInString(v); n > MaxRequestedBy {
		return malformed("requested_by", shorten(v), fmt.Sprintf("is %d characters long; at most %d", n, MaxRequestedBy))
	}
	for i, r := range v {
		if !unicode.IsPrint(r) {
			return malformed("requested_by", v, fmt.Sprintf("holds %U at byte %d: only printable characters are allowed (no control or formatting characters)", r, i))
		}
	}
	return nil
}

// checkRequestID accepts the id of an operator's request (request_id: a
// reseed's, a re-export's): 1 to 64 letters, digits, _ . : -.
func checkRequestID(v string) error {
	if !requestIDRE.MatchString(v) {
		return malformed("request_id", shorten(v), "is not a request id (1 to 64 letters, digits, _ . : -)")
	}
	return nil
}

// shorten keeps the start of a long value for an error message.
func shorten(v string) string {
	const keep = 64
	if utf8.RuneCountInString(v) <= keep {
		return v
	}
	return string([]rune(v)[:keep]) + "..."
}

func parseDay(field, v string) (civil.Date, error) {
	d, err := civil.Parse(v)
	if err != nil {
		return civil.Date{}, malformed(field, v, "is not a date (YYYY-MM-DD)")
	}
	return d, nil
}

// days checks Day or From..To and returns the range; maxDays bounds it.
func (m Manual) days(maxDays int) (from, to civil.Date, err error) {
	switch {
	case m.Day != "" && (m.From != "" || m.To != ""):
		return from, to, malformed("day", m.Day, fmt.Sprintf("is given with from %q and to %q: give day or from and to, not both", m.From, m.To))
	case m.Day != "":
		d, err := parseDay("day", m.Day)
		return d, d, err
	case m.From == "" && m.To == "":
		return from, to, malformed("day", "", "is required (or from and to)")
	case m.From == "":
		return from, to, malformed("from", "", "is required with to")
	case m.To == "":
		return from, to, malformed("to", "", "is required with from")
	}
	if from, err = parseDay("from", m.From); err != nil {
		return
	}
	if to, err = parseDay("to", m.To); err != nil {
		return
	}
	if to.Before(from) {
		return from, to, malformed("to", m.To, fmt.Sprintf("is before from %q", m.From))
	}
	if n := from.DaysUntil(to) + 1; n > maxDays {
		return from, to, malformed("to", m.To, fmt.Sprintf("makes the range from %s %d days; at most %d per request", m.From, n, maxDays))
	}
	return from, to, nil
}

// Limits are what CheckRequest needs besides the request and its account.
type Limits struct {
	// Now is the clock.
	Now time.Time
	// SettleDelay is the deployment's settle delay (SETTLE_DELAY), for an
	// account that sets none of its own.
	SettleDelay time.Duration
	// MaxDays bounds a range; 0 means MaxManualRangeDays. A retry, which
	// the sweeper paces, may pass a larger bound.
	MaxDays int
}

// CheckRequest is the one check of a manual re-export or a retry of
// {account_id, dataset, day | from, to}, for the exporter (a manual
// message) and the CLI (reexport, retry) alike. acct is the account
// m.AccountID names as stored, nil when there is none. It returns the days
// asked for, or the first problem as a *FieldError naming the field and the
// value:
//
//   - ErrMalformed, never valid: account_id not of account.NewID's form,
//     dataset not in the catalog, a day that is not YYYY-MM-DD, day given
//     with from/to, from after to, a range longer than lim.MaxDays, a
//     requested_by longer than MaxRequestedBy or with a character that is
//     not printable;
//   - ErrRefused, not for this account now: no such account, a disabled
//     account, a dataset the account does not export, a day before its start
//     date, a day not closed yet (after account.ClosedThrough(lim.Now)),
//     a day of a snapshot dataset other than the last closed one.
//
// A refusal of what is checked after the days (requested_by, the account,
// the days against it) still returns the days asked for; before they are
// read (account_id, dataset) or when they do not parse, from and to are
// zero. It reads nothing and changes nothing.
func CheckRequest(catalog *dataset.Set, m Manual, acct *account.Account, lim Limits) (from, to civil.Date, err error) {
	if err := checkAccountID(m.AccountID); err != nil {
		return from, to, err
	}
	ds, err := knownDataset(catalog, m.Dataset)
	if err != nil {
		return from, to, err
	}
	if from, to, err = m.days(cmp.Or(lim.MaxDays, MaxManualRangeDays)); err != nil {
		return from, to, err
	}
	if err := checkRequestedBy(m.RequestedBy); err != nil {
		return from, to, err
	}
	if m.RequestID != "" {
		if err := checkRequestID(m.RequestID); err != nil {
			return from, to, err
		}
	}
	fromField, toField, fromValue, toValue := "from", "to", m.From, m.To
	if m.Day != "" {
		fromField, toField, fromValue, toValue = "day", "day", m.Day, m.Day
	}
	switch {
	case acct == nil:
		return from, to, refused("account_id", m.AccountID, "is not an account (no such account)")
	case acct.ID != m.AccountID:
		return from, to, fmt.Errorf("jobs: CheckRequest for account_id %q was given account %s", m.AccountID, acct.ID)
	case !acct.Enabled:
		return from, to, refused("account_id", m.AccountID, "is disabled")
	case !slices.Contains(acct.Datasets, ds.Name):
		return from, to, refused("dataset", m.Dataset, "is not enabled for account %s (enabled: %s)", acct.ID, strings.Join(acct.Datasets, ", "))
	case from.Before(acct.StartDate):
		return from, to, refused(fromField, fromValue, "is before account %s's start date %s", acct.ID, acct.StartDate)
	}
	a := acct.WithDefaults(lim.SettleDelay)
	closed := a.ClosedThrough(lim.Now)
	if to.After(closed) {
		return from, to, refused(toField, toValue, "is not closed yet for account %s (time zone %s, settle delay %s): the last closed day is %s; today is never exported",
			a.ID, a.TimeZone, a.SettleDelay.D(), closed)
	}
	// A snapshot dataset's day is a copy of the whole table taken when the
	// day is exported: one taken now is the newest closed day's, and under
	// an older day's label it would be today's table with a wrong date.
	if ds.IsSnapshot() && from != closed {
		return from, to, refused(fromField, fromValue, "is not the last closed day %s: %s is a snapshot dataset (a complete copy of the table per day), and a copy taken now is that day's only",
			closed, m.Dataset)
	}
	return from, to, nil
}

// PerDay is m's range from..to as single-day requests, one per day, each
// by m's requester and part of m's request (RequestID): a range is fanned out so that each day is claimed and
// exported in an invocation of its own.
func (m Manual) PerDay(from, to civil.Date) []Manual {
	var out []Manual
	for _, d := range civil.Range(from, to) {
		out = append(out, Manual{Kind: KindManual, AccountID: m.AccountID, Dataset: m.Dataset, Day: d.String(), RequestedBy: m.RequestedBy, RequestID: m.RequestID})
	}
	return out
}

// bareName is the catalog name of a dataset named in a request, which may
// be its ledger name at a later contract (events.v2): an account enables
// the catalog name.
func bareName(ds string) string {
	name, _ := dataset.SplitLedgerName(ds)
	return name
}
