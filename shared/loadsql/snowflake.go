package loadsql

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// snowflakeType maps a column type to Snowflake.
//
// Instants are TIMESTAMP_TZ: every value carries its offset, so an instant
// never depends on the reader's session time zone (TIMESTAMP_NTZ would store
// a UTC wall clock that looks local to every reader, TIMESTAMP_LTZ renders in
// the session zone). The script sets the session TIMEZONE to UTC for the load,
// so a Parquet instant (UTC-adjusted, which Snowflake hands over without an
// offset) converts to TIMESTAMP_TZ as +00:00, not as the account's default
// zone, and then restores the zone the session had (see snowflakeTimezone).
// https://docs.snowflake.com/en/sql-reference/data-types-datetime#timestamp-ltz-timestamp-ntz-timestamp-tz
func snowflakeType(t dataset.Type) string {
	switch t.Kind {
	case dataset.KindDate:
		return "DATE"
	case dataset.KindTimestamp:
		return "TIMESTAMP_TZ"
	case dataset.KindInt64:
		return "BIGINT"
	case dataset.KindDouble:
		return "FLOAT" // 64-bit in Snowflake
	case dataset.KindDecimal:
		return fmt.Sprintf("NUMBER(%d,%d)", t.Precision, t.Scale)
	case dataset.KindBoolean:
		return "BOOLEAN"
	case dataset.KindJSON:
		return "VARIANT"
	case dataset.KindBinary:
		return "BINARY"
	case dataset.KindList:
		return "ARRAY"
	default:
		return "VARCHAR"
	}
}

// snowflakeFilesPerCopy is the FILES list limit of one COPY.
// https://docs.snowflake.com/en/user-guide/data-load-considerations-load#lists-of-files
const snowflakeFilesPerCopy = 1000

// snowflake: DELETE the day then COPY exactly the manifest's files (FILES =),
// in one explicit transaction. FORCE = TRUE is required: COPY skips files its
// load metadata says were loaded before, so without it a rerun would delete
// the day and load nothing.
//
//	COPY INTO <table>: https://docs.snowflake.com/en/sql-reference/sql/copy-into-table
//	Transform on load: https://docs.snowflake.com/en/user-guide/data-load-transform
//	File formats:      https://docs.snowflake.com/en/sql-reference/sql/create-file-format
//	Transactions:      https://docs.snowflake.com/en/sql-reference/transactions
//	ALTER TABLE:       https://docs.snowflake.com/en/sql-reference/sql/alter-table-column
func (g *gen) snowflake() string {
	var b strings.Builder
	b.WriteString(g.header(append(g.snapshotHeader(),
		"Reads from the external stage @"+SnowflakeStage+", which must point at the bucket root:",
		"    CREATE STAGE "+SnowflakeStage+" URL = "+literal(EngineSnowflake, g.uri(""))+" STORAGE_INTEGRATION = <your_integration>",
		"Names are unquoted (stored upper case). Reserved words are quoted in upper case.",
		"The session TIMEZONE is UTC during the load and restored at the end. If a",
		"statement fails inside the transaction, run ROLLBACK, then",
		"    EXECUTE IMMEDIATE $"+snowflakeRestoreVar,
		"to restore the session time zone.",
		"Docs: https://docs.snowflake.com/en/sql-reference/sql/copy-into-table",
		"      https://docs.snowflake.com/en/user-guide/data-load-transform",
	)...))
	q := quoteSnowflake
	table := quoteTable(q, g.table)
	cols := g.ds.Columns
	b.WriteString(snowflakeTimezone)
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (\n", table)
	columnList(&b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return q(dtColumn) + " DATE NOT NULL"
		}
		return q(cols[i].Name) + " " + snowflakeType(cols[i].Type) + notNull(cols[i])
	})
	b.WriteString(");\n\n")
	g.standardEvolution(&b, q, snowflakeType, "https://docs.snowflake.com/en/sql-reference/sql/alter-table-column")
	b.WriteString("BEGIN;\n")
	fmt.Fprintf(&b, "DELETE FROM %s WHERE %s = %s::DATE;\n", table, q(dtColumn), literal(EngineSnowflake, g.day))
	for start := 0; start < len(g.names); start += snowflakeFilesPerCopy {
		end := min(start+snowflakeFilesPerCopy, len(g.names))
		g.snowflakeCopy(&b, table, g.names[start:end])
	}
	g.snapshotPrune(&b, q, table)
	b.WriteString("COMMIT;\n\n")
	b.WriteString(snowflakeRestoreTimezone)
	g.currentStateComment(&b)
	return b.String()
}

// snowflakeRestoreVar is the session variable holding the statement that
// restores the session's time zone.
const snowflakeRestoreVar = "daybook_restore_timezone"

// snowflakeTimezone saves the session's TIMEZONE, as the statement that sets
// it back, then sets UTC for the load. SHOW PARAMETERS ... IN SESSION gives
// the value in effect for the session (its own, or the user's or account's
// it inherits), RESULT_SCAN reads that output (SHOW column names are lower
// case, hence quoted), and a session variable keeps the statement until
// EXECUTE IMMEDIATE runs it. ALTER SESSION UNSET TIMEZONE is not used: it
// resets the parameter to its default, which is not the value a session had
// set itself before running the script.
//
//	SHOW PARAMETERS:   https://docs.snowflake.com/en/sql-reference/sql/show-parameters
//	RESULT_SCAN:       https://docs.snowflake.com/en/sql-reference/functions/result_scan
//	Session variables: https://docs.snowflake.com/en/sql-reference/session-variables
//	EXECUTE IMMEDIATE: https://docs.snowflake.com/en/sql-reference/sql/execute-immediate
const snowflakeTimezone = `SHOW PARAMETERS LIKE 'TIMEZONE' IN SESSION;
SET ` + snowflakeRestoreVar + ` = (SELECT 'ALTER SESSION SET TIMEZONE = ''' || "value" || '''' FROM TABLE(RESULT_SCAN(LAST_QUERY_ID())));
ALTER SESSION SET TIMEZONE = 'UTC';

`

// snowflakeRestoreTimezone sets the session's TIMEZONE back (see
// snowflakeTimezone) and drops the variable.
const snowflakeRestoreTimezone = `EXECUTE IMMEDIATE $` + snowflakeRestoreVar + `;
UNSET ` + snowflakeRestoreVar + `;
`

func (g *gen) snowflakeCopy(b *strings.Builder, table string, names []string) {
	q := quoteSnowflake
	cols := g.ds.Columns
	fmt.Fprintf(b, "COPY INTO %s (\n", table)
	columnList(b, "    ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return q(dtColumn)
		}
		return q(cols[i].Name)
	})
	b.WriteString(")\nFROM (\n    SELECT\n")
	columnList(b, "        ", len(cols)+1, func(i int) string {
		if i == len(cols) {
			return literal(EngineSnowflake, g.day) + "::DATE"
		}
		c := cols[i]
		// Path elements are case-sensitive and double-quoted so any field
		// name (a reserved word included) is read exactly.
		path := "$1:" + quoteDouble(c.Name)
		if c.Type.Kind == dataset.KindJSON {
			if g.p.Format == fileformat.Parquet {
				// A Parquet JSON column arrives as a string: parse it.
				return "PARSE_JSON(" + path + "::VARCHAR)"
			}
			return path // NDJSON: the value already is a VARIANT
		}
		if g.ndjsonBinary(c.Type) {
			return "BASE64_DECODE_BINARY(" + path + "::VARCHAR)"
		}
		return path + "::" + snowflakeType(c.Type)
	})
	fmt.Fprintf(b, "    FROM %s\n)\n", g.snowflakeStagePath())
	b.WriteString("FILES = (\n")
	b.WriteString(literalList(EngineSnowflake, "    ", names))
	b.WriteString(")\n")
	if g.p.Format == fileformat.Parquet {
		b.WriteString("FILE_FORMAT = (TYPE = PARQUET USE_LOGICAL_TYPE = TRUE)\n")
	} else {
		b.WriteString("FILE_FORMAT = (TYPE = JSON COMPRESSION = GZIP)\n")
	}
	b.WriteString("FORCE = TRUE\n")
	b.WriteString("ON_ERROR = ABORT_STATEMENT;\n")
}

// snowflakeStagePath is @stage/<partition prefix>, quoted as a string when the
// prefix holds characters a bare stage path cannot.
func (g *gen) snowflakeStagePath() string {
	path := "@" + SnowflakeStage + "/" + g.p.PartitionPrefix
	for _, r := range g.p.PartitionPrefix {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/_-.=", r)
		if !ok {
			return literal(EngineSnowflake, path)
		}
	}
	return path
}
