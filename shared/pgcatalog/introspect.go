package pgcatalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Querier is what the introspection reads through: a *sql.DB, *sql.Conn
// or *sql.Tx of a PostgreSQL driver.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

var (
	_ Querier = (*sql.DB)(nil)
	_ Querier = (*sql.Conn)(nil)
)

// ErrNoRelation is returned by ReadTable for a table or view the database
// does not have.
var ErrNoRelation = errors.New("no such relation")

// TypesQuery describes types: bound to an oid[] ($1) and an int4[] of
// type modifiers ($2) of the same length, it returns one row per pair in
// order, columns as TypeFromRow reads them. A domain is described by its
// base type (with the domain's modifier), an array by its element.
const TypesQuery = `SELECT format_type(x.oid, x.mod),
       b.typname::text, b.typtype::text, b.oid::int8,
       (CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE x.mod END)::int4,
       coalesce(e.typname::text, ''), coalesce(e.typtype::text, ''), coalesce(format_type(e.oid, NULL), ''), coalesce(e.oid::int8, 0)
FROM unnest($1::oid[], $2::int4[]) WITH ORDINALITY AS x(oid, mod, i)
JOIN pg_type t ON t.oid = x.oid
JOIN pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
LEFT JOIN pg_type e ON e.oid = b.typelem AND b.typcategory = 'A'
ORDER BY x.i`

// TypesArgs returns TypesQuery's two parameters in PostgreSQL's array text
// form.
func TypesArgs(oids []uint32, mods []int32) (string, string) {
	var o, m strings.Builder
	o.WriteByte('{')
	m.WriteByte('{')
	for i := range oids {
		if i > 0 {
			o.WriteByte(',')
			m.WriteByte(',')
		}
		o.WriteString(strconv.FormatUint(uint64(oids[i]), 10))
		m.WriteString(strconv.FormatInt(int64(mods[i]), 10))
	}
	o.WriteByte('}')
	m.WriteByte('}')
	return o.String(), m.String()
}

// TypeFromRow builds a SourceType from one row of TypesQuery, as text. The
// OID fields are returned separately: the enum label lookup needs them.
func TypeFromRow(f []string) (SourceType, uint32, error) {
	if len(f) != 9 {
		return SourceType{}, 0, fmt.Errorf("type row of %d fields, want 9", len(f))
	}
	mod, err := strconv.ParseInt(f[4], 10, 32)
	if err != nil {
		return SourceType{}, 0, fmt.Errorf("type modifier %q: %w", f[4], err)
	}
	oid, _ := strconv.ParseUint(f[3], 10, 32)
	t := SourceType{Display: f[0], Name: f[1], Type: first(f[2]), Mod: int32(mod)}
	if f[5] != "" {
		t.Elem = &SourceType{Display: f[7], Name: f[5], Type: first(f[6]), Mod: -1}
		if t.Elem.Type == 'e' {
			oid, _ = strconv.ParseUint(f[8], 10, 32)
		}
	}
	return t, uint32(oid), nil
}

func first(s string) byte {
	if s == "" {
		return 0
	}
	return s[0]
}

// Column is one column of a table as the database declares it.
type Column struct {
	Name    string
	Type    SourceType
	NotNull bool
	Comment string // COMMENT ON COLUMN, "" when none
	// EnumLabels are the labels of an enum (or of an array's enum
	// elements), in their declared order.
	EnumLabels []string
}

// Table is a table or view as the database declares it.
type Table struct {
	Relation string
	Kind     string // pg_class.relkind: "r" table, "v" view, "m" materialized view, "p" partitioned table
	Comment  string
	Columns  []Column
	// EstimatedRows is pg_class.reltuples (-1 when never analyzed, as
	// PostgreSQL 14 and later report it); for a partitioned table, the sum
	// of its leaf partitions' (-1 when none was analyzed).
	EstimatedRows int64
	// PrimaryKey are the primary key's columns in key order; nil when the
	// relation has none (a view, a table without one).
	PrimaryKey []string
	// Indexes are the B-tree indexes a query on the relation can read:
	// its own, or for a partitioned table each leaf partition's (Index.On
	// names the partition). Indexes with a predicate are left out.
	Indexes []Index
	// Leaves are a partitioned table's leaf partitions; nil for any other
	// relation.
	Leaves []string
}

// Index is one B-tree index of a relation.
type Index struct {
	Name string
	// On is the relation the index is on: the table, or a leaf partition.
	On string
	// Columns are its key columns in order (INCLUDE columns left out); an
	// expression key is "".
	Columns []string
	Primary bool
}

// Column returns the column called name.
func (t Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// ReadTable reads relation ("table" or "schema.table", resolved on the
// search path as a query would) from the database's own catalog; an
// error wrapping ErrNoRelation when it does not exist.
func ReadTable(ctx context.Context, q Querier, relation string) (Table, error) {
	t := Table{Relation: relation}
	var oid int64
	var rows float64
	err := queryRow(ctx, q, `SELECT c.oid::int8, c.relkind::text, coalesce(obj_description(c.oid, 'pg_class'), ''), c.reltuples::float8
FROM pg_class c WHERE c.oid = to_regclass($1)`, []any{relation}, &oid, &t.Kind, &t.Comment, &rows)
	if errors.Is(err, sql.ErrNoRows) {
		return Table{}, fmt.Errorf("relation %s: %w", relation, ErrNoRelation)
	}
	if err != nil {
		return Table{}, fmt.Errorf("relation %s: %w", relation, err)
	}
	t.EstimatedRows = int64(rows)
	if err := readKeys(ctx, q, &t, oid); err != nil {
		return Table{}, fmt.Errorf("relation %s: %w", relation, err)
	}
	rs, err := q.QueryContext(ctx, `SELECT a.attname::text, a.atttypid::int8, a.atttypmod::int4, a.attnotnull, coalesce(col_description(a.attrelid, a.attnum), '')
FROM pg_attribute a WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, strconv.FormatInt(oid, 10))
	if err != nil {
		return Table{}, fmt.Errorf("relation %s: columns: %w", relation, err)
	}
	var oids []uint32
	var mods []int32
	for rs.Next() {
		var c Column
		var typ int64
		var mod int32
		if err := rs.Scan(&c.Name, &typ, &mod, &c.NotNull, &c.Comment); err != nil {
			rs.Close()
			return Table{}, fmt.Errorf("relation %s: columns: %w", relation, err)
		}
		t.Columns = append(t.Columns, c)
		oids, mods = append(oids, uint32(typ)), append(mods, mod)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return Table{}, fmt.Errorf("relation %s: columns: %w", relation, err)
	}
	if len(oids) == 0 {
		return t, nil
	}
	a, b := TypesArgs(oids, mods)
	tr, err := q.QueryContext(ctx, TypesQuery, a, b)
	if err != nil {
		return Table{}, fmt.Errorf("relation %s: types: %w", relation, err)
	}
	enums := map[int]uint32{}
	i := 0
	for tr.Next() {
		f := make([]string, 9)
		ptrs := make([]any, 9)
		for j := range f {
			ptrs[j] = &f[j]
		}
		if err := tr.Scan(ptrs...); err != nil {
			tr.Close()
			return Table{}, fmt.Errorf("relation %s: types: %w", relation, err)
		}
		st, enumOID, err := TypeFromRow(f)
		if err != nil || i >= len(t.Columns) {
			tr.Close()
			return Table{}, fmt.Errorf("relation %s: types: %v", relation, err)
		}
		t.Columns[i].Type = st
		if st.Type == 'e' || (st.Elem != nil && st.Elem.Type == 'e') {
			enums[i] = enumOID
		}
		i++
	}
	tr.Close()
	if err := tr.Err(); err != nil {
		return Table{}, fmt.Errorf("relation %s: types: %w", relation, err)
	}
	for i, e := range enums {
		labels, err := enumLabels(ctx, q, e)
		if err != nil {
			return Table{}, fmt.Errorf("relation %s: column %s: enum labels: %w", relation, t.Columns[i].Name, err)
		}
		t.Columns[i].EnumLabels = labels
	}
	return t, nil
}

// indexesQuery lists the key columns of the B-tree indexes without a
// predicate of the relations $1 (an oid[]), one row per key column in
// order: relation oid and name, index, primary, position, column (""
// for an expression).
const indexesQuery = `SELECT x.indrelid::int8, x.indrelid::regclass::text, i.relname::text, x.indisprimary, k.o::int4, coalesce(a.attname::text, '')
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_am am ON am.oid = i.relam AND am.amname = 'btree'
JOIN pg_class c ON c.oid = x.indrelid
CROSS JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(n, o)
LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.n AND k.n > 0
WHERE x.indrelid = ANY($1::oid[]) AND x.indpred IS NULL AND k.o <= x.indnkeyatts
ORDER BY 2, x.indisprimary DESC, i.relname, k.o`

// readKeys reads the relation's primary key and the indexes a query on it
// can use: for a partitioned table, its leaf partitions' (the parent's own
// are partitioned indexes, one per partition), and their summed estimate.
func readKeys(ctx context.Context, q Querier, t *Table, oid int64) error {
	rels := "{" + strconv.FormatInt(oid, 10) + "}"
	if t.Kind == "p" {
		rs, err := q.QueryContext(ctx, `SELECT p.relid::regclass::text, p.relid::int8, c.reltuples::float8
FROM pg_partition_tree($1::oid) p JOIN pg_class c ON c.oid = p.relid WHERE p.isleaf ORDER BY 1`, strconv.FormatInt(oid, 10))
		if err != nil {
			return fmt.Errorf("partitions: %w", err)
		}
		var ids []string
		sum, analyzed := 0.0, false
		for rs.Next() {
			var name string
			var id int64
			var n float64
			if err := rs.Scan(&name, &id, &n); err != nil {
				rs.Close()
				return fmt.Errorf("partitions: %w", err)
			}
			t.Leaves, ids = append(t.Leaves, name), append(ids, strconv.FormatInt(id, 10))
			if n >= 0 {
				sum, analyzed = sum+n, true
			}
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return fmt.Errorf("partitions: %w", err)
		}
		t.EstimatedRows = -1
		if analyzed {
			t.EstimatedRows = int64(sum)
		}
		rels = "{" + strconv.FormatInt(oid, 10) + "," + strings.Join(ids, ",") + "}"
	}
	rs, err := q.QueryContext(ctx, indexesQuery, rels)
	if err != nil {
		return fmt.Errorf("indexes: %w", err)
	}
	defer rs.Close()
	own := map[int]bool{} // indexes on the relation itself
	for rs.Next() {
		var rel int64
		var on, name, col string
		var primary bool
		var pos int32
		if err := rs.Scan(&rel, &on, &name, &primary, &pos, &col); err != nil {
			return fmt.Errorf("indexes: %w", err)
		}
		if pos == 1 {
			own[len(t.Indexes)] = rel == oid
			t.Indexes = append(t.Indexes, Index{Name: name, On: on, Primary: primary})
		}
		ix := &t.Indexes[len(t.Indexes)-1]
		ix.Columns = append(ix.Columns, col)
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("indexes: %w", err)
	}
	// The primary key is the relation's own. A partitioned table's own
	// indexes are partitioned indexes that no plan reads: its partitions'
	// copies of them are read, and are listed.
	read := t.Indexes[:0:0]
	for i, ix := range t.Indexes {
		if own[i] && ix.Primary {
			t.PrimaryKey = ix.Columns
		}
		if !own[i] || t.Kind != "p" {
			read = append(read, ix)
		}
	}
	t.Indexes = read
	return nil
}

func enumLabels(ctx context.Context, q Querier, oid uint32) ([]string, error) {
	rs, err := q.QueryContext(ctx, `SELECT enumlabel::text FROM pg_enum WHERE enumtypid = $1::oid ORDER BY enumsortorder`, strconv.FormatUint(uint64(oid), 10))
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rs.Err()
}

func queryRow(ctx context.Context, q Querier, query string, args []any, dst ...any) error {
	rs, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	if !rs.Next() {
		if err := rs.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rs.Scan(dst...); err != nil {
		return err
	}
	return rs.Close()
}

// Scan is how a query's plan reads one relation.
type Scan struct {
	// Node is the plan node that reads the relation: "Seq Scan", "Index
	// Scan", "Index Only Scan" or "Bitmap Heap Scan".
	Node string
	// Index is the index an index or bitmap scan uses; "" for a
	// sequential scan.
	Index string
	// IndexCond is the index condition as EXPLAIN prints it.
	IndexCond string
	// PlanRows is the planner's estimate of the rows the node returns.
	PlanRows int64
}

// Explain returns how the generic plan of query, the one that serves
// every tenant, reads relation for the window [start, end); ok is false
// when the plan does not read it at all. The plan is PostgreSQL's generic
// plan (plan_cache_mode force_generic_plan), so the tenant needs no value
// of its own type and no constant is folded away. It runs on conn, whose
// session it restores.
func Explain(ctx context.Context, conn *sql.Conn, relation, query string, start, end string) (scan Scan, ok bool, err error) {
	if _, err := conn.ExecContext(ctx, "PREPARE daybook_catalog_check AS "+query); err != nil {
		return Scan{}, false, fmt.Errorf("explain: prepare: %w", err)
	}
	defer func() {
		_, err1 := conn.ExecContext(context.WithoutCancel(ctx), "DEALLOCATE daybook_catalog_check")
		_, err2 := conn.ExecContext(context.WithoutCancel(ctx), "RESET plan_cache_mode")
		_, err3 := conn.ExecContext(context.WithoutCancel(ctx), "RESET enable_seqscan")
		if err == nil {
			if err = errors.Join(err1, err2, err3); err != nil {
				err = fmt.Errorf("explain: %w", err)
			}
		}
	}()
	// enable_seqscan off makes the planner read through an index whenever
	// one applies, so a table that is small today does not hide whether
	// the query can use one; with none it still scans.
	for _, set := range []string{"SET plan_cache_mode = force_generic_plan", "SET enable_seqscan = off"} {
		if _, err := conn.ExecContext(ctx, set); err != nil {
			return Scan{}, false, fmt.Errorf("explain: %w", err)
		}
	}
	var doc string
	// EXECUTE takes no bound parameters: the window is inlined, quoted.
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	params := "NULL, " + lit(start) + ", " + lit(end)
	if start == "" && end == "" {
		params = "NULL" // a snapshot's query binds the tenant alone
	}
	if err := queryRow(ctx, conn, "EXPLAIN (FORMAT JSON) EXECUTE daybook_catalog_check("+params+")", nil, &doc); err != nil {
		return Scan{}, false, fmt.Errorf("explain: %w", err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(doc), &plans); err != nil || len(plans) == 0 {
		return Scan{}, false, fmt.Errorf("explain: unreadable plan: %v", err)
	}
	name := relation
	if _, after, ok := strings.Cut(relation, "."); ok {
		name = after
	}
	scan, ok = plans[0].Plan.find(name)
	return scan, ok, nil
}

type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	IndexCond    string     `json:"Index Cond"`
	PlanRows     float64    `json:"Plan Rows"`
	Plans        []planNode `json:"Plans"`
}

func (n planNode) find(relation string) (Scan, bool) {
	if n.RelationName == relation {
		s := Scan{Node: n.NodeType, Index: n.IndexName, IndexCond: n.IndexCond, PlanRows: int64(n.PlanRows)}
		if n.NodeType == "Bitmap Heap Scan" {
			for _, c := range n.Plans {
				if idx, ok := c.bitmapIndex(); ok {
					s.Index, s.IndexCond = idx.IndexName, idx.IndexCond
					break
				}
			}
		}
		return s, true
	}
	for _, c := range n.Plans {
		if s, ok := c.find(relation); ok {
			return s, true
		}
	}
	return Scan{}, false
}

func (n planNode) bitmapIndex() (planNode, bool) {
	if n.NodeType == "Bitmap Index Scan" {
		return n, true
	}
	for _, c := range n.Plans {
		if idx, ok := c.bitmapIndex(); ok {
			return idx, true
		}
	}
	return planNode{}, false
}
