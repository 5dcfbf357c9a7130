package main

// One run of a partition is one value: a run, built once per claimed job,
// slice and commit of a sliced day, owns what every step and every outcome
// of the run needs (the partition, its claim and account, the run id, when
// it began, its logger). A job's run reads its account, exports (the
// Exporter returns what it committed, or the plan of slices it decided on)
// and records the outcome: failed or finish.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/upload"
)

// run is one run of a claimed partition. Its Partition is what the
// Exporter is given; Account and Dataset are set once read (a run that
// failed before may have neither).
type run struct {
	s *Service
	Partition
	began time.Time // when the export of the partition began
	log   *slog.Logger
}

var _ CommitNoter = (*run)(nil)

// newRun is the run id's run of claim, begun at began, logging with its run
// id, attempt and reason.
func (s *Service) newRun(claim ledger.Claim, id string, began time.Time, log *slog.Logger) *run {
	return &run{s: s, Partition: Partition{Day: claim.Day, Claim: claim, RunID: id}, began: began,
		log: log.With("run_id", id, "attempt", claim.Attempt, "reason", string(claim.Reason))}
}

// export runs one claimed partition and records the outcome in the ledger.
// An export failure is recorded (with backoff) and the message is done:
// retries are the ledger's job, SQS redelivery is only for crashes (E4).
func (s *Service) export(ctx context.Context, claim ledger.Claim, log *slog.Logger) error {
	id, err := s.runID()
	if err != nil {
		return err
	}
	r := s.newRun(claim, id, s.Now(), log)
	// The export gets the invocation's time less a reserve; the ledger writes
	// after it get a fresh context, so a timeout is recorded, not lost.
	runCtx, cancel := s.runContext(ctx)
	defer cancel()
	w, err := r.export(runCtx)
	ctx, done := finishContext(ctx)
	defer done()
	if err != nil {
		// A run refused by a fence is not due again before it ends.
		return r.failedAfter(ctx, err, fenceOf(err))
	}
	if w.Planned != nil {
		return nil // the slices export the day, and the last commits it (slices.go)
	}
	return r.finish(ctx, w)
}

// runContext ends the export Reserve before the invocation's deadline.
func (s *Service) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-s.reserve()))
}

func (s *Service) reserve() time.Duration {
	if s.Reserve == 0 {
		return DefaultReserve
	}
	return s.Reserve
}

// DefaultReserve covers an abort (upload.AbortTimeout), the ledger writes
// (finishTimeout) and a margin.
const DefaultReserve = upload.AbortTimeout + finishTimeout + 5*time.Second

const finishTimeout = 15 * time.Second

// finishContext outlives a cancelled export for the ledger writes that
// record its outcome, bounded so it cannot hang an invocation.
func finishContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
}

func (s *Service) runID() (string, error) {
	var b [6]byte
	r := s.Rand
	if r == nil {
		r = rand.Reader
	}
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return "run_" + s.Now().UTC().Format("20060102T150405Z") + "_" + hex.EncodeToString(b[:]), nil
}

// export reads the run's account and exports the partition; a day the
// Exporter plans in slices is recorded and its slices sent (planSlices).
func (r *run) export(ctx context.Context) (*Written, error) {
	acct, err := r.s.Ledger.GetAccount(ctx, r.Claim.AccountID)
	r.Account = acct
	switch {
	case err != nil:
		return nil, fmt.Errorf("account %s: %w", r.Claim.AccountID, err)
	case !acct.Enabled:
		// Claimed before the account was disabled: record it, write nothing.
		return nil, fmt.Errorf("account %s is disabled", r.Claim.AccountID)
	}
	if r.Dataset, err = r.s.Catalog.Resolve(r.Claim.Dataset); err != nil {
		return nil, err
	}
	// A slice of an earlier attempt may outlive it: nothing is written
	// until it cannot (its lease).
	if err := r.fence(ctx); err != nil {
		return nil, err
	}
	r.Noter = r
	w, err := r.s.Exporter.Export(ctx, r.Partition, r.log)
	if err != nil || w.Planned == nil {
		return w, err
	}
	if err := r.planSlices(ctx, *w.Planned); err != nil {
		return nil, fmt.Errorf("plan %d slices: %w", w.Planned.Slices, err)
	}
	return w, nil
}

// NoteCommitted records a generation the run found committed in the bucket
// without a Complete (Committer.Begin), under the run's claim.
// Its change-log entry and event are recovered first (changes.go).
func (r *run) NoteCommitted(ctx context.Context, generation int64) error {
	if err := r.recoverCommitted(ctx, generation); err != nil {
		return err
	}
	return r.s.Ledger.NoteCommitted(ctx, r.Claim.Key, r.Claim.Token, generation)
}

// fenced refuses a run of a partition while a slice of an earlier plan may
// still write into it, until its lease ends: the refused run's next attempt
// is not due before then.
type fenced struct{ until time.Time }

func (f fenced) Error() string {
	return "a slice of an earlier attempt may still be writing into the partition until its lease ends at " + f.until.UTC().Format(time.RFC3339)
}

// fenceOf is the end of the fence err carries, zero for any other error.
func fenceOf(err error) time.Time {
	var f fenced
	if errors.As(err, &f) {
		return f.until
	}
	return time.Time{}
}

// fence refuses the run while a slice of an earlier plan may still write
// into the partition (ledger.SliceFence). A partition never planned in
// slices (its row not SlicePlanned) has none: no query.
func (r *run) fence(ctx context.Context) error {
	if !r.Claim.Prev.SlicePlanned {
		return nil
	}
	until, err := r.s.Ledger.SliceFence(ctx, r.Claim.Key, r.Claim.Token)
	if err != nil {
		return fmt.Errorf("read the slices of %s: %w", r.Claim.Key, err)
	}
	if !until.IsZero() {
		return fenced{until: until}
	}
	return nil
}

// failed records a failed export of the run's claim (with backoff; retries
// are the ledger's job) and rewrites the day's delivery manifest. The
// message is done unless the failure could not be recorded.
func (r *run) failed(ctx context.Context, err error) error {
	return r.failedAfter(ctx, err, time.Time{})
}

// failedAfter is failed with the next attempt no earlier than notBefore.
func (r *run) failedAfter(ctx context.Context, err error, notBefore time.Time) error {
	s, claim, log := r.s, r.Claim, r.log
	props := map[string]any{"account": claim.AccountID, "dataset": claim.Dataset, "day": claim.Day.String(), "generation": claim.Generation, "run_id": r.RunID}
	fail := newFailure(err)
	row, ferr := s.Ledger.FailAfter(ctx, claim.Key, claim.Token, fail, notBefore)
	switch {
	case errors.Is(ferr, ledger.ErrClaimLost):
		log.WarnContext(ctx, "export failed and the claim was lost meanwhile", "error", err.Error(), "code", string(fail.code))
		return nil
	case ferr != nil:
		return fmt.Errorf("record failure of %s (%v): %w", claim.Key, fail, ferr)
	}
	log.ErrorContext(ctx, "export failed", "error", err.Error(), "code", string(fail.code), "attempts", row.Attempts,
		"next_attempt_at", row.NextAttemptAt, "stopped", row.Stopped)
	// PartitionsStopped is the sweeper's gauge; a failure is an event.
	_ = s.Metrics.Emit(props, metrics.Metric{Name: "PartitionFailures", Unit: metrics.Count, Value: 1})
	if r.Account.ID != "" && r.Account.Enabled {
		return s.writeDelivery(ctx, r.Account, claim.Day, log)
	}
	return nil
}

// finish records the committed generation w (Complete under the claim),
// reports it and rewrites the day's delivery manifest.
func (r *run) finish(ctx context.Context, w *Written) error {
	s, claim, log := r.s, r.Claim, r.log
	took := s.Now().Sub(r.began)
	res := ledger.Result{
		Rows: w.Manifest.Totals.Rows, Bytes: w.Bytes, Files: w.Manifest.Totals.Files,
		ManifestKey: w.ManifestKey, Duration: took, Generation: w.Manifest.Generation, TableError: w.TableError,
	}
	r.lateData(&res, w)
	res.SeedEpoch = r.seedEpoch(ctx)
	// The generation is in the bucket whatever Complete says: its
	// change-log entry and event are recorded first (changes.go), and the
	// event goes out after; the reseed counts the day once Complete
	// recorded it.
	ev, err := r.recordCommitted(ctx, r.committedDetail(w.Manifest.Generation, w.Manifest, w.ManifestKey, w.Bytes, res.SeedEpoch))
	if err != nil {
		return r.failed(ctx, fmt.Errorf("generation %d committed: %w", w.Manifest.Generation, err))
	}
	_, err = s.Ledger.Complete(ctx, claim.Key, claim.Token, res)
	r.deliver(ctx, ev)
	if err == nil {
		r.seedDayDone(ctx, res.SeedEpoch)
	}
	if errors.Is(err, ledger.ErrClaimLost) {
		log.WarnContext(ctx, "partition committed but the claim expired meanwhile; the newer claim will commit again")
		return nil
	}
	if err != nil {
		return fmt.Errorf("complete %s: %w", claim.Key, err)
	}
	props := map[string]any{"account": claim.AccountID, "dataset": claim.Dataset, "day": claim.Day.String(), "generation": w.Manifest.Generation, "run_id": r.RunID}
	log.InfoContext(ctx, "partition exported", "generation", w.Manifest.Generation, "rows", w.Manifest.Totals.Rows, "bytes", w.Bytes, "duration_ms", took.Milliseconds())
	ms := []metrics.Metric{
		{Name: "PartitionsExported", Unit: metrics.Count, Value: 1},
		{Name: "RowsExported", Unit: metrics.Count, Value: float64(w.Manifest.Totals.Rows)},
		{Name: "BytesExported", Unit: metrics.Bytes, Value: float64(w.Bytes)},
		{Name: "ExportDuration", Unit: metrics.Seconds, Value: took.Seconds()}}
	if w.Unregistered {
		ms = append(ms, metrics.Metric{Name: "GlueRegistrationFailures", Unit: metrics.Count, Value: 1})
	}
	if w.TableError != "" {
		ms = append(ms, metrics.Metric{Name: metrics.TableBrokenDeliveries, Unit: metrics.Count, Value: 1})
	}
	_ = s.Metrics.Emit(props, ms...)
	return s.writeDelivery(ctx, r.Account, claim.Day, log)
}
