package bucketdocs

import (
	"fmt"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// The sentences both documents use for the catalog's enumerations. Each
// enumeration value the catalog accepts has one; the tests check that.

// partitionMeaning is what the day of a partition means.
var partitionMeaning = map[string]string{
	dataset.PartitionEventTime: "A row is in the day on which its event happened, in the export's time zone. An event that arrives after its day was exported lands in that same day when the day is exported again; it never moves to the day it arrived.",
	dataset.PartitionActivity:  "A record appears in every day on which it was active, in the export's time zone, with its state as of its last activity that day. Activity on a later day never changes an earlier day's row, so re-exporting a day gives the same rows.",
	dataset.PartitionStatDate:  "A day holds the statistics of exactly that day, in the export's time zone, computed once the day has closed.",
	dataset.PartitionSnapshot:  "A day is a complete copy of the table's current rows, taken once the day has closed (the day is the date of the copy; when it was taken is provenance.snapshot_at in its _manifest.json). A copy is never restated: a change made after it is in the next day's copy.",
}

// modeMeaning is what a day adds to the table.
var modeMeaning = map[string]string{
	dataset.ModeIncrementalAppend: "Each day adds its own rows; no day repeats another day's rows.",
	dataset.ModeFullRefresh:       "Each day is a complete copy of the table as of that day.",
}

// readMeaning is how a reader turns the days into a table.
var readMeaning = map[string]string{
	dataset.ReadUnionAllPartitions: "The table is the union of all days: load every day and query them together. Loading a day again replaces that day; never keep only the latest day, which holds only its own rows.",
	dataset.ReadLatestSnapshot:     "The table is the latest day that has _SUCCESS; older days are history you may keep or drop. Never union the days: each repeats every row.",
}

// latestSnapshotRule says how the load scripts keep the newest day of a
// snapshot dataset.
func latestSnapshotRule(ds dataset.Dataset) string {
	return fmt.Sprintf("Every _load/<engine>.sql of %s loads its day and then keeps only the newest day loaded, so running the scripts of committed days in any order leaves the newest copy; Athena, which reads the files in place, gets the view %s_latest over the newest registered day.", ds.Name, ds.Name)
}

// currentStateRule says how to get one row per id from an activity dataset.
func currentStateRule(ds dataset.Dataset) string {
	return fmt.Sprintf("The current state of each %s is its newest row: rank the rows of each %s by %s, newest first (on a tie, the row of the later dt first), and keep the first.",
		ds.IDColumn, ds.IDColumn, ds.OrderColumn)
}

// typeRow is how a logical type is written in each file format.
type typeRow struct {
	kind    dataset.Kind
	name    string // as the catalog and the schema documents spell it
	parquet string
	ndjson  string
}

// typeRows lists every kind, in the order the README shows them.
var typeRows = []typeRow{
	{dataset.KindDate, "date", "INT32 annotated DATE (days since 1970-01-01)", `string "YYYY-MM-DD"`},
	{dataset.KindTimestamp, "timestamp", "INT64 annotated TIMESTAMP (microseconds, adjusted to UTC)", `string, RFC 3339 in UTC with six fractional digits, e.g. "2026-03-05T14:03:07.123456Z"`},
	{dataset.KindInt64, "int64", "INT64", "number, an integer (a reader that parses numbers as doubles is exact only up to 2^53)"},
	{dataset.KindDouble, "double", "DOUBLE", `number; NaN and infinities as the strings "NaN", "Infinity", "-Infinity"`},
	{dataset.KindDecimal, "decimal(p,s)", "DECIMAL(p,s) (INT32 up to 9 digits, INT64 up to 18, fixed-length bytes above)", "string holding the exact decimal, e.g. \"12.30\""},
	{dataset.KindBoolean, "boolean", "BOOLEAN", "true or false"},
	{dataset.KindString, "string", "BYTE_ARRAY annotated STRING (UTF-8)", "string"},
	{dataset.KindJSON, "json", "BYTE_ARRAY annotated JSON (UTF-8 JSON text)", "the JSON value itself, embedded"},
	{dataset.KindBinary, "binary", "BYTE_ARRAY, no annotation (the bytes as they are)", `string, the bytes in base64 (RFC 4648, standard alphabet, padded); "" is empty, null is NULL`},
}

// formatLabel names the files of a format and codec for a reader.
func formatLabel(f fileformat.Format, c fileformat.Codec) string {
	switch f {
	case fileformat.NDJSON:
		return "gzipped NDJSON, one JSON object per line"
	case fileformat.Parquet:
		return fmt.Sprintf("Parquet, %s-compressed", c)
	}
	return string(f)
}

// sizeLabel renders a byte size as the README states it.
func sizeLabel(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// lateDataRule says, per dataset.Dataset.LateData, which changes to a day
// after its export deliver it again (the README's Late data section).
var lateDataRule = map[string]string{
	dataset.LateChanges: "each recently closed day is checked again a few times a day; a day whose rows were added, removed or changed since it was exported is delivered again (see Late data).",
	dataset.LateRows:    "each recently closed day is checked again a few times a day; a day to which rows were added, or from which rows were removed, since it was exported is delivered again (see Late data). A row changed in place without a row added or removed is not noticed: that day keeps the row as it was exported.",
	dataset.LateNone:    "days are not checked again: a day is delivered again only when the sender re-exports it, so a change made after a day was exported is not delivered on its own.",
}
