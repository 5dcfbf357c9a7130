package loadsql

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// athenaType maps a column type to Athena's Hive DDL types. JSON is a STRING
// (query it with json_extract); there is no JSON column type in Hive DDL.
// https://docs.aws.amazon.com/athena/latest/ug/data-types.html
func athenaType(t dataset.Type) string {
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
		return listType(t, athenaType, "ARRAY<", ">")
	default: // string, json
		return "STRING"
	}
}

// athena: an external table over the dataset root plus the day's partition.
// Athena runs one statement per query; the statements run in order.
//
//	CREATE EXTERNAL TABLE: https://docs.aws.amazon.com/athena/latest/ug/create-table.html
//	ADD PARTITION:         https://docs.aws.amazon.com/athena/latest/ug/alter-table-add-partition.html
//	DROP PARTITION:        https://docs.aws.amazon.com/athena/latest/ug/alter-table-drop-partition.html
//	ADD COLUMNS:           https://docs.aws.amazon.com/athena/latest/ug/alter-table-add-columns.html
//	Partition schemas:     https://docs.aws.amazon.com/athena/latest/ug/updates-and-partitions.html
//	OpenX JSON SerDe:      https://docs.aws.amazon.com/athena/latest/ug/openx-json-serde.html
//	Data types:            https://docs.aws.amazon.com/athena/latest/ug/data-types.html
//	Partitioning:          https://docs.aws.amazon.com/athena/latest/ug/partitions.html
//
// The partition column is `dt DATE`, like every other engine, so a query
// filters with `dt = DATE '2026-11-28'` in Athena, Trino and the warehouses
// alike; the metastore keeps the value as the string of the path. The value
// in ADD PARTITION is quoted, the form Hive converts to the column's type.
//
// Athena's TIMESTAMP has millisecond precision (data types page), so the
// microseconds in the files do not show: the header says so.
//
// NDJSON keeps the OpenX JSON SerDe: it renders the JSON object of a json
// column (attributes) as text into its STRING column and parses the files'
// ...Z timestamps by default. The Hive JSON SerDe that Athena's OpenX page
// recommends instead fails on a JSON object read into a STRING column (Trino's
// implementation refuses a non-scalar value for a scalar column), and the OpenX
// page warns that OpenX results can be non-deterministic, so the NDJSON header
// points Athena users to Parquet.
func (g *gen) athena() string {
	var b strings.Builder
	loc := g.uri(g.root)
	lines := append(g.snapshotHeader(),
		"Athena / Trino (Hive connector). Run each statement on its own, in order.",
		"Athena reads every object under a partition's LOCATION: no file list is",
		"possible. The exporter deletes every object of an older generation before it",
		"writes _SUCCESS, which is what keeps this partition exactly the files above.",
		"Objects whose names start with _ (_manifest.json, _SUCCESS, _load/) are",
		"ignored by Athena.",
		"Athena's TIMESTAMP has millisecond precision: the microseconds of the",
		"timestamps in the files are not shown.",
	)
	if g.p.Format == fileformat.NDJSON {
		lines = append(lines,
			"For Athena, prefer this dataset as Parquet. Athena documents that the OpenX",
			"JSON SerDe used below can return non-deterministic results (more or fewer",
			"rows, unexpected NULLs). The Hive JSON SerDe it recommends instead cannot read",
			"a JSON object, such as attributes, into a STRING column. Parquet has neither problem.",
		)
	}
	lines = append(lines,
		"Docs: https://docs.aws.amazon.com/athena/latest/ug/create-table.html",
		"      https://docs.aws.amazon.com/athena/latest/ug/alter-table-add-partition.html",
	)
	if g.p.Format == fileformat.NDJSON {
		lines = append(lines, "      https://docs.aws.amazon.com/athena/latest/ug/openx-json-serde.html")
	}
	b.WriteString(g.header(lines...))
	q := quoteAthenaDDL
	table := quoteTable(q, g.table)
	fmt.Fprintf(&b, "CREATE EXTERNAL TABLE IF NOT EXISTS %s (\n", table)
	cols := g.ds.Columns
	columnList(&b, "    ", len(cols), func(i int) string {
		return q(cols[i].Name) + " " + g.athenaColumnType(cols[i].Type)
	})
	b.WriteString(")\n")
	fmt.Fprintf(&b, "PARTITIONED BY (%s DATE)\n", q(dtColumn))
	if g.p.Format == fileformat.Parquet {
		b.WriteString("STORED AS PARQUET\n")
	} else {
		b.WriteString("-- .ndjson.gz files are gunzipped transparently (by the .gz extension).\n")
		b.WriteString("ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe'\n")
		b.WriteString("STORED AS INPUTFORMAT 'org.apache.hadoop.mapred.TextInputFormat'\n")
		b.WriteString("OUTPUTFORMAT 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat'\n")
	}
	fmt.Fprintf(&b, "LOCATION %s;\n\n", literal(EngineAthena, loc))
	// A partition keeps the columns the table had when it was added (Athena
	// does not update partition schemas when the table's change), so once
	// the schema has evolved the day's partition is dropped (metadata only)
	// and added again: a day registered before columns were added, then
	// re-exported, shows them.
	evolves := len(g.appended()) > 0 || len(g.loosened()) > 0
	if evolves {
		b.WriteString("-- The day's partition is dropped and added again so that it has the table's\n")
		b.WriteString("-- current columns: Athena does not update a partition's columns when the\n")
		b.WriteString("-- table's change. Dropping a partition removes metadata only, never files.\n")
	}
	g.athenaPartition(&b, table, evolves)
	if g.athenaEvolution(&b, table) {
		b.WriteString("-- After adding columns, register the day again so that it has them.\n")
		g.athenaPartition(&b, table, true)
	}
	g.athenaLatest(&b)
	g.currentStateComment(&b)
	return b.String()
}

// athenaPartition registers the day's partition, dropping it first when
// refresh is set.
func (g *gen) athenaPartition(b *strings.Builder, table string, refresh bool) {
	part := fmt.Sprintf("PARTITION (%s = %s)", quoteAthenaDDL(dtColumn), literal(EngineAthena, g.day))
	if refresh {
		fmt.Fprintf(b, "ALTER TABLE %s DROP IF EXISTS %s;\n\n", table, part)
	}
	fmt.Fprintf(b, "ALTER TABLE %s ADD IF NOT EXISTS\n", table)
	fmt.Fprintf(b, "    %s\n", part)
	fmt.Fprintf(b, "    LOCATION %s;\n", literal(EngineAthena, g.uri(g.p.PartitionPrefix)))
}

// athenaEvolution writes, after the day is registered, one ALTER TABLE ADD
// COLUMNS per schema version that appended columns, and reports whether it
// wrote any.
//
// Athena has no ADD COLUMNS IF NOT EXISTS, and ADD COLUMNS fails on a column
// the table has. REPLACE COLUMNS, which would be idempotent, is documented
// for LazySimpleSerDe tables only and not to work with DATE columns, so it is
// not used. Instead each version's columns get their own statement, with a
// comment saying when to run it, and they come last: on a table that has
// the columns (every run after the first, and every new table, which CREATE
// made with all of them) they fail after the day is already registered, so
// a run that stops at the first failure has loaded the day all the same.
// Hive DDL has no NOT NULL, so a loosened column needs nothing.
func (g *gen) athenaEvolution(b *strings.Builder, table string) bool {
	add := g.appended()
	if len(add) == 0 && len(g.loosened()) == 0 {
		return false
	}
	b.WriteString("\n")
	q := quoteAthenaDDL
	summary := fmt.Sprintf("Schema evolution up to version %d. %s", g.ds.Version, g.evolutionSummary())
	if len(g.loosened()) > 0 {
		summary += " Athena tables have no NOT NULL, so a column loosened to nullable needs no change."
	}
	if len(add) > 0 {
		summary += " The day is registered above. The statements below are needed once, for a table created from an earlier schema version, and fail harmlessly on a table that has the columns."
	}
	writeComment(b, summary)
	if len(add) == 0 {
		return false
	}
	for i := 0; i < len(add); {
		since := add[i].SinceVersion()
		j := i
		for j < len(add) && add[j].SinceVersion() == since {
			j++
		}
		group := add[i:j]
		names := make([]string, len(group))
		var dates []string
		for k, c := range group {
			names[k] = q(c.Name)
			if c.Type.Kind == dataset.KindDate {
				dates = append(dates, q(c.Name))
			}
		}
		from := fmt.Sprintf("schema version %d or earlier", since-1)
		if since == 2 {
			from = "schema version 1"
		}
		writeComment(b, fmt.Sprintf("Columns added in schema version %d. Run this statement once if your table was created from %s (SHOW COLUMNS IN %s does not list %s). Athena has no ADD COLUMNS IF NOT EXISTS: on a table that has the columns it fails with a duplicate column error and changes nothing, so skip it then and run the statements after it.",
			since, from, table, strings.Join(names, ", ")))
		if len(dates) > 0 {
			writeComment(b, fmt.Sprintf("Athena documents that ADD COLUMNS does not work for DATE columns (%s). If it fails for that reason, recreate the table instead: DROP TABLE %s (an external table, so the files stay), run the CREATE EXTERNAL TABLE above, then MSCK REPAIR TABLE %s to register every day again.",
				strings.Join(dates, ", "), table, table))
			b.WriteString("-- https://docs.aws.amazon.com/athena/latest/ug/msck-repair-table.html\n")
		}
		fmt.Fprintf(b, "ALTER TABLE %s ADD COLUMNS (\n", table)
		columnList(b, "    ", len(group), func(k int) string {
			return q(group[k].Name) + " " + g.athenaColumnType(group[k].Type)
		})
		b.WriteString(");\n\n")
		i = j
	}
	return true
}
