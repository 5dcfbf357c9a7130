package main

// Days larger than one exporter run (E7). A Lambda stops at 15 minutes; a
// day whose expected size passes ExportConfig.SliceRows is exported in
// slices, time ranges of the day's window, each on its own invocation:
//
//  1. the partition's run (a claimed job or a manual request) begins the
//     generation as any export does (the old _SUCCESS is removed), takes
//     the day's fingerprint, whose first column is its row count (or, with
//     none, uses the previous generation's rows), and when that passes the
//     target it plans n slices (ledger.PlanSlices, under the partition's
//     claim) and sends one slice message per slice to its own queue; the
//     partition stays running;
//  2. each slice message claims its slice in the ledger (StartSlice, with
//     a lease and an attempt, renewing the partition's lease), writes the
//     rows of its range into part-sNNNN-MMMMM files of the generation, and
//     records them (CompleteSlice). A slice that fails is recorded
//     (FailSlice) and sent again after the ledger's backoff: it is retried
//     alone. One that dies is taken over when its message comes back after
//     its lease. A slice out of attempts fails the partition's attempt,
//     which the sweeper retries as any failed partition, with a new plan;
//  3. the run that completes the last slice claims the commit
//     (ClaimSliceCommit: one run, even when slices finish together) and
//     commits the partition once: stale deletion, one _manifest.json listing
//     every slice's files in slice order, load scripts, _SUCCESS last, then
//     Complete under the partition's claim. A second delivery of a completed
//     slice's message tries the commit again, so a commit whose run died is
//     finished by the redelivery.
//
// The commit invariant holds throughout: no _SUCCESS exists between the
// plan and the commit, and the commit deletes whatever a failed slice
// attempt left that the manifest does not list.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/source"
)

// SliceLedger is the part of the ledger sliced partitions use. Every write
// is conditional on the partition's claim token (and a slice's run token).
type SliceLedger interface {
	PlanSlices(ctx context.Context, plan ledger.SlicePlan) error
	StartSlice(ctx context.Context, key ledger.Key, token string, i int) (ledger.Slice, error)
	CompleteSlice(ctx context.Context, key ledger.Key, token string, i int, run string, res ledger.SliceResult) error
	FailSlice(ctx context.Context, key ledger.Key, token string, i int, run string, cause error) (ledger.Slice, error)
	SlicesOf(ctx context.Context, key ledger.Key) (ledger.SlicePlan, []ledger.Slice, error)
	ClaimSliceCommit(ctx context.Context, key ledger.Key, token string) (string, error)
	HeldClaim(ctx context.Context, key ledger.Key, token string) (ledger.Claim, error)
	Backoff(attempt int) (time.Duration, error)
}

var _ SliceLedger = (*ledger.Ledger)(nil)

// Defaults of ExportConfig.SliceRows and MaxSlices. 200M events rows take
// about a quarter of a 15-minute run at the measured speed on one vCPU (see
// docs/performance.md), which leaves room for a slower source, a smaller
// function and an uneven slice.
const (
	DefaultSliceRows int64 = 200_000_000
	DefaultMaxSlices       = 100
)

// maxSliceDelay is SQS's longest message delay, the cap of a slice's
// backoff.
const maxSliceDelay = 15 * time.Minute

// planFor decides whether the day is exported in slices: its dataset is
// partitioned on a timestamp, and its expected rows (the fingerprint's row
// count, else the previous generation's rows) pass SliceRows. The number of
// slices is the expected rows over SliceRows, rounded up, at most MaxSlices.
func (e *Exporter) planFor(p Partition, generation, rows int64, fp ledger.Fingerprint, started time.Time) (ledger.SlicePlan, bool) {
	target := e.Config.SliceRows
	if target <= 0 || !p.Dataset.Sliceable() {
		return ledger.SlicePlan{}, false
	}
	expected := rows
	if expected < 0 {
		expected = p.Claim.Prev.Rows
	}
	if expected <= target {
		return ledger.SlicePlan{}, false
	}
	maxSlices := e.Config.MaxSlices
	if maxSlices <= 0 {
		maxSlices = DefaultMaxSlices
	}
	n := int(min((expected+target-1)/target, int64(min(maxSlices, ledger.MaxSlices))))
	if n < 2 {
		return ledger.SlicePlan{}, false
	}
	return ledger.SlicePlan{Key: p.Claim.Key, Token: p.Claim.Token, Generation: generation, Slices: n, RunID: p.RunID,
		StartedAt: started, ExpectedRows: expected, Fingerprint: fp}, true
}

// sliceQuery is slice i of n of q: the i-th of n equal time ranges of its
// window, in whole microseconds (the timestamps' precision), contiguous and
// half-open, so every row of the window is in exactly one slice.
func sliceQuery(q source.Query, i, n int) source.Query {
	lo, hi := q.Start.UnixMicro(), q.End.UnixMicro()
	at := func(k int) time.Time {
		if k == n {
			return q.End
		}
		return time.UnixMicro(lo + (hi-lo)*int64(k)/int64(n)).UTC()
	}
	q.Start, q.End = at(i), at(i+1)
	return q
}

// sliceOutput is what a completed slice records in the ledger (as JSON):
// its files, in order, and where its rows came from.
type sliceOutput struct {
	Files      []manifest.File   `json:"files"`
	Provenance source.Provenance `json:"provenance"`
}

// ExportSlice writes slice sl of the partition: the rows of its range of
// the day into the generation's part-sNNNN files. It commits nothing: the
// files are listed by the commit of the last slice. A slice without rows
// writes no file, except slice 0, so that a committed day always has one.
func (e *Exporter) ExportSlice(ctx context.Context, p Partition, sl ledger.Slice) (sliceOutput, error) {
	t, err := e.targetOf(p)
	if err != nil {
		return sliceOutput{}, err
	}
	pending := t.committer.Resume(sl.Generation)
	defer pending.Abort(ctx)
	q := sliceQuery(partitionQuery(p.Account, p.Dataset, p.Day), sl.Index, sl.Slices)
	files, prov, err := e.writeData(ctx, pending, p, t.format, q, sl.Index == 0, func(n int) string {
		return layout.SliceDataKey(t.prefix, p.Dataset.Name, p.Day, sl.Index, n, t.format.Extension())
	})
	return sliceOutput{Files: files, Provenance: prov}, err
}

// CommitSlices commits the generation of plan with every slice's files, in
// slice order (sls as ledger.SlicesOf returns them, all completed).
func (e *Exporter) CommitSlices(ctx context.Context, p Partition, plan ledger.SlicePlan, sls []ledger.Slice, log *slog.Logger) (*Written, error) {
	t, err := e.targetOf(p)
	if err != nil {
		return nil, err
	}
	// The plan's claim held the partition since the plan, so a _SUCCESS of
	// its generation is this plan's own commit, by a run that died before
	// Complete: it is recorded, not written again.
	if m, err := t.committer.Committed(ctx, plan.Generation); err != nil || m != nil {
		if m != nil {
			log.InfoContext(ctx, "the slices were committed by a run that stopped before recording it", "generation", m.Generation)
			return &Written{Manifest: m, ManifestKey: t.committer.manifestKey(), Bytes: m.Totals.Bytes, Fingerprint: plan.Fingerprint}, nil
		}
		return nil, err
	}
	var (
		files []manifest.File
		prov  source.Provenance
	)
	for _, sl := range sls {
		var out sliceOutput
		if err := json.Unmarshal([]byte(sl.Files), &out); err != nil {
			return nil, fmt.Errorf("slice %d's files in the ledger: %w", sl.Index, err)
		}
		files = append(files, out.Files...)
		prov = mergeProvenance(prov, out.Provenance, sl.Index == 0)
	}
	pending := t.committer.Resume(plan.Generation)
	return e.commit(ctx, t, pending, p, plan.StartedAt, files, prov, plan.Fingerprint, log)
}

// mergeProvenance adds a slice's provenance to the day's: the window spans
// the slices', the snapshot is the earliest read's start (rows that reached
// the source after it may be in a later slice or not; the fingerprint taken
// before the plan is what the late-data check compares), rows add up.
func mergeProvenance(day, sl source.Provenance, first bool) source.Provenance {
	if first {
		return sl
	}
	if sl.WindowStart.Before(day.WindowStart) {
		day.WindowStart = sl.WindowStart
	}
	if sl.WindowEnd.After(day.WindowEnd) {
		day.WindowEnd = sl.WindowEnd
	}
	if sl.SnapshotAt.Before(day.SnapshotAt) {
		day.SnapshotAt = sl.SnapshotAt
	}
	if sl.FinishedAt.After(day.FinishedAt) {
		day.FinishedAt = sl.FinishedAt
	}
	day.RowCount += sl.RowCount
	return day
}

// planSlices records the plan and sends one message per slice to the
// exporter's queue. A failure leaves the partition's run to fail: its
// slices then find the claim gone and stop.
func (s *Service) planSlices(ctx context.Context, plan ledger.SlicePlan, log *slog.Logger) error {
	if err := s.Ledger.PlanSlices(ctx, plan); err != nil {
		return err
	}
	for i := 0; i < plan.Slices; i += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for k := i; k < min(i+10, plan.Slices); k++ {
			body, err := jobs.Encode(sliceMessage(plan.Key, plan.Token, plan.Generation, k, plan.Slices))
			if err != nil {
				return err
			}
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(k)), MessageBody: aws.String(body)})
		}
		if err := s.sendBatch(ctx, entries); err != nil {
			return fmt.Errorf("send slices: %w", err)
		}
	}
	log.InfoContext(ctx, "partition planned in slices", "slices", plan.Slices, "expected_rows", plan.ExpectedRows, "generation", plan.Generation)
	return nil
}

func sliceMessage(key ledger.Key, token string, generation int64, i, n int) jobs.Slice {
	return jobs.Slice{Kind: jobs.KindSlice, AccountID: key.AccountID, Dataset: key.Dataset, Day: key.Day.String(),
		ClaimToken: token, Generation: generation, Slice: i, Slices: n}
}

// sendBatch puts up to 10 messages on the jobs queue.
func (s *Service) sendBatch(ctx context.Context, entries []sqstypes.SendMessageBatchRequestEntry) error {
	out, err := s.Queue.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.QueueURL), Entries: entries})
	if err != nil {
		return err
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("%d of %d messages not sent: %s: %s", len(out.Failed), len(entries), aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
	}
	return nil
}

// slice runs one slice message (see the top of this file).
func (s *Service) slice(ctx context.Context, m jobs.Slice, log *slog.Logger) error {
	key := ledger.Key{AccountID: m.AccountID, Dataset: m.Dataset, Day: m.DayValue()}
	log = log.With("account", m.AccountID, "dataset", m.Dataset, "day", m.Day, "generation", m.Generation, "slice", m.Slice, "slices", m.Slices)
	sl, err := s.Ledger.StartSlice(ctx, key, m.ClaimToken, m.Slice)
	switch {
	case errors.Is(err, ledger.ErrSliceDone):
		// A second delivery. The run that completed it may have died
		// before the commit: try it.
		return s.commitSlices(ctx, key, m.ClaimToken, log)
	case errors.Is(err, ledger.ErrClaimLost), errors.Is(err, ledger.ErrConflict):
		log.InfoContext(ctx, "slice is running, or its plan is gone; dropping this delivery", "reason", err.Error())
		return nil
	case errors.Is(err, ledger.ErrExhausted):
		// Its run died on the last attempt.
		return s.failSliced(ctx, key, m.ClaimToken, err, log)
	case err != nil:
		return fmt.Errorf("start slice %d of %s: %w", m.Slice, key, err)
	}
	if sl.Generation != m.Generation || sl.Slices != m.Slices {
		log.WarnContext(ctx, "slice message does not match its plan; dropping it", "plan_generation", sl.Generation, "plan_slices", sl.Slices)
		return nil
	}
	runID, err := s.runID()
	if err != nil {
		return err
	}
	log = log.With("run_id", runID, "slice_attempt", sl.Attempts)
	runCtx, cancel := s.runContext(ctx)
	defer cancel()
	ds, err := dataset.Get(key.Dataset)
	if err != nil {
		return err
	}
	acct, err := s.Ledger.GetAccount(runCtx, key.AccountID)
	var out sliceOutput
	switch {
	case err != nil:
		err = fmt.Errorf("account %s: %w", key.AccountID, err)
	case !acct.Enabled:
		err = fmt.Errorf("account %s is disabled", key.AccountID)
	default:
		p := Partition{Account: acct, Dataset: ds, Day: key.Day, Claim: ledger.Claim{Key: key, Token: m.ClaimToken}, RunID: runID}
		out, err = s.Exporter.ExportSlice(runCtx, p, sl)
	}
	invocation := ctx // the commit, if this is the last slice, runs on it
	ctx, done := finishContext(ctx)
	defer done()
	if err != nil {
		return s.sliceFailed(ctx, sl, m, newFailure(err), log)
	}
	body, err := json.Marshal(out)
	if err != nil {
		return err
	}
	var rows, bytes int64
	for _, f := range out.Files {
		rows, bytes = rows+f.Rows, bytes+f.Bytes
	}
	err = s.Ledger.CompleteSlice(ctx, key, m.ClaimToken, m.Slice, sl.RunToken, ledger.SliceResult{Rows: rows, Bytes: bytes, Files: string(body)})
	if errors.Is(err, ledger.ErrClaimLost) {
		log.WarnContext(ctx, "slice written but its claim was lost meanwhile; the run that holds it writes it again")
		return nil
	}
	if err != nil {
		return fmt.Errorf("record slice %d of %s: %w", m.Slice, key, err)
	}
	log.InfoContext(ctx, "slice exported", "rows", rows, "bytes", bytes, "files", len(out.Files))
	return s.commitSlices(invocation, key, m.ClaimToken, log)
}

// sliceFailed records a slice's failure and sends the slice again after
// the ledger's backoff; a slice out of attempts fails the partition.
func (s *Service) sliceFailed(ctx context.Context, sl ledger.Slice, m jobs.Slice, fail *failure, log *slog.Logger) error {
	got, err := s.Ledger.FailSlice(ctx, sl.Key, m.ClaimToken, m.Slice, sl.RunToken, fail)
	switch {
	case errors.Is(err, ledger.ErrClaimLost):
		log.WarnContext(ctx, "slice failed and its claim was lost meanwhile", "error", fail.Error())
		return nil
	case err != nil:
		return fmt.Errorf("record failure of slice %d of %s (%v): %w", m.Slice, sl.Key, fail, err)
	case got.Exhausted:
		log.ErrorContext(ctx, "slice failed on its last attempt; the partition's attempt fails", "error", fail.Error(), "code", string(fail.code))
		return s.failSliced(ctx, sl.Key, m.ClaimToken, fail, log)
	}
	delay, err := s.Ledger.Backoff(got.Attempts)
	if err != nil {
		return err
	}
	delay = min(delay, maxSliceDelay)
	body, err := jobs.Encode(m)
	if err != nil {
		return err
	}
	log.ErrorContext(ctx, "slice failed; it is retried alone", "error", fail.Error(), "code", string(fail.code), "attempts", got.Attempts, "retry_in", delay.String())
	err = s.sendBatch(ctx, []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("0"), MessageBody: aws.String(body), DelaySeconds: int32(delay / time.Second)}})
	if err != nil {
		// Not sent: this message comes back after its visibility timeout instead.
		return fmt.Errorf("send slice %d of %s again: %w", m.Slice, sl.Key, err)
	}
	return nil
}

// failSliced fails the partition's attempt under the plan's claim.
func (s *Service) failSliced(ctx context.Context, key ledger.Key, token string, cause error, log *slog.Logger) error {
	claim, err := s.Ledger.HeldClaim(ctx, key, token)
	if errors.Is(err, ledger.ErrClaimLost) {
		log.InfoContext(ctx, "the sliced partition's claim is gone; nothing to fail", "reason", err.Error())
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the claim of %s: %w", key, err)
	}
	acct, err := s.Ledger.GetAccount(ctx, key.AccountID)
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("get account %s: %w", key.AccountID, err)
	}
	return s.failed(ctx, acct, claim, "", cause, log)
}

// commitSlices commits the partition when every slice of its plan is
// completed, from the one run that claims the commit.
func (s *Service) commitSlices(ctx context.Context, key ledger.Key, token string, log *slog.Logger) error {
	plan, sls, err := s.Ledger.SlicesOf(ctx, key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("read the slices of %s: %w", key, err)
	case plan.Token != token:
		log.InfoContext(ctx, "the slices' plan was replaced; nothing to commit")
		return nil
	case !plan.Done(sls):
		return nil // a slice still to come commits
	}
	if _, err := s.Ledger.ClaimSliceCommit(ctx, key, token); err != nil {
		if errors.Is(err, ledger.ErrConflict) || errors.Is(err, ledger.ErrClaimLost) {
			log.InfoContext(ctx, "another run commits the slices", "reason", err.Error())
			return nil
		}
		return fmt.Errorf("claim the commit of %s: %w", key, err)
	}
	claim, err := s.Ledger.HeldClaim(ctx, key, token)
	if errors.Is(err, ledger.ErrClaimLost) {
		log.InfoContext(ctx, "the sliced partition's claim is gone; not committing", "reason", err.Error())
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the claim of %s: %w", key, err)
	}
	claim.Generation = plan.Generation
	log = log.With("run_id", plan.RunID, "attempt", claim.Attempt, "reason", string(claim.Reason))
	runCtx, cancel := s.runContext(ctx)
	defer cancel()
	acct, err := s.Ledger.GetAccount(runCtx, key.AccountID)
	var w *Written
	switch {
	case err != nil:
		err = fmt.Errorf("account %s: %w", key.AccountID, err)
	case !acct.Enabled:
		err = fmt.Errorf("account %s is disabled", key.AccountID)
	default:
		var ds dataset.Dataset
		if ds, err = dataset.Get(key.Dataset); err == nil {
			p := Partition{Account: acct, Dataset: ds, Day: key.Day, Claim: claim, RunID: plan.RunID}
			w, err = s.Exporter.CommitSlices(runCtx, p, plan, sls, log)
		}
	}
	ctx, done := finishContext(ctx)
	defer done()
	if err != nil {
		return s.failed(ctx, acct, claim, plan.RunID, err, log)
	}
	_ = s.Metrics.Emit(map[string]any{"account": key.AccountID, "dataset": key.Dataset, "day": key.Day.String()},
		metrics.Metric{Name: "SlicedPartitions", Unit: metrics.Count, Value: 1})
	return s.finish(ctx, acct, claim, plan.RunID, w, plan.StartedAt, log)
}
