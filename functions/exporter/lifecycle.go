package main

// What happens to a partition after its export: restatement checks (late
// data, restate.go), reseeds of incremental datasets (reseed.go) and the
// events of committed and stopped partitions (publish.go). Service reaches
// them through a few calls: Process hands their messages to lifecycle, a
// generation's finish fills its late-data fields (lateData, restate.go)
// and seed epoch (seedEpochAt), records and publishes it (record, publish)
// and counts it for a reseed (seedDayDone), and the delivery manifest asks
// annotate.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/outbox"
	"github.com/daybook-dev/daybook/shared/partition"
)

// LifecycleLedger is the part of the ledger restatement checks and reseeds
// use. Every write is conditional (see package ledger).
type LifecycleLedger interface {
	RequeueRestatement(ctx context.Context, key partition.Key, generation int64, exported string) (ledger.Row, error)
	Seed(ctx context.Context, accountID, dataset string) (ledger.Seed, error)
	StartReseed(ctx context.Context, req ledger.ReseedRequest) (ledger.Seed, bool, error)
	SeedDayDone(ctx context.Context, key partition.Key, epoch int64) (ledger.Seed, error)
	FinishReseed(ctx context.Context, accountID, dataset string, epoch int64) (ledger.Seed, bool, error)
	Requeue(ctx context.Context, r ledger.RequeueRange) (ledger.RequeueResult, error)
}

var _ LifecycleLedger = lifecycleLedger{}

// Lifecycle configures restatement checks, reseeds and events. A Service
// without one still exports (and stores fingerprints), but schedules no
// check, refuses lifecycle messages and publishes nothing.
type Lifecycle struct {
	Ledger LifecycleLedger
	// Outbox records and publishes the partition events (changes.go);
	// nil records and publishes nothing.
	Outbox  *outbox.Outbox
	Restate ledger.RestateConfig
}

// lifecycle handles the messages that are neither claimed jobs nor manual
// requests; handled is false for those.
func (s *Service) lifecycle(ctx context.Context, msg jobs.Message, log *slog.Logger) (handled bool, err error) {
	if msg.RestateCheck == nil && msg.Reseed == nil && msg.ReseedDone == nil {
		return false, nil
	}
	if s.Lifecycle == nil || s.Lifecycle.Ledger == nil {
		return true, s.reject(ctx, log, "restatement checks and reseeds are not configured in this exporter")
	}
	switch {
	case msg.RestateCheck != nil:
		return true, s.restateCheck(ctx, *msg.RestateCheck, log)
	case msg.Reseed != nil:
		return true, s.reseed(ctx, *msg.Reseed, log)
	}
	return true, s.reseedDone(ctx, *msg.ReseedDone, log)
}

// seedEpochAt is the seed epoch a generation of the day whose export
// began at started rebuilds its day for: the running reseed's of the
// dataset when the export began after it began, 0 otherwise. A generation
// an earlier run committed (and died before recording) keeps the reseed it
// was made for. The reseed state that cannot be read is an error: recorded
// without its epoch, the day would never count for the reseed.
func (g *generation) seedEpochAt(ctx context.Context, started time.Time) (int64, error) {
	seed, ok, err := g.rec.seed(ctx, g.Claim.AccountID, g.Claim.Dataset)
	if err != nil {
		return 0, err
	}
	if ok && seed.Counts(g.Claim.Day, started.UTC()) {
		return seed.Epoch, nil
	}
	return 0, nil
}

// seedDayDone counts the generation's day, committed and recorded, for the
// reseed of epoch (0: none) and, once every day is, queues the reseed's
// completion. A failure is returned, so that SQS sends the message again:
// the day being at rest then, the message counts it (reseedAtRest).
func (g *generation) seedDayDone(ctx context.Context, epoch int64) error {
	if epoch == 0 || g.rec.lifecycle == nil {
		return nil
	}
	return g.rec.countSeedDay(ctx, g.Claim.Key, epoch, g.log)
}

// reseedAtRest counts a day at rest for the reseed its generation was made
// for (row.SeedEpoch), if the reseed runs and has not counted it, and
// queues the reseed's completion when every day is counted: what the run
// that recorded the generation could not do (seedDayDone) is done by its
// message sent again. Counting a day twice, or queueing the completion
// twice, changes nothing.
func (rec *recorder) reseedAtRest(ctx context.Context, row ledger.Row, log *slog.Logger) error {
	if row.SeedEpoch == 0 || rec.lifecycle == nil {
		return nil
	}
	seed, ok, err := rec.seed(ctx, row.AccountID, row.Dataset)
	if err != nil || !ok || seed.Epoch != row.SeedEpoch || !seed.Running() {
		return err
	}
	if slices.Contains(seed.Done, row.Day) {
		return rec.queueSeedDone(ctx, row.Key, seed, log) // counted: only its completion may be missing
	}
	return rec.countSeedDay(ctx, row.Key, row.SeedEpoch, log)
}

// countSeedDay counts key's day for the reseed of epoch and, once every
// day is counted, queues the reseed's completion.
func (rec *recorder) countSeedDay(ctx context.Context, key partition.Key, epoch int64, log *slog.Logger) error {
	seed, err := rec.lifecycle.Ledger.SeedDayDone(ctx, key, epoch)
	switch {
	case errors.Is(err, ledger.ErrConflict):
		log.InfoContext(ctx, "reseed moved on; this day does not count for it", "seed_epoch", epoch, "reason", err.Error())
		return nil
	case err != nil:
		log.ErrorContext(ctx, "reseed progress not recorded; SQS will send the message again to count the day", "seed_epoch", epoch, "error", err.Error())
		return fmt.Errorf("count %s for reseed epoch %d: %w", key, epoch, err)
	}
	return rec.queueSeedDone(ctx, key, seed, log)
}

// queueSeedDone queues the completion of seed, of key's dataset, once
// every day of it is counted; before that it does nothing.
func (rec *recorder) queueSeedDone(ctx context.Context, key partition.Key, seed ledger.Seed, log *slog.Logger) error {
	if !seed.Complete() {
		return nil
	}
	// Every day is rebuilt: finishing rewrites every day's delivery
	// manifest, which is a message of its own (retried until done).
	body, err := jobs.Encode(jobs.ReseedDone{Kind: jobs.KindReseedDone, AccountID: key.AccountID, Dataset: key.Dataset, Epoch: seed.Epoch})
	if err == nil {
		err = rec.queue.Send(ctx, jobs.Outgoing{Body: body})
	}
	if err != nil {
		log.ErrorContext(ctx, "every day of the reseed is rebuilt but its completion was not queued; SQS will send the message again to queue it",
			"seed_epoch", seed.Epoch, "error", err.Error())
		return fmt.Errorf("queue the completion of reseed epoch %d: %w", seed.Epoch, err)
	}
	log.InfoContext(ctx, "every day of the reseed is rebuilt; its completion is queued", "seed_epoch", seed.Epoch, "days", seed.Days)
	return nil
}

// seed reads the reseed state of a reseedable dataset; ok is false when
// there is none or the dataset cannot be reseeded.
func (rec *recorder) seed(ctx context.Context, accountID, ds string) (ledger.Seed, bool, error) {
	d, err := rec.catalog.Get(ds)
	if err != nil || !d.Reseedable() || rec.lifecycle == nil {
		return ledger.Seed{}, false, nil
	}
	seed, err := rec.lifecycle.Ledger.Seed(ctx, accountID, ds)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return ledger.Seed{}, false, nil
	case err != nil:
		return ledger.Seed{}, false, fmt.Errorf("read the reseed state of %s/%s: %w", accountID, ds, err)
	}
	return seed, true, nil
}

// annotate adds to a delivery manifest status what the ledger row says
// about restatement and reseeds, and whether a reseed runs over the day.
func (rec *recorder) annotate(ctx context.Context, st *manifest.PartitionStatus, accountID string, day civil.Date, row ledger.Row) error {
	if st.Exists {
		if r := row.Restated(); r != nil {
			st.Restatement = &manifest.Restatement{PreviousGeneration: r.PreviousGeneration, PreviousRows: r.PreviousRows, Rows: row.Rows}
		}
		st.SeedEpoch = row.SeedEpoch
	}
	if rec.lifecycle == nil || st.Dataset == nil || !st.Dataset.Reseedable() {
		return nil
	}
	seed, err := rec.lifecycle.Ledger.Seed(ctx, accountID, st.Name)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("delivery manifest: reseed of %s/%s: %w", accountID, st.Name, err)
	}
	st.Reseed = seed.Covers(day)
	return nil
}
