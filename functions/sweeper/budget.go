package main

import (
	"context"
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// Capacity describes the exporters the claim budget follows (L6).
type Capacity struct {
	// ExporterConcurrency is the most exporters running at once (the jobs
	// event source's maximum concurrency).
	ExporterConcurrency int
	// ExporterTimeout is the exporter's timeout: the export duration assumed
	// until enough exports were recorded.
	ExporterTimeout time.Duration
	// Interval is the time between scheduled sweeps; Lease the claim lease.
	Interval, Lease time.Duration
	// MinSamples is how many recorded exports make a mean (default 5).
	MinSamples int64
}

// Budget returns how many rows a sweep may claim, given the mean export
// duration (zero: unknown) and the jobs already waiting or running:
//
//	horizon  = min(Interval, Lease)
//	capacity = ExporterConcurrency × horizon / mean      (mean: ExporterTimeout if unknown)
//	budget   = min(perSweepCap, max(0, capacity − waiting))
//
// Every job claimed can then start before the next sweep claims more and
// before its lease ends: the queue never holds more than the exporters can
// run in time, and a job never waits so long that its claim is taken over.
func (c Capacity) Budget(mean time.Duration, waiting, perSweepCap int) int {
	if mean <= 0 {
		mean = c.ExporterTimeout
	}
	mean = max(mean, time.Second)
	horizon := min(c.Interval, c.Lease)
	capacity := int64(c.ExporterConcurrency) * int64(horizon) / int64(mean)
	return int(max(0, min(int64(perSweepCap), capacity-int64(waiting))))
}

// budget is the sweep's claim budget: PerSweepCap without a capacity model,
// else Capacity.Budget with the exports recorded in the ledger and the jobs
// queue's depth. When the depth cannot be read it is 0: better a sweep that
// claims nothing than one that floods the queue.
func (s *Sweeper) budget(ctx context.Context, stats ledger.FleetStats) (int, error) {
	c := s.Config.Capacity
	if c == nil {
		return s.Config.PerSweepCap, nil
	}
	mean, ok := stats.MeanExport(cmpOr(c.MinSamples, 5))
	if !ok {
		mean = 0
	}
	waiting, err := s.queueDepth(ctx)
	if err != nil {
		return 0, fmt.Errorf("claim budget: %w", err)
	}
	b := c.Budget(mean, waiting, s.Config.PerSweepCap)
	s.log().Info("claim budget", "budget", b, "exporter_concurrency", c.ExporterConcurrency,
		"mean_export_ms", mean.Milliseconds(), "exports_sampled", stats.Exports, "waiting_jobs", waiting,
		"horizon_s", min(c.Interval, c.Lease).Seconds(), "per_sweep_cap", s.Config.PerSweepCap)
	return b, nil
}

// queueDepth returns the jobs queue's messages waiting, in flight and delayed.
func (s *Sweeper) queueDepth(ctx context.Context) (int, error) {
	n, err := jobs.Depth(ctx, s.Queue, s.Config.QueueURL, jobs.Waiting, jobs.InFlight, jobs.Delayed)
	if err != nil {
		return 0, fmt.Errorf("jobs queue depth: %w", err)
	}
	return n, nil
}

func cmpOr(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

// reserve draws want claims from the budget shared by concurrent sweeps
// (Config.BudgetWindow), opening it with total if none is open; without a
// window every claim wanted is granted. A reservation that fails grants
// nothing: better a sweep that claims nothing than two that claim twice.
func (s *Sweeper) reserve(ctx context.Context, total, want int) (int, error) {
	if s.Config.BudgetWindow <= 0 {
		return want, nil
	}
	scope := s.Config.BudgetScope
	if scope == "" {
		scope = "claims"
	}
	n, err := s.Ledger.ReserveClaims(ctx, scope, s.Config.BudgetWindow, total, want)
	if err != nil {
		return 0, fmt.Errorf("claim budget: %w", err)
	}
	return n, nil
}
