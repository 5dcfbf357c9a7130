package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// startMoved acts on an update that moves the account's start date, and
// says what it did on stderr. Earlier: the sweeper materializes only the days
// after those it already has, so the new days (from the new start date to
// the day before the old one, closed days only) are materialized here, for
// every dataset the account had, as backfill, and the account is woken so
// the next sweep claims them. The backfill limit was applied to the new
// start date when the file was checked. Later: nothing is deleted; the days
// before it that the ledger holds are counted and left as they are.
func (a *app) startMoved(ctx context.Context, l *ledger.Ledger, settle time.Duration, old, stored account.Account) error {
	switch {
	case stored.StartDate.Before(old.StartDate):
		closed := stored.WithDefaults(settle).ClosedThrough(a.now())
		to := old.StartDate.AddDays(-1)
		if closed.Before(to) {
			to = closed
		}
		if to.Before(stored.StartDate) {
			fmt.Fprintf(a.stderr, "daybook: start_date moved earlier (%s -> %s); none of the new days is closed yet, so the sweeper materializes them as they close\n", old.StartDate, stored.StartDate)
			return nil
		}
		created := 0
		for _, ds := range stored.Datasets {
			if !slices.Contains(old.Datasets, ds) {
				continue // a new dataset: the sweeper materializes it from the start date
			}
			if d, err := a.catalog.Get(ds); err == nil && d.IsSnapshot() {
				continue // a snapshot dataset: a copy taken now cannot be an older day's
			}
			n, err := l.Schedule().Materialize(ctx, stored.ID, ds, stored.StartDate, to)
			created += n
			if err != nil {
				return fmt.Errorf("account %s is saved, but materializing the days the earlier start_date adds (%s..%s) stopped after %d rows: %w; run daybook retry --account %s --from %s --to %s",
					stored.ID, stored.StartDate, to, created, err, stored.ID, stored.StartDate, to)
			}
		}
		if err := l.Schedule().Wake(ctx, stored.ID, a.now()); err != nil {
			fmt.Fprintf(a.stderr, "daybook: could not wake account %s (%v): the rows are claimed at its next wake time\n", stored.ID, err)
		}
		days := stored.StartDate.DaysUntil(to) + 1
		fmt.Fprintf(a.stderr, "daybook: start_date moved earlier (%s -> %s): %d new ledger rows for %s..%s (%d days of each dataset), due as backfill; the sweeper exports them oldest first, within its caps (daybook status %s shows them)\n",
			old.StartDate, stored.StartDate, created, stored.StartDate, to, days, stored.ID)
	case old.StartDate.Before(stored.StartDate):
		before := stored.StartDate.AddDays(-1)
		total := 0
		for _, ds := range old.Datasets {
			n, err := l.Partitions().Count(ctx, stored.ID, ds, old.StartDate, before)
			if err != nil {
				return err
			}
			total += n
		}
		fmt.Fprintf(a.stderr, "daybook: start_date moved later (%s -> %s): days before it are no longer materialized or re-exported on request; the %d ledger rows of %s..%s stay as they are, and days already delivered stay in the bucket (delete their dt= folders yourself if the customer should not have them)\n",
			old.StartDate, stored.StartDate, total, old.StartDate, before)
	}
	return nil
}
