package bucketdocs

import (
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/loadsql"
)

// ChangesQueryHeading heads the README's section on the change log; the
// DuckDB block after it is run by a test as written (its URI and time
// edited).
const ChangesQueryHeading = "What changed since your last run"

// ChangesLastRun is the example time in the DuckDB query's first line.
const ChangesLastRun = "2026-11-30 00:00:00+00"

func (w *mdWriter) changeLogSection() {
	dir := w.root + layout.ChangesDir + "/"
	w.h2(ChangesQueryHeading)
	w.p("Every committed generation of a partition adds one small JSON object to `"+dir+"`, the change",
		"log, at `<commit time>_<dataset>_<day>_<generation>.json` (commit time as `YYYYMMDDTHHMMSSZ`,",
		"UTC; generation zero-padded to ten digits), so the keys sort by commit time. An entry is never",
		"changed or removed once written: to find what changed since your last run, list the folder",
		"starting after the last key you read (`aws s3api list-objects-v2 --start-after`), or filter on",
		"`committed_at`.")
	w.table([]string{"field", "meaning"}, [][]string{
		{"`id`", "the generation's id, `<account>/<dataset>/<day>/<generation>` (`<dataset>.<contract>`, e.g. `events.v2`, after contract v1); the same in the sender's events"},
		{"`dataset`, `day`", "the partition"},
		{"`generation`", "the generation committed; its `_SUCCESS` names its `_manifest.json`"},
		{"`reason`", "why it was exported: `scheduled`, `backfill`, `retry`, `manual`, `restatement` or `reseed`"},
		{"`previous_generation`, `rows_before`", "the generation it replaced and that generation's rows (0 and 0 for a new day)"},
		{"`rows_after`", "this generation's rows"},
		{"`manifest_key`", "the key of the partition's `_manifest.json`"},
		{"`committed_at`", "when the generation was committed (RFC 3339, UTC); the time in the key"},
		{"`schema_version`, `run_id`", "as in `_manifest.json`"},
	})
	w.p("An entry is written right after the commit it records, so two days committed at about the same",
		"time may appear out of order, and an entry the sender writes again after recovering from a",
		"failure keeps its first key. Start each run an hour before the last one (by key or by",
		"`committed_at`) and load each day that appears: the load scripts replace the day, so loading it",
		"twice costs a reload, never a duplicate row. A day's entry may name a generation that a later",
		"one already replaced; load the newest.")
	w.p("In DuckDB (set `last_run` to when your last run started):")
	w.block("sql",
		"SET VARIABLE last_run = TIMESTAMPTZ '"+ChangesLastRun+"';",
		"SELECT dataset, day, generation, reason, rows_before, rows_after, manifest_key",
		"FROM read_json('"+w.in.base()+dir+"*.json', format = 'newline_delimited', columns = {",
		"    id: 'VARCHAR', dataset: 'VARCHAR', day: 'DATE', generation: 'BIGINT', reason: 'VARCHAR',",
		"    rows_before: 'BIGINT', rows_after: 'BIGINT', manifest_key: 'VARCHAR', committed_at: 'TIMESTAMPTZ'})",
		"WHERE committed_at > getvariable('last_run') - INTERVAL 1 HOUR",
		"QUALIFY row_number() OVER (PARTITION BY dataset, day ORDER BY generation DESC) = 1",
		"ORDER BY dataset, day;")
	w.p("Then run each listed day's `_load/duckdb.sql` (beside its `manifest_key`). In Snowflake, from",
		"the external stage `"+loadsql.SnowflakeStage+"` on the bucket root (see Loading):")
	w.block("sql",
		"CREATE FILE FORMAT IF NOT EXISTS daybook_changes TYPE = JSON;",
		"SET last_run = '"+ChangesLastRun+"'::TIMESTAMP_TZ;",
		"SELECT $1:dataset::STRING AS dataset, $1:day::DATE AS day, $1:generation::INT AS generation,",
		"       $1:reason::STRING AS reason, $1:rows_before::INT AS rows_before, $1:rows_after::INT AS rows_after,",
		"       $1:manifest_key::STRING AS manifest_key",
		"FROM @"+loadsql.SnowflakeStage+"/"+dir+" (FILE_FORMAT => 'daybook_changes', PATTERN => '.*[.]json')",
		"WHERE $1:committed_at::TIMESTAMP_TZ > DATEADD(hour, -1, $last_run)",
		"QUALIFY ROW_NUMBER() OVER (PARTITION BY dataset, day ORDER BY generation DESC) = 1",
		"ORDER BY dataset, day;")
}
