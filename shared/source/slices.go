package source

// Slice boundaries from the data (E7). A day too large for one run is cut
// into slices; equal time ranges give one heavy slice when the day's rows
// crowd into an hour, so a source that can walk the partition column's
// index places the boundaries at row quantiles instead.
//
// The walk is chained: boundary i+1 is the partition column's value
// `step` rows past boundary i, found with the dataset's own query bound to
// [boundary i, day end) and `ORDER BY <partition column> LIMIT 1 OFFSET
// step` (dataset.Dataset.SliceBoundQuery). Each lookup reads only the step rows it skips, on the tenant and
// partition column index, so the n-1 lookups of a plan read the day's index
// entries once in all (docs/architecture.md, "Slices"). Rows equal to a
// boundary belong to the slice the boundary starts (half-open ranges), so
// ties never put a row in two slices; a run of ties longer than a step
// ends one microsecond past its value (the timestamps' precision).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Slicer places the boundaries of a day's slices at row quantiles.
type Slicer interface {
	// SliceBounds returns at most n-1 instants, strictly increasing and
	// strictly inside (q.Start, q.End), cutting the day's rows into
	// half-open ranges [q.Start, b0), [b0, b1), …, [bk, q.End) of about
	// rows/n rows each (rows: the day's expected count; 0 or less counts
	// them). Fewer come back when the day has fewer rows than planned. A
	// source or dataset that cannot say returns an error wrapping
	// ErrNoBounds.
	SliceBounds(ctx context.Context, q Query, n int, rows int64) ([]time.Time, error)
}

var _ Slicer = (*SQL)(nil)

// ErrNoBounds is returned by a Slicer that cannot place a day's slice
// boundaries from its rows; the caller slices by equal time ranges.
var ErrNoBounds = errors.New("the source cannot place slice boundaries from the rows")

// SliceBounds implements Slicer for a timestamp partition column read as
// instants (not through a declared source_time_zone).
func (s *SQL) SliceBounds(ctx context.Context, q Query, n int, rows int64) ([]time.Time, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	ds := q.Dataset
	c, ok := ds.Column(ds.PartitionColumn)
	switch {
	case !ok || c.Type.Kind != dataset.KindTimestamp:
		return nil, fmt.Errorf("%w: dataset %s: partition_column %q is not a timestamp", ErrNoBounds, ds.Name, ds.PartitionColumn)
	case c.SourceTimeZone != "":
		return nil, fmt.Errorf("%w: dataset %s: partition_column %q is wall-clock time in %s", ErrNoBounds, ds.Name, ds.PartitionColumn, c.SourceTimeZone)
	case n < 2:
		return nil, fmt.Errorf("source: slice bounds of dataset %s day %s: n = %d, want at least 2", ds.Name, q.Day, n)
	}
	text, err := ds.SliceBoundQuery(s.dialect)
	if err != nil {
		return nil, err
	}
	var bounds []time.Time
	err = s.inReadTx(ctx, func(db queryer) error {
		var err error
		bounds, err = s.sliceBounds(ctx, db, q, text, n, rows)
		return err
	})
	return bounds, err
}

// sliceBounds is SliceBounds' walk on db (a read transaction: inReadTx).
func (s *SQL) sliceBounds(ctx context.Context, db queryer, q Query, text string, n int, rows int64) ([]time.Time, error) {
	var err error
	if rows <= 0 {
		if rows, err = s.count(ctx, db, q); err != nil {
			return nil, err
		}
	}
	step := (rows + int64(n) - 1) / int64(n)
	if step < 1 {
		return nil, nil
	}
	var bounds []time.Time
	from := q
	for len(bounds) < n-1 {
		b, ok, err := s.boundAfter(ctx, db, from, text, step)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if !b.After(from.Start) {
			// More than a step of rows on from.Start itself: they are
			// one slice, ending right past them, if any row follows.
			b = from.Start.Add(time.Microsecond)
			next := from
			next.Start = b
			if _, more, err := s.boundAfter(ctx, db, next, text, 0); err != nil || !more {
				return bounds, err
			}
		}
		if !b.Before(q.End) {
			break
		}
		bounds = append(bounds, b)
		from.Start = b
	}
	return bounds, nil
}

// count is the day's rows, when no expected count was given.
func (s *SQL) count(ctx context.Context, db queryer, q Query) (int64, error) {
	text, err := q.Dataset.Query(s.dialect)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM ("+text+") AS daybook_slice", q.Params(s.dialect)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sql source %s: count dataset %s day %s: %w", s.name, q.Dataset.Name, q.Day, unavailable{err})
	}
	return n, nil
}

// boundAfter is the partition column's value step rows into q's window,
// false when the window holds no more rows than that.
func (s *SQL) boundAfter(ctx context.Context, db queryer, q Query, text string, step int64) (time.Time, bool, error) {
	var v any
	err := db.QueryRowContext(ctx, text, append(q.Params(s.dialect), step)...).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	what := fmt.Sprintf("sql source %s: slice bound of dataset %s day %s after %s", s.name, q.Dataset.Name, q.Day, dataset.FormatTimestamp(q.Start))
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%s: %w", what, unavailable{err})
	}
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x.UTC().Truncate(time.Microsecond)
	case string:
		t, err = dataset.ParseTimestamp(x)
	case []byte:
		t, err = dataset.ParseTimestamp(string(x))
	default:
		err = fmt.Errorf("a %T, not a timestamp", v)
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%s: %w", what, err)
	}
	return t, true, nil
}
