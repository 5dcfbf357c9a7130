// Package manifest owns the partition manifest (`_manifest.json`, F3)
// and the `_SUCCESS` commit marker that names it. The manifest is what a
// reader trusts: whenever `_SUCCESS` exists, the data files under the
// partition are exactly the ones listed here, with these sizes and checksums.
// It also owns the per-day delivery manifest (`_manifests/dt=<day>/manifest.json`,
// delivery.go), the codes and sentences of why a dataset is missing from it
// (reasons.go), the restatement note both manifests carry (restate.go) and
// the checks a manifest read back from a bucket must pass (check.go).
package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/source"
)

// FormatVersion is the manifest format's version; bump on an incompatible change.
const FormatVersion = 1

// Reasons a partition was exported.
const (
	ReasonScheduled = "scheduled"
	ReasonBackfill  = "backfill"
	ReasonRetry     = "retry"
	ReasonManual    = "manual"
)

// Manifest describes one committed generation of one partition.
type Manifest struct {
	FormatVersion int    `json:"format_version"`
	Contract      string `json:"contract"` // the dataset's contract, the folder it is under: "v1", "v2", ...
	AccountID     string `json:"account_id"`
	Dataset       string `json:"dataset"`
	SchemaVersion int    `json:"schema_version"`
	Day           string `json:"day"`
	// Partition is what the day means for this dataset (D4).
	Partition   string    `json:"partition"`
	Mode        string    `json:"mode"`
	Read        string    `json:"read"`
	Generation  int64     `json:"generation"`
	RunID       string    `json:"run_id"`
	Reason      string    `json:"reason"`
	Attempt     int       `json:"attempt"`
	Format      string    `json:"format"`
	Compression string    `json:"compression"`
	StartedAt   time.Time `json:"started_at"`
	FinishedAt  time.Time `json:"finished_at"`
	Schema      []Column  `json:"schema"`
	Files       []File    `json:"files"`
	Totals      Totals    `json:"totals"`
	// Provenance is where the rows came from, as the customer who reads
	// the manifest may see it: the kind of source, the relation read, the
	// window (UTC), the snapshot time and the row count; never the source's
	// name, address, user, query or bound values (see source.Provenance).
	Provenance Provenance `json:"provenance"`
	// Restatement is set when this generation replaces one whose day
	// changed in the source after it was exported (see restate.go).
	Restatement *Restatement `json:"restatement,omitempty"`
}

// Provenance is the source's provenance (source.Provenance, its fields
// inline) and, for a generation someone asked for (a re-export, a retry,
// a reseed), who asked.
type Provenance struct {
	source.Provenance
	RequestedBy string `json:"requested_by,omitempty"`
}

// Column is one schema column as written.
type Column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// File is one data file of the generation.
type File struct {
	Key    string `json:"key"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	CRC32C string `json:"crc32c"` // base64 of the big-endian value, as S3 reports it
	SHA256 string `json:"sha256"` // hex
}

// Totals sum the files.
type Totals struct {
	Files int   `json:"files"`
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"`
}

// SchemaOf renders a dataset's columns for the manifest.
func SchemaOf(ds dataset.Dataset) []Column {
	cols := make([]Column, len(ds.Columns))
	for i, c := range ds.Columns {
		cols[i] = Column{Name: c.Name, Type: c.Type.String(), Nullable: c.Nullable}
	}
	return cols
}

// Sum fills Totals from Files.
func (m *Manifest) Sum() {
	m.Totals = Totals{Files: len(m.Files)}
	for _, f := range m.Files {
		m.Totals.Rows += f.Rows
		m.Totals.Bytes += f.Bytes
	}
}

// The most bytes daybook reads of each document it reads back from a
// bucket, and so the most it writes: the bucket is the customer's, and what
// is there may not be what daybook wrote (bucket.Get refuses more).
//
// A _SUCCESS is a few hundred bytes (its longest field, the manifest's key,
// is at most S3's 1024-byte key). A manifest lists a day's data files at
// about 350 bytes each, so MaxManifestBytes holds about 45,000 of them
// (more than 11 TB of data at the default file size); Encode refuses a
// larger one rather than write what nobody could read back. A delivery
// manifest holds one entry per dataset.
const (
	MaxSuccessBytes  = 8 << 10
	MaxManifestBytes = 16 << 20
	MaxDeliveryBytes = 4 << 20
)

// Encode renders the manifest as indented JSON, at most MaxManifestBytes.
func (m *Manifest) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	if len(b)+1 > MaxManifestBytes {
		return nil, fmt.Errorf("encode manifest: %d bytes for %d files, more than the %d a manifest may hold", len(b)+1, len(m.Files), MaxManifestBytes)
	}
	return append(b, '\n'), nil
}

// Decode parses a manifest.
func Decode(b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode manifest: %w", err)
	}
	if m.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("manifest format_version %d: this daybook reads %d", m.FormatVersion, FormatVersion)
	}
	return &m, nil
}

// Success is the body of `_SUCCESS`: the generation it commits and the
// SHA-256 of the exact manifest bytes, so a reader can tell a marker from an
// older generation's manifest.
type Success struct {
	Generation     int64     `json:"generation"`
	RunID          string    `json:"run_id"`
	ManifestKey    string    `json:"manifest_key"`
	ManifestSHA256 string    `json:"manifest_sha256"`
	CommittedAt    time.Time `json:"committed_at"`
}

// NewSuccess builds the marker for manifest bytes.
func NewSuccess(generation int64, runID, manifestKey string, manifestBytes []byte, at time.Time) Success {
	sum := sha256.Sum256(manifestBytes)
	return Success{Generation: generation, RunID: runID, ManifestKey: manifestKey, ManifestSHA256: hex.EncodeToString(sum[:]), CommittedAt: at.UTC()}
}

// Encode renders the marker.
func (s Success) Encode() []byte {
	b, _ := json.Marshal(s) // plain struct: cannot fail
	return append(b, '\n')
}

// DecodeSuccess parses a marker.
func DecodeSuccess(b []byte) (Success, error) {
	var s Success
	if err := json.Unmarshal(b, &s); err != nil {
		return Success{}, fmt.Errorf("decode _SUCCESS: %w", err)
	}
	return s, nil
}

// Matches reports whether manifestBytes are the ones the marker commits.
func (s Success) Matches(manifestBytes []byte) bool {
	sum := sha256.Sum256(manifestBytes)
	return hex.EncodeToString(sum[:]) == s.ManifestSHA256
}
