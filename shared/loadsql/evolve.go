package loadsql

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Schema evolution.
//
// A dataset schema only grows (dataset.Compatible): columns are appended,
// and a required column may become nullable. CREATE TABLE IF NOT EXISTS
// leaves a table created by an earlier schema version as it was, so every
// script that creates a table then brings an existing one up to the
// partition's schema version before it loads:
//
//   - every column appended after version 1 (dataset.Column.Since > 1) is
//     added when the table lacks it. Columns are added, never dropped or
//     retyped, so the statements are safe to run against a table of any
//     earlier version, or of this one;
//   - every column loosened to nullable (dataset.Column.NullableSince) loses
//     its NOT NULL.
//
// Each engine does it with its own documented statements, see each file.
// A dataset that never changed gets no evolution statements at all.

// appended returns the columns added after schema version 1, in file order.
func (g *gen) appended() []dataset.Column {
	var out []dataset.Column
	for _, c := range g.ds.Columns {
		if c.SinceVersion() > 1 {
			out = append(out, c)
		}
	}
	return out
}

// loosened returns the columns that were required in an earlier schema
// version and are nullable now.
func (g *gen) loosened() []dataset.Column {
	var out []dataset.Column
	for _, c := range g.ds.Columns {
		if c.Loosened() {
			out = append(out, c)
		}
	}
	return out
}

// evolutionSummary describes what the evolution statements change, in
// sentences: "Version 2 added region. Version 3 added limit, first_seen.
// Column order is nullable since version 3." It goes into comments, so it
// never holds a semicolon.
func (g *gen) evolutionSummary() string {
	var parts []string
	var names []string
	since := 0
	flush := func() {
		if len(names) > 0 {
			parts = append(parts, fmt.Sprintf("Version %d added %s.", since, strings.Join(names, ", ")))
		}
		names = nil
	}
	for _, c := range g.appended() {
		if c.SinceVersion() != since {
			flush()
			since = c.SinceVersion()
		}
		names = append(names, c.Name)
	}
	flush()
	for _, c := range g.loosened() {
		parts = append(parts, fmt.Sprintf("Column %s is nullable since version %d.", c.Name, c.NullableSince))
	}
	return strings.Join(parts, " ")
}

// standardEvolution writes the evolution statements of the engines that have
// ADD COLUMN IF NOT EXISTS and ALTER COLUMN ... DROP NOT NULL (DuckDB,
// Snowflake, BigQuery), with typ mapping a column type and q quoting a name.
// The statements run on every load: ADD COLUMN IF NOT EXISTS skips a column
// the table has, and DROP NOT NULL is meant to leave a nullable column as it
// is (verified for DuckDB by the tests; taken from the documentation for the
// others, which do not say what it does to a column that is already nullable).
func (g *gen) standardEvolution(b *strings.Builder, q func(string) string, typ func(dataset.Type) string, docs string) {
	add, loose := g.appended(), g.loosened()
	if len(add) == 0 && len(loose) == 0 {
		return
	}
	table := quoteTable(q, g.table)
	writeComment(b, fmt.Sprintf("Bring a table created by an earlier schema version up to version %d. %s ADD COLUMN IF NOT EXISTS skips a column the table already has.",
		g.ds.Version, g.evolutionSummary()))
	fmt.Fprintf(b, "-- Docs: %s\n", docs)
	for _, c := range add {
		fmt.Fprintf(b, "ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s;\n", table, q(c.Name), typ(c.Type))
	}
	for _, c := range loose {
		fmt.Fprintf(b, "ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL;\n", table, q(c.Name))
	}
	b.WriteString("\n")
}

// writeComment writes text as "-- " comment lines of at most 80 characters,
// broken at spaces (a longer word stays whole). The text must hold no
// semicolon: statement splitters cut comments at one.
func writeComment(b *strings.Builder, text string) {
	const width = 80 - len("-- ")
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			fmt.Fprintf(b, "-- %s\n", line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		fmt.Fprintf(b, "-- %s\n", line)
	}
}
