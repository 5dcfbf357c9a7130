package main

// Restatement checks (late data). The exporter takes a fingerprint of the
// day in the source right before it reads the rows (Exporter.fingerprint,
// in export.go, says why that order makes the check safe) and Complete
// stores it with the generation.
//
// A restate_check message (queued by the sweeper for a completed partition
// of a recently closed day, at most once per interval) runs the fingerprint
// query again; a different hash queues the partition with reason
// restatement (ledger.RequeueRestatement, conditional on the generation and
// the fingerprint compared), and the next sweep re-exports it like any
// queued partition: the new generation replaces the day.
//
// This file is the exporter's one home for restatement: the check message
// (restateCheck) and what a completed generation records for the next
// check (lateData). The ledger's half, the restate index and its
// transitions, is shared/ledger/restate.go; the sweeper's, which queues the
// checks, functions/sweeper/restate.go.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/partition"
)

// restateCheck compares a completed partition's stored fingerprint with
// the source's now and queues a restatement when they differ. A check of
// something the ledger never had (no such account or partition, a
// generation the partition never committed) is rejected, to the
// dead-letter queue; one that no longer applies (a disabled account or
// dataset, a day outside the window, a partition that moved on) is
// dropped; a source that cannot be read is logged and checked again next
// interval. Only a ledger error is returned for SQS to redeliver.
func (s *Service) restateCheck(ctx context.Context, c jobs.RestateCheck, log *slog.Logger) error {
	key := partition.Key{AccountID: c.AccountID, Dataset: c.Dataset, Day: c.DayValue()}
	log = log.With("account", c.AccountID, "dataset", c.Dataset, "day", c.Day, "generation", c.Generation, "check", "restatement")
	drop := func(why string) error {
		log.InfoContext(ctx, "restatement check dropped: "+why)
		return nil
	}
	acct, err := s.Ledger.GetAccount(ctx, c.AccountID)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return s.reject(ctx, log, "restatement check for account_id %q: no such account", c.AccountID)
	case err != nil:
		return fmt.Errorf("get account %s: %w", c.AccountID, err)
	case !acct.Enabled || !slices.Contains(acct.Datasets, c.Dataset):
		return drop("the account or the dataset is disabled")
	case !s.Lifecycle.Restate.InWindow(key.Day, acct.ClosedThrough(s.Now())):
		return drop("the day is outside the lookback window")
	}
	row, err := s.Ledger.Get(ctx, key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return s.reject(ctx, log, "restatement check of %s: the ledger has no row for this partition", key)
	case err != nil:
		return fmt.Errorf("read %s: %w", key, err)
	case c.Generation > row.Generation:
		return s.reject(ctx, log, "restatement check of %s: generation %d was never committed (the partition is at generation %d)", key, c.Generation, row.Generation)
	case row.State != ledger.StateCompleted || row.Generation != c.Generation:
		return drop(fmt.Sprintf("the partition moved on (%s at generation %d)", row.State, row.Generation))
	case row.Fingerprint.Value == "":
		return drop("its generation was exported without a fingerprint")
	}
	ds, err := s.Catalog.Resolve(c.Dataset)
	if err != nil {
		return drop(err.Error())
	}
	now, err := s.Exporter.fingerprintOf(ctx, partitionQuery(acct, ds, key.Day))
	if err != nil {
		log.WarnContext(ctx, "restatement check failed; the day is checked again next interval", "error", err.Error())
		return nil
	}
	_ = s.Metrics.Emit(map[string]any{"account": c.AccountID, "dataset": c.Dataset, "day": c.Day},
		metrics.Metric{Name: "RestateChecks", Unit: metrics.Count, Value: 1})
	if now.Hash == row.Fingerprint.Value {
		log.DebugContext(ctx, "unchanged since its export")
		return nil
	}
	_, err = s.Lifecycle.Ledger.RequeueRestatement(ctx, key, row.Generation, row.Fingerprint.Value)
	switch {
	case errors.Is(err, ledger.ErrConflict), errors.Is(err, ledger.ErrNotFound):
		return drop(err.Error())
	case err != nil:
		return fmt.Errorf("queue restatement of %s: %w", key, err)
	}
	log.InfoContext(ctx, "the day changed in the source since its export; queued for restatement",
		"exported_at", row.Fingerprint.At, "rows", row.Rows)
	_ = s.Metrics.Emit(map[string]any{"account": c.AccountID, "dataset": c.Dataset, "day": c.Day},
		metrics.Metric{Name: "RestatementsQueued", Unit: metrics.Count, Value: 1})
	return nil
}

// lateData fills what a completed generation w records for late data: the
// fingerprint its rows were read with, when to check it again (zero when
// the day is outside the lookback window, or no check is configured), and
// whether it restates the day.
func (g *generation) lateData(res *ledger.Result, w *Written) {
	res.Fingerprint = w.Fingerprint
	res.Restated = w.Manifest.Restatement != nil
	if lc := g.rec.lifecycle; lc != nil && res.Fingerprint.Value != "" {
		now := g.rec.now()
		res.Fingerprint.CheckAt = lc.Restate.CheckAt(g.Claim.Day, g.Account.ClosedThrough(now), now)
	}
}
