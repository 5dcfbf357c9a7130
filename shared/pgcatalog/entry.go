package pgcatalog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

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
}

// Entry derives a catalog entry from a table as the database declares it:
// every column but the tenant's, in order, typed by Map, NOT NULL as
// required, comments as descriptions, enums as low-cardinality strings.
// The queries read the table of one tenant's day by the partition column,
// converting the window for a timestamp without time zone. Every column
// that cannot be mapped is named in one error; the entry is validated as
// the catalog loader validates it.
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
	}
	if o.Partition == dataset.PartitionSnapshot {
		// A complete copy of the tenant's rows per day (dataset/snapshot.go).
		d.Mode, d.Read = dataset.ModeFullRefresh, dataset.ReadLatestSnapshot
		if o.PartitionColumn != "" {
			return dataset.Dataset{}, fmt.Errorf("partition column %q: a snapshot has none (the day is the date the copy is taken)", o.PartitionColumn)
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
	tenantType, err := TenantType(tc.Type)
	if err != nil {
		return dataset.Dataset{}, fmt.Errorf("tenant column %q: %w", o.TenantColumn, err)
	}
	if tenantType != dataset.TenantString {
		d.TenantType = tenantType
	}
	var errs []error
	var names []string
	localPartition := false
	for _, c := range t.Columns {
		if c.Name == o.TenantColumn {
			continue
		}
		m, err := Map(c.Type)
		if err != nil {
			errs = append(errs, fmt.Errorf("column %s: %w", c.Name, err))
			continue
		}
		col := dataset.Column{Name: c.Name, Type: m.Type, Nullable: !c.NotNull, Description: c.Comment}
		if isView(t.Kind) && (c.Name == o.PartitionColumn || c.Name == o.IDColumn) {
			// A view does not carry NOT NULL; the export needs these
			// columns set, and refuses a row without them.
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
			if c.Name == o.PartitionColumn {
				localPartition = true
			}
		}
		d.Columns = append(d.Columns, col)
		names = append(names, pgx.Identifier{c.Name}.Sanitize())
	}
	if len(errs) > 0 {
		return dataset.Dataset{}, errors.Join(errs...)
	}
	tenant := pgx.Identifier{o.TenantColumn}.Sanitize()
	part := pgx.Identifier{o.PartitionColumn}.Sanitize()
	order := part
	if d.IDColumn != "" {
		order += ", " + pgx.Identifier{d.IDColumn}.Sanitize()
	}
	start, end := "$2", "$3"
	if localPartition {
		// The window is two instants; the column holds wall times in its
		// zone: compare like with like, on the column's side of the index.
		zone := "'" + strings.ReplaceAll(o.SourceTimeZone, "'", "''") + "'"
		start = "($2::timestamptz AT TIME ZONE " + zone + ")"
		end = "($3::timestamptz AT TIME ZONE " + zone + ")"
	}
	cols := strings.Join(names, ", ")
	if d.IsSnapshot() && len(names) > 0 {
		// No window: the tenant's whole current table, in the order of its
		// first column.
		pg := fmt.Sprintf("SELECT %s FROM %s WHERE %s = $1 ORDER BY %s", cols, t.Relation, tenant, names[0])
		lite := fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? ORDER BY %s", cols, t.Relation, tenant, names[0])
		d.Queries = map[string]string{dataset.DialectPostgres: pg, dataset.DialectSQLite: lite}
		if err := d.Validate(); err != nil {
			return dataset.Dataset{}, err
		}
		return d, nil
	}
	pg := fmt.Sprintf("SELECT %s FROM %s WHERE %s = $1 AND %s >= %s AND %s < %s ORDER BY %s", cols, t.Relation, tenant, part, start, part, end, order)
	lite := fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? AND %s >= ? AND %s < ? ORDER BY %s", cols, t.Relation, tenant, part, part, order)
	d.Queries = map[string]string{dataset.DialectPostgres: pg, dataset.DialectSQLite: lite}
	if err := d.Validate(); err != nil {
		return dataset.Dataset{}, err
	}
	return d, nil
}

func isView(kind string) bool { return kind == "v" || kind == "m" }
