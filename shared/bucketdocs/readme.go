package bucketdocs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// README renders `<prefix>/v1/README.md` for in. Its sections follow what a
// data engineer given only the bucket needs, in order: what is where, when
// a day can be read, what the delivery manifest says, what each dataset's
// day means and how to read it, the column types, loading, reseeds, schema
// changes, and verifying a partition.
func README(in Input) ([]byte, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	w := &mdWriter{in: in, root: layout.ContractPrefix(in.Prefix)}
	w.intro()
	w.quickStart()
	w.layoutSection()
	w.readySection()
	w.deliverySection()
	w.datasetsSection()
	w.typesSection()
	w.loadSection()
	w.tableSection()
	w.reseedSection()
	w.changesSection()
	w.changeLogSection()
	w.verifySection()
	return []byte(w.b.String()), nil
}

// mdWriter accumulates the README.
type mdWriter struct {
	in   Input
	root string // <prefix>/v1/
	b    strings.Builder
}

// p writes one paragraph: its lines, then a blank line.
func (w *mdWriter) p(lines ...string) {
	for _, l := range lines {
		w.b.WriteString(l)
		w.b.WriteByte('\n')
	}
	w.b.WriteByte('\n')
}

func (w *mdWriter) h2(title string) { w.p("## " + title) }
func (w *mdWriter) h3(title string) { w.p("### " + title) }

// block writes a fenced code block.
func (w *mdWriter) block(lang string, lines ...string) {
	w.p(append(append([]string{"```" + lang}, lines...), "```")...)
}

// cell escapes text for a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// table writes a Markdown table.
func (w *mdWriter) table(header []string, rows [][]string) {
	line := func(cells []string) string {
		esc := make([]string, len(cells))
		for i, c := range cells {
			esc[i] = cell(c)
		}
		return "| " + strings.Join(esc, " | ") + " |"
	}
	lines := []string{line(header), "|" + strings.Repeat("---|", len(header))}
	for _, r := range rows {
		lines = append(lines, line(r))
	}
	w.p(lines...)
}

func (w *mdWriter) datasetNames() []string {
	names := make([]string, len(w.in.Datasets))
	for i, ds := range w.in.Datasets {
		names[i] = "`" + ds.Name + "`"
	}
	return names
}

func (w *mdWriter) intro() {
	in := w.in
	w.p("# How to read this export")
	w.p("This folder holds data exported to you one calendar day at a time by daybook, the export service",
		"of the platform that sends you this data (\"the sender\" below). Everything needed to read it is",
		"in this bucket: this README, a schema document per dataset, a manifest per day and load scripts",
		"per engine. Files whose names start with `_` are metadata; only `part-*` files hold data.",
		"This README is generated and rewritten when something it describes changes.")
	w.p("- **Location**: `"+in.base()+w.root+"`",
		"- **Datasets**: "+strings.Join(w.datasetNames(), ", "),
		"- **Files**: "+formatLabel(in.Format, in.codec()),
		"- **Days**: calendar days in the time zone `"+in.TimeZone+"` (\"the export's time zone\" below)",
		"- **Arrival**: "+arrival(in.SettleDelay))
}

// arrival says when a closed day is exported.
func arrival(settle time.Duration) string {
	if settle <= 0 {
		return "a day is exported once it has ended in that time zone"
	}
	return "a day is exported once it has ended in that time zone and " + durationLabel(settle) + " more have passed for late data"
}

// durationLabel renders a settle delay in words ("2 hours", "1 hour 30 minutes").
func durationLabel(d time.Duration) string {
	h, m := int(d/time.Hour), int((d%time.Hour)/time.Minute)
	unit := func(n int, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	switch {
	case h > 0 && m > 0:
		return unit(h, "hour") + " " + unit(m, "minute")
	case h > 0:
		return unit(h, "hour")
	case m > 0:
		return unit(m, "minute")
	}
	return d.String()
}

func (w *mdWriter) layoutSection() {
	ext := w.in.Format.Extension()
	w.h2("Layout")
	w.p("Every key in the bucket has the same shape:")
	w.block("",
		w.root,
		"  README.md                                   this file",
		"  _schemas/<dataset>.json                     a dataset's columns, types and meaning",
		"  _manifests/dt=YYYY-MM-DD/manifest.json      what was delivered for the day, and what not",
		"  _changes/<time>_<dataset>_<day>_<gen>.json  one entry per committed generation (the change log)",
		"  <dataset>/dt=YYYY-MM-DD/",
		"    part-00000"+ext+", part-00001"+ext+", ...   the data",
		"    _manifest.json                            the partition's files, rows, checksums and schema",
		"    _load/<engine>.sql                        a load script per engine",
		"    _SUCCESS                                  written last, once the partition is complete")
	w.p("- `v1` is the contract version. A change that would break a reader (a column renamed, removed,",
		"  reordered or retyped) is published as a new contract: the dataset is delivered again, from its",
		"  first day, under `v2/<dataset>/` beside `v1/`, with its schema in `v2/_schemas/<dataset>.json`;",
		"  `v1/<dataset>/` stays in place and is no longer written. This README, `_manifests/` and `_changes/`",
		"  stay here under `v1/`, and each dataset below names its current contract.",
		"- `dt=YYYY-MM-DD` is a Hive-style partition folder: Spark and DuckDB read it as a `dt` column of",
		"  type DATE from the path without configuration, and so does Athena once the day's partition is",
		"  added (see Loading). `dt` is not stored in the files.",
		"- A partition is one dataset on one day. Its data files are numbered from `part-00000` without",
		"  gaps; a new file is started once the current one passes "+sizeLabel(w.in.maxFileBytes())+". Even a day with no rows",
		"  has one file, with the full schema and zero rows, so \"no data\" and \"not delivered\" look different.",
		"- A day too large for one export run is written in slices, time ranges of the day written side by",
		"  side; its files are then named `part-s0000-00000`, `part-s0000-00001`, `part-s0001-00000`, ...",
		"  (slice, then file), still sorted in order, and the day is committed once, with one manifest, after",
		"  its last slice. Read `part-*` and both kinds are covered.",
		"- Spark and Athena skip files whose names start with `_` or `.` when they read a folder. Other",
		"  readers (DuckDB, Polars, pandas) read what they are given: point them at",
		"  `<dataset>/dt=*/part-*"+ext+"`, never at a whole folder.",
		"- Point a table at `"+w.root+"<dataset>/`, never at `"+w.root+"` itself.")
}

func (w *mdWriter) readySection() {
	w.h2("Is a day ready?")
	w.p("A partition is complete when, and only when, its `_SUCCESS` exists. Before it writes a",
		"partition again, the exporter removes `_SUCCESS`; it writes `_SUCCESS` last, after the data,",
		"`_manifest.json` and the load scripts. So whenever `_SUCCESS` exists, the data files under the",
		"partition are exactly those `_manifest.json` lists, with the sizes and checksums it gives.")
	w.p("- Read a partition only when its `_SUCCESS` exists. If it is missing, the day is not delivered",
		"  yet, or is being written again: keep using your copy of it, or fall back to the latest day",
		"  whose `_SUCCESS` exists.",
		"- `_SUCCESS` is a small JSON document: `generation` (one more every time the partition is",
		"  written again), `manifest_key`, `manifest_sha256` (the SHA-256 of the exact bytes of",
		"  `_manifest.json`, so an older manifest cannot pass for the current one) and `committed_at`.",
		"- `_manifest.json` lists every data file (`files`: `key`, `rows`, `bytes`, `crc32c` as base64 of",
		"  the big-endian value, as S3 shows it, and `sha256`) and their `totals`; the `schema` and",
		"  `schema_version` the files were written with; `day`, `partition`, `mode`, `read`, `format` and",
		"  `compression`; `generation` and why it was exported (`reason`: `scheduled`, `backfill`,",
		"  `retry`, `manual`, `restatement` or `reseed`); and `provenance`: the kind of source (`source`,",
		"  e.g. `postgres`) and the table or view read (`relation`), the time window read (`window_start`",
		"  inclusive, `window_end` exclusive, UTC), when the read began (`snapshot_at`: rows that reached",
		"  the source after it are not in this generation) and ended (`finished_at`), and how many rows it",
		"  held (`row_count`). That window and snapshot are the answer to \"why does this day have fewer",
		"  rows than I expected?\". A generation that restated the day (see Late data) also has",
		"  `restatement`: `previous_generation`, `previous_rows` and `rows`.",
		"- A `generation` higher than the one you loaded means the day was written again: load it again.",
		"  The load scripts replace the day, so this never duplicates rows.")
}

func (w *mdWriter) deliverySection() {
	w.h2("The delivery manifest")
	w.p("One document per day covers every dataset you receive:",
		"`"+w.root+layout.DeliveryManifestsDir+"/dt=YYYY-MM-DD/manifest.json`. It is rewritten whenever",
		"a dataset of that day is delivered or fails, so it always says where the day stands.")
	w.table([]string{"field", "meaning"}, [][]string{
		{"`day`", "the day, YYYY-MM-DD"},
		{"`complete`", "`true` when every dataset you receive is delivered for the day (a snapshot dataset listed in `datasets_latest_only` is not missing). `false` means the day is partial: for each missing dataset, fall back to the latest day whose `_SUCCESS` exists."},
		{"`datasets_delivered[]`", "one entry per delivered dataset: `name`, `schema_version`, `generation`, `mode`, `read`, `reseed`, `rows`, `files`, `manifest` (the key of its `_manifest.json`) and `committed_at`; `restatement` when the generation restated the day (see Late data), and `seed_epoch` when it belongs to a rebuild (see Reseeds)"},
		{"`datasets_missing[]`", "one entry per dataset not delivered: `name`, `state` (where its export stands: `pending`, `queued`, `running`, `failed`, or empty before its first export is scheduled), `code` (why it is missing, one of the codes below), `cause` (only when `state` is `failed`: the code of the last attempt's failure) and `reason` (the same for people, in words); `reseed: true` while the dataset is being rebuilt (see Reseeds)"},
		{"`datasets_latest_only[]`", "present on a day older than the newest closed day when you receive a snapshot dataset (`read`: `latest_snapshot`): one entry per such dataset, `name` and `reason`. A snapshot's copy is the whole table as it was when taken, and one is taken for the newest closed day only, so an older day has none by design, and none will come: read the dataset's latest day whose `_SUCCESS` exists. `daybook verify` counts such a day \"latest only\", not missing"},
		{"`updated_at`", "when the document was last written"},
	})
	w.p("A dataset counts as delivered only while its `_SUCCESS` exists; a day being exported again is",
		"listed as missing until it is delivered again. An export of the day that failed before it",
		"changed anything (the source refused it before its first row) leaves the earlier delivery in",
		"place: it stays listed as delivered, at its generation.")
	w.p("`code` is for programs: codes are added over time, never renamed or removed. `reason` starts",
		"with the code's sentence below; for a failed dataset it goes on with the number of attempts and",
		"whether the export is retried. Neither ever carries an error message of the sender's systems.")
	var causes []string
	for _, c := range manifest.Codes() {
		if c.IsCause() {
			causes = append(causes, "`"+string(c)+"`")
		}
	}
	w.p("A failed export's `code` is its `cause` while the export is retried automatically with backoff;",
		"once its attempts run out, `code` is `"+string(manifest.CodeStoppedRetrying)+"` and `cause` keeps the last attempt's code.",
		"The causes are "+strings.Join(causes, ", ")+".")
	rows := make([][]string, 0, len(manifest.Codes()))
	for _, c := range manifest.Codes() {
		rows = append(rows, []string{"`" + string(c) + "`", c.Sentence()})
	}
	w.table([]string{"code", "reason"}, rows)
}

func (w *mdWriter) datasetsSection() {
	w.h2("Datasets")
	w.p("Each dataset's columns are also in `"+w.root+layout.SchemasDir+"/<dataset>.json`, with the same",
		"descriptions, for tools to read.")
	for _, ds := range w.in.Datasets {
		w.dataset(ds)
	}
}

func (w *mdWriter) dataset(ds dataset.Dataset) {
	w.h3(ds.Name)
	w.p(ds.Description)
	items := []string{
		"- **What a day means** (`" + ds.Partition + "`): " + partitionMeaning[ds.Partition],
		"- **Mode** `" + ds.Mode + "`: " + modeMeaning[ds.Mode],
		"- **How to read it** (`read`: `" + ds.Read + "`): " + readMeaning[ds.Read],
	}
	if ds.Partition == dataset.PartitionActivity {
		items = append(items, "- **Current state**: "+currentStateRule(ds)+
			" Every `_load/<engine>.sql` of this dataset ends with that query, as a comment, for its engine.")
	}
	if ds.IsSnapshot() {
		items = append(items, "- **Latest copy**: "+latestSnapshotRule(ds))
	} else {
		items = append(items, "- **Late data**: "+lateDataRule[ds.LateData()])
	}
	items = append(items, w.contractItems(ds)...)
	w.p(items...)
	rows := make([][]string, len(ds.Columns))
	for i, c := range ds.Columns {
		null := "no"
		switch {
		case c.Loosened():
			null = fmt.Sprintf("yes, since version %d", c.NullableSince)
		case c.Nullable:
			null = "yes"
		}
		rows[i] = []string{"`" + c.Name + "`", c.Type.String(), null, fmt.Sprint(c.SinceVersion()), c.Description}
	}
	w.table([]string{"column", "type", "nullable", "since", "description"}, rows)
}

// groupDigits writes n with thousands separators: 65535 is "65,535".
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func (w *mdWriter) typesSection() {
	w.h2("Column types")
	w.p("The types above are logical types. This is how the files (" + formatLabel(w.in.Format, w.in.codec()) + ") store them:")
	rows := make([][]string, len(typeRows))
	for i, t := range typeRows {
		written := t.parquet
		if w.in.Format != fileformat.Parquet {
			written = t.ndjson
		}
		rows[i] = []string{t.name, written}
	}
	w.table([]string{"type", "in the files"}, rows)
	w.p(fmt.Sprintf("A string value is at most %s bytes of UTF-8 (the widest VARCHAR Redshift has) and never", groupDigits(dataset.MaxStringBytes)),
		"contains the NUL character (U+0000), which PostgreSQL text cannot hold and Redshift refuses; a json",
		fmt.Sprintf("value is at most %s bytes of JSON text (Snowflake's VARIANT limit). `\\u0000` inside a JSON", groupDigits(dataset.MaxJSONBytes)),
		"string is kept as written. A source row outside these limits is not delivered: the day fails and is",
		"reported missing until the sender fixes the row.")
	if w.in.Format == fileformat.Parquet {
		w.p("String columns carry their minimum and maximum in the column chunk statistics, page headers and",
			fmt.Sprintf("column index (truncated there to %d bytes); json columns carry a null count and no bounds.", encode.ColumnIndexTruncateLength))
	}
	if w.in.Format == fileformat.Parquet {
		w.p("A nullable column is OPTIONAL, a required one REQUIRED. Timestamps are instants in UTC; dates and",
			"`dt` are calendar days in `"+w.in.TimeZone+"`.")
		return
	}
	w.p("Every line has every column, in schema order, `null` included. Timestamps are instants in UTC;",
		"dates and `dt` are calendar days in `"+w.in.TimeZone+"`.")
}
