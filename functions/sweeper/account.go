package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// handled is one woken account as a sweep handles it.
type handled struct {
	w        ledger.Woken
	a        account.Account // with defaults
	closed   civil.Date      // last closed day at the instant the sweep closes days as of
	start    civil.Date      // first day to export (start date, clamped)
	readAt   time.Time       // when the sweep began reading its rows
	complete bool            // every dataset is materialized through closed
	work     ledger.DueWork
	failed   bool // a read or write for it failed: look again next sweep
	// set by the claim phase
	unclaimed bool      // some due rows were left (budget, claim error, release)
	leaseEnd  time.Time // earliest lease end of its claims and of the live claims that refused one
}

// wakeBy keeps the account's next wake at or before t (a lease end).
func (h *handled) wakeBy(t time.Time) {
	if h.leaseEnd.IsZero() || t.Before(h.leaseEnd) {
		h.leaseEnd = t
	}
}

// claimBudget is how many claims a sweep may make, and whether it draws
// them from the budget concurrent fanned-out sweeps share (a fan-out
// worker) or claims from its own.
type claimBudget struct {
	claims int
	shared bool
}

// sweepInstants are a sweep's two instants: now, its clock (wake times,
// leases, the claim rotation, due ages), and asOf, the instant it closes
// days as of (closesAsOf).
type sweepInstants struct{ now, asOf time.Time }

// sweepAccounts handles woken accounts (materialize the days closed at
// at.asOf, read due work), claims and sends under budget, and sets each
// handled account's next wake time.
func (s *Sweeper) sweepAccounts(ctx context.Context, shards [][]ledger.Woken, b claimBudget, at sweepInstants, sum *Summary, p *problems) {
	now := at.now
	budget := b.claims
	var woken []ledger.Woken
	for _, ws := range shards {
		woken = append(woken, ws...)
	}
	hs := s.prepare(ctx, woken, at, sum, p)

	queues := make([][]ledger.Row, 0, len(hs))
	owner := map[string]*handled{}
	for _, h := range hs {
		owner[h.a.ID] = h
		if len(h.work.Rows) > 0 {
			queues = append(queues, h.work.Rows)
		}
	}
	sum.Budget = budget
	selected := selectRows(queues, budget, rotation(now, len(queues)))
	if len(selected) > 0 && b.shared {
		// The workers of concurrent fanned-out sweeps share one budget: keep
		// the rows granted, the first ones in the order of selection.
		n, err := s.reserve(ctx, budget, len(selected))
		p.add(err)
		selected = selected[:n]
	}
	sum.Capped = sum.Due - len(selected)
	chosen := map[partition.Key]bool{}
	for _, r := range selected {
		chosen[r.Key] = true
	}
	for _, h := range hs {
		for _, r := range h.work.Rows {
			if !chosen[r.Key] {
				h.unclaimed = true
			}
		}
	}

	claims, skipped, retired, liveEnds, claimErrs := s.claim(ctx, selected)
	sum.Claimed, sum.Skipped, sum.Retired = len(claims), skipped, retired
	for id, end := range liveEnds {
		owner[id].wakeBy(end)
	}
	for _, e := range claimErrs {
		owner[e.key.AccountID].unclaimed = true
		p.add(e.err)
	}
	sent, released, unsent, sendErrs := s.send(ctx, claims)
	sum.Enqueued, sum.Released = sent, released
	for _, err := range sendErrs {
		p.add(err)
	}
	for _, c := range claims {
		h := owner[c.AccountID]
		if unsent[c.Key] {
			h.unclaimed = true
		} else {
			h.wakeBy(ledger.LeaseEnd(c.LeaseUntil))
		}
	}
	s.rest(ctx, hs, now, p)
}

// prepare materializes and reads the due work of each woken account,
// AccountConcurrency at a time. An account whose record cannot be read is
// reported and skipped; it stays woken, so every sweep reports it. No
// account is started within Reserve of the deadline: those stay woken for
// the next sweep.
func (s *Sweeper) prepare(ctx context.Context, woken []ledger.Woken, at sweepInstants, sum *Summary, p *problems) []*handled {
	now, asOf := at.now, at.asOf
	var (
		mu  sync.Mutex
		out []*handled
		wg  sync.WaitGroup
		sem = make(chan struct{}, orDefault(s.Config.AccountConcurrency, 32))
	)
	reserve := s.Config.Reserve
	if reserve <= 0 {
		reserve = 60 * time.Second
	}
	dl, hasDeadline := ctx.Deadline()
	for _, w := range woken {
		if w.Err != nil {
			p.add(fmt.Errorf("account %s: skipped: %w", w.ID, w.Err))
			continue
		}
		if !w.Account.Enabled {
			// In the index although disabled (a record changed by hand): never
			// swept; the daily reconcile takes it out.
			s.log().Warn("disabled account in the wake index; skipped", "account", w.ID)
			continue
		}
		sem <- struct{}{}
		if ctx.Err() != nil || hasDeadline && time.Until(dl) < reserve {
			<-sem
			mu.Lock()
			sum.Deferred++
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			h, n, items, errs := s.prepareOne(ctx, w, asOf)
			mu.Lock()
			defer mu.Unlock()
			for _, err := range errs {
				p.add(err)
			}
			sum.Accounts++
			sum.Materialized += n
			sum.ItemsRead += items
			if h.clamped() {
				sum.Clamped++
			}
			sum.Due += len(h.work.Rows)
			if h.work.More {
				sum.CappedAccounts++
			}
			for _, r := range h.work.Rows {
				if _, end := h.a.Window(r.Day); now.After(end) {
					sum.OldestDueAgeSeconds = max(sum.OldestDueAgeSeconds, int64(now.Sub(end).Seconds()))
				}
			}
			out = append(out, h)
		})
	}
	wg.Wait()
	return out
}

func (h *handled) clamped() bool { return h.start.After(h.w.Account.StartDate) }

// prepareOne handles one account up to its due work, with the days closed
// at asOf; it returns the rows created and the items read.
func (s *Sweeper) prepareOne(ctx context.Context, w ledger.Woken, asOf time.Time) (h *handled, created, items int, errs []error) {
	a := w.Account.WithDefaults(s.Config.DefaultSettleDelay)
	h = &handled{w: w, a: a, closed: a.ClosedThrough(asOf)}
	loc, _ := a.Location()
	h.start = a.StartDate
	if earliest := account.EarliestStart(civil.In(asOf, loc), orDefault(s.Config.MaxBackfillDays, envvar.DefaultMaxBackfillDays)); h.start.Before(earliest) {
		h.start = earliest
		s.log().Warn("start date beyond the backfill limit; clamped", "account", a.ID, "start_date", a.StartDate.String(), "clamped_to", earliest.String())
	}
	created, items, err := s.materialize(ctx, h)
	if err != nil {
		h.failed = true
		errs = append(errs, fmt.Errorf("account %s: %w", a.ID, err))
	}
	h.readAt = s.now()
	h.work, err = s.Ledger.DueWork(ctx, a.ID, s.Config.PerAccountCap)
	items += h.work.Stats.Items
	if err != nil {
		h.failed = true
		errs = append(errs, fmt.Errorf("account %s: due: %w", a.ID, err))
	}
	for _, m := range h.work.Malformed {
		errs = append(errs, fmt.Errorf("account %s: due row skipped: %w", a.ID, m))
	}
	if len(h.work.Malformed) > 0 {
		h.unclaimed = true // it stays in the index: report it every sweep
	}
	return h, created, items, errs
}

// closeOf is the instant day closes for the account: its end in the
// account's zone plus the settle delay (L4).
func closeOf(a account.Account, day civil.Date) time.Time {
	_, end := a.Window(day)
	return end.Add(a.SettleDelay.D())
}

// rest sets each handled account's next wake time: now (the next sweep)
// while it has due rows left, days left to materialize or a failure to
// retry; else the earliest of its next day close, its failed rows' next
// attempts, its live claims' lease ends and this sweep's claims' lease ends.
func (s *Sweeper) rest(ctx context.Context, hs []*handled, now time.Time, p *problems) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, orDefault(s.Config.AccountConcurrency, 32))
	for _, h := range hs {
		next := closeOf(h.a, maxDate(h.closed.AddDays(1), h.start))
		for _, t := range []time.Time{h.work.NextAt, h.leaseEnd} {
			if !t.IsZero() && t.Before(next) {
				next = t
			}
		}
		if h.failed || h.unclaimed || h.work.More || !h.complete {
			next = now
		}
		// A sweep for an older tick than the one that recorded the
		// account's closed_through leaves it as it is.
		through := civil.Date{}
		if h.complete && !h.failed && !h.closed.Before(h.w.ClosedThrough) {
			through = h.closed
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := s.Ledger.SetNextWake(ctx, h.w, next, through, h.readAt); err != nil {
				p.add(fmt.Errorf("account %s: next wake: %w", h.a.ID, err))
			}
		})
	}
	wg.Wait()
}

func maxDate(a, b civil.Date) civil.Date {
	if a.After(b) {
		return a
	}
	return b
}
