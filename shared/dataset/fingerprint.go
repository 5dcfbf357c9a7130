package dataset

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoFingerprint is returned for a dataset that declares no fingerprint
// query for a dialect.
var ErrNoFingerprint = errors.New("no fingerprint query")

// A fingerprint query summarises one day of a dataset in the source in one
// cheap row (a row count, the newest insertion or change instant, sums of
// the columns a correction changes), bound exactly like the export query:
// (account id, day start, day end). Any change to the day's rows that the
// export would see must change that row; the exporter stores a hash of it
// with each generation, and the restatement check re-runs it for recently
// closed days to find days that changed after their export.

// FingerprintQuery returns the dataset's fingerprint query for dialect, or
// an error wrapping ErrNoFingerprint.
func (d Dataset) FingerprintQuery(dialect string) (string, error) {
	q := strings.TrimSpace(d.Fingerprint[dialect])
	if q == "" {
		return "", fmt.Errorf("dataset %s: %s: %w", d.Name, dialect, ErrNoFingerprint)
	}
	return q, nil
}

// validateFingerprint checks a declared fingerprint: a query for every
// dialect, each binding exactly (account, start, end), each a SELECT. A
// dataset may declare none (its days are then never checked for late
// data); the shipped catalog declares one for every dataset, which a test
// holds.
func (d Dataset) validateFingerprint() error {
	if len(d.Fingerprint) == 0 {
		return nil
	}
	if d.Partition == PartitionSnapshot {
		return fmt.Errorf("dataset %s: fingerprint: a snapshot dataset has none (partition %s): a snapshot day is the table as it was when it was taken and is never restated, so there is nothing to check", d.Name, d.Partition)
	}
	for dialect := range d.Fingerprint {
		if !isDialect(dialect) {
			return fmt.Errorf("dataset %s: fingerprint: unknown dialect %q (want one of %s)", d.Name, dialect, strings.Join(Dialects, ", "))
		}
	}
	for _, dialect := range Dialects {
		q, err := d.FingerprintQuery(dialect)
		if err != nil {
			return fmt.Errorf("dataset %s: fingerprint.%s: no query", d.Name, dialect)
		}
		if !strings.HasPrefix(strings.ToUpper(q), "SELECT ") {
			return fmt.Errorf("dataset %s: fingerprint.%s: must be a SELECT", d.Name, dialect)
		}
		if err := d.checkPlaceholders(dialect, q); err != nil {
			return fmt.Errorf("dataset %s: fingerprint.%s: %w", d.Name, dialect, err)
		}
	}
	return nil
}

func isDialect(s string) bool {
	for _, d := range Dialects {
		if d == s {
			return true
		}
	}
	return false
}

// Reseedable reports whether the dataset can be rebuilt from its start
// date under a new seed epoch (`daybook reseed`): an incremental feed of
// states (partition activity), whose current state is the latest row per id
// across every day, so a consumer must drop its copy and load every day
// again when its history is rebuilt. Datasets read as a union of days that
// never change once closed (event_time, stat_date) are not: re-exporting
// the days that changed replaces them exactly.
func (d Dataset) Reseedable() bool {
	return d.Mode == ModeIncrementalAppend && d.Partition == PartitionActivity
}

// What a dataset's late-data check sees (LateData).
const (
	LateNone    = ""        // no fingerprint (a snapshot, or none declared): never checked
	LateRows    = "rows"    // the generated row count: rows added or removed
	LateChanges = "changes" // a changed_column's max() or a declared fingerprint: any change it summarises
)

// LateData says what the restatement check of a recently closed day can
// see change: nothing without a fingerprint, rows added or removed with
// the generated count(*) alone (no changed_column), and rows changed in
// place too with changed_column or a fingerprint of the catalog's own.
func (d Dataset) LateData() string {
	q, err := d.FingerprintQuery(DialectPostgres)
	switch {
	case err != nil:
		return LateNone
	case d.TenantColumn != "" && d.ChangedColumn == "" && q == "SELECT count(*) FROM "+d.Relation+" WHERE "+d.where(DialectPostgres):
		return LateRows
	}
	return LateChanges
}
