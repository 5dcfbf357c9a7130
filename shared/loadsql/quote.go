package loadsql

import "strings"

// Identifier quoting.
//
//   - Athena DDL (CREATE EXTERNAL TABLE, ALTER TABLE) quotes with backticks and
//     DML (SELECT) with double quotes; reserved words such as ORDER, SELECT,
//     DATE, TIMESTAMP, USER must be escaped in each.
//     https://docs.aws.amazon.com/athena/latest/ug/reserved-words.html
//   - BigQuery quotes with backticks (a backslash escapes a backtick inside).
//     https://cloud.google.com/bigquery/docs/reference/standard-sql/lexical#quoted_identifiers
//   - Redshift and DuckDB quote with double quotes, doubled inside. Quoting a
//     lower-case name changes nothing else in either engine (Redshift folds
//     names to lower case, DuckDB matches names case-insensitively), so every
//     identifier is quoted: no reserved-word list to keep up to date.
//     https://docs.aws.amazon.com/redshift/latest/dg/r_names.html
//     https://duckdb.org/docs/stable/sql/dialect/keywords_and_identifiers
//   - Snowflake: a double-quoted identifier is case-sensitive, an unquoted one
//     resolves to upper case. Quoting every lower-case name would force users
//     to quote every column forever ("event_id"), so names are left unquoted,
//     and a name that must be quoted (reserved, or not a plain identifier) is
//     quoted in upper case: "ORDER" is the very name an unquoted `order` would
//     resolve to, so every column of the table follows one rule and users
//     query them all without quotes except the reserved ones. Quoting a
//     non-reserved name in upper case is harmless, so the reserved list errs on
//     the side of quoting (type names and common keywords are included).
//     https://docs.snowflake.com/en/sql-reference/identifiers-syntax
//     https://docs.snowflake.com/en/sql-reference/reserved-keywords
//
// Names reach this file already validated (lower snake case columns, table
// parts of letters, digits, _ $ -), but the quoting still escapes the quote
// character so it is correct for any input.

func quoteDouble(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// quoteBracket is T-SQL's delimited identifier (Fabric): brackets, a ]
// doubled inside.
// https://learn.microsoft.com/sql/relational-databases/databases/database-identifiers
func quoteBracket(name string) string {
	return "[" + strings.ReplaceAll(name, "]", "]]") + "]"
}

func quoteAthenaDDL(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

func quoteBigQuery(name string) string {
	r := strings.NewReplacer(`\`, `\\`, "`", "\\`")
	return "`" + r.Replace(name) + "`"
}

func quoteSnowflake(name string) string {
	if snowflakePlain(name) && !snowflakeReserved[strings.ToUpper(name)] {
		return name
	}
	return quoteDouble(strings.ToUpper(name))
}

func snowflakePlain(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case (r >= '0' && r <= '9') || r == '$':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// identQuoter returns the identifier quoting of engine (Athena: DDL).
func identQuoter(engine string) func(string) string {
	switch engine {
	case EngineAthena:
		return quoteAthenaDDL
	case EngineBigQuery:
		return quoteBigQuery
	case EngineSnowflake:
		return quoteSnowflake
	case EngineFabric:
		return quoteBracket
	case EngineDatabricks:
		// Backticks, a backtick doubled inside, as Athena DDL.
		// https://docs.databricks.com/sql/language-manual/sql-ref-identifiers.html
		return quoteAthenaDDL
	default:
		return quoteDouble
	}
}

// snowflakeReserved holds Snowflake's reserved and limited keywords, plus
// type names and a few words that are reserved elsewhere (quoting those in
// upper case is harmless, see above).
var snowflakeReserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
		ACCOUNT ALL ALTER AND ANY AS BETWEEN BY CASE CAST CHECK COLUMN CONNECT
		CONNECTION CONSTRAINT CREATE CROSS CURRENT CURRENT_DATE CURRENT_TIME
		CURRENT_TIMESTAMP CURRENT_USER DATABASE DELETE DISTINCT DROP ELSE EXISTS
		FALSE FOLLOWING FOR FROM FULL GRANT GROUP GSCLUSTER HAVING ILIKE IN
		INCREMENT INNER INSERT INTERSECT INTO IS ISSUE JOIN LATERAL LEFT LIKE
		LOCALTIME LOCALTIMESTAMP MINUS NATURAL NOT NULL OF ON OR ORDER
		ORGANIZATION QUALIFY REGEXP REVOKE RIGHT RLIKE ROW ROWS SAMPLE SCHEMA
		SELECT SET SOME START TABLE TABLESAMPLE THEN TO TRIGGER TRUE TRY_CAST
		UNION UNIQUE UPDATE USING VALUES VIEW WHEN WHENEVER WHERE WINDOW WITH
		ASOF MATCH_CONDITION
		DATE TIME TIMESTAMP TIMESTAMP_LTZ TIMESTAMP_NTZ TIMESTAMP_TZ NUMBER
		DECIMAL NUMERIC INT INTEGER BIGINT FLOAT DOUBLE BOOLEAN VARCHAR STRING
		TEXT VARIANT OBJECT ARRAY BINARY
		USER VALUE INTERVAL ASC DESC LIMIT OFFSET ONLY OVER PARTITION RANGE
	`) {
		snowflakeReserved[w] = true
	}
}

// String literals.
//
// Every engine doubles a single quote. Hive DDL (Athena's CREATE/ALTER), BigQuery,
// Snowflake and Redshift also treat a backslash as an escape character, so a
// backslash is doubled there and, where doubling quotes is not the syntax
// (Hive, BigQuery), the quote is backslash-escaped instead. DuckDB keeps
// backslashes literally.
//   https://cloud.google.com/bigquery/docs/reference/standard-sql/lexical#string_and_bytes_literals
//   https://docs.snowflake.com/en/sql-reference/data-types-text#escape-sequences-in-single-quoted-string-constants
//   https://docs.aws.amazon.com/redshift/latest/dg/r_Literals.html
// Databricks treats a backslash as an escape, as BigQuery does; T-SQL
// (Fabric) only doubles quotes, as DuckDB does.
//   https://docs.databricks.com/sql/language-manual/data-types/string-type.html
//   https://learn.microsoft.com/sql/t-sql/data-types/constants-transact-sql

func literal(engine, s string) string {
	switch engine {
	case EngineAthena, EngineBigQuery, EngineDatabricks:
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
	case EngineSnowflake, EngineRedshift:
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
	default:
		return "'" + strings.ReplaceAll(s, `'`, `''`) + "'"
	}
}

// literalList renders ss as literals, one per line with indent, comma-separated.
func literalList(engine, indent string, ss []string) string {
	var b strings.Builder
	for i, s := range ss {
		b.WriteString(indent)
		b.WriteString(literal(engine, s))
		if i < len(ss)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	return b.String()
}
