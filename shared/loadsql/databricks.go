package loadsql

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// databricksType maps a column type to Databricks SQL. TIMESTAMP is an
// instant (shown in the session time zone); JSON is a STRING (parse it
// with from_json or the : operator).
// https://docs.databricks.com/sql/language-manual/sql-ref-datatypes.html
func databricksType(t dataset.Type) string {
	switch t.Kind {
	case dataset.KindDate:
		return "DATE"
	case dataset.KindTimestamp:
		return "TIMESTAMP"
	case dataset.KindInt64:
		return "BIGINT"
	case dataset.KindDouble:
		return "DOUBLE"
	case dataset.KindDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case dataset.KindBoolean:
		return "BOOLEAN"
	case dataset.KindBinary:
		return "BINARY"
	case dataset.KindList:
		return listType(t, databricksType, "ARRAY<", ">")
	default: // string, json
		return "STRING"
	}
}

// databricks: a Delta table partitioned by dt; DELETE the day, then COPY
// INTO it from exactly the manifest's files (FILES), each column cast to
// its type and dt set from the partition. COPY INTO skips files it loaded
// before, so 'force' loads them again after the DELETE; 'mergeSchema' adds
// the columns a later schema version appended. Databricks commits each
// statement on its own: a reader between the DELETE and the COPY sees the
// day empty, and a script stopped between them is run again.
//
//	COPY INTO:        https://docs.databricks.com/sql/language-manual/delta-copy-into.html
//	CREATE TABLE:     https://docs.databricks.com/sql/language-manual/sql-ref-syntax-ddl-create-table-using.html
//	DROP NOT NULL:    https://docs.databricks.com/sql/language-manual/sql-ref-syntax-ddl-alter-table-manage-column.html
//	DELETE:           https://docs.databricks.com/sql/language-manual/delta-delete-from.html
func (g *gen) databricks() string {
	var b strings.Builder
	b.WriteString(g.header(append(g.snapshotHeader(),
		"Databricks SQL. Reads the files through abfss:// with the workspace's access to",
		"the container (a Unity Catalog external location or storage credential).",
		"Each statement commits on its own: between the DELETE and the COPY INTO the",
		"day is empty. If the script stops there, run it again.",
		"Docs: https://docs.databricks.com/sql/language-manual/delta-copy-into.html",
	)...))
	q := quoteAthenaDDL
	table := quoteTable(q, g.table)
	cols := g.ds.Columns
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", table)
	columnList(&b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return q(dtColumn) + " DATE NOT NULL"
		}
		return q(cols[i].Name) + " " + databricksType(cols[i].Type) + notNull(cols[i])
	})
	fmt.Fprintf(&b, ")\nUSING DELTA\nPARTITIONED BY (%s);\n\n", q(dtColumn))
	if loose := g.loosened(); len(loose) > 0 {
		writeComment(&b, fmt.Sprintf("Bring a table created by an earlier schema version up to version %d. %s Appended columns are added by the COPY (mergeSchema).",
			g.ds.Version, g.evolutionSummary()))
		for _, c := range loose {
			fmt.Fprintf(&b, "ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL;\n", table, q(c.Name))
		}
		b.WriteString("\n")
	}
	dayLit := "DATE " + literal(EngineDatabricks, g.day)
	fmt.Fprintf(&b, "DELETE FROM %s WHERE %s = %s;\n", table, q(dtColumn), dayLit)
	fmt.Fprintf(&b, "COPY INTO %s\nFROM (\n    SELECT\n", table)
	columnList(&b, "        ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return dayLit + " AS " + q(dtColumn)
		}
		return g.databricksSelect(cols[i]) + " AS " + q(cols[i].Name)
	})
	fmt.Fprintf(&b, "    FROM %s\n)\n", literal(EngineDatabricks, g.uri(g.p.PartitionPrefix)))
	if g.p.Format == fileformat.Parquet {
		b.WriteString("FILEFORMAT = PARQUET\n")
	} else {
		b.WriteString("FILEFORMAT = JSON\n")
	}
	b.WriteString("FILES = (\n")
	b.WriteString(literalList(EngineDatabricks, "    ", g.names))
	b.WriteString(")\n")
	b.WriteString("COPY_OPTIONS ('force' = 'true', 'mergeSchema' = 'true');\n")
	g.snapshotPrune(&b, q, table)
	g.currentStateComment(&b)
	return b.String()
}

// databricksSelect is the expression that loads column c: a cast to its
// type, the JSON text of a json column read from NDJSON (where it is an
// object), the bytes of a binary column's base64 text from NDJSON.
func (g *gen) databricksSelect(c dataset.Column) string {
	q := quoteAthenaDDL(c.Name)
	switch {
	case c.Type.Kind == dataset.KindJSON && g.p.Format == fileformat.NDJSON:
		return "to_json(" + q + ")"
	case g.ndjsonBinary(c.Type):
		return "unbase64(" + q + ")"
	}
	return "CAST(" + q + " AS " + databricksType(c.Type) + ")"
}
