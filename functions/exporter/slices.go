package main

// Days larger than one exporter run (E7). A Lambda stops at 15 minutes; a
// day whose expected size passes ExportConfig.SliceRows is exported in
// slices, ranges of the day's window, each on its own invocation
// (the messages are slicerun.go's):
//
//  1. the partition's run (a claimed job or a manual request) waits for no
//     slice of an earlier attempt to be able to write (ledger.SliceFence),
//     takes the day's fingerprint, whose first column is its row count (or,
//     with none, uses the previous generation's rows), and when that passes
//     the run probes the source (Exporter.probe: its refusals before a
//     row, as any export finds them before its generation begins), begins
//     the generation as any export does (the old _SUCCESS is removed) and
//     plans n slices, their boundaries at row
//     quantiles when the source can find them (placeBounds), else equal
//     time ranges (ledger.PlanSlices, under the partition's claim, with the
//     account's destination; each slice item keeps its range) and sends one
//     slice message per slice to its own queue; the partition stays running;
//  2. each slice message claims its slice in the ledger (StartSlice: a run
//     token, a lease and an attempt; the partition's hold renewed), writes
//     the rows of its range into part-sNNNN-MMMMM files of the generation,
//     and records them (CompleteSlice). A slice that fails is recorded
//     (FailSlice) and sent again after the ledger's backoff: it is retried
//     alone. One that dies is taken over when its message comes back after
//     its lease; the partition is held that long (ledger.Config.SliceHold).
//     A slice out of attempts, or one that can never succeed (the account
//     gone or disabled, its destination changed since the plan), fails the
//     partition's attempt, due again only after the leases of its slices
//     still running (FailAfter), and the sweeper retries it with a new plan;
//  3. the run that completes the last slice claims the commit
//     (ClaimSliceCommit: one run, even when slices finish together) and
//     commits the partition once: stale deletion, one _manifest.json listing
//     every slice's files in slice order, load scripts, _SUCCESS last, then
//     Complete under the partition's claim. With too little of its
//     invocation left it hands the commit to a fresh one (its message sent
//     again). A second delivery of a completed slice's message tries the
//     commit again, so a commit whose run stopped is finished by the
//     redelivery, and one that committed and stopped before Complete is
//     recorded without writing again.
//
// The commit invariant holds throughout: no _SUCCESS exists between the
// plan and the commit, the commit deletes whatever a failed slice attempt
// left that the manifest does not list, and no run writes while a slice of
// an earlier attempt still may.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/source"
)

// SliceLedger is the part of the ledger sliced partitions use. Every write
// is conditional on the plan's partition claim token (and a slice's run
// token).
type SliceLedger interface {
	PlanSlices(ctx context.Context, plan ledger.SlicePlan) error
	// SliceFence is until when a slice of a plan other than token's may
	// still write into the partition (zero: none may).
	SliceFence(ctx context.Context, key partition.Key, token string) (time.Time, error)
	// FailAfter is Fail with the next attempt no earlier than notBefore.
	FailAfter(ctx context.Context, key partition.Key, token string, cause error, notBefore time.Time) (ledger.Row, error)
	StartSlice(ctx context.Context, key partition.Key, token string, i int) (ledger.Slice, error)
	CompleteSlice(ctx context.Context, key partition.Key, token string, i int, run string, res ledger.SliceResult) error
	FailSlice(ctx context.Context, key partition.Key, token string, i int, run string, cause error) (ledger.Slice, error)
	SlicesOf(ctx context.Context, key partition.Key) (ledger.SlicePlan, []ledger.Slice, error)
	// PlanOf reads the plan alone, or ledger.ErrNotFound.
	PlanOf(ctx context.Context, key partition.Key) (ledger.SlicePlan, error)
	ClaimSliceCommit(ctx context.Context, key partition.Key, token string) (string, error)
	HeldClaim(ctx context.Context, key partition.Key, token string) (ledger.Claim, error)
	Backoff(attempt int) (time.Duration, error)
}

var _ SliceLedger = serviceLedger{}

// Defaults of ExportConfig.SliceRows and MaxSlices. 200M events rows take
// about 30% of a 15-minute run at the measured speed on one vCPU (see
// docs/performance.md), which leaves room for a slower source, a smaller
// function and an uneven slice.
const (
	DefaultSliceRows int64 = 200_000_000
	DefaultMaxSlices       = 100
)

// errDestinationChanged refuses a slice or the commit of a plan whose
// account's destination changed since the plan: its files would land in
// two places or two forms. The day's attempt fails and is planned again.
var errDestinationChanged = errors.New("the account's destination changed since the day was planned in slices")

// maxSliceDelay is SQS's longest message delay, the cap of a slice's
// backoff.
const maxSliceDelay = 15 * time.Minute

// placeBounds places the plan's slice boundaries at row quantiles of the
// day when the source can say (source.Slicer: a walk of the partition
// column's index), so a day whose rows crowd into an hour still gives
// slices of about equal rows. It may plan fewer slices than asked, when
// the day holds fewer rows than expected. When the source cannot say, or
// fails, or finds fewer than two slices, the plan keeps equal time ranges.
func (e *Exporter) placeBounds(ctx context.Context, q source.Query, plan *ledger.SlicePlan, log *slog.Logger) {
	s, ok := e.Source.(source.Slicer)
	if !ok {
		return
	}
	bounds, err := s.SliceBounds(ctx, q, plan.Slices, plan.ExpectedRows)
	switch {
	case errors.Is(err, source.ErrNoBounds):
		log.DebugContext(ctx, "slices are equal time ranges", "reason", err.Error())
		return
	case err != nil:
		log.WarnContext(ctx, "slice boundaries not found from the rows; the slices are equal time ranges", "error", err.Error())
		return
	case len(bounds) == 0:
		return
	}
	plan.Bounds, plan.Slices = bounds, len(bounds)+1
}

// sliceRange is the query of slice sl of the day q: its own range when the
// plan placed its bounds, else its equal time range (sliceQuery).
func sliceRange(q source.Query, sl ledger.Slice) source.Query {
	if sl.From.IsZero() && sl.To.IsZero() {
		return sliceQuery(q, sl.Index, sl.Slices)
	}
	if !sl.From.IsZero() {
		q.Start = sl.From
	}
	if !sl.To.IsZero() {
		q.End = sl.To
	}
	return q
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

// exportSlice writes slice sl of the partition, for the account as it is
// now (load), which must still have the plan's destination: the rows of
// its range of the day into the generation's part-sNNNN files. It commits
// nothing: the files are listed by the commit of the last slice. A slice
// without rows writes no file, except slice 0, so that a committed day
// always has one.
func (g *generation) exportSlice(ctx context.Context, sl ledger.Slice) (sliceOutput, error) {
	if err := g.place(ctx); err != nil {
		return sliceOutput{}, err
	}
	if g.destination != sl.Destination {
		return sliceOutput{}, errDestinationChanged
	}
	g.pending = g.committer.Resume(sl.Generation)
	defer g.abort(ctx)
	q := sliceRange(partitionQuery(g.Account, g.Dataset, g.Day), sl)
	// Step 4: write (of one slice).
	files, prov, err := g.writeData(ctx, q, sl.Index)
	return sliceOutput{Files: files, Provenance: prov}, err
}

// commitSlices commits the generation of plan with every slice's files, in
// slice order (sls as ledger.SlicesOf returns them, all completed), for
// the account as the invocation read it (acct), which must still have the
// plan's destination.
func (g *generation) commitSlices(ctx context.Context, plan ledger.SlicePlan, sls []ledger.Slice, acct *account.Account) (*Written, error) {
	if err := g.load(ctx, acct); err != nil {
		return nil, err
	}
	if err := g.place(ctx); err != nil {
		return nil, err
	}
	if g.destination != plan.Destination {
		return nil, errDestinationChanged
	}
	// The plan's claim held the partition since the plan, so a _SUCCESS of
	// its generation is this plan's own commit, by a run that died before
	// Complete: it is recorded, not written again.
	if m, err := g.committer.Committed(ctx, plan.Generation); err != nil || m != nil {
		if m != nil {
			g.log.InfoContext(ctx, "the slices were committed by a run that stopped before recording it", "generation", m.Generation)
			unregistered, tableError, err := g.table.add(ctx, m, g.committer.manifestKey(), g.log)
			if err != nil {
				return nil, err
			}
			return &Written{Manifest: m, ManifestKey: g.committer.manifestKey(), Bytes: m.Totals.Bytes, Fingerprint: plan.Fingerprint, Unregistered: unregistered, TableError: tableError}, nil
		}
		return nil, err
	}
	c := content{started: plan.StartedAt, fp: plan.Fingerprint}
	for _, sl := range sls {
		var out sliceOutput
		if err := json.Unmarshal([]byte(sl.Files), &out); err != nil {
			return nil, fmt.Errorf("slice %d's files in the ledger: %w", sl.Index, err)
		}
		c.files = append(c.files, out.Files...)
		c.prov = mergeProvenance(c.prov, out.Provenance, sl.Index == 0)
	}
	g.pending = g.committer.Resume(plan.Generation)
	return g.commit(ctx, c)
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
func (g *generation) fence(ctx context.Context) error {
	if !g.Claim.Prev.SlicePlanned {
		return nil
	}
	until, err := g.rec.ledger.SliceFence(ctx, g.Claim.Key, g.Claim.Token)
	if err != nil {
		return fmt.Errorf("read the slices of %s: %w", g.Claim.Key, err)
	}
	if !until.IsZero() {
		return fenced{until: until}
	}
	return nil
}
