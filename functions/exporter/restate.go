package main

// Restatement checks (late data). The exporter takes a fingerprint of the
// day in the source right before it reads the rows (Exporter.fingerprint)
// and Complete stores it with the generation. The order is what makes the
// check safe: a change that lands in the source after the fingerprint is
// either read by the export too (the next check then finds a fingerprint
// that differs, and the day is exported once more for nothing) or not (the
// next check finds it and the day is restated); a change can never be in
// the stored fingerprint without being in the exported rows, which is the
// one way it could be missed. A fingerprint taken after the read could
// record a change the rows lack, and hide it for good.
//
// A restate_check message (queued by the sweeper for a completed partition
// of a recently closed day, at most once per interval) runs the fingerprint
// query again; a different hash queues the partition with reason
// restatement (ledger.RequeueRestatement, conditional on the generation and
// the fingerprint compared), and the next sweep re-exports it like any
// queued partition: the new generation replaces the day.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/source"
)

// errNoFingerprint: the source cannot fingerprint a day, or the dataset
// declares no fingerprint query.
var errNoFingerprint = errors.New("no fingerprint for this source and dataset")

// partitionQuery is the source query of a day, as Export builds it.
func partitionQuery(a account.Account, ds dataset.Dataset, day civil.Date) source.Query {
	start, end := a.Window(day)
	return source.Query{AccountID: a.ID, Dataset: ds, Day: civil.Of(day.Start(time.UTC)), Start: start, End: end}
}

// fingerprintOf runs the dataset's fingerprint query for q.
func (e *Exporter) fingerprintOf(ctx context.Context, q source.Query) (source.Summary, error) {
	f, ok := e.Source.(source.Fingerprinter)
	if !ok {
		return source.Summary{}, errNoFingerprint
	}
	v, err := f.Fingerprint(ctx, q)
	if errors.Is(err, dataset.ErrNoFingerprint) {
		return source.Summary{}, fmt.Errorf("%w: %w", errNoFingerprint, err)
	}
	return v, err
}

// fingerprint takes the fingerprint a generation is exported with, right
// before its rows are read (see the top of this file). Without one (the
// source or dataset has none, or the query failed) the export goes on, and
// the generation is simply never checked for late data. rows is the day's
// row count from the same query (source.Summary), -1 when unknown.
func (e *Exporter) fingerprint(ctx context.Context, q source.Query, log *slog.Logger) (fp ledger.Fingerprint, rows int64) {
	at := e.Now().UTC()
	v, err := e.fingerprintOf(ctx, q)
	switch {
	case errors.Is(err, errNoFingerprint):
		return ledger.Fingerprint{}, -1
	case err != nil:
		log.WarnContext(ctx, "fingerprint not taken; this generation will not be checked for late data", "error", err.Error())
		return ledger.Fingerprint{}, -1
	}
	return ledger.Fingerprint{Value: v.Hash, At: at.Truncate(time.Second)}, v.Rows
}

// restatementOf is the restatement a run of claim makes, for its
// manifest: set when the row was queued for a restatement and nothing was
// committed since.
func restatementOf(claim ledger.Claim, files []manifest.File) *manifest.Restatement {
	if !claim.Prev.Restating() {
		return nil
	}
	var rows int64
	for _, f := range files {
		rows += f.Rows
	}
	r := claim.Prev.Restatement
	return &manifest.Restatement{PreviousGeneration: r.PreviousGeneration, PreviousRows: r.PreviousRows, Rows: rows}
}

// restateCheck compares a completed partition's stored fingerprint with
// the source's now and queues a restatement when they differ. A check that
// no longer applies (no such account or row, a disabled account or dataset,
// a day outside the window, a partition that moved on) is dropped; a
// source that cannot be read is logged and checked again next interval.
// Only a ledger error is returned, for SQS to redeliver.
func (s *Service) restateCheck(ctx context.Context, c jobs.RestateCheck, log *slog.Logger) error {
	key := ledger.Key{AccountID: c.AccountID, Dataset: c.Dataset, Day: c.DayValue()}
	log = log.With("account", c.AccountID, "dataset", c.Dataset, "day", c.Day, "generation", c.Generation, "check", "restatement")
	drop := func(why string) error {
		log.InfoContext(ctx, "restatement check dropped: "+why)
		return nil
	}
	acct, err := s.Ledger.GetAccount(ctx, c.AccountID)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return drop("no such account")
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
		return drop("no such partition")
	case err != nil:
		return fmt.Errorf("read %s: %w", key, err)
	case row.State != ledger.StateCompleted || row.Generation != c.Generation:
		return drop(fmt.Sprintf("the partition moved on (%s at generation %d)", row.State, row.Generation))
	case row.Fingerprint.Value == "":
		return drop("its generation was exported without a fingerprint")
	}
	ds, err := dataset.Get(c.Dataset)
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
	case errors.Is(err, ledger.ErrWake): // queued; a sweep finds the row at the account's next wake
		log.WarnContext(ctx, "queued for restatement, but the account was not woken", "error", err.Error())
	case err != nil:
		return fmt.Errorf("queue restatement of %s: %w", key, err)
	}
	log.InfoContext(ctx, "the day changed in the source since its export; queued for restatement",
		"exported_at", row.Fingerprint.At, "rows", row.Rows)
	_ = s.Metrics.Emit(map[string]any{"account": c.AccountID, "dataset": c.Dataset, "day": c.Day},
		metrics.Metric{Name: "RestatementsQueued", Unit: metrics.Count, Value: 1})
	return nil
}
