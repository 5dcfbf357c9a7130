package loadsql

import (
	"fmt"
	"strings"
)

// Snapshot datasets (dataset.PartitionSnapshot, read latest_snapshot): each
// day is a complete copy of the table, so the table a consumer keeps is the
// newest day loaded, not the union of days. Every native-table script loads
// the day as any other (replacing the day's rows), then, in the same
// transaction where the engine has one, drops every older day:
//
//	DELETE FROM <table> WHERE dt < (SELECT MAX(dt) FROM <table>);
//
// Run in any order, the scripts of several days leave the newest of them
// only: a script of an older day than one already loaded adds its rows and
// removes them again. A consumer runs a day's script once its _SUCCESS
// exists (the bucket README says so), so the table is the newest committed
// snapshot. Athena reads the files in place: its script registers the day
// as usual and (re)creates the view <table>_latest over the newest
// registered day.

// snapshotHeader is the header line a snapshot's script adds.
func (g *gen) snapshotHeader() []string {
	if !g.ds.IsSnapshot() {
		return nil
	}
	return []string{
		"A snapshot: each day is a complete copy of the table. This script loads the day,",
		"then keeps only the newest day loaded (an older day's script leaves the table as it was).",
		"",
	}
}

// snapshotPrune writes the DELETE that keeps only the newest day.
func (g *gen) snapshotPrune(b *strings.Builder, q func(string) string, table string) {
	if !g.ds.IsSnapshot() {
		return
	}
	b.WriteString("-- A snapshot: keep only the newest day loaded.\n")
	fmt.Fprintf(b, "DELETE FROM %s WHERE %s < (SELECT MAX(%s) FROM %s);\n", table, q(dtColumn), q(dtColumn), table)
}

// athenaLatest writes the view over the newest registered day.
func (g *gen) athenaLatest(b *strings.Builder) {
	if !g.ds.IsSnapshot() {
		return
	}
	parts := append([]string(nil), g.table...)
	table := quoteTable(quoteDouble, parts)
	parts[len(parts)-1] += "_latest"
	view := quoteTable(quoteDouble, parts)
	b.WriteString("\n-- A snapshot: the table is its newest day. Query this view for it.\n")
	fmt.Fprintf(b, "CREATE OR REPLACE VIEW %s AS\nSELECT * FROM %s WHERE %s = (SELECT MAX(%s) FROM %s);\n", view, table, quoteDouble(dtColumn), quoteDouble(dtColumn), table)
}
