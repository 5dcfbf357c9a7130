package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
)

// DeliveryFormatVersion is the delivery manifest format's version.
const DeliveryFormatVersion = 1

// ReasonReseed is the partition reason of a day re-exported as part of a
// reseed: a rebuild of the dataset from its start date (F4 `reseed`).
// The delivery manifest's `reseed` says whether such a rebuild is running
// over the day (PartitionStatus.Reseed), not the reason of its generation.
const ReasonReseed = "reseed"

// Delivery is the per-account, per-day delivery manifest (F4), at
// `<prefix>/v1/_manifests/dt=YYYY-MM-DD/manifest.json`: which of the
// account's enabled datasets are committed for the day, and why the others
// are not. It is rewritten whenever a partition of that day completes or
// fails, from the ledger rows of the day.
type Delivery struct {
	FormatVersion int    `json:"format_version"`
	Contract      string `json:"contract"` // the contract root it is under, "v1"; each delivered dataset names its own
	AccountID     string `json:"account_id"`
	Day           string `json:"day"`
	// Complete is true when every enabled dataset of the account is
	// committed for the day, or is a snapshot dataset with no copy of the
	// day by design (DatasetsMissing is empty).
	Complete          bool               `json:"complete"`
	DatasetsDelivered []DeliveredDataset `json:"datasets_delivered"`
	DatasetsMissing   []MissingDataset   `json:"datasets_missing"`
	// DatasetsLatestOnly are the snapshot datasets that have no copy of
	// this day and never will: a copy is the whole table when it is taken,
	// and only the newest closed day's is taken (PartitionStatus.LatestOnly).
	// They are not missing: their newest day is the table.
	DatasetsLatestOnly []LatestOnlyDataset `json:"datasets_latest_only,omitempty"`
	UpdatedAt          time.Time           `json:"updated_at"`
}

// LatestOnlyDataset is a snapshot dataset with no copy of the day by
// design, and what to read instead (LatestOnlyReason).
type LatestOnlyDataset struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// LatestOnlyReason is the reason of every LatestOnlyDataset, for the
// customer who reads the bucket.
const LatestOnlyReason = "This is a snapshot dataset: each copy is the whole table as it was when the copy was taken, and a copy is taken for the newest closed day only, so this day has none. Read the latest day of the dataset whose _SUCCESS exists."

// DeliveredDataset is one committed partition of the day.
type DeliveredDataset struct {
	Name string `json:"name"`
	// Contract is the layout contract the partition is delivered under:
	// its files are under <prefix>/<contract>/<name>/.
	Contract      string `json:"contract"`
	SchemaVersion int    `json:"schema_version"`
	Generation    int64  `json:"generation"`
	Mode          string `json:"mode"` // full_refresh | incremental_append
	Read          string `json:"read"` // latest_snapshot | union_all_partitions
	// Reseed is true while a rebuild of the dataset from its start date
	// covers the day (PartitionStatus.Reseed); see ReasonReseed.
	Reseed      bool      `json:"reseed"`
	Rows        int64     `json:"rows"`
	Files       int       `json:"files"`
	Manifest    string    `json:"manifest"` // key of the partition's _manifest.json
	CommittedAt time.Time `json:"committed_at"`
	// Restatement is set when the generation restated the day (late data);
	// SeedEpoch is the rebuild the generation belongs to, if any.
	Restatement *Restatement `json:"restatement,omitempty"`
	SeedEpoch   int64        `json:"seed_epoch,omitempty"`
}

// MissingDataset is an enabled dataset with no committed partition for the
// day, and why: a Code and a sentence (Reason). Nothing in it comes from an
// error's text.
type MissingDataset struct {
	Name string `json:"name"`
	// State is the ledger state of the partition ("" when it has no row).
	State string `json:"state"`
	Code  Code   `json:"code"`
	// Cause is the code of the last failed attempt, for a failed partition
	// (the same as Code until it stops retrying).
	Cause  Code   `json:"cause,omitempty"`
	Reason string `json:"reason"`
	// Reseed is true while a rebuild of the dataset covers the day.
	Reseed bool `json:"reseed,omitempty"`
}

// PartitionStatus is what the ledger says about one enabled dataset's
// partition of the day; the exporter fills it from a ledger row.
type PartitionStatus struct {
	Name string
	// Dataset is the catalog declaration; nil when the name is not in this
	// build's catalog.
	Dataset *dataset.Dataset
	// Exists is false when the ledger has no row for the partition.
	Exists bool
	// LatestOnly is set by the caller for a snapshot dataset with no row
	// on a day older than the account's newest closed day: the sweep takes
	// a snapshot's copy for the newest closed day only, so this day never
	// gets one (a copy taken later would be a later table under this date).
	LatestOnly bool

	State    string // pending | queued | running | completed | failed
	Attempts int
	Stopped  bool
	// LastError is the ledger's error text; only its cause code (CauseOf)
	// reaches the manifest.
	LastError   string
	Generation  int64 // committed generations so far
	Rows        int64
	Files       int
	ManifestKey string
	CompletedAt time.Time
	Reason      string
	// Standing: the row is failed, and the generation it last committed is
	// still committed in the bucket (its _SUCCESS names it), because the
	// attempt failed before it withdrew it (a refusal found before the
	// first row). That generation is delivered.
	Standing bool

	// Reseed is true while a rebuild of the dataset from its start date
	// covers the day; Restatement and SeedEpoch describe the committed
	// generation (see restate.go).
	Reseed      bool
	Restatement *Restatement
	SeedEpoch   int64
}

// NewDelivery builds the delivery manifest of accountID's day from the
// statuses of its enabled datasets, in the order given. A dataset counts as
// delivered when its row is completed, or failed with its last committed
// generation standing (PartitionStatus.Standing): a queued re-export, a
// running one or one that failed after it began has (or is about to have)
// its _SUCCESS removed.
func NewDelivery(accountID, day string, statuses []PartitionStatus, now time.Time) *Delivery {
	d := &Delivery{
		FormatVersion:     DeliveryFormatVersion,
		Contract:          layout.Version,
		AccountID:         accountID,
		Day:               day,
		DatasetsDelivered: []DeliveredDataset{},
		DatasetsMissing:   []MissingDataset{},
		UpdatedAt:         now.UTC(),
	}
	for _, st := range statuses {
		if st.Dataset != nil && st.Dataset.IsSnapshot() && !st.Exists && st.LatestOnly {
			d.DatasetsLatestOnly = append(d.DatasetsLatestOnly, LatestOnlyDataset{Name: st.Name, Reason: LatestOnlyReason})
			continue
		}
		if st.Dataset != nil && st.Exists && (st.State == "completed" || st.Standing && st.State == "failed" && st.Generation > 0) {
			d.DatasetsDelivered = append(d.DatasetsDelivered, DeliveredDataset{
				Name:          st.Name,
				Contract:      st.Dataset.ContractVersion(),
				SchemaVersion: st.Dataset.Version,
				Generation:    st.Generation,
				Mode:          st.Dataset.Mode,
				Read:          st.Dataset.Read,
				Reseed:        st.Reseed,
				Rows:          st.Rows,
				Files:         st.Files,
				Manifest:      st.ManifestKey,
				CommittedAt:   st.CompletedAt.UTC(),
				Restatement:   st.Restatement,
				SeedEpoch:     st.SeedEpoch,
			})
			continue
		}
		m := missing(st)
		m.Reseed = st.Reseed
		d.DatasetsMissing = append(d.DatasetsMissing, m)
	}
	d.Complete = len(statuses) > 0 && len(d.DatasetsMissing) == 0
	return d
}

func missing(st PartitionStatus) MissingDataset {
	m := MissingDataset{Name: st.Name, State: st.State}
	say := func(c Code, extra ...string) MissingDataset {
		m.Code = c
		m.Reason = strings.Join(append([]string{c.Sentence()}, extra...), " ")
		return m
	}
	switch {
	case st.Dataset == nil:
		return say(CodeInternal, "This dataset is not in this deployment's catalog.")
	case !st.Exists:
		return say(CodeNotExportedYet)
	}
	switch st.State {
	case "pending":
		return say(CodeNotExportedYet)
	case "queued":
		if st.Generation > 0 {
			return say(CodeQueuedForReexport)
		}
		return say(CodeNotExportedYet)
	case "running":
		return say(CodeRunning)
	case "failed":
		m.Cause = CauseOf(st.LastError)
		if st.Stopped {
			return say(CodeStoppedRetrying, fmt.Sprintf("Attempts: %d. Last failure:", st.Attempts), m.Cause.Sentence())
		}
		return say(m.Cause, fmt.Sprintf("Attempt %d failed; it will be retried automatically.", st.Attempts))
	}
	return say(CodeInternal)
}

// Equivalent reports whether d and o say the same thing, ignoring UpdatedAt.
func (d *Delivery) Equivalent(o *Delivery) bool {
	if d == nil || o == nil {
		return d == o
	}
	a, b := *d, *o
	a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// Encode renders the delivery manifest as indented JSON, at most
// MaxDeliveryBytes.
func (d *Delivery) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode delivery manifest: %w", err)
	}
	if len(b)+1 > MaxDeliveryBytes {
		return nil, fmt.Errorf("encode delivery manifest: %d bytes, more than the %d a delivery manifest may hold", len(b)+1, MaxDeliveryBytes)
	}
	return append(b, '\n'), nil
}

// DecodeDelivery parses a delivery manifest.
func DecodeDelivery(b []byte) (*Delivery, error) {
	var d Delivery
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("decode delivery manifest: %w", err)
	}
	if d.FormatVersion != DeliveryFormatVersion {
		return nil, fmt.Errorf("delivery manifest format_version %d: this daybook reads %d", d.FormatVersion, DeliveryFormatVersion)
	}
	return &d, nil
}
