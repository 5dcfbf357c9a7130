package main

// What the change log (R4) and the outbox (R2) say of a committed
// generation. After _SUCCESS, and before Complete, a generation writes its
// change-log entry into the bucket (layout.ChangeKey: the same key for the
// same generation, so a second write replaces it) and records its
// committed event in the ledger's outbox (once: a second record changes
// nothing); after Complete it publishes the event and marks it published
// (generation.record, generation.publish). A run that dies anywhere after
// _SUCCESS leaves the generation committed in the bucket ahead of the
// ledger: the next run's begin finds it and writes the entry and records
// the event from the committed manifest first (generation.recover), so
// every committed generation ends with its entry once and its event
// recorded once.

import (
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// committedDetail is the committed event of generation, whose manifest is
// m. Which partition and generation it names is the run's, from its claim,
// never the manifest's: a manifest read back from the bucket is the
// customer's object (Committer.Committed checks it says the same).
func (t *target) committedDetail(generation int64, m *manifest.Manifest, manifestKey string, bytes, seedEpoch int64) *events.Committed {
	d := &events.Committed{
		Version: events.DetailVersion, Account: t.Claim.AccountID, Dataset: t.Dataset.Name, Contract: t.Dataset.ContractVersion(),
		Day: t.Claim.Day.String(), Generation: generation,
		Rows: m.Totals.Rows, Bytes: bytes, Files: m.Totals.Files, Bucket: t.Account.Destination.Bucket, ManifestKey: manifestKey,
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
func (t *target) changeOf(d *events.Committed) events.Change {
	c := events.Change{Version: events.ChangeVersion, ID: events.CommittedID(d.Account, d.LedgerName(), d.Day, d.Generation),
		Dataset: d.Dataset, Day: d.Day, Generation: d.Generation, Reason: d.Reason, RowsAfter: d.Rows,
		ManifestKey: d.ManifestKey, SchemaVersion: d.SchemaVersion, RunID: d.RunID, CommittedAt: d.CommittedAt.UTC()}
	switch prev := t.Claim.Prev; {
	case d.Restatement != nil:
		c.PreviousGeneration, c.RowsBefore = d.Restatement.PreviousGeneration, d.Restatement.PreviousRows
	case prev.Generation > 0 && prev.Generation < d.Generation:
		c.PreviousGeneration, c.RowsBefore = prev.Generation, prev.Rows
	}
	return c
}
