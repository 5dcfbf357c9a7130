package dataset

import (
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

// Window checks that coerced rows belong to one partition: the partition
// column's value lies in the day's window. A source's query already filters
// on it, but a view, a zone bug or text compared as text (SQLite) can return
// a row of another day, which would then be delivered twice or never.
type Window struct {
	ds         Dataset
	col        int
	day        civil.Date
	start, end time.Time
}

// Window returns the check for day, whose instants are [start, end) in the
// account's zone. A stat_date partition holds exactly the rows dated day.
func (d Dataset) Window(day civil.Date, start, end time.Time) (*Window, error) {
	for i, c := range d.Columns {
		if c.Name == d.PartitionColumn {
			return &Window{ds: d, col: i, day: day, start: start.UTC(), end: end.UTC()}, nil
		}
	}
	return nil, fmt.Errorf("dataset %s: partition_column %q is not a column", d.Name, d.PartitionColumn)
}

// Check returns a RowError naming the column, the row number and the value
// when row (coerced, see Coerce) is not in the window.
func (w *Window) Check(row []any, rowNum int64) error {
	if w.col >= len(row) {
		return &RowError{Dataset: w.ds.Name, Row: rowNum, Reason: fmt.Sprintf("got %d columns, want %d", len(row), len(w.ds.Columns))}
	}
	bad := func(v any, what string) error {
		return &RowError{Dataset: w.ds.Name, Row: rowNum, Column: w.ds.PartitionColumn, Value: v, Reason: what}
	}
	switch v := row[w.col].(type) {
	case civil.Date:
		if v != w.day {
			return bad(v.String(), fmt.Sprintf("dated outside the partition's day %s", w.day))
		}
	case time.Time:
		if v.Before(w.start) || !v.Before(w.end) {
			return bad(FormatTimestamp(v), fmt.Sprintf("outside the partition's day %s [%s, %s)", w.day, FormatTimestamp(w.start), FormatTimestamp(w.end)))
		}
	default:
		return bad(v, "partition column holds no date or timestamp")
	}
	return nil
}
