package loadsql

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// redshiftLimits are the header lines about Redshift's VARCHAR limit: where
// a value longer than 65,535 bytes stops the load.
func (g *gen) redshiftLimits() []string {
	var strs, jsons []string
	for _, c := range g.ds.Columns {
		switch c.Type.Kind {
		case dataset.KindString:
			strs = append(strs, c.Name)
		case dataset.KindJSON:
			jsons = append(jsons, c.Name)
		}
	}
	var out []string
	if len(strs) > 0 {
		out = append(out,
			"String columns are VARCHAR(65535), the widest Redshift has: a value over 65,535",
			"bytes of UTF-8 fails the COPY (nothing is truncated).",
		)
	}
	if len(jsons) > 0 && g.p.Format == fileformat.Parquet {
		out = append(out,
			"JSON columns ("+strings.Join(jsons, ", ")+") pass through a VARCHAR(65535) staging column",
			"before JSON_PARSE into SUPER, so their JSON text has the same 65,535-byte limit.",
		)
	}
	return append(out, g.redshiftBinaryLimits()...)
}

// redshiftEvolution brings an existing table up to the schema version.
//
// Redshift's ALTER TABLE ADD COLUMN has no IF NOT EXISTS (and adds one
// column per statement), and Redshift has no anonymous blocks, so a stored
// procedure checks the catalog (SVV_COLUMNS) and adds each appended column
// the table lacks. The procedure is created, called and dropped by the
// script. Redshift cannot drop a NOT NULL constraint at all (ALTER COLUMN
// only changes a VARCHAR's size or a column's encoding), so for a loosened
// column that is still NOT NULL the procedure stops the script with an
// error, and the comment above it gives the statements that rebuild the
// column. The procedure body is dollar-quoted: a statement splitter must
// treat $$...$$ as one string (psql and the Redshift query editor do).
//
//	ALTER TABLE:      https://docs.aws.amazon.com/redshift/latest/dg/r_ALTER_TABLE.html
//	CREATE PROCEDURE: https://docs.aws.amazon.com/redshift/latest/dg/r_CREATE_PROCEDURE.html
//	IF, RAISE:        https://docs.aws.amazon.com/redshift/latest/dg/c_PLpgSQL-statements.html
//	SVV_COLUMNS:      https://docs.aws.amazon.com/redshift/latest/dg/r_SVV_COLUMNS.html
//	CURRENT_SCHEMA:   https://docs.aws.amazon.com/redshift/latest/dg/r_CURRENT_SCHEMA.html
func (g *gen) redshiftEvolution(b *strings.Builder) {
	add, loose := g.appended(), g.loosened()
	if len(add) == 0 && len(loose) == 0 {
		return
	}
	q := quoteDouble
	table := quoteTable(q, g.table)
	n := len(g.table)
	proc := quoteTable(q, append(append([]string(nil), g.table[:n-1]...), g.table[n-1]+"_daybook_evolve"))
	// Redshift folds names to lower case; the catalog holds them so. An
	// unqualified table is the one CREATE TABLE made in the current schema.
	schema := "current_schema()"
	if n > 1 {
		schema = literal(EngineRedshift, strings.ToLower(g.table[n-2]))
	}
	where := fmt.Sprintf("FROM svv_columns WHERE table_schema = %s AND table_name = %s",
		schema, literal(EngineRedshift, strings.ToLower(g.table[n-1])))

	writeComment(b, fmt.Sprintf("Bring a table created by an earlier schema version up to version %d. %s Redshift has no ADD COLUMN IF NOT EXISTS: the procedure below adds each column the table lacks, as the catalog (SVV_COLUMNS) shows it, and is dropped after the call.",
		g.ds.Version, g.evolutionSummary()))
	for _, c := range loose {
		tmp := q(c.Name + "_daybook_new")
		writeComment(b, fmt.Sprintf("Redshift cannot drop a NOT NULL constraint. If the procedure stops because %s is NOT NULL (the table was created while it was required), rebuild the column once with these statements, then run this script again. The column moves to the end of the table, which the load below does not mind (it names every column). DROP COLUMN fails on a sort or distribution key column.",
			q(c.Name)))
		fmt.Fprintf(b, "--     ALTER TABLE %s ADD COLUMN %s %s\n", table, tmp, redshiftType(c.Type))
		fmt.Fprintf(b, "--     UPDATE %s SET %s = %s\n", table, tmp, q(c.Name))
		fmt.Fprintf(b, "--     ALTER TABLE %s DROP COLUMN %s\n", table, q(c.Name))
		fmt.Fprintf(b, "--     ALTER TABLE %s RENAME COLUMN %s TO %s\n", table, tmp, q(c.Name))
	}
	fmt.Fprintf(b, "CREATE OR REPLACE PROCEDURE %s()\n", proc)
	b.WriteString("AS $$\nBEGIN\n")
	for _, c := range add {
		fmt.Fprintf(b, "    IF NOT EXISTS (SELECT 1 %s AND column_name = %s) THEN\n", where, literal(EngineRedshift, c.Name))
		fmt.Fprintf(b, "        ALTER TABLE %s ADD COLUMN %s %s;\n", table, q(c.Name), redshiftType(c.Type))
		b.WriteString("    END IF;\n")
	}
	for _, c := range loose {
		fmt.Fprintf(b, "    IF EXISTS (SELECT 1 %s AND column_name = %s AND is_nullable = 'NO') THEN\n", where, literal(EngineRedshift, c.Name))
		msg := fmt.Sprintf("daybook: column %s of table %s is NOT NULL, but it is nullable since schema version %d and Redshift cannot drop NOT NULL. Rebuild the column as the comment above CREATE PROCEDURE in redshift.sql shows, then run the script again.",
			c.Name, strings.Join(g.table, "."), c.NullableSince)
		fmt.Fprintf(b, "        RAISE EXCEPTION %s;\n", literal(EngineRedshift, msg))
		b.WriteString("    END IF;\n")
	}
	b.WriteString("END;\n$$ LANGUAGE plpgsql;\n\n")
	fmt.Fprintf(b, "CALL %s();\n", proc)
	fmt.Fprintf(b, "DROP PROCEDURE %s();\n\n", proc)
}
