// Package loadsql generates the ready-to-run load scripts daybook writes
// beside each partition as `_load/<engine>.sql` (Q1–Q3, F1).
//
// A script is generated from two inputs only: the dataset schema the files
// were written with, and the manifest's list of data files. It never lists or
// globs the bucket, so a script names exactly the files of its generation and
// the two can never disagree.
//
// Every script that loads into a native table replaces the day (Q2):
// delete-then-insert inside one transaction (Snowflake, Redshift, DuckDB,
// Fabric), a delete then a COPY INTO that Databricks commits each on its own
// (a script stopped between them is run again), or an overwrite of the day's
// partition (BigQuery). Running a script twice, or the
// scripts of two generations in turn, leaves each row of the day exactly once.
// Athena/Trino reads the files in place through an external table, so there is
// nothing to replace: the exporter deleting stale parts (E3) is what keeps
// the day exact there.
//
// Decisions shared by every engine:
//
//   - `dt DATE` is the day column everywhere (never a string, never a
//     timestamp at midnight), set from the partition, not from the data.
//   - Types are explicit and come from the dataset schema; nothing is
//     autodetected. See the per-engine files for each mapping.
//   - Identifiers are always quoted, except in Snowflake where quoting makes a
//     name case-sensitive: there names are left unquoted unless reserved, and a
//     reserved name is quoted in upper case so it resolves exactly like every
//     unquoted name (see quote.go).
//   - String literals are escaped per engine (quote doubling, and backslash
//     escaping where the engine treats backslash as an escape character).
//   - A script first brings a table created by an earlier schema version up
//     to the partition's version (appended columns, loosened nullability),
//     then loads; see evolve.go.
//   - No comment holds a semicolon, so a naive statement splitter (one that
//     cuts at every semicolon outside quotes) cuts a script correctly.
package loadsql

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// Engine names, also the `_load/<engine>.sql` file names.
const (
	EngineAthena    = "athena"
	EngineBigQuery  = "bigquery"
	EngineSnowflake = "snowflake"
	EngineRedshift  = "redshift"
	EngineDuckDB    = "duckdb"
	// EngineFabric is Microsoft Fabric's Warehouse (T-SQL COPY INTO from
	// the blob URL); the same COPY statement serves a Synapse dedicated
	// SQL pool.
	EngineFabric = "fabric"
	// EngineDatabricks is Databricks SQL (COPY INTO a Delta table).
	EngineDatabricks = "databricks"
)

// Engines lists every engine daybook writes scripts for, in the order the
// exporter writes them; a partition gets those of EnginesFor.
var Engines = []string{EngineAthena, EngineBigQuery, EngineSnowflake, EngineRedshift, EngineDuckDB, EngineFabric, EngineDatabricks}

// Placeholders the user replaces before running a script. Each script's
// header says which one it uses.
const (
	// SnowflakeStage is the external stage the Snowflake script reads from.
	// It must point at the bucket root: `CREATE STAGE daybook_stage
	// URL = 's3://<bucket>/' STORAGE_INTEGRATION = <integration>`.
	SnowflakeStage = "daybook_stage"
	// RedshiftIAMRole stands for the ARN of a role Redshift assumes to read
	// the bucket.
	RedshiftIAMRole = "<REDSHIFT_IAM_ROLE_ARN>"
	// BigQueryConnection stands for the BigQuery Omni (AWS) connection,
	// `project.aws-region.connection_id`.
	BigQueryConnection = "<PROJECT_ID>.<AWS_LOCATION e.g. aws-us-east-1>.<CONNECTION_ID>"
)

// RedshiftManifestName is the name, under the partition's `_load/` folder, of
// the Redshift COPY manifest the exporter writes beside `redshift.sql`
// (content from RedshiftCopyManifest).
const RedshiftManifestName = "redshift.manifest"

// File is one data file of the partition, exactly as the manifest lists it.
type File struct {
	Key   string // full object key, under Partition.PartitionPrefix
	Rows  int64
	Bytes int64
}

// Partition describes one committed partition: what the files are and where.
type Partition struct {
	Dataset    dataset.Dataset
	Day        civil.Date
	Generation int64
	// Format is the files' format; Compression is their codec,
	// informational (every engine detects it from the file).
	Format      fileformat.Format
	Compression fileformat.Codec
	Bucket      string
	// PartitionPrefix is the key prefix of the partition, ending in
	// `<prefix>/<contract>/<dataset>/dt=YYYY-MM-DD/`, the dataset's contract.
	PartitionPrefix string
	// Files are exactly the manifest's data files, in manifest order.
	Files []File
	// TableName is the target table (default: the dataset name). It may be
	// qualified ("schema.table", "project.dataset.table"); each part is
	// quoted on its own.
	TableName string
	// Store is where the files are: StoreS3 (when empty), StoreGCS or
	// StoreAzure. Bucket is then the S3 or GCS bucket, or the Azure
	// container of the storage account AzureAccount.
	Store        string
	AzureAccount string
	// BaseURI, when set, replaces the store's base URI ("s3://<bucket>/",
	// "gs://<bucket>/", ...) in every URI a script names, e.g.
	// "/tmp/mirror/bucket/" so DuckDB reads a local mirror.
	BaseURI string
}

// ErrInvalid is wrapped by every error about an unusable Partition or engine.
var ErrInvalid = errors.New("loadsql")

// Generate returns the load script of p for engine.
func Generate(engine string, p Partition) (string, error) {
	g, err := newGen(engine, p)
	if err != nil {
		return "", err
	}
	switch engine {
	case EngineAthena:
		return g.athena(), nil
	case EngineBigQuery:
		return g.bigquery(), nil
	case EngineSnowflake:
		return g.snowflake(), nil
	case EngineRedshift:
		return g.redshift(), nil
	case EngineFabric:
		return g.fabric(), nil
	case EngineDatabricks:
		return g.databricks(), nil
	default: // EngineDuckDB; newGen refused anything else
		return g.duckdb(), nil
	}
}

// CurrentState returns the query giving the current state of an activity
// dataset (Q3, D4): the newest row per IDColumn by OrderColumn, over
// every loaded day. Ties on OrderColumn go to the later day. For Athena it
// reads the external table. It refuses datasets of any other partition kind.
func CurrentState(engine string, p Partition) (string, error) {
	if err := checkEngine(engine); err != nil {
		return "", err
	}
	ds := p.Dataset
	if ds.Partition != dataset.PartitionActivity {
		return "", fmt.Errorf("%w: current state of dataset %q: partition %q is not %q; only activity datasets have a latest row per id",
			ErrInvalid, ds.Name, ds.Partition, dataset.PartitionActivity)
	}
	for _, f := range []struct{ field, col string }{{"IDColumn", ds.IDColumn}, {"OrderColumn", ds.OrderColumn}} {
		if _, ok := ds.Column(f.col); !ok {
			return "", fmt.Errorf("%w: current state of dataset %q: %s %q is not a column", ErrInvalid, ds.Name, f.field, f.col)
		}
	}
	if err := checkColumns(ds); err != nil {
		return "", err
	}
	table, err := tableName(p)
	if err != nil {
		return "", err
	}
	q := identQuoter(engine)
	if engine == EngineAthena {
		q = quoteDouble // a SELECT is DML: double quotes (see quote.go)
	}
	cols := make([]string, 0, len(ds.Columns)+1)
	for _, c := range ds.Columns {
		cols = append(cols, q(c.Name))
	}
	cols = append(cols, q(dtColumn))
	list := strings.Join(cols, ", ")
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s\n", list)
	fmt.Fprintf(&b, "FROM (\n")
	fmt.Fprintf(&b, "    SELECT %s,\n", list)
	fmt.Fprintf(&b, "        ROW_NUMBER() OVER (PARTITION BY %s ORDER BY %s DESC, %s DESC) AS %s\n",
		q(ds.IDColumn), q(ds.OrderColumn), q(dtColumn), q("daybook_rn"))
	fmt.Fprintf(&b, "    FROM %s\n", quoteTable(q, table))
	fmt.Fprintf(&b, ") AS %s\n", q("daybook_latest"))
	fmt.Fprintf(&b, "WHERE %s = 1;\n", q("daybook_rn"))
	return b.String(), nil
}

// RedshiftManifestKey is the object key of the Redshift COPY manifest of p:
// `<partition prefix>_load/redshift.manifest`.
func RedshiftManifestKey(p Partition) string {
	return p.PartitionPrefix + "_load/" + RedshiftManifestName
}

const dtColumn = "dt"

// gen holds a validated partition and what every engine derives from it.
type gen struct {
	engine string
	p      Partition
	ds     dataset.Dataset
	day    string   // YYYY-MM-DD
	table  []string // table name parts
	root   string   // key prefix of the dataset: <prefix>/<contract>/<dataset>/
	rows   int64
	bytes  int64
	names  []string // file names relative to PartitionPrefix
}

var (
	tablePartRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_$-]*$`)
	columnRE    = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

func checkEngine(engine string) error {
	if slices.Contains(Engines, engine) {
		return nil
	}
	return fmt.Errorf("%w: engine %q: unknown engine (want one of %s)", ErrInvalid, engine, strings.Join(Engines, ", "))
}

func checkColumns(ds dataset.Dataset) error {
	if len(ds.Columns) == 0 {
		return fmt.Errorf("%w: dataset %q: no columns", ErrInvalid, ds.Name)
	}
	seen := map[string]bool{}
	for i, c := range ds.Columns {
		if !columnRE.MatchString(c.Name) {
			return fmt.Errorf("%w: dataset %q: column %d name %q must match %s", ErrInvalid, ds.Name, i, c.Name, columnRE)
		}
		if c.Name == dtColumn {
			return fmt.Errorf("%w: dataset %q: column name %q is reserved for the day", ErrInvalid, ds.Name, dtColumn)
		}
		if seen[c.Name] {
			return fmt.Errorf("%w: dataset %q: column %q declared twice", ErrInvalid, ds.Name, c.Name)
		}
		seen[c.Name] = true
		switch c.Type.Kind {
		case dataset.KindDate, dataset.KindTimestamp, dataset.KindInt64, dataset.KindDouble,
			dataset.KindBoolean, dataset.KindString, dataset.KindJSON, dataset.KindBinary, dataset.KindList:
		case dataset.KindDecimal:
			if c.Type.Precision < 1 || c.Type.Precision > dataset.MaxDecimalPrecision || c.Type.Scale < 0 || c.Type.Scale > c.Type.Precision {
				return fmt.Errorf("%w: dataset %q: column %s: invalid type %s", ErrInvalid, ds.Name, c.Name, c.Type)
			}
		default:
			return fmt.Errorf("%w: dataset %q: column %s: unsupported type %q", ErrInvalid, ds.Name, c.Name, c.Type)
		}
	}
	return nil
}

func tableName(p Partition) ([]string, error) {
	name := p.TableName
	if name == "" {
		name = p.Dataset.Name
	}
	parts := strings.Split(name, ".")
	for _, part := range parts {
		if !tablePartRE.MatchString(part) {
			return nil, fmt.Errorf("%w: TableName %q: each dot-separated part must match %s", ErrInvalid, name, tablePartRE)
		}
		if strings.Contains(part, "$$") {
			// The Redshift script dollar-quotes a procedure body naming the table.
			return nil, fmt.Errorf("%w: TableName %q: a part must not contain $$", ErrInvalid, name)
		}
	}
	return parts, nil
}

func newGen(engine string, p Partition) (*gen, error) {
	if err := checkEngine(engine); err != nil {
		return nil, err
	}
	ds := p.Dataset
	if !columnRE.MatchString(ds.Name) {
		return nil, fmt.Errorf("%w: Dataset.Name %q must match %s", ErrInvalid, ds.Name, columnRE)
	}
	if err := checkColumns(ds); err != nil {
		return nil, err
	}
	g := &gen{engine: engine, p: p, ds: ds, day: p.Day.String()}
	if _, err := fileformat.Parse(string(p.Format)); err != nil {
		return nil, fmt.Errorf("%w: dataset %s day %s: Format %q: unknown format (want %s)",
			ErrInvalid, ds.Name, g.day, p.Format, fileformat.Names())
	}
	ext := p.Format.Extension()
	if p.Bucket == "" {
		return nil, fmt.Errorf("%w: dataset %s day %s: Bucket is empty", ErrInvalid, ds.Name, g.day)
	}
	if err := checkStore(p); err != nil {
		return nil, fmt.Errorf("%w: dataset %s day %s: %v", ErrInvalid, ds.Name, g.day, err)
	}
	if why := Why(engine, p.Store, p.Format, ds); why != "" {
		return nil, fmt.Errorf("%w: dataset %s day %s: no %s script: %s", ErrInvalid, ds.Name, g.day, engine, why)
	}
	if p.Generation < 1 {
		return nil, fmt.Errorf("%w: dataset %s day %s: Generation %d must be >= 1", ErrInvalid, ds.Name, g.day, p.Generation)
	}
	dayDir := "dt=" + g.day + "/"
	root, ok := strings.CutSuffix(p.PartitionPrefix, dayDir)
	tail := ds.ContractVersion() + "/" + ds.Name + "/"
	if !ok || !(root == tail || strings.HasSuffix(root, "/"+tail)) || strings.HasPrefix(root, "/") {
		return nil, fmt.Errorf("%w: dataset %s day %s: PartitionPrefix %q must end in %s%s",
			ErrInvalid, ds.Name, g.day, p.PartitionPrefix, tail, dayDir)
	}
	g.root = root
	if len(p.Files) == 0 {
		// Even an empty day has one file with the full schema (E6).
		return nil, fmt.Errorf("%w: dataset %s day %s: Files is empty; the manifest lists at least one data file", ErrInvalid, ds.Name, g.day)
	}
	seen := map[string]bool{}
	for i, f := range p.Files {
		name, ok := strings.CutPrefix(f.Key, p.PartitionPrefix)
		if !ok || name == "" || strings.Contains(name, "/") || !strings.HasPrefix(name, "part-") || !strings.HasSuffix(name, ext) {
			return nil, fmt.Errorf("%w: dataset %s day %s: Files[%d].Key %q is not a %s data file (part-*%s) directly under %q",
				ErrInvalid, ds.Name, g.day, i, f.Key, p.Format, ext, p.PartitionPrefix)
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: dataset %s day %s: Files[%d].Key %q listed twice", ErrInvalid, ds.Name, g.day, i, f.Key)
		}
		if f.Rows < 0 || f.Bytes < 0 {
			return nil, fmt.Errorf("%w: dataset %s day %s: Files[%d] has negative rows or bytes", ErrInvalid, ds.Name, g.day, i)
		}
		seen[name] = true
		g.names = append(g.names, name)
		g.rows += f.Rows
		g.bytes += f.Bytes
	}
	t, err := tableName(p)
	if err != nil {
		return nil, err
	}
	g.table = t
	return g, nil
}

// uri is the URI of key: BaseURI+key, or the store's URI of it as the
// engine reads it (stores.go).
func (g *gen) uri(key string) string {
	base := g.p.BaseURI
	if base == "" {
		base = storeBase(g.engine, g.p)
	} else if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return base + key
}

func (g *gen) fileURIs() []string {
	out := make([]string, len(g.p.Files))
	for i, f := range g.p.Files {
		out[i] = g.uri(f.Key)
	}
	return out
}

// header is the comment block every script starts with.
func (g *gen) header(extra ...string) string {
	var b strings.Builder
	ds := g.ds
	format := string(g.p.Format)
	switch {
	case g.p.Format == fileformat.NDJSON:
		format = "ndjson (gzip)"
	case g.p.Compression != "":
		format += " (" + string(g.p.Compression) + ")"
	}
	line := func(k, v string) { fmt.Fprintf(&b, "-- %-15s %s\n", k+":", v) }
	fmt.Fprintf(&b, "-- daybook load script for %s: generated by daybook, do not edit.\n", g.engine)
	line("dataset", ds.Name)
	line("schema version", fmt.Sprint(ds.Version))
	line("partition", fmt.Sprintf("%s (mode %s, read %s)", ds.Partition, ds.Mode, ds.Read))
	line("day", g.day+" (column dt)")
	line("generation", fmt.Sprint(g.p.Generation))
	line("format", format)
	line("files", fmt.Sprintf("%d data file(s), %d rows, %d bytes: exactly those of _manifest.json", len(g.p.Files), g.rows, g.bytes))
	line("table", strings.Join(g.table, "."))
	for _, e := range extra {
		if e == "" {
			b.WriteString("--\n")
			continue
		}
		fmt.Fprintf(&b, "-- %s\n", e)
	}
	b.WriteString("\n")
	return b.String()
}

// currentStateComment appends, for activity datasets, the current-state
// query as a comment (Q3): the script stays a pure load, and the query
// is there to copy.
func (g *gen) currentStateComment(b *strings.Builder) {
	if g.ds.Partition != dataset.PartitionActivity {
		return
	}
	q, err := CurrentState(g.engine, g.p)
	if err != nil {
		return // an activity dataset without valid id/order columns: no query to offer
	}
	fmt.Fprintf(b, "\n-- Current state (one row per %s, the newest by %s), to run after loading:\n", g.ds.IDColumn, g.ds.OrderColumn)
	// Without its semicolon: a statement splitter must never find one in a
	// comment.
	q = strings.TrimSuffix(strings.TrimSuffix(q, "\n"), ";")
	for _, l := range strings.Split(q, "\n") {
		fmt.Fprintf(b, "-- %s\n", l)
	}
}

func quoteTable(q func(string) string, parts []string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = q(p)
	}
	return strings.Join(out, ".")
}

// columnList writes the columns as an indented, comma-separated list, one per
// line, each from f.
func columnList(b *strings.Builder, indent string, n int, f func(i int) string) {
	for i := 0; i < n; i++ {
		b.WriteString(indent)
		b.WriteString(f(i))
		if i < n-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
}

func notNull(c dataset.Column) string {
	if c.Nullable {
		return ""
	}
	return " NOT NULL"
}
