package main

// Reseeds of incremental datasets. `daybook reseed` sends a reseed message;
// the exporter checks it against the account (jobs.CheckReseed), begins a
// seed epoch (ledger.StartReseed), queues every day from the account's
// start date through its last closed day with reason reseed, and rewrites
// every one of those days' delivery manifests, which now say `reseed: true`
// for the dataset. The sweeper exports the queued days like any others; a
// generation whose run began after the epoch did counts (seedEpoch,
// seedDayDone). Once every day is rebuilt, a reseed_done message finishes
// the epoch and rewrites the days' delivery manifests again, clearing the
// flag. Both messages are idempotent, so SQS may redeliver them after a
// crash or an error: a request finds the epoch it began, and only the days
// not rebuilt yet are queued again.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// deliveryConcurrency bounds the delivery manifests a reseed rewrites at
// once.
const deliveryConcurrency = 4

// reseed starts (or, for a redelivered request, continues) a reseed.
func (s *Service) reseed(ctx context.Context, r jobs.Reseed, log *slog.Logger) error {
	r.Dataset = s.Catalog.Current(r.Dataset)
	log = log.With("account", r.AccountID, "dataset", r.Dataset, "request_id", r.RequestID)
	var acct *account.Account
	switch a, err := s.Ledger.GetAccount(ctx, r.AccountID); {
	case err == nil:
		acct = &a
	case !errors.Is(err, ledger.ErrNotFound):
		return fmt.Errorf("get account %s: %w", r.AccountID, err)
	}
	from, through, err := jobs.CheckReseed(s.Catalog, r, acct, jobs.Limits{Now: s.Now()})
	if err != nil {
		return s.reject(ctx, log, "%v", err)
	}
	seed, started, err := s.Lifecycle.Ledger.StartReseed(ctx, ledger.ReseedRequest{AccountID: r.AccountID, Dataset: r.Dataset,
		From: from, Through: through, RequestID: r.RequestID, RequestedBy: r.RequestedBy})
	switch {
	case errors.Is(err, ledger.ErrConflict):
		return s.reject(ctx, log, "%v", err)
	case err != nil:
		return fmt.Errorf("start reseed of %s/%s: %w", r.AccountID, r.Dataset, err)
	}
	log = log.With("seed_epoch", seed.Epoch)
	if !seed.Running() {
		log.InfoContext(ctx, "reseed request already carried out", "state", string(seed.State))
		return nil
	}
	runCtx, cancel := s.runContext(ctx)
	defer cancel()
	queued := 0
	for _, run := range daysLeft(seed) {
		res, err := s.Lifecycle.Ledger.Requeue(runCtx, ledger.RequeueRange{AccountID: r.AccountID, Dataset: r.Dataset, From: run[0], To: run[len(run)-1], Reason: partition.ReasonReseed, RequestedBy: r.RequestedBy})
		queued += res.Queued + res.RerunRequested
		if err != nil {
			return fmt.Errorf("reseed epoch %d of %s/%s: queue %s..%s: %w", seed.Epoch, r.AccountID, r.Dataset, run[0], run[len(run)-1], err)
		}
	}
	days := civil.Range(seed.From, seed.Through)
	if err := s.writeDeliveries(runCtx, *acct, days); err != nil {
		return fmt.Errorf("reseed epoch %d of %s/%s: %w", seed.Epoch, r.AccountID, r.Dataset, err)
	}
	log.InfoContext(ctx, "reseed started: every day is queued and its delivery manifest says reseed",
		"new", started, "from", seed.From.String(), "through", seed.Through.String(), "days", seed.Days, "queued", queued)
	return nil
}

// daysLeft returns the days of the seed not rebuilt yet, as runs of
// consecutive days.
func daysLeft(seed ledger.Seed) [][]civil.Date {
	var runs [][]civil.Date
	for _, d := range civil.Range(seed.From, seed.Through) {
		if _, done := slices.BinarySearchFunc(seed.Done, d, civil.Date.Compare); done {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1][len(runs[n-1])-1].AddDays(1) == d {
			runs[n-1] = append(runs[n-1], d)
			continue
		}
		runs = append(runs, []civil.Date{d})
	}
	return runs
}

// reseedDone finishes a seed epoch whose days are all rebuilt and rewrites
// the days' delivery manifests, which no longer say reseed. A completion of
// an epoch the ledger never had (no such account or reseed, an epoch not
// begun, one with days still to rebuild) is rejected, to the dead-letter
// queue, before anything is written; one of an epoch a newer reseed
// replaced is dropped.
func (s *Service) reseedDone(ctx context.Context, d jobs.ReseedDone, log *slog.Logger) error {
	log = log.With("account", d.AccountID, "dataset", d.Dataset, "seed_epoch", d.Epoch)
	acct, err := s.Ledger.GetAccount(ctx, d.AccountID)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return s.reject(ctx, log, "reseed completion for account_id %q: no such account", d.AccountID)
	case err != nil:
		return fmt.Errorf("get account %s: %w", d.AccountID, err)
	}
	cur, err := s.Lifecycle.Ledger.Seed(ctx, d.AccountID, d.Dataset)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return s.reject(ctx, log, "reseed completion of %s/%s: the dataset was never reseeded", d.AccountID, d.Dataset)
	case err != nil:
		return fmt.Errorf("read the reseed of %s/%s: %w", d.AccountID, d.Dataset, err)
	case d.Epoch > cur.Epoch:
		return s.reject(ctx, log, "reseed completion of %s/%s: epoch %d never began (the reseed is at epoch %d)", d.AccountID, d.Dataset, d.Epoch, cur.Epoch)
	case d.Epoch == cur.Epoch && cur.Running() && !cur.Complete():
		return s.reject(ctx, log, "reseed completion of %s/%s: epoch %d has rebuilt %d of %d days, and its completion is sent only after the last",
			d.AccountID, d.Dataset, d.Epoch, len(cur.Done), cur.Days)
	}
	seed, finished, err := s.Lifecycle.Ledger.FinishReseed(ctx, d.AccountID, d.Dataset, d.Epoch)
	switch {
	case errors.Is(err, ledger.ErrConflict), errors.Is(err, ledger.ErrNotFound):
		log.InfoContext(ctx, "reseed completion dropped: a newer reseed replaced the epoch", "reason", err.Error())
		return nil
	case err != nil:
		return fmt.Errorf("finish reseed epoch %d of %s/%s: %w", d.Epoch, d.AccountID, d.Dataset, err)
	}
	if !acct.Enabled {
		log.InfoContext(ctx, "reseed finished; the account is disabled, so its delivery manifests are left as they are")
		return nil
	}
	// Rewritten also when an earlier delivery of this message finished the
	// epoch and then failed part-way through the manifests.
	runCtx, cancel := s.runContext(ctx)
	defer cancel()
	if err := s.writeDeliveries(runCtx, acct, civil.Range(seed.From, seed.Through)); err != nil {
		return fmt.Errorf("reseed epoch %d of %s/%s finished: %w", d.Epoch, d.AccountID, d.Dataset, err)
	}
	log.InfoContext(ctx, "reseed complete: every day's delivery manifest is rewritten", "finished_now", finished, "days", seed.Days)
	return nil
}

// writeDeliveries rewrites the delivery manifests of days from the ledger,
// a few at a time; it returns the errors of the days it could not write.
func (s *Service) writeDeliveries(ctx context.Context, acct account.Account, days []civil.Date) error {
	rec := s.recorder()
	b, err := s.Exporter.bucketOf(ctx, acct)
	if err != nil {
		b = nil // each day's write fails opening it, and says why
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, deliveryConcurrency)
	)
	for _, d := range days {
		if ctx.Err() != nil {
			mu.Lock()
			errs = append(errs, ctx.Err())
			mu.Unlock()
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := rec.putDelivery(ctx, acct, b, d); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("delivery manifest of %s: %w", d, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Errorf("and %d more", len(errs)-3))
	}
	return errors.Join(errs...)
}
