package pgcatalog

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Finding is one thing catalog check found about a dataset.
type Finding struct {
	Severity Severity `json:"severity"`
	Dataset  string   `json:"dataset"`
	Column   string   `json:"column,omitempty"`
	// Check names what was checked: relation, column, type, nullability,
	// query or plan.
	Check    string `json:"check"`
	Declared string `json:"declared,omitempty"`
	Found    string `json:"found,omitempty"`
	Message  string `json:"message"`
}

// SeqScanRows is the estimated size from which a sequential scan of a
// dataset's relation is an error: below it a day's read of the whole table
// is cheap enough to be a warning.
const SeqScanRows = 10_000

// ResultColumn is one result column of a query.
type ResultColumn struct {
	Name string
	Type SourceType
}

// DescribeQuery prepares query on conn (a connection of the pgx driver)
// and describes its result columns, without running it.
func DescribeQuery(ctx context.Context, conn *sql.Conn, query string) ([]ResultColumn, error) {
	var out []ResultColumn
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("describe query: connection of driver %T, want pgx", dc)
		}
		pc := c.Conn().PgConn()
		sd, err := pc.Prepare(ctx, "", query, nil)
		if err != nil {
			return err
		}
		oids := make([]uint32, len(sd.Fields))
		mods := make([]int32, len(sd.Fields))
		out = make([]ResultColumn, len(sd.Fields))
		for i, f := range sd.Fields {
			oids[i], mods[i], out[i].Name = f.DataTypeOID, f.TypeModifier, f.Name
		}
		if len(oids) == 0 {
			return nil
		}
		a, b := TypesArgs(oids, mods)
		res := pc.ExecParams(ctx, TypesQuery, [][]byte{[]byte(a), []byte(b)}, nil, nil, nil).Read()
		if res.Err != nil {
			return res.Err
		}
		if len(res.Rows) != len(oids) {
			return fmt.Errorf("%d of %d result types found", len(res.Rows), len(oids))
		}
		for i, row := range res.Rows {
			f := make([]string, len(row))
			for j, v := range row {
				f[j] = string(v)
			}
			if out[i].Type, _, err = TypeFromRow(f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("describe query: %w", err)
	}
	return out, nil
}

// CheckDataset checks d against the live database conn: the relation and
// every declared column exist, each source type maps to the declared type
// (CheckColumn), a required column is NOT NULL in the source, the export
// query's result columns are the declared ones with types that map, the
// query runs on an empty window, and its plan reads the relation through
// an index on the partition column. An error returned (rather than a
// finding) means the database could not be asked.
func CheckDataset(ctx context.Context, conn *sql.Conn, d dataset.Dataset) ([]Finding, error) {
	var out []Finding
	add := func(sev Severity, check, col, declared, found, format string, args ...any) {
		out = append(out, Finding{Severity: sev, Dataset: d.Name, Column: col, Check: check, Declared: declared, Found: found, Message: fmt.Sprintf(format, args...)})
	}
	t, err := ReadTable(ctx, conn, d.Relation)
	if errors.Is(err, ErrNoRelation) {
		add(SeverityError, "relation", "", d.Relation, "missing", "relation %s does not exist", d.Relation)
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	checked := map[string]bool{}
	for _, c := range d.Columns {
		sc, ok := t.Column(c.Name)
		if !ok {
			continue // the query may compute it: checked with the result below
		}
		checked[c.Name] = true
		if sev, reason := CheckColumn(c, sc.Type); sev != "" {
			add(sev, "type", c.Name, declared(c), sc.Type.Display, "%s", reason)
		}
		if !c.Nullable && !sc.NotNull {
			sev, why := SeverityError, "the export fails on the first NULL: add NOT NULL to the column or declare it nullable"
			switch {
			case isView(t.Kind):
				sev, why = SeverityWarning, "a view does not say whether it can be; the export fails on the first NULL"
			case c.Name == d.PartitionColumn && d.TenantColumn != "":
				sev, why = SeverityWarning, "a row whose "+c.Name+" is NULL is in no day: the generated query's window leaves it out, so it is never delivered"
			}
			add(sev, "nullability", c.Name, "required", "nullable", "column is declared required but the source allows NULL: %s", why)
		}
	}
	query, err := d.Query(dataset.DialectPostgres)
	if err != nil {
		add(SeverityError, "query", "", "", "", "%v", err)
		return out, nil
	}
	res, err := DescribeQuery(ctx, conn, query)
	if err != nil {
		add(SeverityError, "query", "", "", "", "the export query does not prepare: %v", err)
		return out, nil
	}
	checkTenant(ctx, conn, add, d, query)
	if names := resultNames(res); strings.Join(names, ",") != strings.Join(d.ColumnNames(), ",") {
		add(SeverityError, "query", "", strings.Join(d.ColumnNames(), ", "), strings.Join(names, ", "), "the export query's result columns are not the declared columns in order")
	} else {
		for i, c := range d.Columns {
			if checked[c.Name] {
				continue
			}
			if _, inTable := t.Column(c.Name); !inTable && !isComputed(query, c.Name) {
				add(SeverityError, "column", c.Name, declared(c), "missing", "relation %s has no column %s", d.Relation, c.Name)
				continue
			}
			if sev, reason := CheckColumn(c, res[i].Type); sev != "" {
				add(sev, "type", c.Name, declared(c), res[i].Type.Display, "query result: %s", reason)
			}
		}
	}
	for _, c := range d.Columns {
		if c.Name == d.PartitionColumn && c.SourceTimeZone != "" && c.SourceTimeZone != "UTC" && !strings.Contains(strings.ToUpper(query), "AT TIME ZONE") {
			add(SeverityError, "query", c.Name, "source_time_zone "+c.SourceTimeZone, "", "the partition column holds wall times in %s: the query must compare it with ($2::timestamptz AT TIME ZONE '%s') and likewise $3", c.SourceTimeZone, c.SourceTimeZone)
		}
	}
	start, end := "2000-01-01T00:00:00Z", "2000-01-02T00:00:00Z"
	switch d.Partition {
	case dataset.PartitionStatDate:
		start, end = "2000-01-01", "2000-01-02"
	case dataset.PartitionSnapshot:
		start, end = "", "" // bound to the tenant alone
	}
	if err := runEmpty(ctx, conn, d, query, start); err != nil {
		add(SeverityError, "query", "", "", "", "the export query fails on an empty window: %v", err)
		return out, nil
	}
	if d.TenantColumn != "" && t.Kind != "v" {
		// The query is generated: the tenant and partition columns are
		// known, so the indexes are read from the catalog, whatever the
		// planner prefers for a table of a few rows today.
		checkIndexes(add, d, t)
		return out, nil
	}
	scan, ok, err := Explain(ctx, conn, d.Relation, query, start, end)
	switch {
	case err != nil:
		add(SeverityError, "plan", "", "", "", "%v", err)
	case !ok:
		add(SeverityWarning, "plan", "", "", "", "the plan does not read %s itself (a view?): check the tables under it have an index on tenant and %s", d.Relation, d.PartitionColumn)
	case d.IsSnapshot():
		snapshotPlan(add, d, t, scan)
	case scan.Node == "Seq Scan":
		sev := SeverityWarning
		if t.EstimatedRows >= SeqScanRows {
			sev = SeverityError
		}
		add(sev, "plan", d.PartitionColumn, "index on tenant and "+d.PartitionColumn, "sequential scan",
			"the export query reads %s with a sequential scan (%s); every day's export reads the whole table: add an index on (tenant, %s)", d.Relation, estimate(t.EstimatedRows), d.PartitionColumn)
	case !strings.Contains(scan.IndexCond, d.PartitionColumn):
		add(SeverityWarning, "plan", d.PartitionColumn, "index on tenant and "+d.PartitionColumn, "index "+scan.Index,
			"the export query uses index %s, whose condition %s does not bound %s: a day reads the tenant's whole history", scan.Index, scan.IndexCond, d.PartitionColumn)
	case !strings.Contains(scan.IndexCond, "$1"):
		// The generic plan shows the tenant as $1 where the index bounds it.
		add(SeverityWarning, "plan", d.PartitionColumn, "index on tenant and "+d.PartitionColumn, "index "+scan.Index,
			"the export query uses index %s, whose condition %s does not bound the tenant: a day reads every tenant's rows of that day", scan.Index, scan.IndexCond)
	}
	return out, nil
}

func estimate(rows int64) string {
	if rows < 0 {
		return "never analyzed, size unknown"
	}
	return fmt.Sprintf("estimated %d rows", rows)
}

func declared(c dataset.Column) string {
	if c.SourceTimeZone != "" {
		return c.Type.String() + " in " + c.SourceTimeZone
	}
	return c.Type.String()
}

func resultNames(res []ResultColumn) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.Name
	}
	return out
}

// isComputed reports whether the query names the column as an alias (AS
// name), so it need not be a column of the relation.
func isComputed(query, name string) bool {
	q := strings.ToLower(query)
	return strings.Contains(q, " as "+name+",") || strings.Contains(q, " as "+name+" ") || strings.Contains(q, ` as "`+name+`"`)
}

// runEmpty runs the export query on an empty window (start = end) and
// reads its result: the query runs, binds its parameters and returns no
// row. The tenant is a key of the dataset's tenant type (probeKey), and
// every parameter is bound as the exporter binds it (dataset.ParamText, in
// text format on pgx's extended protocol), so a tenant the exporter could
// not bind fails here too. A snapshot's query (at "") binds the tenant
// alone.
func runEmpty(ctx context.Context, conn *sql.Conn, d dataset.Dataset, query, at string) error {
	tenant, err := d.TenantValue(probeKey(d))
	if err != nil {
		return err
	}
	args := []any{tenant, at, at}
	if at == "" {
		args = args[:1]
	}
	params := make([][]byte, len(args))
	for i, a := range args {
		if params[i], err = dataset.ParamText(a); err != nil {
			return fmt.Errorf("parameter %d: %w", i+1, err)
		}
	}
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("connection of driver %T, want pgx", dc)
		}
		pc := c.Conn().PgConn()
		if _, err := pc.Prepare(ctx, "", query, nil); err != nil {
			return err
		}
		rr := pc.ExecPrepared(ctx, "", params, nil, nil)
		n := 0
		for rr.NextRow() {
			n++
		}
		if _, err := rr.Close(); err != nil {
			return fmt.Errorf("the tenant bound as the %s %q: %w", d.TenantKind(), params[0], err)
		}
		if n > 0 {
			return fmt.Errorf("an empty window returned %d rows: the query does not bound the day by $2 and $3", n)
		}
		return nil
	})
}

// probeKey is a key of d's tenant type for the probe: a tenant no
// platform has.
func probeKey(d dataset.Dataset) string {
	switch d.TenantKind() {
	case dataset.TenantInt64:
		return "0"
	case dataset.TenantUUID:
		return "00000000-0000-0000-0000-000000000000"
	}
	return "daybook catalog check"
}

// HasErrors reports whether any finding is an error.
func HasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// snapshotPlan checks the plan of a snapshot's query, which reads the
// tenant's whole table every day: an index on the tenant column is what
// keeps one tenant's copy from reading every tenant's rows.
func snapshotPlan(add func(sev Severity, check, col, declared, found, format string, args ...any), d dataset.Dataset, t Table, scan Scan) {
	switch {
	case scan.Node == "Seq Scan":
		sev := SeverityWarning
		if t.EstimatedRows >= SeqScanRows {
			sev = SeverityError
		}
		add(sev, "plan", d.TenantColumn, "index on the tenant column", "sequential scan",
			"the snapshot query reads %s with a sequential scan (%s); every day's copy of one tenant reads every tenant's rows: add an index on the tenant column", d.Relation, estimate(t.EstimatedRows))
	case !strings.Contains(scan.IndexCond, "$1"):
		add(SeverityWarning, "plan", d.TenantColumn, "index on the tenant column", "index "+scan.Index,
			"the snapshot query uses index %s, whose condition %s does not bound the tenant", scan.Index, scan.IndexCond)
	}
}

// checkIndexes checks that every relation a generated query reads (the
// table, or each leaf partition of a partitioned table) has a B-tree index
// whose keys begin with the tenant column and then the partition column
// (the tenant column alone for a snapshot), from the database's catalog:
// a plan of a table that is small today would read it sequentially
// whatever its indexes. A relation without one is a sequential scan of
// every tenant's rows (an error from SeqScanRows estimated rows on); an
// index on the tenant alone reads the tenant's whole history every day,
// one on the partition column first every tenant's rows of the day
// (warnings).
func checkIndexes(add func(sev Severity, check, col, declared, found, format string, args ...any), d dataset.Dataset, t Table) {
	keys := []string{d.TenantColumn}
	if !d.IsSnapshot() {
		keys = append(keys, d.PartitionColumn)
	}
	want := "index on (" + strings.Join(keys, ", ") + ")"
	rels := t.Leaves
	if t.Kind != "p" {
		rels = []string{""} // the relation's own indexes
	}
	for _, rel := range rels {
		where, on := t.Relation, "the table"
		if rel != "" {
			where, on = rel, "partition "+rel
		}
		var tenantFirst, partFirst *Index
		good := false
		for i := range t.Indexes {
			ix := &t.Indexes[i]
			if rel != "" && ix.On != rel {
				continue
			}
			switch {
			case len(ix.Columns) >= len(keys) && slices.Equal(ix.Columns[:len(keys)], keys):
				good = true
			case ix.Columns[0] == d.TenantColumn && tenantFirst == nil:
				tenantFirst = ix
			case !d.IsSnapshot() && ix.Columns[0] == d.PartitionColumn && partFirst == nil:
				partFirst = ix
			}
		}
		switch {
		case good:
		case tenantFirst != nil:
			add(SeverityWarning, "index", d.PartitionColumn, want, indexLabel(*tenantFirst),
				"%s has index %s on the tenant but not then %s: every day's export reads the tenant's whole history: add an index on (%s)", on, indexLabel(*tenantFirst), d.PartitionColumn, strings.Join(keys, ", "))
		case partFirst != nil:
			add(SeverityWarning, "index", d.TenantColumn, want, indexLabel(*partFirst),
				"%s has index %s, which does not begin with the tenant: every day's export reads every tenant's rows of the day: add an index on (%s)", on, indexLabel(*partFirst), strings.Join(keys, ", "))
		default:
			sev := SeverityWarning
			if t.EstimatedRows >= SeqScanRows {
				sev = SeverityError
			}
			what := "every day's export"
			if d.IsSnapshot() {
				what = "every day's copy of one tenant"
			}
			add(sev, "index", d.TenantColumn, want, "no index on "+d.TenantColumn,
				"%s (%s, %s) has no index beginning with the tenant column %s: %s reads every tenant's rows: add an index on (%s)", on, where, estimate(t.EstimatedRows), d.TenantColumn, what, strings.Join(keys, ", "))
		}
	}
}

func indexLabel(ix Index) string {
	cols := make([]string, len(ix.Columns))
	for i, c := range ix.Columns {
		cols[i] = cmp.Or(c, "(expression)")
	}
	name := ix.Name
	if ix.Primary {
		name += " (primary key)"
	}
	return name + " on (" + strings.Join(cols, ", ") + ")"
}
