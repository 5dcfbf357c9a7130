package manifest

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/daybook-dev/daybook/shared/layout"
)

// A manifest read back from a bucket is the customer's object: anyone who
// can write to the bucket can put one there, with a _SUCCESS that commits
// it. Before daybook acts on one (records its generation, publishes its
// event, reads its files), the manifest must say it is the generation of
// the partition it was read from: Check.

// Expect is what a partition's manifest must say to be a generation
// daybook committed there.
type Expect struct {
	AccountID string
	Dataset   string // the catalog name, without the contract
	Contract  string // "v1", "v2", ...
	Day       string // YYYY-MM-DD
	// Generation is the generation wanted; the manifest's _SUCCESS must
	// commit the same one (the caller compares the marker).
	Generation int64
	// Partition is the partition's key prefix (layout.PartitionPrefix,
	// ending in "/"), and Extension its data files' extension
	// (fileformat.Format.Extension; "" accepts any): every file the
	// manifest lists must be a data file of the partition
	// (layout.IsPartitionDataKey).
	Partition string
	Extension string
}

// ErrNotThePartition wraps every refusal of Check.
var ErrNotThePartition = errors.New("the manifest is not this partition's")

// Check refuses a manifest that is not the generation want names of the
// partition want names: its account, dataset, contract, day or generation
// differ, a file it lists is not a data file of the partition, a file's
// rows or bytes are negative, or its totals are not the sum of its files.
// The error names the field and the value found (ErrNotThePartition).
func (m *Manifest) Check(want Expect) error {
	var bad []error
	field := func(name, got, wanted string) {
		if got != wanted {
			bad = append(bad, fmt.Errorf("%s %q, want %q", name, got, wanted))
		}
	}
	field("account_id", m.AccountID, want.AccountID)
	field("dataset", m.Dataset, want.Dataset)
	if m.Contract != want.Contract && m.Contract != layout.Version {
		// Manifests written before the field was the dataset's contract
		// say v1 under every contract; the folder read says which.
		field("contract", m.Contract, want.Contract)
	}
	field("day", m.Day, want.Day)
	if want.Generation < 1 || m.Generation != want.Generation {
		bad = append(bad, fmt.Errorf("generation %d, want %d", m.Generation, want.Generation))
	}
	var rows, size int64
	sum := func(total *int64, v int64) bool {
		if v < 0 || *total > math.MaxInt64-v {
			return false
		}
		*total += v
		return true
	}
	for i, f := range m.Files {
		at := "files[" + strconv.Itoa(i) + "]"
		if !layout.IsPartitionDataKey(want.Partition, f.Key, want.Extension) {
			bad = append(bad, fmt.Errorf("%s.key %q is not a data file of %s", at, f.Key, want.Partition+"part-*"+want.Extension))
		}
		if !sum(&rows, f.Rows) || !sum(&size, f.Bytes) {
			bad = append(bad, fmt.Errorf("%s rows %d, bytes %d: negative, or the totals overflow", at, f.Rows, f.Bytes))
		}
		if len(bad) > 8 {
			break // enough to say why
		}
	}
	if len(bad) == 0 && (m.Totals.Files != len(m.Files) || m.Totals.Rows != rows || m.Totals.Bytes != size) {
		bad = append(bad, fmt.Errorf("totals %d files, %d rows, %d bytes; its files sum to %d, %d, %d",
			m.Totals.Files, m.Totals.Rows, m.Totals.Bytes, len(m.Files), rows, size))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w (%s): %w", ErrNotThePartition, want.Partition+layout.ManifestName, errors.Join(bad...))
	}
	return nil
}
