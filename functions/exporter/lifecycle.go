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
// was made for.
func (g *generation) seedEpochAt(ctx context.Context, started time.Time) int64 {
	seed, ok := g.rec.seed(ctx, g.Claim.AccountID, g.Claim.Dataset, g.log)
	if ok && seed.Counts(g.Claim.Day, started.UTC()) {
		return seed.Epoch
	}
	return 0
}

// seedDayDone counts the generation's day, committed and recorded, for the reseed
// of epoch (0: none) and, once every day is, queues the reseed's
// completion.
func (g *generation) seedDayDone(ctx context.Context, epoch int64) {
	rec, claim, log := g.rec, g.Claim, g.log
	if epoch == 0 || rec.lifecycle == nil {
		return
	}
	seed, err := rec.lifecycle.Ledger.SeedDayDone(ctx, claim.Key, epoch)
	switch {
	case errors.Is(err, ledger.ErrConflict):
		log.InfoContext(ctx, "reseed moved on; this day does not count for it", "seed_epoch", epoch, "reason", err.Error())
		return
	case err != nil:
		log.ErrorContext(ctx, "reseed progress not recorded; the day is rebuilt but the reseed waits for it", "seed_epoch", epoch, "error", err.Error())
		return
	}
	if !seed.Complete() {
		return
	}
	// Every day is rebuilt: finishing rewrites every day's delivery
	// manifest, which is a message of its own (retried until done).
	body, err := jobs.Encode(jobs.ReseedDone{Kind: jobs.KindReseedDone, AccountID: claim.AccountID, Dataset: claim.Dataset, Epoch: seed.Epoch})
	if err == nil {
		err = rec.queue.Send(ctx, jobs.Outgoing{Body: body})
	}
	if err != nil {
		log.ErrorContext(ctx, "every day of the reseed is rebuilt but its completion was not queued; send it by hand",
			"seed_epoch", seed.Epoch, "message", body, "error", err.Error())
		return
	}
	log.InfoContext(ctx, "every day of the reseed is rebuilt; its completion is queued", "seed_epoch", seed.Epoch, "days", seed.Days)
}

// seed reads the reseed state of a reseedable dataset; ok is false when
// there is none, the dataset cannot be reseeded, or it cannot be read (a
// read error is logged: the export itself does not depend on it).
func (rec *recorder) seed(ctx context.Context, accountID, ds string, log *slog.Logger) (ledger.Seed, bool) {
	d, err := rec.catalog.Get(ds)
	if err != nil || !d.Reseedable() || rec.lifecycle == nil {
		return ledger.Seed{}, false
	}
	seed, err := rec.lifecycle.Ledger.Seed(ctx, accountID, ds)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return ledger.Seed{}, false
	case err != nil:
		log.WarnContext(ctx, "reseed state not read", "error", err.Error())
		return ledger.Seed{}, false
	}
	return seed, true
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
