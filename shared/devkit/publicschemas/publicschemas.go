// Package publicschemas is test support: schemas nobody on the team wrote,
// published by others (each .sql file cites its repository, path, commit
// and licence), trimmed to the tables a test exports, with deterministic
// rows for them: several tenants over a few days, with the awkward values
// of their types. Tests load one into PostgreSQL, describe it with
// `daybook catalog init` as a platform engineer would, export it and read
// every value back.
package publicschemas

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/daybook-dev/daybook/shared/civil"
)

//go:embed *.sql
var ddl embed.FS

// Schema is one public schema and how a platform would deliver it.
type Schema struct {
	// Name is the schema's short name and the .sql file's: citus_ads.
	Name string
	// Title says what it is and where it is from, for a report.
	Title string
	// PGSchema is the PostgreSQL schema it is loaded into ("public": the
	// relations are named unqualified).
	PGSchema string
	// SourceZone is the zone of its timestamp without time zone columns
	// (catalog init's --source-time-zone), "" when it has none.
	SourceZone string
	// AccountZone is the time zone of the account that receives it.
	AccountZone string
	// Tenants are its tenants' keys, as an account's tenant_key: the
	// first is the account's, the others are rows it must never receive.
	Tenants []string
	// Inits are catalog init's flags for its tables, one command line
	// each (--source and --append left out).
	Inits [][]string
	// Refused are catalog init's flags for tables it cannot describe,
	// with the text its refusal gives.
	Refused []Refusal
	// generate writes the rows of days (and the partitions they need).
	generate func(g *gen, days []civil.Date)
}

// Refusal is a table catalog init refuses, and why.
type Refusal struct {
	Init []string
	Why  string
}

// All are the public schemas, in the order a report lists them.
func All() []Schema { return []Schema{CitusAds(), Pagila(), Northwind(), Basejump()} }

// DDL returns the schema's (trimmed) published DDL.
func (s Schema) DDL() string {
	b, err := ddl.ReadFile(s.Name + ".sql")
	if err != nil {
		panic(err) // embedded: a missing file is a build mistake
	}
	return string(b)
}

// Table returns the relation name of table as catalog init is given it:
// qualified by the PostgreSQL schema unless that is public or the DDL
// qualifies its own names.
func (s Schema) Table(table string) string {
	if s.PGSchema == "public" || strings.Contains(table, ".") {
		return table
	}
	return s.PGSchema + "." + table
}

// Load creates the schema in db (a fresh PostgreSQL schema unless it is
// public) and inserts its rows for days: what Data returns.
func (s Schema) Load(ctx context.Context, db *sql.DB, days []civil.Date) (*Data, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if s.PGSchema != "public" {
		if _, err := conn.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{s.PGSchema}.Sanitize()); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "SET search_path = "+pgx.Identifier{s.PGSchema}.Sanitize()); err != nil {
		return nil, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "RESET search_path")
	if _, err := conn.ExecContext(ctx, s.DDL()); err != nil {
		return nil, fmt.Errorf("%s: DDL: %w", s.Name, err)
	}
	g := &gen{r: rand.New(rand.NewPCG(uint64(len(s.Name)), 35)), s: s, data: &Data{Tables: map[string][]Row{}}}
	loc, err := time.LoadLocation(s.AccountZone)
	if err != nil {
		return nil, err
	}
	g.loc = loc
	s.generate(g, days)
	for _, q := range g.data.Setup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", s.Name, q, err)
		}
	}
	for _, t := range g.order {
		if err := insert(ctx, conn, t, g.data.Tables[t]); err != nil {
			return nil, fmt.Errorf("%s: table %s: %w", s.Name, t, err)
		}
	}
	return g.data, nil
}

// Data is what Load inserted.
type Data struct {
	// Setup are the statements run before the rows: a partition for the
	// days, as a platform adds one each month.
	Setup []string
	// Tables are each table's rows (by its unqualified name).
	Tables map[string][]Row
}

// Row is one row: column name to value (see Literal for the types).
type Row map[string]any

// gen generates a schema's rows.
type gen struct {
	r     *rand.Rand
	s     Schema
	loc   *time.Location // the account's zone: rows are spread over its days
	data  *Data
	order []string // tables in insertion order
}

func (g *gen) add(table string, r Row) {
	if _, ok := g.data.Tables[table]; !ok {
		g.order = append(g.order, table)
	}
	g.data.Tables[table] = append(g.data.Tables[table], r)
}

// instants are n instants of day in the account's zone: its first
// microsecond, its last, and the rest spread between, in order.
func (g *gen) instants(day civil.Date, n int) []time.Time {
	start := day.Start(g.loc)
	end := day.AddDays(1).Start(g.loc)
	out := []time.Time{start, end.Add(-time.Microsecond)}
	span := end.Sub(start) / time.Microsecond
	for len(out) < n {
		out = append(out, start.Add(time.Duration(g.r.Int64N(int64(span)))*time.Microsecond))
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// pick returns one of vs.
func pick[T any](g *gen, vs ...T) T { return vs[g.r.IntN(len(vs))] }

// maybe returns v, or nil one time in n.
func (g *gen) maybe(n int, v any) any {
	if g.r.IntN(n) == 0 {
		return nil
	}
	return v
}

// decimal returns a random numeric of scale digits after the point and at
// most intDigits before it, in PostgreSQL's text form.
func (g *gen) decimal(intDigits, scale int) Numeric {
	var b strings.Builder
	if g.r.IntN(4) == 0 {
		b.WriteByte('-')
	}
	ip := g.r.Int64N(pow10(intDigits))
	b.WriteString(strconv.FormatInt(ip, 10))
	if scale > 0 {
		f := strconv.FormatInt(g.r.Int64N(pow10(scale)), 10)
		b.WriteString("." + strings.Repeat("0", scale-len(f)) + f)
	}
	s := b.String()
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-") // no negative zero in numeric
	}
	return Numeric(s)
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// uuid returns a random uuid in its canonical lower-case form.
func (g *gen) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.r.IntN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := fmt.Sprintf("%x", b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// texts are strings a text column should carry through unchanged.
var texts = []string{"plain", "with, comma", `quote " and \ backslash`, "ünïcødé ✓", "emoji 🦆", "tab\there", "line\nbreak", "", "  padded  ", "O'Brien"}

// insert inserts rows into table in batches, every value as a literal.
func insert(ctx context.Context, conn *sql.Conn, table string, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	var cols []string
	for c := range rows[0] {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = pgx.Identifier{c}.Sanitize()
	}
	for batch := range slices.Chunk(rows, 200) {
		var b strings.Builder
		b.WriteString("INSERT INTO " + table + " (" + strings.Join(quoted, ", ") + ") VALUES ")
		for i, r := range batch {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			for j, c := range cols {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(Literal(r[c]))
			}
			b.WriteByte(')')
		}
		if _, err := conn.ExecContext(ctx, b.String()); err != nil {
			return err
		}
	}
	return nil
}
