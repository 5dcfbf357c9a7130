package dataset

import "fmt"

// Compatible reports whether next may replace prev without a new contract
// version (D2). Delivered files are read together with future ones, so
// the only allowed change is appending nullable columns (older partitions
// simply lack them and read as NULL) and loosening required to nullable.
// Renaming, removing, reordering or retyping a column, tightening nullable to
// required, appending a required column, lowering the version and changing
// partition semantics are refused; the error names the column.
//
// The load scripts bring a table created by an older schema up to date from
// the version bookkeeping, so it is checked too: a column keeps its since
// and nullable_since, an appended column has a since after prev's version
// (the version that appended it), and a loosened column records the version
// from which it is nullable in nullable_since.
func Compatible(prev, next Dataset) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("dataset %s: %s: %w", prev.Name, fmt.Sprintf(format, args...), ErrIncompatible)
	}
	if prev.Name != next.Name {
		return fail("renamed to %q", next.Name)
	}
	if next.Version < prev.Version {
		return fail("version lowered from %d to %d", prev.Version, next.Version)
	}
	if prev.Partition != next.Partition {
		return fail("partition changed from %q to %q", prev.Partition, next.Partition)
	}
	for i, old := range prev.Columns {
		if i >= len(next.Columns) {
			return fail("column %q removed", old.Name)
		}
		cur := next.Columns[i]
		if cur.Name != old.Name {
			if j := indexOf(next.Columns, old.Name); j >= 0 {
				return fail("column %q moved from position %d to %d", old.Name, i, j)
			}
			if indexOf(prev.Columns, cur.Name) < 0 {
				return fail("column %q renamed or replaced by %q", old.Name, cur.Name)
			}
			return fail("column %q removed", old.Name)
		}
		if cur.Type != old.Type {
			return fail("column %q retyped from %s to %s", old.Name, old.Type, cur.Type)
		}
		if old.Nullable && !cur.Nullable {
			return fail("column %q changed from nullable to required", old.Name)
		}
		if cur.SinceVersion() != old.SinceVersion() {
			return fail("column %q since changed from %d to %d", old.Name, old.SinceVersion(), cur.SinceVersion())
		}
		if err := loosening(prev, next, old, cur); err != "" {
			return fail("%s", err)
		}
	}
	appended := next.Columns[len(prev.Columns):]
	for _, c := range appended {
		if !c.Nullable {
			return fail("appended column %q must be nullable", c.Name)
		}
	}
	if len(appended) > 0 && next.Version == prev.Version {
		// Manifests carry the schema version; two schemas must not share one.
		return fail("columns appended (first %q) without raising version %d", appended[0].Name, prev.Version)
	}
	for _, c := range appended {
		if s := c.SinceVersion(); s <= prev.Version || s > next.Version {
			return fail("appended column %q has since %d, want the version that appended it (%d..%d)", c.Name, s, prev.Version+1, next.Version)
		}
	}
	return nil
}

// loosening checks the nullable_since bookkeeping of one kept column; it
// returns what is wrong, or "".
func loosening(prev, next Dataset, old, cur Column) string {
	switch {
	case !old.Nullable && cur.Nullable:
		if cur.NullableSince < prev.Version || cur.NullableSince > next.Version {
			return fmt.Sprintf("column %q loosened to nullable needs nullable_since %d..%d (the version from which it is nullable), has %d",
				old.Name, prev.Version, next.Version, cur.NullableSince)
		}
	case cur.NullableSince != old.NullableSince:
		return fmt.Sprintf("column %q nullable_since changed from %d to %d", old.Name, old.NullableSince, cur.NullableSince)
	}
	return ""
}

func indexOf(cols []Column, name string) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	return -1
}
