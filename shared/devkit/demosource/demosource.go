// Package demosource generates the demo SQLite source that `make demo` and
// the end-to-end test export (X2): three accounts with opaque ids, a
// couple of weeks of events, an activity feed of profiles and pre-aggregated
// daily statistics, in the tables of dataset.SourceDDL("sqlite").
//
// Generation is deterministic: the same Options (seed, clock, sizes) give
// the same account ids and the same rows, inserted in the same order.
//
// The data has realistic shapes so the exported files are worth looking at:
//
//   - events: sessions of several events by identified users or anonymous
//     visitors, more in the afternoon and fewer at night in the account's
//     time zone, fewer on weekends; a handful of event types (page_view,
//     click, search, add_to_cart, purchase, signup, login); value only on
//     page_view (engaged seconds), add_to_cart and purchase (quantity);
//     amount only on purchase; about 1% of sessions flagged is_test; about
//     3% of events arrive late (inserted on a later day than they occurred,
//     up to 2 days late; a late event whose arrival is after the demo clock
//     has not arrived yet and is not in the source); per-tenant attributes
//     that differ by account.
//   - profiles: the source table is profile_activity, an activity feed (D4):
//     one row per identified user and local day (account zone) on which
//     that user has events in the source, holding the profile's state as of
//     its last event that day: last_seen_at is that event, first_seen_at the
//     user's first event ever, event_count the user's events up to
//     last_seen_at, and plan the plan then (in the web analytics account a
//     "free" user's first purchase upgrades them to "plus" from that event
//     on). So a profile appears in every partition it was active in, and an
//     old day's rows do not change with later activity. Users churn, so
//     their last active days spread over the whole range.
//   - daily_stats: per account and local day (for every day that has data,
//     today included as a running partial), computed from the non-test
//     events of the source: events (total and per event_type; sum = count),
//     sessions (total and per country, by session start day; sum = session
//     duration in seconds), revenue (total and per country; count =
//     purchases, sum = amount) and signups (total and per country; sum =
//     count). The total is the row with dimension "".
package demosource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/envvar"
)

// Defaults applied by Generate to zero Options fields.
const (
	DefaultDays         = 14
	DefaultEventsPerDay = 3000
	// DefaultSettleDelay is the settle delay written into every demo
	// account: the deployment's default, spelled out.
	DefaultSettleDelay = envvar.DefaultSettleDelay
	// Region of every demo bucket.
	Region = "us-east-1"
	// BucketPrefix is the name of demo account n's bucket without n; the
	// template's direct-write pattern is daybook-exports-*.
	BucketPrefix = "daybook-exports-demo-"
	// RoleARN3 and ExternalID3 are the role demo account 3 is reached through.
	RoleARN3    = "arn:aws:iam::123456789012:role/daybook-export-demo3"
	ExternalID3 = "demo-external-id-3"
)

// Options configures Generate.
type Options struct {
	// Path is the SQLite file to create; an existing file is replaced.
	Path string
	// Now is the demo's clock: the last instant with data, and the "today"
	// of every account. Zero means time.Now().
	Now time.Time
	// Days of data before today, in each account's zone (today is extra).
	// Zero means DefaultDays.
	Days int
	// EventsPerDay per account on an average weekday. Zero means
	// DefaultEventsPerDay; the end-to-end test uses about 100.
	EventsPerDay int
	// Seed of every random choice, account ids included (ids depend on the
	// seed only, not on the sizes).
	Seed uint64
	// Stage is the deployment stage the accounts' prefixes are rendered
	// for (Demo.Destinations); it is not written into the source.
	Stage string
	// AccountIDs, if set, replace the generated ids of the first accounts,
	// in order (the local stack's fixed, documented account id).
	AccountIDs []string
	// OtherStores adds demo 4, on Google Cloud Storage, and demo 5, on
	// Azure Blob Storage (the storage emulator's development account),
	// their endpoints left for the caller to set.
	OtherStores bool
}

// Demo is what Generate produced.
type Demo struct {
	// Accounts are the three demo accounts, in order (demo 1, 2, 3), as
	// `daybook account put --file` takes them.
	Accounts []account.Account
	// Path is the SQLite file.
	Path string
	// Stage is Options.Stage.
	Stage string
	// Now is the demo clock the data was generated for.
	Now time.Time
	// Rows are the source row counts per partition: account id → dataset →
	// day (YYYY-MM-DD) → rows the dataset's sqlite query returns for that
	// day's window (account.Window). Every day from the account's start date
	// through today (in its zone) is present, zero-row days included; today
	// is never exported, but its rows are in the source.
	Rows map[string]map[string]map[string]int64
}

// Generate creates (or replaces) the SQLite file at opts.Path and fills it.
// The file is written under a temporary name and renamed into place, so a
// reader never sees a half-written source.
func Generate(ctx context.Context, opts Options) (*Demo, error) {
	if opts.Path == "" {
		return nil, errors.New("demosource: empty path")
	}
	if opts.Days < 0 || opts.EventsPerDay < 0 {
		return nil, fmt.Errorf("demosource: days %d and events per day %d must not be negative", opts.Days, opts.EventsPerDay)
	}
	if opts.Days == 0 {
		opts.Days = DefaultDays
	}
	if opts.EventsPerDay == 0 {
		opts.EventsPerDay = DefaultEventsPerDay
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	opts.Now = opts.Now.UTC().Truncate(time.Microsecond)

	accts, err := demoAccounts(opts)
	if err != nil {
		return nil, err
	}

	dir := filepath.Dir(opts.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("demosource: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(opts.Path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("demosource: %w", err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmpPath)
			os.Remove(tmpPath + "-journal")
		}
	}()

	rows, err := fill(ctx, tmpPath, opts, accts)
	if err != nil {
		return nil, err
	}
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		if err := os.Remove(opts.Path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("demosource: remove stale %s: %w", opts.Path+suffix, err)
		}
	}
	if err := os.Rename(tmpPath, opts.Path); err != nil {
		return nil, fmt.Errorf("demosource: %w", err)
	}
	ok = true
	return &Demo{Accounts: accts, Path: opts.Path, Stage: opts.Stage, Now: opts.Now, Rows: rows}, nil
}
