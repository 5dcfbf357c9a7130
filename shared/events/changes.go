package events

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/layout"
)

// ChangeVersion is the version of the change-log entry schema.
const ChangeVersion = 1

// Change is one entry of the change log in the customer's bucket
// (`<prefix>/v1/_changes/`, layout.ChangeKey): one committed generation of
// one partition. It is the pull counterpart of the committed event and
// carries the same id.
type Change struct {
	Version    int    `json:"version"`
	ID         string `json:"id"`
	Dataset    string `json:"dataset"`
	Day        string `json:"day"`
	Generation int64  `json:"generation"`
	// Reason is why it was exported: scheduled, backfill, retry, manual,
	// restatement or reseed.
	Reason string `json:"reason"`
	// PreviousGeneration and RowsBefore are the generation it replaced
	// and its rows (0 and 0 for a day delivered for the first time);
	// RowsAfter is this generation's.
	PreviousGeneration int64     `json:"previous_generation"`
	RowsBefore         int64     `json:"rows_before"`
	RowsAfter          int64     `json:"rows_after"`
	ManifestKey        string    `json:"manifest_key"`
	SchemaVersion      int       `json:"schema_version"`
	RunID              string    `json:"run_id"`
	CommittedAt        time.Time `json:"committed_at"`
}

// Key is the entry's key under the account's rendered prefix.
func (c Change) Key(prefix string) (string, error) {
	day, err := civil.Parse(c.Day)
	if err != nil {
		return "", fmt.Errorf("events: change of %s: day %q: %w", c.Dataset, c.Day, err)
	}
	return layout.ChangeKey(prefix, c.CommittedAt, c.Dataset, day, c.Generation), nil
}

// Encode is the entry's body: one line of JSON (NDJSON-readable).
func (c Change) Encode() ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("events: encode change %s: %w", c.ID, err)
	}
	return append(b, '\n'), nil
}
