package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/envvar"
)

// materialize creates the account's rows for the closed days since its
// last materialization, at most MaterializeRows per sweep, and advances each
// dataset's watermark through the days it created contiguously (L4, L6). It
// sets h.complete when every dataset is materialized through h.closed. It
// returns the rows created and the items read.
//
// The watermarks are read only when the account has no closed_through (a
// new or changed account, or a backfill in progress); otherwise every
// dataset's watermark is known to be at least that day.
func (s *Sweeper) materialize(ctx context.Context, h *handled) (int, int, error) {
	a := h.a
	if h.closed.Before(h.start) || !h.w.ClosedThrough.IsZero() && !h.w.ClosedThrough.Before(h.closed) {
		h.complete = true // nothing closed since (or before the start date)
		return 0, 0, nil
	}
	froms := make([]civil.Date, len(a.Datasets))
	keys := ledgerNames(s.Catalog, a.Datasets)
	items := 0
	if ct := h.w.ClosedThrough; !ct.IsZero() && !ct.Before(h.start.AddDays(-1)) {
		for i := range froms {
			froms[i] = maxDate(ct.AddDays(1), h.start)
		}
		// A dataset at a later contract may be new since closed_through
		// was written (a catalog change, not an account change): its own
		// watermark says, one read per such dataset.
		for i, key := range keys {
			if key == a.Datasets[i] {
				continue
			}
			wm, err := s.Ledger.Watermark(ctx, a.ID, key)
			items++
			if err != nil {
				return 0, items, fmt.Errorf("dataset %s: watermark: %w", key, err)
			}
			froms[i] = h.start
			if !wm.IsZero() && !wm.Before(h.start) {
				froms[i] = wm.AddDays(1)
			}
		}
	} else {
		var errs []error
		for i, ds := range keys {
			wm, err := s.Ledger.Watermark(ctx, a.ID, ds)
			items++
			if err != nil {
				errs = append(errs, fmt.Errorf("dataset %s: watermark: %w", ds, err))
				continue
			}
			froms[i] = h.start
			if !wm.IsZero() && !wm.Before(h.start) {
				froms[i] = wm.AddDays(1)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return 0, items, err
		}
	}
	// A snapshot dataset's copy can only be taken now: it is the newest
	// closed day's, and the days before it (a new account's history, or
	// days a stopped sweeper missed) are never created, or each would be
	// today's table labelled as an older day.
	for i, ds := range a.Datasets {
		if d, err := s.Catalog.Get(ds); err == nil && d.IsSnapshot() && froms[i].Before(h.closed) {
			froms[i] = h.closed
		}
	}
	// The newest closed day of a live account (one that closed after the
	// account was created) goes first and in the scheduled class (L6); for
	// a new account every closed day is history, a backfill.
	priority := civil.Date{}
	if a.CreatedAt.IsZero() || closeOf(a, h.closed).After(a.CreatedAt) {
		priority = h.closed
	}
	plan := planChunks(froms, h.closed, priority, orDefault(s.Config.MaterializeRows, defaultMaterializeRows))

	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		created int
		errs    []error
	)
	h.complete = true
	for i, ds := range keys {
		c := plan[i]
		if froms[i].Before(h.closed.AddDays(1)) && c.through.Before(h.closed) {
			h.complete = false
		}
		if len(c.days) == 0 {
			continue
		}
		wg.Go(func() {
			n, err := s.Ledger.MaterializeDays(ctx, a.ID, ds, c.days, priority)
			if err == nil && !c.through.IsZero() {
				_, err = s.Ledger.AdvanceWatermark(ctx, a.ID, ds, c.through)
			}
			mu.Lock()
			defer mu.Unlock()
			created += n
			if err != nil {
				errs = append(errs, fmt.Errorf("dataset %s: materialize %s..%s: %w", ds, c.days[0], c.days[len(c.days)-1], err))
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		h.complete = false
	}
	return created, items, errors.Join(errs...)
}

const defaultMaterializeRows = envvar.DefaultMaterializeRowsPerAccount

// chunk is what one sweep materializes of one dataset: days, and through,
// the day its watermark may advance to (zero: no advance).
type chunk struct {
	days    []civil.Date
	through civil.Date
}

// planChunks plans the rows of one account's datasets, each to be
// materialized from froms[i] through closed, within budget rows: first the
// priority day of every dataset that lacks it, then the backfill oldest day
// first, one day per dataset in turn, so the datasets advance together and
// none stalls behind another. A dataset's watermark advances through the
// days it gets contiguously from its from (the priority day included once
// they join).
func planChunks(froms []civil.Date, closed, priority civil.Date, budget int) []chunk {
	out := make([]chunk, len(froms))
	cursor := make([]civil.Date, len(froms))
	hasPrio := make([]bool, len(froms))
	copy(cursor, froms)
	for i, from := range froms {
		if budget > 0 && !priority.IsZero() && !priority.Before(from) && !priority.After(closed) {
			out[i].days = append(out[i].days, priority)
			hasPrio[i] = true
			budget--
		}
	}
	for progress := true; budget > 0 && progress; {
		progress = false
		for i := range froms {
			if hasPrio[i] && cursor[i] == priority {
				cursor[i] = cursor[i].AddDays(1) // already planned
			}
			if budget == 0 || cursor[i].After(closed) {
				continue
			}
			out[i].days = append(out[i].days, cursor[i])
			cursor[i] = cursor[i].AddDays(1)
			budget--
			progress = true
		}
	}
	for i, from := range froms {
		if hasPrio[i] && cursor[i] == priority {
			cursor[i] = cursor[i].AddDays(1)
		}
		if last := cursor[i].AddDays(-1); !last.Before(from) {
			out[i].through = last
		}
	}
	return out
}

// ledgerNames are the ledger names of the account's datasets: a dataset at
// a later contract than v1 has rows of its own (dataset.LedgerName).
func ledgerNames(catalog *dataset.Set, names []string) []string {
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = n
		if d, err := catalog.Get(n); err == nil {
			keys[i] = d.LedgerName()
		}
	}
	return keys
}
