package dataset

import (
	"fmt"
	"regexp"
	"strings"
)

// Generated queries. A dataset that names its relation's tenant column
// (tenant_column) and gives no queries gets them written by daybook, for
// every dialect, bound as every query is (account, day start, day end):
//
//	SELECT <columns, in order> FROM <relation>
//	WHERE <tenant_column> = $1 AND <partition_column> >= $2 AND <partition_column> < $3
//	ORDER BY <order_by, or the partition column>
//
// (a snapshot dataset's query has no window: WHERE <tenant_column> = $1,
// ORDER BY <order_by, or its first column>; see snapshot.go)
//
// and, when it gives no fingerprint either, the fingerprint
//
//	SELECT count(*)[, max(<changed_column>)] FROM <relation> WHERE <the same>
//
// Without changed_column the fingerprint is the day's row count alone: a
// restatement check then finds rows added or removed, not rows updated in
// place. A partition column of wall-clock times (a PostgreSQL timestamp
// without time zone, declared with source_time_zone) is compared with the
// window converted to that zone's wall clock, on the column's side of the
// index:
//
//	<partition_column> >= ($2::timestamptz AT TIME ZONE '<source_time_zone>')
//
// so the zone is the catalog field and never query text of its own:
// changing source_time_zone changes the query with it. `daybook catalog
// show` prints the queries a catalog resolves to.

// generate fills Queries (and Fingerprint) from TenantColumn; a dataset
// without TenantColumn is left as declared.
func (d *Dataset) generate() error {
	if d.TenantColumn == "" {
		switch {
		case len(d.OrderBy) > 0:
			return fmt.Errorf("dataset %s: order_by is only used by generated queries: give tenant_column too", d.Name)
		case d.ChangedColumn != "":
			return fmt.Errorf("dataset %s: changed_column is only used by generated queries: give tenant_column too", d.Name)
		}
		return nil
	}
	if !identRE.MatchString(d.TenantColumn) {
		return fmt.Errorf("dataset %s: tenant_column %q must match %s", d.Name, d.TenantColumn, identRE)
	}
	if d.ChangedColumn != "" && !identRE.MatchString(d.ChangedColumn) {
		return fmt.Errorf("dataset %s: changed_column %q must match %s", d.Name, d.ChangedColumn, identRE)
	}
	if len(d.Queries) > 0 {
		return fmt.Errorf("dataset %s: give queries or tenant_column (to have them generated), not both", d.Name)
	}
	order := d.OrderBy
	switch {
	case d.IsSnapshot():
		if len(order) == 0 && len(d.Columns) > 0 {
			order = []string{d.Columns[0].Name}
		}
	default:
		if _, ok := d.Column(d.PartitionColumn); !ok {
			return fmt.Errorf("dataset %s: partition_column %q is not a column", d.Name, d.PartitionColumn)
		}
		if len(order) == 0 {
			order = []string{d.PartitionColumn}
		}
	}
	for i, c := range order {
		if _, ok := d.Column(c); !ok {
			return fmt.Errorf("dataset %s: order_by[%d] %q is not a column", d.Name, i, c)
		}
	}
	cols := make([]string, len(d.Columns))
	for i, c := range d.Columns {
		cols[i] = quoteIdent(c.Name)
	}
	ord := make([]string, len(order))
	for i, c := range order {
		ord[i] = quoteIdent(c)
	}
	agg := "count(*)"
	if d.ChangedColumn != "" {
		agg += ", max(" + quoteIdent(d.ChangedColumn) + ")"
	}
	// A snapshot has no fingerprint (snapshot.go): none is generated, and
	// Validate refuses a declared one.
	genFP := len(d.Fingerprint) == 0 && !d.IsSnapshot()
	d.Queries = map[string]string{}
	if genFP {
		d.Fingerprint = map[string]string{}
	}
	for _, dialect := range Dialects {
		where := d.where(dialect)
		d.Queries[dialect] = "SELECT " + strings.Join(cols, ", ") + " FROM " + d.Relation + " WHERE " + where + " ORDER BY " + strings.Join(ord, ", ")
		if genFP {
			d.Fingerprint[dialect] = "SELECT " + agg + " FROM " + d.Relation + " WHERE " + where
		}
	}
	return nil
}

func (d Dataset) where(dialect string) string {
	p := [3]string{"?", "?", "?"}
	if dialect == DialectPostgres {
		p = [3]string{"$1", "$2", "$3"}
	}
	t, c := quoteIdent(d.TenantColumn), quoteIdent(d.PartitionColumn)
	if d.IsSnapshot() {
		return t + " = " + p[0]
	}
	if col, ok := d.Column(d.PartitionColumn); ok && col.SourceTimeZone != "" && dialect == DialectPostgres {
		// The window is two instants; the column holds wall times in its
		// zone: compare like with like.
		zone := "'" + strings.ReplaceAll(col.SourceTimeZone, "'", "''") + "'"
		p[1] = "(" + p[1] + "::timestamptz AT TIME ZONE " + zone + ")"
		p[2] = "(" + p[2] + "::timestamptz AT TIME ZONE " + zone + ")"
	}
	return t + " = " + p[0] + " AND " + c + " >= " + p[1] + " AND " + c + " < " + p[2]
}

// windowZoneRE finds a conversion of the day window ($2, $3) to a zone's
// wall clock in a PostgreSQL query: `$2::timestamptz AT TIME ZONE 'X'`,
// with or without the cast and parentheses.
var windowZoneRE = regexp.MustCompile(`(?i)\$[23]\s*(?:::\s*(?:timestamptz|timestamp\s+with\s+time\s+zone))?\s*\)?\s*AT\s+TIME\s+ZONE\s+'([^']*)'`)

// checkWindowZone refuses a PostgreSQL query (hand-written: a generated
// one converts with the column's own zone) that converts the day window to
// a zone other than the partition column's source_time_zone: its rows
// would be read with every instant shifted by the difference, which no
// check of the values could see.
func (d Dataset) checkWindowZone(what, q string) error {
	col, ok := d.Column(d.PartitionColumn)
	if !ok || col.SourceTimeZone == "" {
		return nil
	}
	for _, m := range windowZoneRE.FindAllStringSubmatch(q, -1) {
		if !sameZone(m[1], col.SourceTimeZone) {
			return fmt.Errorf("dataset %s: %s: converts the day window with AT TIME ZONE '%s', but partition_column %s declares source_time_zone %q: convert with '%s' (or give tenant_column instead of queries: the generated query converts with source_time_zone)",
				d.Name, what, m[1], col.Name, col.SourceTimeZone, col.SourceTimeZone)
		}
	}
	return nil
}

// utcNames are the zone names PostgreSQL and the tz database both read as
// UTC.
var utcNames = map[string]bool{"utc": true, "etc/utc": true, "uct": true, "etc/uct": true, "universal": true, "etc/universal": true,
	"zulu": true, "etc/zulu": true, "gmt": true, "etc/gmt": true, "gmt0": true, "etc/gmt0": true, "etc/gmt+0": true, "etc/gmt-0": true,
	"greenwich": true, "etc/greenwich": true}

func sameZone(a, b string) bool {
	return strings.EqualFold(a, b) || utcNames[strings.ToLower(a)] && utcNames[strings.ToLower(b)]
}

// reserved are the words both dialects refuse as a bare column name; a
// generated query quotes a column so called.
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric between both by case cast
		check collate column constraint create current_date current_time current_timestamp current_user default
		deferrable desc distinct do else end except false fetch for foreign from grant group having in index
		initially inner intersect into is join key lateral leading left like limit localtime localtimestamp
		natural not null offset on only or order outer placing primary references returning right select
		session_user some symmetric table then to trailing true union unique user using values when where
		window with`) {
		reserved[w] = true
	}
}

func quoteIdent(name string) string {
	if reserved[name] {
		return `"` + name + `"`
	}
	return name
}

var (
	selectRE  = regexp.MustCompile(`(?is)^\s*SELECT\s+(DISTINCT\s+)?`)
	aliasRE   = regexp.MustCompile(`(?is)^.+\s+AS\s+("?)([a-z_][a-z0-9_]*)"?$`)
	columnRE  = regexp.MustCompile(`(?i)^(?:"?[a-z_][a-z0-9_]*"?\.)?("?)([a-z_][a-z0-9_]*)"?$`)
	fromWord  = regexp.MustCompile(`(?i)^FROM\b`)
	wordStart = regexp.MustCompile(`[A-Za-z0-9_]`)
)

// checkSelectList reads the query's SELECT list (its top-level items
// before the first top-level FROM) and checks it names exactly the
// declared columns in their order, as the source checks the result's
// columns at run time. An item is a column, a qualified column or an
// expression AS a column; * is refused.
func (d Dataset) checkSelectList(q string) error {
	items, err := selectList(q)
	if err != nil {
		return err
	}
	names := make([]string, len(items))
	for i, it := range items {
		if it == "*" || strings.HasSuffix(it, ".*") {
			return fmt.Errorf("SELECT %s: list the columns instead", it)
		}
		if m := aliasRE.FindStringSubmatch(it); m != nil {
			names[i] = strings.ToLower(m[2])
		} else if m := columnRE.FindStringSubmatch(it); m != nil {
			names[i] = strings.ToLower(m[2])
		} else {
			return fmt.Errorf("select item %d (%s) names no column: give it AS <column>", i+1, it)
		}
		if _, ok := d.Column(names[i]); !ok {
			return fmt.Errorf("select item %d names column %q, which the dataset does not declare", i+1, names[i])
		}
	}
	for i, c := range d.Columns {
		if i >= len(names) {
			return fmt.Errorf("selects %d columns; the dataset declares %d (first missing: %q)", len(names), len(d.Columns), c.Name)
		}
		if names[i] != c.Name {
			return fmt.Errorf("select item %d is %q; the dataset declares %q there (the query selects the declared columns in order)", i+1, names[i], c.Name)
		}
	}
	if len(names) > len(d.Columns) {
		return fmt.Errorf("selects %d columns; the dataset declares %d", len(names), len(d.Columns))
	}
	return nil
}

// selectList splits the SELECT list of q at its top-level commas, minding
// parentheses and quotes.
func selectList(q string) ([]string, error) {
	loc := selectRE.FindStringIndex(q)
	if loc == nil {
		return nil, fmt.Errorf("must begin with SELECT (a query with a WITH clause: make it a view and read that)")
	}
	var items []string
	depth, start := 0, loc[1]
	var quote byte
	for i := loc[1]; i < len(q); i++ {
		ch := q[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '(':
			depth++
		case ch == ')':
			depth--
		case depth == 0 && ch == ',':
			items = append(items, strings.TrimSpace(q[start:i]))
			start = i + 1
		case depth == 0 && fromWord.MatchString(q[i:]) && (i == 0 || !wordStart.MatchString(q[i-1:i])):
			items = append(items, strings.TrimSpace(q[start:i]))
			for _, it := range items {
				if it == "" {
					return nil, fmt.Errorf("empty select item")
				}
			}
			return items, nil
		}
	}
	return nil, fmt.Errorf("no FROM after the SELECT list")
}
