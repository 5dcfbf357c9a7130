package dataset

import "fmt"

// Snapshot datasets (partition snapshot, mode full_refresh, read
// latest_snapshot). A dimension table (plans, users, settings) has no day
// of its own: each day's partition is a complete copy of the tenant's
// current rows, taken when the day is exported, once it has closed. So:
//
//   - its query binds the account alone ($1, or one ? in SQLite) and has no
//     time window; a generated one is
//     SELECT <columns> FROM <relation> WHERE <tenant_column> = $1 ORDER BY
//     <order_by, or the first column>;
//   - it has no partition column (rows are not checked against a window:
//     every current row belongs to the copy);
//   - it has no fingerprint and is never restated: a snapshot day is the
//     table as it was when the copy was taken, and a later change belongs
//     in a later day's copy, not in a rewrite of an old one. A re-export of
//     a snapshot day (requested by an operator) takes a new copy: its
//     manifest's provenance says when (snapshot_at);
//   - it is never split into slices (no timestamp to split the day on);
//   - a consumer reads the newest day that has _SUCCESS (read
//     latest_snapshot): the load scripts replace the table with it.
//
// The catalog refuses every other combination, naming the field and value.

// IsSnapshot reports whether the dataset is a snapshot dataset.
func (d Dataset) IsSnapshot() bool { return d.Partition == PartitionSnapshot }

// validateSnapshot checks partition, mode and read agree: snapshot with
// full_refresh and latest_snapshot, every other partition with
// incremental_append and union_all_partitions.
func (d Dataset) validateSnapshot() error {
	if !d.IsSnapshot() {
		if d.Mode == ModeFullRefresh {
			return fmt.Errorf("dataset %s: mode %q needs partition %q (a complete copy per day); partition %q is an incremental feed: give mode %q", d.Name, d.Mode, PartitionSnapshot, d.Partition, ModeIncrementalAppend)
		}
		return nil
	}
	switch {
	case d.Mode != ModeFullRefresh:
		return fmt.Errorf("dataset %s: partition %q needs mode %q (each day is a complete copy), not %q", d.Name, d.Partition, ModeFullRefresh, d.Mode)
	case d.Read != ReadLatestSnapshot:
		return fmt.Errorf("dataset %s: partition %q needs read %q (a consumer reads the newest day), not %q", d.Name, d.Partition, ReadLatestSnapshot, d.Read)
	case d.PartitionColumn != "":
		return fmt.Errorf("dataset %s: partition_column %q: a snapshot has no partition column (the day is the date the copy was taken): leave it out", d.Name, d.PartitionColumn)
	case d.IDColumn != "" || d.OrderColumn != "":
		return fmt.Errorf("dataset %s: id_column %q, order_column %q: only activity datasets have them; a snapshot is already one row per record", d.Name, d.IDColumn, d.OrderColumn)
	case d.ChangedColumn != "":
		return fmt.Errorf("dataset %s: changed_column %q: a snapshot has no fingerprint (it is never restated): leave it out", d.Name, d.ChangedColumn)
	}
	return nil
}
