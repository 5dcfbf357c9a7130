package dataset

import (
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

// Window checks that rows belong to one partition: the partition column's
// value lies in the day's window. A source's query already filters on it,
// but a view, a zone bug or text compared as text (SQLite) can return a row
// of another day, which would then be delivered twice or never.
type Window struct {
	ds         Dataset
	col        int
	day        civil.Date
	start, end time.Time
	// The window in a vector's storage: Unix microseconds [startUS, endUS)
	// for a timestamp column, days since 1970-01-01 for a date column.
	startUS, endUS int64
	epochDay       int32
}

// Window returns the check for day, whose instants are [start, end) in the
// account's zone. A stat_date partition holds exactly the rows dated day.
func (d Dataset) Window(day civil.Date, start, end time.Time) (*Window, error) {
	if d.IsSnapshot() {
		// A snapshot's rows are the tenant's current rows: no window.
		return &Window{ds: d, col: -1, day: day, start: start.UTC(), end: end.UTC()}, nil
	}
	for i, c := range d.Columns {
		if c.Name == d.PartitionColumn {
			if k := c.Type.Kind; k != KindTimestamp && k != KindDate {
				return nil, fmt.Errorf("dataset %s: partition_column %s is a %s, not a timestamp or date", d.Name, c.Name, c.Type)
			}
			return &Window{ds: d, col: i, day: day, start: start.UTC(), end: end.UTC(),
				startUS: start.UnixMicro(), endUS: end.UnixMicro(), epochDay: day.EpochDays()}, nil
		}
	}
	return nil, fmt.Errorf("dataset %s: partition_column %q is not a column", d.Name, d.PartitionColumn)
}

// CheckBatch returns a RowError naming the column, the partition row number
// and the value of the first row of b (a batch of the window's dataset)
// whose partition column is not in the window. It reads the column's typed
// vector and allocates nothing unless a row is refused. A NULL partition
// value is refused too (the catalog declares the column required).
func (w *Window) CheckBatch(b *Batch) error {
	if w.col < 0 {
		return nil // a snapshot: nothing to check
	}
	if w.col >= len(b.Cols) {
		return &RowError{Dataset: w.ds.Name, Row: b.FirstRow, Reason: fmt.Sprintf("got %d columns, want %d", len(b.Cols), len(w.ds.Columns))}
	}
	v := &b.Cols[w.col]
	n := b.Len()
	switch v.Storage {
	case StorageInt64: // timestamp
		for i, us := range v.Int64[:n] {
			if (us < w.startUS || us >= w.endUS) || v.IsNull(i) {
				return w.refuse(b, i)
			}
		}
	case StorageInt32: // date
		for i, d := range v.Int32[:n] {
			if d != w.epochDay || v.IsNull(i) {
				return w.refuse(b, i)
			}
		}
	default:
		return &RowError{Dataset: w.ds.Name, Row: b.FirstRow, Column: w.ds.PartitionColumn, Reason: "partition column holds no date or timestamp"}
	}
	return nil
}

// refuse builds the error for row i of b.
func (w *Window) refuse(b *Batch, i int) error {
	v := &b.Cols[w.col]
	e := &RowError{Dataset: w.ds.Name, Row: b.RowNum(i), Column: w.ds.PartitionColumn}
	switch {
	case v.IsNull(i):
		e.Reason = "null in the partition column"
	case v.Storage == StorageInt32:
		day := civil.FromEpochDays(v.Int32[i])
		e.Value, e.Reason = day.String(), fmt.Sprintf("dated outside the partition's day %s", w.day)
	default:
		e.Value = FormatTimestamp(time.UnixMicro(v.Int64[i]))
		e.Reason = fmt.Sprintf("outside the partition's day %s [%s, %s)", w.day, FormatTimestamp(w.start), FormatTimestamp(w.end))
	}
	return e
}

// Sliceable reports whether a day of the dataset can be exported in slices
// (E7): its partition column is a timestamp, so sub-ranges of the day's
// window partition its rows. A date column puts every row of the day on one
// value, and a snapshot has no partition column at all.
func (d Dataset) Sliceable() bool {
	for _, c := range d.Columns {
		if c.Name == d.PartitionColumn {
			return c.Type.Kind == KindTimestamp
		}
	}
	return false
}
