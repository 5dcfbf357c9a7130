package main

// The change log (R4) and the outbox (R2) of a committed generation.
// After _SUCCESS, and before Complete, a run writes the generation's
// change-log entry into the bucket (layout.ChangeKey: the same key for the
// same generation, so a second write replaces it) and records its
// committed event in the ledger's outbox (once: a second record changes
// nothing); after Complete it publishes the event and marks it published.
// A run that dies anywhere after _SUCCESS leaves the generation committed in
// the bucket ahead of the ledger: the next run's Committer.Begin finds it and
// calls NoteCommitted, which writes the entry and records the event from
// the committed manifest first (recoverCommitted), so every committed
// generation ends with its entry once and its event recorded once.

import (
	"context"
	"fmt"

	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/outbox"
)

// outbox is the run's event outbox; nil-safe (Enabled false) when the
// service publishes no events.
func (r *run) outbox() *outbox.Outbox {
	if r.s.Lifecycle == nil {
		return nil
	}
	return r.s.Lifecycle.Outbox
}

// committedDetail is the committed event of generation, whose manifest is
// m. Which partition and generation it names is the run's, from its claim,
// never the manifest's: a manifest read back from the bucket is the
// customer's object (Committer.Committed checks it says the same).
func (r *run) committedDetail(generation int64, m *manifest.Manifest, manifestKey string, bytes, seedEpoch int64) *events.Committed {
	d := &events.Committed{
		Version: events.DetailVersion, Account: r.Claim.AccountID, Dataset: r.Dataset.Name, Contract: r.Dataset.ContractVersion(),
		Day: r.Claim.Day.String(), Generation: generation,
		Rows: m.Totals.Rows, Bytes: bytes, Files: m.Totals.Files, Bucket: r.Account.Destination.Bucket, ManifestKey: manifestKey,
		Reason: m.Reason, Restated: m.Restatement != nil, Reseed: seedEpoch > 0, SeedEpoch: seedEpoch,
		SchemaVersion: m.SchemaVersion, RunID: m.RunID, CommittedAt: m.FinishedAt,
	}
	if rs := m.Restatement; rs != nil {
		d.Restatement = &events.Restatement{PreviousGeneration: rs.PreviousGeneration, PreviousRows: rs.PreviousRows, Rows: rs.Rows}
	}
	return d
}

// changeOf is the change-log entry of d. What it replaced is the
// restatement's when there is one, else the generation the claim found
// completed in the ledger.
func (r *run) changeOf(d *events.Committed) events.Change {
	c := events.Change{Version: events.ChangeVersion, ID: events.CommittedID(d.Account, d.LedgerName(), d.Day, d.Generation),
		Dataset: d.Dataset, Day: d.Day, Generation: d.Generation, Reason: d.Reason, RowsAfter: d.Rows,
		ManifestKey: d.ManifestKey, SchemaVersion: d.SchemaVersion, RunID: d.RunID, CommittedAt: d.CommittedAt.UTC()}
	switch prev := r.Claim.Prev; {
	case d.Restatement != nil:
		c.PreviousGeneration, c.RowsBefore = d.Restatement.PreviousGeneration, d.Restatement.PreviousRows
	case prev.Generation > 0 && prev.Generation < d.Generation:
		c.PreviousGeneration, c.RowsBefore = prev.Generation, prev.Rows
	}
	return c
}

// recordCommitted writes d's change-log entry and records its event in
// the outbox, in that order, and returns the event to deliver. Either
// failing fails the run: the next run finds the generation committed and
// recovers both (recoverCommitted).
func (r *run) recordCommitted(ctx context.Context, d *events.Committed) (ledger.Event, error) {
	if err := r.writeChange(ctx, r.changeOf(d)); err != nil {
		return ledger.Event{}, err
	}
	ev, err := outbox.CommittedEvent(d)
	if err != nil {
		return ledger.Event{}, err
	}
	if _, err := r.outbox().Record(ctx, ev); err != nil {
		return ledger.Event{}, fmt.Errorf("record the committed event of generation %d: %w", d.Generation, err)
	}
	return ev, nil
}

// writeChange puts the change-log entry c into the account's bucket.
func (r *run) writeChange(ctx context.Context, c events.Change) error {
	prefix, err := r.Account.Prefix(r.s.Exporter.Config.Stage)
	if err != nil {
		return err
	}
	key, err := c.Key(prefix)
	if err != nil {
		return err
	}
	body, err := c.Encode()
	if err != nil {
		return err
	}
	b, err := r.s.Exporter.bucketOf(ctx, r.Account)
	if err != nil {
		return err
	}
	if err := b.Put(ctx, key, body, "application/x-ndjson"); err != nil {
		return fmt.Errorf("write the change-log entry of generation %d: %w", c.Generation, err)
	}
	return nil
}

// recoverCommitted writes the change-log entry and records the event of
// generation, committed in the bucket by a run that died before it
// recorded them (or before Complete), and delivers the event: the
// partition and generation are the claim's, the stats the committed
// manifest's. A generation whose _SUCCESS or manifest is not that
// generation of this partition (Committer.Committed) has nothing to
// recover.
func (r *run) recoverCommitted(ctx context.Context, generation int64) error {
	t, err := r.s.Exporter.targetOf(ctx, r.Partition)
	if err != nil {
		return err
	}
	m, err := t.committer.Committed(ctx, generation)
	if err != nil || m == nil {
		return err
	}
	d := r.committedDetail(generation, m, t.committer.manifestKey(), m.Totals.Bytes, r.seedEpochAt(ctx, m.StartedAt))
	ev, err := r.recordCommitted(ctx, d)
	if err != nil {
		return fmt.Errorf("recover generation %d: %w", generation, err)
	}
	r.deliver(ctx, ev)
	return nil
}

// deliver publishes a recorded event; a failure is logged and counted,
// and the event stays pending for the sweeper to publish again.
func (r *run) deliver(ctx context.Context, ev ledger.Event) {
	if err := r.outbox().Deliver(ctx, ev); err != nil {
		publishFailed(ctx, r.s.Metrics, r.log, ev.DetailType, err)
	}
}
