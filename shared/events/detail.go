package events

import (
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// DetailVersion is the version of the detail schemas below (docs/events.md);
// a field is only ever added, and a breaking change gets a new version.
const DetailVersion = 1

// Committed is the detail of `daybook.partition.committed`: one generation
// of one partition, committed (its `_SUCCESS` written) into the account's
// bucket.
type Committed struct {
	Version int `json:"version"`
	// ID is the event's stable id (CommittedID): every publish of the
	// event carries it, so a consumer drops a repeat.
	ID      string `json:"id"`
	Account string `json:"account"`
	Dataset string `json:"dataset"`
	// Contract is the dataset's contract the generation was delivered
	// under (v1, v2, ...): its folder, and with Dataset its ledger name,
	// which the id names.
	Contract string `json:"contract"`
	Day      string `json:"day"`
	// Generation is the generation committed; one more than the one it
	// replaced, if any.
	Generation int64 `json:"generation"`
	Rows       int64 `json:"rows"`
	Bytes      int64 `json:"bytes"`
	Files      int   `json:"files"`
	// Bucket and ManifestKey locate the partition's `_manifest.json`.
	Bucket      string `json:"bucket"`
	ManifestKey string `json:"manifest_key"`
	// Reason is why the partition was exported: scheduled, backfill, retry,
	// manual, restatement or reseed.
	Reason string `json:"reason"`
	// Restated is true when the generation replaces one whose day changed
	// in the source after it was exported; Restatement says what it
	// replaced.
	Restated    bool         `json:"restated"`
	Restatement *Restatement `json:"restatement,omitempty"`
	// Reseed is true while the dataset is being rebuilt from its start date
	// and this day is part of the rebuild; SeedEpoch numbers the rebuild.
	Reseed        bool      `json:"reseed"`
	SeedEpoch     int64     `json:"seed_epoch,omitempty"`
	SchemaVersion int       `json:"schema_version"`
	RunID         string    `json:"run_id"`
	CommittedAt   time.Time `json:"committed_at"`
}

// LedgerName is the ledger name of the committed dataset at its contract
// (dataset.LedgerName), the name its id and outbox item carry.
func (c *Committed) LedgerName() string { return dataset.LedgerName(c.Dataset, c.Contract) }

// Restatement is what a restated generation replaced.
type Restatement struct {
	PreviousGeneration int64 `json:"previous_generation"`
	PreviousRows       int64 `json:"previous_rows"`
	Rows               int64 `json:"rows"`
}

// Stopped is the detail of `daybook.partition.stopped`: a partition failed
// on its last attempt and stopped retrying until an operator retries it.
type Stopped struct {
	Version int `json:"version"`
	// ID is the event's stable id (StoppedID).
	ID       string `json:"id"`
	Account  string `json:"account"`
	Dataset  string `json:"dataset"`
	Day      string `json:"day"`
	Attempts int    `json:"attempts"`
	// Generation is the last generation committed before (0: the day was
	// never delivered); it stays in the bucket if it was.
	Generation int64 `json:"generation"`
	// Reason is why the partition was being exported.
	Reason string `json:"reason"`
	// Cause is how the last attempt ended: failed (an error was recorded)
	// or lease_expired (the run never finished).
	Cause     string    `json:"cause"`
	StoppedAt time.Time `json:"stopped_at"`
}
