package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/daybook-dev/daybook/shared/ledger"
)

// Refresher refreshes the account summaries the fleet view reads;
// functionLedger has it.
type Refresher interface {
	StaleSummaries(ctx context.Context, shard, limit int) ([]ledger.StaleMark, ledger.ReadStats, error)
	RefreshMarked(ctx context.Context, m ledger.StaleMark) error
}

var _ Refresher = functionLedger{}

// refreshPerShard bounds the summaries a sweep refreshes per shard of the
// fleet index (ledger.FleetShards of them): a busy hour's changed accounts
// wait a sweep or two rather than lengthen one.
const refreshPerShard = 25

// refreshConcurrency bounds the summaries refreshed at once.
const refreshConcurrency = 8

// withSummaries refreshes the summaries of the accounts changed since the
// last sweeps after each sweep (ledger.FleetShards index queries when none
// changed, then a Query per dataset of each changed account). A failure is
// logged and never fails the sweep: its mark stays for the next one.
type withSummaries struct {
	Runner
	Summaries Refresher
	Log       *slog.Logger
}

func (w withSummaries) Run(ctx context.Context, tick time.Time) (Summary, error) {
	sum, err := w.Runner.Run(ctx, tick)
	n, rerr := refreshSummaries(ctx, w.Summaries)
	switch {
	case rerr != nil:
		w.Log.WarnContext(ctx, "fleet summaries not all refreshed; the next sweep tries again", "refreshed", n, "error", rerr.Error())
	case n > 0:
		w.Log.InfoContext(ctx, "fleet summaries refreshed", "refreshed", n)
	}
	return sum, err
}

// refreshSummaries refreshes the marked summaries of every shard and
// returns how many; it goes on past a failure and returns them all.
func refreshSummaries(ctx context.Context, r Refresher) (int, error) {
	var marks []ledger.StaleMark
	var errs []error
	for sh := range ledger.FleetShards {
		ms, _, err := r.StaleSummaries(ctx, sh, refreshPerShard)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		marks = append(marks, ms...)
	}
	var mu sync.Mutex
	var done int
	var g errgroup.Group
	g.SetLimit(refreshConcurrency)
	for _, m := range marks {
		g.Go(func() error {
			err := r.RefreshMarked(ctx, m)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("summary of %s: %w", m.Account, err))
			} else {
				done++
			}
			return nil
		})
	}
	_ = g.Wait()
	return done, errors.Join(errs...)
}
