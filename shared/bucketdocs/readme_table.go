package bucketdocs

import (
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/loadsql"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// The table's snapshot summary properties and retention, as shared/icetable
// writes and applies them (this package does not link the table library:
// TestTableSection checks they agree).
const (
	propOperation  = "daybook.operation"
	propDay        = "daybook.day"
	propGeneration = "daybook.generation"
	propReason     = "daybook.reason"
	propManifest   = "daybook.manifest"
	snapshotMaxAge = 7 * 24 * time.Hour
	maxSnapshots   = 100
)

// tableSection explains the Iceberg tables, when the account has them:
// query the table, or load the folders.
func (w *mdWriter) tableSection() {
	if !w.in.Iceberg {
		return
	}
	w.h2("Query the table, or load the folders")
	w.p("Each dataset is also an Apache Iceberg table (format v2) whose location is the dataset's folder,",
		"`"+w.in.base()+w.root+"<dataset>`. Its data files are the `part-*` files of the `dt=` folders,",
		"themselves: nothing is copied, and the folders, `_manifest.json` and `_SUCCESS` are exactly as described",
		"above, so loading the folders works as before. The table's metadata is in `<dataset>/metadata/`:",
		"`v<N>.metadata.json` files and `version-hint.text`, which names the latest `N`. No catalog is needed:",
		"engines that read a table by its location read it as it is.")
	w.p("The table is partitioned by `dt`, the day of the dataset's partition column, and has the dataset's",
		"columns, with their descriptions as column docs. A column added by a new schema version is added to",
		"the table (column ids never change); older days read it as null.")
	w.p("Every committed generation of a day is one snapshot that adds the day's files. Its summary names",
		"`"+propGeneration+"`, `"+propDay+"`, `"+propReason+"` and `"+propManifest+"` (the",
		"generation's `_manifest.json`). A re-export first removes the day from the table (a snapshot whose",
		"`"+propOperation+"` is `withdraw`), before its files are rewritten, so the current snapshot never names",
		"a file that is being replaced; the day is back when its new `_SUCCESS` is written. The day's files keep",
		"their names across generations, so time travel to an older snapshot reads correctly only the days",
		"whose files have not been rewritten since.")
	w.p("Snapshots older than "+durationLabel(snapshotMaxAge)+" expire, and at most the newest "+groupDigits(maxSnapshots)+" are kept; the",
		"current snapshot always is. Expiry removes snapshots from the metadata and deletes no data file.")
	ds := w.in.Datasets[0].Name
	meta := "./copy/" + w.root + ds + "/metadata/"
	scheme := w.in.base()[:strings.Index(w.in.base(), "://")+3]
	w.p("On a local copy of the bucket (the Quick start's `"+w.quickCLI().copyCmd+"`), read a table by its current",
		"metadata file: the files it lists carry their `"+scheme+"` paths, so DuckDB needs `allow_moved_paths`",
		"to find them under the copy (its `iceberg` extension is installed from DuckDB's repository the",
		"first time):")
	w.block("sh",
		"n=$(cat "+meta+"version-hint.text)",
		"duckdb -c \"INSTALL iceberg; LOAD iceberg; SELECT dt, count(*) FROM iceberg_scan('"+meta+"v$n.metadata.json', allow_moved_paths = true) GROUP BY dt ORDER BY dt\"")
	w.p("Beside every partition, `_load/` then also holds a script per engine that queries the table in place:",
		"`"+loadsql.TableScriptDuckDB+"` (DuckDB `iceberg_scan`), `"+loadsql.TableScriptSnowflake+"` (a Snowflake Iceberg table",
		"from the metadata file, refreshed with `ALTER ICEBERG TABLE ... REFRESH`), `"+loadsql.TableScriptTrino+"`",
		"(Trino's `register_table`) and `"+loadsql.TableScriptSpark+"` (a Spark Hadoop catalog over the prefix). Each",
		"selects the folder's day: drop its `WHERE` clause to query every day. Only read the table: daybook is",
		"its one writer.")
	w.p("daybook trusts nothing it finds in `metadata/`: it writes, and deletes, only files of that folder, and",
		"whatever a metadata file says, its own properties decide where the table's files go. If the newest",
		"metadata file cannot be used (empty, unreadable, or written by another tool), the folders are still",
		"delivered as above and the table is not updated until the sender repairs it: "+manifest.CodeTableBroken.Sentence())
}
