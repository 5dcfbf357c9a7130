package loadsql

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// fabricType maps a column type to Fabric Warehouse's T-SQL types. Fabric
// has no time zone type: instants are DATETIME2(6), in UTC as the files
// hold them. Text and JSON are VARCHAR(MAX) (Fabric stores text in UTF-8
// varchar), binary VARBINARY(MAX). A list never reaches here (Why).
// https://learn.microsoft.com/fabric/data-warehouse/data-types
func fabricType(t dataset.Type) string {
	switch t.Kind {
	case dataset.KindDate:
		return "DATE"
	case dataset.KindTimestamp:
		return "DATETIME2(6)"
	case dataset.KindInt64:
		return "BIGINT"
	case dataset.KindDouble:
		return "FLOAT"
	case dataset.KindDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case dataset.KindBoolean:
		return "BIT"
	case dataset.KindBinary:
		return "VARBINARY(MAX)"
	default: // string, json
		return "VARCHAR(MAX)"
	}
}

// FabricCredential stands for the SAS the COPY statement reads the
// container with.
const FabricCredential = "<SAS_TOKEN>"

// fabric: DELETE the day, then COPY INTO from exactly the manifest's files
// by their blob URLs, in one explicit transaction (Fabric Warehouse
// transactions are ACID and take COPY INTO). dt is not in the files: the
// column list gives it the day as its DEFAULT, which COPY writes where the
// source has no value. Columns are created nullable but dt, since Fabric's
// ALTER TABLE cannot drop a NOT NULL when a later schema version loosens
// one; appended columns are added when the table lacks them.
//
//	COPY INTO (Fabric):  https://learn.microsoft.com/sql/t-sql/statements/copy-into-transact-sql?view=fabric
//	Transactions:        https://learn.microsoft.com/fabric/data-warehouse/transactions
//	ALTER TABLE:         https://learn.microsoft.com/fabric/data-warehouse/tables#alter-table
//	OBJECT_ID/COL_LENGTH: https://learn.microsoft.com/sql/t-sql/functions/col-length-transact-sql
func (g *gen) fabric() string {
	var b strings.Builder
	b.WriteString(g.header(append(g.snapshotHeader(),
		"Fabric Warehouse (T-SQL). COPY INTO reads the files over HTTPS: replace",
		"    "+FabricCredential,
		"below by a SAS for the container with read and list, or remove the CREDENTIAL",
		"line to read as your own Microsoft Entra ID identity. The same COPY statement",
		"loads a Synapse dedicated SQL pool.",
		"Timestamps are DATETIME2(6) in UTC: Fabric has no time zone type. Columns but",
		"dt are nullable, so a column a later schema version loosens loads too.",
		"Docs: https://learn.microsoft.com/sql/t-sql/statements/copy-into-transact-sql?view=fabric",
	)...))
	q := quoteBracket
	table := quoteTable(q, g.table)
	tableLit := "N" + literal(EngineFabric, table)
	cols := g.ds.Columns
	fmt.Fprintf(&b, "IF OBJECT_ID(%s, N'U') IS NULL\nCREATE TABLE %s (\n", tableLit, table)
	columnList(&b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return q(dtColumn) + " DATE NOT NULL"
		}
		return q(cols[i].Name) + " " + fabricType(cols[i].Type) + " NULL"
	})
	b.WriteString(");\n\n")
	if add := g.appended(); len(add) > 0 {
		writeComment(&b, fmt.Sprintf("Bring a table created by an earlier schema version up to version %d. %s", g.ds.Version, g.evolutionSummary()))
		for _, c := range add {
			fmt.Fprintf(&b, "IF COL_LENGTH(%s, %s) IS NULL\n    ALTER TABLE %s ADD %s %s NULL;\n",
				tableLit, "N"+literal(EngineFabric, c.Name), table, q(c.Name), fabricType(c.Type))
		}
		b.WriteString("\n")
	}
	dayLit := literal(EngineFabric, g.day)
	b.WriteString("BEGIN TRANSACTION;\n")
	fmt.Fprintf(&b, "DELETE FROM %s WHERE %s = %s;\n", table, q(dtColumn), dayLit)
	fmt.Fprintf(&b, "COPY INTO %s (\n", table)
	columnList(&b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return q(dtColumn) + " DEFAULT " + dayLit
		}
		return q(cols[i].Name)
	})
	b.WriteString(")\nFROM\n")
	b.WriteString(literalList(EngineFabric, "    ", g.fileURIs()))
	b.WriteString("WITH (\n")
	b.WriteString("    FILE_TYPE = 'PARQUET',\n")
	fmt.Fprintf(&b, "    CREDENTIAL = (IDENTITY = 'Shared Access Signature', SECRET = %s)\n", literal(EngineFabric, FabricCredential))
	b.WriteString(");\n")
	g.snapshotPrune(&b, q, table)
	b.WriteString("COMMIT TRANSACTION;\n")
	g.currentStateComment(&b)
	return b.String()
}
