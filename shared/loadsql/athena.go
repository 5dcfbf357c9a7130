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
	default: // string, json
		return "STRING"
	}
}

// athena: an external table over the dataset root plus the day's partition.
// Athena runs one statement per query; the statements run in order.
//
//	CREATE EXTERNAL TABLE: https://docs.aws.amazon.com/athena/latest/ug/create-table.html
//	ADD PARTITION:         https://docs.aws.amazon.com/athena/latest/ug/alter-table-add-partition.html
//	OpenX JSON SerDe:      https://docs.aws.amazon.com/athena/latest/ug/openx-json-serde.html
//	Partitioning:          https://docs.aws.amazon.com/athena/latest/ug/partitions.html
//
// The partition column is `dt DATE`, like every other engine, so a query
// filters with `dt = DATE '2026-11-28'` in Athena, Trino and the warehouses
// alike; the metastore keeps the value as the string of the path. The value
// in ADD PARTITION is quoted, the form Hive converts to the column's type.
func (g *gen) athena() string {
	var b strings.Builder
	loc := g.uri(g.root)
	b.WriteString(g.header(
		"Athena / Trino (Hive connector). Run each statement on its own, in order.",
		"Athena reads every object under a partition's LOCATION: no file list is",
		"possible. The exporter deletes every object of an older generation before it",
		"writes _SUCCESS (SPEC E3), which is what keeps this partition exactly the files",
		"above. Objects whose names start with _ (_manifest.json, _SUCCESS, _load/) are",
		"ignored by Athena.",
		"Docs: https://docs.aws.amazon.com/athena/latest/ug/create-table.html",
		"      https://docs.aws.amazon.com/athena/latest/ug/alter-table-add-partition.html",
	))
	q := quoteAthenaDDL
	fmt.Fprintf(&b, "CREATE EXTERNAL TABLE IF NOT EXISTS %s (\n", quoteTable(q, g.table))
	cols := g.ds.Columns
	columnList(&b, "    ", len(cols), func(i int) string {
		return q(cols[i].Name) + " " + athenaType(cols[i].Type)
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
	fmt.Fprintf(&b, "ALTER TABLE %s ADD IF NOT EXISTS\n", quoteTable(q, g.table))
	fmt.Fprintf(&b, "    PARTITION (%s = %s)\n", q(dtColumn), literal(EngineAthena, g.day))
	fmt.Fprintf(&b, "    LOCATION %s;\n", literal(EngineAthena, g.uri(g.p.PartitionPrefix)))
	g.currentStateComment(&b)
	return b.String()
}
