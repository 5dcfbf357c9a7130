package dataset

import "fmt"

// Compatible reports whether next may replace prev without a new contract
// version (SPEC D2). Delivered files are read together with future ones, so
// the only allowed change is appending nullable columns (older partitions
// simply lack them and read as NULL) and loosening required to nullable.
// Renaming, removing, reordering or retyping a column, tightening nullable to
// required, appending a required column, lowering the version and changing
// partition semantics are refused; the error names the column.
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
	return nil
}

func indexOf(cols []Column, name string) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	return -1
}
