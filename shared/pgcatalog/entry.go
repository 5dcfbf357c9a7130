package pgcatalog

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// EntryOptions says what the database's catalog cannot: which column holds
// the tenant, which decides the day, and what the day means.
type EntryOptions struct {
	Name            string // the dataset name; the relation's name when empty
	TenantColumn    string
	PartitionColumn string
	Partition       string // dataset.PartitionEventTime, PartitionStatDate, PartitionActivity or PartitionSnapshot
	IDColumn        string // activity only: the column identifying a record
	// SourceTimeZone is the zone of the table's timestamp without time
	// zone columns; required when it has any.
	SourceTimeZone string
	// ChangedColumn is the fingerprint's max() column; "" offers one
	// (ChangedColumnNames), NoChangedColumn declares none.
	ChangedColumn string
}

// NoChangedColumn as EntryOptions.ChangedColumn declares no changed_column
// even when the table has an updated_at-like column.
const NoChangedColumn = "-"

// ChangedColumnNames are the names of the column catalog init offers as a
// dataset's changed_column, in order of preference, when it is a timestamp
// (or a date): the column an application sets on every update, so that the
// fingerprint's max() changes with an update in place.
var ChangedColumnNames = []string{"updated_at", "modified_at", "last_updated_at", "last_modified_at", "changed_at",
	"last_update", "last_updated", "last_modified", "updated_on", "modified_on", "date_updated", "date_modified", "updated", "modified"}

// Entry derives a catalog entry from a table as the database declares it:
// every column but the tenant's, in order, typed by Map, NOT NULL as
// required, comments as descriptions, enums as low-cardinality strings; a
// JSON column only when the table has one. The queries are left to the
// catalog loader (tenant_column, order_by from the primary key,
// changed_column, the partition column's source_time_zone: see
// dataset/generate.go), so the entry never holds SQL of its own. Every
// column that cannot be mapped is named in one error; the entry is
// validated as the catalog loader validates it.
func Entry(t Table, o EntryOptions) (dataset.Dataset, error) {
	name := o.Name
	if name == "" {
		name = t.Relation
		if _, after, ok := strings.Cut(name, "."); ok {
			name = after
		}
	}
	d := dataset.Dataset{
		Name: name, Version: 1, Description: t.Comment,
		Partition: o.Partition, PartitionColumn: o.PartitionColumn, Relation: t.Relation,
		Mode: dataset.ModeIncrementalAppend, Read: dataset.ReadUnionAllPartitions,
		TenantColumn: o.TenantColumn,
	}
	if o.Partition == dataset.PartitionSnapshot {
		// A complete copy of the tenant's rows per day (dataset/snapshot.go).
		d.Mode, d.Read = dataset.ModeFullRefresh, dataset.ReadLatestSnapshot
		if o.PartitionColumn != "" {
			return dataset.Dataset{}, fmt.Errorf("partition column %q: a snapshot has none (the day is the date the copy is taken)", o.PartitionColumn)
		}
		if o.ChangedColumn != "" && o.ChangedColumn != NoChangedColumn {
			return dataset.Dataset{}, fmt.Errorf("changed column %q: a snapshot has no fingerprint (a copy is never restated)", o.ChangedColumn)
		}
	}
	if o.Partition == dataset.PartitionActivity {
		d.IDColumn, d.OrderColumn = o.IDColumn, o.PartitionColumn
	} else if o.IDColumn != "" {
		return dataset.Dataset{}, fmt.Errorf("id column %q: only an activity dataset has one", o.IDColumn)
	}
	tc, ok := t.Column(o.TenantColumn)
	if !ok {
		return dataset.Dataset{}, fmt.Errorf("tenant column %q: relation %s has no such column", o.TenantColumn, t.Relation)
	}
	if d.TenantType, ok = tenantTypeOf(tc.Type); !ok {
		_, err := TenantType(tc.Type)
		return dataset.Dataset{}, fmt.Errorf("tenant column %q: %w", o.TenantColumn, err)
	}
	var errs []error
	for _, c := range t.Columns {
		if c.Name == o.TenantColumn {
			continue
		}
		if !columnNameRE.MatchString(c.Name) {
			errs = append(errs, fmt.Errorf("column %q: a catalog column is named in lower snake case (it becomes a Parquet, Hive and SQL identifier in every engine): rename it in a view (%s AS %s) and describe the view",
				c.Name, quoteIdent(c.Name), suggestName(c.Name)))
			continue
		}
		m, err := Map(c.Type)
		if err != nil {
			errs = append(errs, fmt.Errorf("column %s: %w", c.Name, err))
			continue
		}
		col := dataset.Column{Name: c.Name, Type: m.Type, Nullable: !c.NotNull, Description: c.Comment}
		if c.Name == o.PartitionColumn || c.Name == o.IDColumn {
			// The export needs these set. A view does not carry NOT NULL,
			// and a table's nullable partition column puts its NULL rows
			// in no day (the window leaves them out); catalog check says
			// so.
			col.Nullable = false
		}
		if m.Enum && m.Type.Kind == dataset.KindString {
			col.Dictionary = dataset.DictionaryOn
		}
		if m.Enum && col.Description == "" && len(c.EnumLabels) > 0 {
			col.Description = "One of: " + strings.Join(c.EnumLabels, ", ") + "."
		}
		if m.LocalTime {
			if o.SourceTimeZone == "" {
				errs = append(errs, fmt.Errorf("column %s: %s holds wall-clock times without a zone; say which zone they are in (source time zone)", c.Name, c.Type.Display))
				continue
			}
			col.SourceTimeZone = o.SourceTimeZone
		}
		d.Columns = append(d.Columns, col)
	}
	if len(errs) > 0 {
		return dataset.Dataset{}, errors.Join(errs...)
	}
	d.OrderBy = orderBy(d, t.PrimaryKey)
	if !d.IsSnapshot() {
		c, err := changedColumn(d, t, o.ChangedColumn)
		if err != nil {
			return dataset.Dataset{}, err
		}
		d.ChangedColumn = c
	}
	if err := validate(d); err != nil {
		return dataset.Dataset{}, err
	}
	return d, nil
}

// columnNameRE is what a catalog column name must match (dataset.Validate).
var columnNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// suggestName is name in lower snake case.
func suggestName(name string) string {
	s := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(name), "_"), "_")
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "c_" + s
	}
	return s
}

func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// tenantTypeOf is TenantType without its error.
func tenantTypeOf(t SourceType) (string, bool) {
	tt, err := TenantType(t)
	return tt, err == nil
}

// orderBy is the generated export's ORDER BY: the partition column, then
// the primary key's other columns (the tenant's is the same in every row),
// so a day's rows come in one order every time they are read; nil when it
// would be the loader's default (the partition column, or a snapshot's
// first column).
func orderBy(d dataset.Dataset, pk []string) []string {
	var order []string
	if !d.IsSnapshot() {
		order = append(order, d.PartitionColumn)
		if d.IDColumn != "" && !slices.Contains(pk, d.IDColumn) {
			order = append(order, d.IDColumn)
		}
	}
	for _, c := range pk {
		if _, ok := d.Column(c); ok && !slices.Contains(order, c) {
			order = append(order, c)
		}
	}
	switch {
	case len(order) == 0:
		return nil
	case !d.IsSnapshot() && len(order) == 1:
		return nil
	case d.IsSnapshot() && len(order) == 1 && order[0] == d.Columns[0].Name:
		return nil
	}
	return order
}

// changedColumn is the entry's changed_column: the one asked for, or the
// first column of ChangedColumnNames the table has as a timestamp or date.
func changedColumn(d dataset.Dataset, t Table, asked string) (string, error) {
	switch asked {
	case NoChangedColumn:
		return "", nil
	case "":
		for _, n := range ChangedColumnNames {
			if c, ok := d.Column(n); ok && (c.Type.Kind == dataset.KindTimestamp || c.Type.Kind == dataset.KindDate) {
				return n, nil
			}
		}
		return "", nil
	}
	if _, ok := t.Column(asked); !ok {
		return "", fmt.Errorf("changed column %q: relation %s has no such column", asked, t.Relation)
	}
	return asked, nil
}

// validate runs the catalog loader on the entry: its queries generated,
// every rule of a catalog file applied.
func validate(d dataset.Dataset) error {
	_, err := dataset.ResolveEntry(d)
	return err
}

// isView reports whether a relation of pg_class.relkind kind is a view or
// materialized view: neither carries NOT NULL.
func isView(kind string) bool { return kind == "v" || kind == "m" }

// IsView reports whether the relation is a view or a materialized view,
// which carry no NOT NULL.
func (t Table) IsView() bool { return isView(t.Kind) }
