package main

// The messages of a day exported in slices (slices.go has the design):
// the plan's messages out, each slice's run, its failure and retry, and
// the one commit after the last slice.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/partition"
)

// maxSliceRecord bounds the JSON a completed slice records in its ledger
// item (DynamoDB items hold 400 KB; a file takes about 300 bytes).
const maxSliceRecord = 300 << 10

// minCommitTime is the least time, beyond the reserve, the run of the last
// slice keeps for the commit; with less it hands the commit to a fresh
// invocation.
const minCommitTime = 2 * time.Minute

// commitStartup is what a fresh invocation spends before it looks at the
// time left for the commit (start-up, the ledger reads of the slices).
const commitStartup = 10 * time.Second

// MinTimeout is the shortest exporter timeout that can commit a day
// exported in slices: a fresh invocation must still have the reserve and
// minCommitTime left when it gets to the commit, or every invocation hands
// the commit on to the next, forever. loadConfig refuses a shorter
// EXPORTER_TIMEOUT_SECONDS (the template's minimum is the same).
const MinTimeout = DefaultReserve + minCommitTime + commitStartup

// planSlices records the plan and sends one message per slice to the
// exporter's queue. A failure leaves the partition's run to fail: its
// slices then find the claim gone and stop.
func (g *generation) planSlices(ctx context.Context, plan ledger.SlicePlan) error {
	rec := g.rec
	if err := rec.ledger.PlanSlices(ctx, plan); err != nil {
		return err
	}
	var slices []jobs.Slice
	for k := range plan.Slices {
		slices = append(slices, sliceMessage(plan.Key, plan.Token, plan.Generation, k, plan.Slices))
	}
	msgs, err := jobs.Encoded(slices...)
	if err != nil {
		return err
	}
	if err := rec.queue.Send(ctx, msgs...); err != nil {
		return fmt.Errorf("send slices: %w", err)
	}
	g.log.InfoContext(ctx, "partition planned in slices", "slices", plan.Slices, "expected_rows", plan.ExpectedRows, "generation", plan.Generation)
	return nil
}

func sliceMessage(key partition.Key, token string, generation int64, i, n int) jobs.Slice {
	return jobs.Slice{Kind: jobs.KindSlice, AccountID: key.AccountID, Dataset: key.Dataset, Day: key.Day.String(),
		ClaimToken: token, Generation: generation, Slice: i, Slices: n}
}

// sendSlice puts slice sl's message on the jobs queue after delay.
func (rec *recorder) sendSlice(ctx context.Context, sl ledger.Slice, delay time.Duration) error {
	body, err := jobs.Encode(sliceMessage(sl.Key, sl.Token, sl.Generation, sl.Index, sl.Slices))
	if err != nil {
		return err
	}
	return rec.queue.Send(ctx, jobs.Outgoing{Body: body, Delay: delay})
}

// slice runs one slice message (see slices.go).
func (s *Service) slice(ctx context.Context, m jobs.Slice, log *slog.Logger) error {
	key := partition.Key{AccountID: m.AccountID, Dataset: m.Dataset, Day: m.DayValue()}
	log = log.With("account", m.AccountID, "dataset", m.Dataset, "day", m.Day, "generation", m.Generation, "slice", m.Slice, "slices", m.Slices)
	rec := s.recorder()
	acct, current, err := s.planOf(ctx, key, m, log)
	if err != nil {
		return err
	}
	if !current {
		log.InfoContext(ctx, "the slice's plan was replaced since; dropping this message")
		return rec.convergeAtRest(ctx, key, log)
	}
	sl, err := s.Ledger.StartSlice(ctx, key, m.ClaimToken, m.Slice)
	switch {
	case errors.Is(err, ledger.ErrSliceDone):
		// A re-sent message. The run that completed it may have stopped
		// before the commit: try it.
		return s.commitSlices(ctx, key, m, &acct, log)
	case errors.Is(err, ledger.ErrConflict):
		log.InfoContext(ctx, "slice is running; dropping this message", "reason", err.Error())
		return nil
	case errors.Is(err, ledger.ErrClaimLost):
		log.InfoContext(ctx, "the slice's plan is gone; dropping this message", "reason", err.Error())
		return rec.convergeAtRest(ctx, key, log)
	case errors.Is(err, ledger.ErrStopped):
		// Its run died on the last attempt.
		return rec.failSliced(ctx, key, m.ClaimToken, err, log)
	case err != nil:
		return fmt.Errorf("start slice %d of %s: %w", m.Slice, key, err)
	}
	g := s.Exporter.generationOf(Partition{Day: sl.Key.Day, Claim: ledger.Claim{Key: sl.Key, Token: sl.Token}}, log.With("slice_attempt", sl.Attempts))
	g.rec = rec
	r := &sliceRun{generation: g, sl: sl, m: m, acct: acct}
	runCtx, cancel := s.runContext(ctx)
	defer cancel()
	out, permanent, err := r.export(runCtx)
	// The ledger writes get a fresh context; the commit, if this is the
	// last slice, runs on the invocation's.
	finishCtx, done := finishContext(ctx)
	defer done()
	if err == nil {
		var body []byte
		if body, err = json.Marshal(out); err == nil && len(body) > maxSliceRecord {
			err, permanent = fmt.Errorf("slice %d wrote %d files, too many to record in the ledger (%d bytes of %d): raise MAX_FILE_BYTES or lower SLICE_ROWS",
				sl.Index, len(out.Files), len(body), maxSliceRecord), true
		}
		if err == nil {
			if recorded, err := r.done(finishCtx, out, body); !recorded {
				return err
			}
			return s.commitSlices(ctx, key, m, &acct, r.log)
		}
	}
	return r.failed(finishCtx, newFailure(err), permanent)
}

// planOf tells, before anything is written, which plan of the partition a
// slice message is of: its current plan (current), or one a claim that has
// ended made (a redelivery: not current, nil error); it returns the
// account as read, once for the invocation. A message of no plan
// the partition ever had (no such account, a claim token that planned no
// slices of it) or that does not match its plan (another generation or
// number of slices, a slice beyond them) can never run: it is rejected, to
// the dead-letter queue, and the partition is left alone.
func (s *Service) planOf(ctx context.Context, key partition.Key, m jobs.Slice, log *slog.Logger) (acct account.Account, current bool, err error) {
	acct, err = s.Ledger.GetAccount(ctx, key.AccountID)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return acct, false, s.reject(ctx, log, "slice for account_id %q: no such account", key.AccountID)
	case err != nil:
		return acct, false, fmt.Errorf("get account %s: %w", key.AccountID, err)
	}
	var gen int64
	var n int
	plan, err := s.Ledger.PlanOf(ctx, key)
	switch {
	case err == nil && plan.Token == m.ClaimToken:
		current, gen, n = true, plan.Generation, plan.Slices
	case err != nil && !errors.Is(err, ledger.ErrNotFound):
		return acct, false, fmt.Errorf("read the slice plan of %s: %w", key, err)
	default:
		is, err := s.Ledger.IssuedToken(ctx, key, m.ClaimToken)
		switch {
		case errors.Is(err, ledger.ErrNotFound), err == nil && is.PlanSlices == 0:
			return acct, false, s.reject(ctx, log, "slice of %s: claim_token %q planned no slices of this partition", key, m.ClaimToken)
		case err != nil:
			return acct, false, fmt.Errorf("read the claim tokens of %s: %w", key, err)
		}
		gen, n = is.PlanGeneration, is.PlanSlices
	}
	switch {
	case m.Slice >= n:
		return acct, false, s.reject(ctx, log, "slice %d of %s is beyond the %d slices claim_token %q planned", m.Slice, key, n, m.ClaimToken)
	case m.Generation != gen || m.Slices != n:
		return acct, false, s.reject(ctx, log, "slice %d of %s: the message is for generation %d in %d slices; claim_token %q planned generation %d in %d slices",
			m.Slice, key, m.Generation, m.Slices, m.ClaimToken, gen, n)
	}
	return acct, current, nil
}

// sliceRun is one run of a slice: the slice as StartSlice claimed it, its
// message, the account as the invocation read it, and its generation (the
// plan's claim, a run id of its own).
type sliceRun struct {
	*generation
	sl   ledger.Slice
	m    jobs.Slice
	acct account.Account
}

// export exports the slice. permanent marks an error that a retry of the
// slice would meet again (the account gone or disabled, its destination
// changed since the plan, a message that does not match its plan): the
// partition's attempt fails at once.
func (r *sliceRun) export(ctx context.Context) (out sliceOutput, permanent bool, err error) {
	sl, m := r.sl, r.m
	if sl.Generation != m.Generation || sl.Slices != m.Slices {
		return sliceOutput{}, true, fmt.Errorf("slice message for generation %d of %d slices; the plan is generation %d of %d", m.Generation, m.Slices, sl.Generation, sl.Slices)
	}
	if r.RunID, err = r.rec.runID(); err != nil {
		return sliceOutput{}, false, err
	}
	if err := r.load(ctx, &r.acct); err != nil {
		return sliceOutput{}, errors.Is(err, errNeverRuns), err
	}
	r.log.DebugContext(ctx, "slice started", "run_id", r.RunID)
	out, err = r.exportSlice(ctx, sl)
	return out, errors.Is(err, errDestinationChanged), err
}

// errNeverRuns marks a partition that no retry of a slice could export:
// its account is gone or disabled, or its dataset unknown.
var errNeverRuns = errors.New("the partition cannot be exported")

// load sets the dataset and the account of the run of a sliced day (a
// slice's or the commit's): the account the invocation read (read), or, when
// it read none, the account as it is now.
func (g *generation) load(ctx context.Context, read *account.Account) error {
	key := g.Claim.Key
	ds, err := g.rec.catalog.Resolve(key.Dataset)
	if err != nil {
		return fmt.Errorf("%w: %w", errNeverRuns, err)
	}
	var acct account.Account
	if read != nil {
		acct = *read
	} else {
		acct, err = g.rec.ledger.GetAccount(ctx, key.AccountID)
	}
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return fmt.Errorf("%w: account %s: %w", errNeverRuns, key.AccountID, err)
	case err != nil:
		return fmt.Errorf("account %s: %w", key.AccountID, err)
	case !acct.Enabled:
		g.Account = acct
		return fmt.Errorf("%w: account %s is disabled", errNeverRuns, key.AccountID)
	}
	g.Account, g.Dataset = acct, ds
	return nil
}

// done records the written slice; recorded is false when it was not (the
// error says why, nil when the claim was lost).
func (r *sliceRun) done(ctx context.Context, out sliceOutput, body []byte) (recorded bool, err error) {
	sl := r.sl
	var rows, bytes int64
	for _, f := range out.Files {
		rows, bytes = rows+f.Rows, bytes+f.Bytes
	}
	err = r.rec.ledger.CompleteSlice(ctx, sl.Key, sl.Token, sl.Index, sl.RunToken, ledger.SliceResult{Rows: rows, Bytes: bytes, Files: string(body)})
	if errors.Is(err, ledger.ErrClaimLost) {
		r.log.WarnContext(ctx, "slice written but its claim was lost meanwhile; the run that holds it writes it again", "reason", err.Error())
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("record slice %d of %s: %w", sl.Index, sl.Key, err)
	}
	r.log.InfoContext(ctx, "slice exported", "rows", rows, "bytes", bytes, "files", len(out.Files))
	return true, nil
}

// failed records the slice's failure and sends the slice again after the
// ledger's backoff; a slice out of attempts, or a permanent failure, fails
// the partition's attempt.
func (r *sliceRun) failed(ctx context.Context, fail *failure, permanent bool) error {
	rec, sl, log := r.rec, r.sl, r.log
	got, err := rec.ledger.FailSlice(ctx, sl.Key, sl.Token, sl.Index, sl.RunToken, fail)
	switch {
	case errors.Is(err, ledger.ErrClaimLost):
		log.WarnContext(ctx, "slice failed and its claim was lost meanwhile", "error", fail.Error())
		return nil
	case err != nil:
		return fmt.Errorf("record failure of slice %d of %s (%v): %w", sl.Index, sl.Key, fail, err)
	case got.Stopped || permanent:
		log.ErrorContext(ctx, "slice failed for good; the partition's attempt fails", "error", fail.Error(), "code", string(fail.code), "attempts", got.Attempts)
		return rec.failSliced(ctx, sl.Key, sl.Token, fail, log)
	}
	delay, err := rec.ledger.Backoff(got.Attempts)
	if err != nil {
		return err
	}
	delay = min(delay, maxSliceDelay)
	log.ErrorContext(ctx, "slice failed; it is retried alone", "error", fail.Error(), "code", string(fail.code), "attempts", got.Attempts, "retry_in", delay.String())
	if err := rec.sendSlice(ctx, got, delay); err != nil {
		// Not sent: this message comes back after its visibility timeout instead.
		return fmt.Errorf("send slice %d of %s again: %w", sl.Index, sl.Key, err)
	}
	return nil
}

// failSliced fails the partition's attempt under the plan's claim, its next
// attempt no earlier than the end of the leases of its slices still running.
func (rec *recorder) failSliced(ctx context.Context, key partition.Key, token string, cause error, log *slog.Logger) error {
	claim, err := rec.ledger.HeldClaim(ctx, key, token)
	if errors.Is(err, ledger.ErrClaimLost) {
		log.InfoContext(ctx, "the sliced partition's claim is gone; nothing to fail", "reason", err.Error())
		return rec.convergeAtRest(ctx, key, log)
	}
	if err != nil {
		return fmt.Errorf("read the claim of %s: %w", key, err)
	}
	fence, err := rec.ledger.SliceFence(ctx, key, "")
	if err != nil {
		return fmt.Errorf("read the slices of %s: %w", key, err)
	}
	acct, err := rec.ledger.GetAccount(ctx, key.AccountID)
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("get account %s: %w", key.AccountID, err)
	}
	g := rec.exporter.generationOf(Partition{Account: acct, Day: claim.Day, Claim: claim}, log)
	g.rec = rec
	return g.failedAfter(ctx, cause, fence)
}

// commitSlices commits the partition when every slice of its plan is
// completed, from the one run that claims the commit; with too little of
// the invocation left it hands the commit to a fresh one. A partition that
// came to rest meanwhile gets its delivery manifest rewritten
// (convergeAtRest). acct is the account as the invocation read it.
func (s *Service) commitSlices(ctx context.Context, key partition.Key, m jobs.Slice, acct *account.Account, log *slog.Logger) error {
	token := m.ClaimToken
	rec := s.recorder()
	claim, err := s.Ledger.HeldClaim(ctx, key, token)
	if errors.Is(err, ledger.ErrClaimLost) {
		// Committed, failed or taken over: the run that ended it may have
		// stopped before the day's delivery manifest.
		return rec.convergeAtRest(ctx, key, log)
	}
	if err != nil {
		return fmt.Errorf("read the claim of %s: %w", key, err)
	}
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
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < s.reserve()+minCommitTime {
		log.InfoContext(ctx, "every slice is in; the commit goes to a fresh invocation", "left", time.Until(dl).Round(time.Second).String())
		if err := rec.sendSlice(ctx, sls[m.Slice], 0); err != nil {
			return fmt.Errorf("hand the commit of %s on: %w", key, err)
		}
		return nil
	}
	if _, err := s.Ledger.ClaimSliceCommit(ctx, key, token); err != nil {
		if errors.Is(err, ledger.ErrConflict) || errors.Is(err, ledger.ErrClaimLost) {
			log.InfoContext(ctx, "another run commits the slices", "reason", err.Error())
			return nil
		}
		return fmt.Errorf("claim the commit of %s: %w", key, err)
	}
	claim.Generation = plan.Generation
	g := rec.generation(claim, plan.RunID, plan.StartedAt, log)
	runCtx, cancel := s.runContext(ctx)
	defer cancel()
	w, err := g.commitSlices(runCtx, plan, sls, acct)
	ctx, done := finishContext(ctx)
	defer done()
	if err != nil {
		return g.failed(ctx, err)
	}
	_ = s.Metrics.Emit(map[string]any{"account": key.AccountID, "dataset": key.Dataset, "day": key.Day.String()},
		metrics.Metric{Name: "SlicedPartitions", Unit: metrics.Count, Value: 1})
	return g.finish(ctx, w)
}

// convergeAtRest is notStarted's convergence for a slice message whose partition
// the message can no longer touch: the day's delivery manifest is rewritten
// once the partition is at rest (deliverAtRest).
func (rec *recorder) convergeAtRest(ctx context.Context, key partition.Key, log *slog.Logger) error {
	row, err := rec.ledger.Get(ctx, key)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if row.State == ledger.StateRunning {
		return nil
	}
	acct, err := rec.ledger.GetAccount(ctx, key.AccountID)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get account %s: %w", key.AccountID, err)
	}
	return rec.deliverAtRest(ctx, acct, row, log)
}
