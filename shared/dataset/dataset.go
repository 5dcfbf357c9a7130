// Package dataset declares the exported datasets: ordered, typed schemas
// loaded from the deployment's catalog file (D1; catalog.go), their partition semantics
// (D4), the per-dialect source queries (D5), the schema compatibility rule
// (D2) and the in-memory value model every other package uses.
package dataset

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Partition semantics (D4): what the day of a partition means.
const (
	PartitionEventTime = "event_time" // by when the event happened
	PartitionActivity  = "activity"   // incremental feed: a record lands in each day it was active
	PartitionStatDate  = "stat_date"  // pre-aggregated daily statistics
	// PartitionSnapshot: the day is the date of a complete copy of the
	// tenant's current rows (a dimension table: plans, users, settings),
	// taken once the day has closed. Its query has no time window, it has
	// no partition column, and it is delivered as mode full_refresh, read
	// latest_snapshot (see snapshot.go).
	PartitionSnapshot = "snapshot"
)

// Delivery modes (F4).
const (
	ModeIncrementalAppend = "incremental_append" // each day adds its own rows
	ModeFullRefresh       = "full_refresh"       // each day is a complete copy
)

// Read strategies (F4): how a consumer turns partitions into a table.
const (
	ReadUnionAllPartitions = "union_all_partitions"
	ReadLatestSnapshot     = "latest_snapshot"
)

// Source query dialects.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// Dialects lists the dialects every dataset must carry a query for.
var Dialects = []string{DialectSQLite, DialectPostgres}

var (
	// ErrUnknownDataset is returned by Get for a name not in the catalog.
	ErrUnknownDataset = errors.New("unknown dataset")
	// ErrUnknownDialect is returned for a dialect with no query or DDL.
	ErrUnknownDialect = errors.New("unknown dialect")
	// ErrIncompatible is wrapped by every refusal of Compatible.
	ErrIncompatible = errors.New("incompatible schema change")
)

// Column is one declared column. Order in Dataset.Columns is the file order.
type Column struct {
	Name        string `json:"name"`
	Type        Type   `json:"type"`
	Nullable    bool   `json:"nullable,omitempty"`
	Description string `json:"description,omitempty"`
	// Dictionary is an encoding hint for a string or JSON column, not part
	// of the contract (changing it changes no file's schema): see
	// DictionaryHint.
	Dictionary DictionaryHint `json:"dictionary,omitempty"`
	// Since is the schema version that added the column ("since" in
	// the catalog; omitted means 1). A column appended in version N has
	// Since N, and a column keeps its Since forever (see Compatible). The
	// load scripts add every column with Since > 1 to a table created by an
	// earlier version.
	Since int `json:"since,omitempty"`
	// NullableSince is set only on a column that was required and was
	// loosened to nullable: the schema version from which it is nullable.
	// The load scripts drop the NOT NULL of such a column in a table created
	// while it was required. A column nullable from the start leaves it 0.
	NullableSince int `json:"nullable_since,omitempty"`
	// SourceTimeZone is set only on a timestamp column whose source holds
	// wall-clock times without a zone (PostgreSQL timestamp without time
	// zone): the IANA zone those wall times are in, "UTC" included. The
	// source reads each wall time as the instant it names in that zone;
	// a zone-less source column without one is refused, never guessed
	// (see docs/types.md).
	SourceTimeZone string `json:"source_time_zone,omitempty"`
}

// SourceLocation returns the zone of SourceTimeZone; nil when it is not
// set. Validate has checked the zone loads.
func (c Column) SourceLocation() *time.Location {
	if c.SourceTimeZone == "" {
		return nil
	}
	loc, err := time.LoadLocation(c.SourceTimeZone)
	if err != nil {
		return nil
	}
	return loc
}

// DictionaryHint is what a dataset declares about a string or JSON
// column's cardinality ("dictionary" in the catalog).
type DictionaryHint int8

// The hints.
const (
	// DictionaryDefault (omitted): the encoder decides; Parquet encoders
	// dictionary-encode string and JSON columns with a fallback to PLAIN
	// when the dictionary grows past a bound.
	DictionaryDefault DictionaryHint = iota
	// DictionaryOn ("dictionary": true): a low-cardinality column.
	DictionaryOn
	// DictionaryOff ("dictionary": false): a high-cardinality column, such
	// as an id whose every value is distinct, which encoders write without
	// a dictionary: one would only fill up to its bound in every row group
	// and be dropped, at a cost in CPU and memory and no gain in size.
	DictionaryOff
)

// MarshalJSON writes true or false; DictionaryDefault is omitted by
// omitempty.
func (h DictionaryHint) MarshalJSON() ([]byte, error) {
	switch h {
	case DictionaryOn:
		return []byte("true"), nil
	case DictionaryOff:
		return []byte("false"), nil
	}
	return []byte("null"), nil
}

// UnmarshalJSON reads true, false or null (DictionaryDefault).
func (h *DictionaryHint) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*h = DictionaryOn
	case "false":
		*h = DictionaryOff
	case "null":
		*h = DictionaryDefault
	default:
		return fmt.Errorf("dictionary: %s is not true or false", b)
	}
	return nil
}

// SinceVersion returns the schema version that added the column (Since, or
// 1 when it is not set).
func (c Column) SinceVersion() int {
	if c.Since < 1 {
		return 1
	}
	return c.Since
}

// Loosened reports whether the column was required in an earlier schema
// and is nullable now.
func (c Column) Loosened() bool {
	return c.Nullable && c.NullableSince > 0
}

// Dataset is one exported table.
type Dataset struct {
	Name        string `json:"name"`
	Version     int    `json:"version"`
	Description string `json:"description,omitempty"`
	Partition   string `json:"partition"`
	// PartitionColumn is the column whose value decides a row's day: a
	// required timestamp for event_time and activity, a required date for
	// stat_date. Every row's value is checked against the day's window.
	PartitionColumn string `json:"partition_column"`
	// Relation is the source table or view the queries read, named in the
	// manifest's provenance; every query reads FROM it.
	Relation string `json:"relation"`
	// Source names the source database the relation is in ("source" in
	// the catalog; omitted: the deployment's default source, DefaultSource):
	// the deployment supplies one connection string per source, and per
	// shard of a sharded source (see source.Router). Provenance names it,
	// never its connection string.
	Source string `json:"source,omitempty"`
	// Contract is the layout contract the dataset is delivered under
	// ("contract" in the catalog; omitted: v1): see contract.go.
	Contract string `json:"contract,omitempty"`
	Mode     string `json:"mode"`
	Read     string `json:"read"`
	// IDColumn and OrderColumn identify "the latest row per id" for activity
	// datasets (Q3): the newest OrderColumn value wins per IDColumn.
	IDColumn    string   `json:"id_column,omitempty"`
	OrderColumn string   `json:"order_column,omitempty"`
	Columns     []Column `json:"columns"`
	// TenantColumn, OrderBy and ChangedColumn let daybook write the
	// queries itself (generate.go) when Queries and Fingerprint are left
	// out: the relation's column holding the account id, the ORDER BY of
	// the export (default: the partition column) and a source column whose
	// maximum changes whenever a row of the day changes (an insertion or
	// update instant), for the fingerprint.
	TenantColumn string `json:"tenant_column,omitempty"`
	// TenantType is what the tenant column holds (TenantString, the
	// default, TenantUUID or TenantInt64): an account whose key is not of
	// that type is refused, and the key is bound as that type.
	TenantType    string            `json:"tenant_type,omitempty"`
	OrderBy       []string          `json:"order_by,omitempty"`
	ChangedColumn string            `json:"changed_column,omitempty"`
	Queries       map[string]string `json:"queries,omitempty"`
	// Fingerprint is the cheap per-dialect query that summarises a day in
	// one row (see fingerprint.go); bound like Queries.
	Fingerprint map[string]string `json:"fingerprint,omitempty"`
}

//go:embed schema/*.sql
var ddlFS embed.FS

// ParseCatalog decodes and validates a JSON catalog document (Parse takes
// YAML too); it refuses unknown fields so a typo in the catalog fails its
// load, not an export. Errors name the dataset and its position
// (datasets[i]).
func ParseCatalog(b []byte) ([]Dataset, error) {
	var doc struct {
		Datasets []json.RawMessage `json:"datasets"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("parse dataset catalog: %w", err)
	}
	out := make([]Dataset, len(doc.Datasets))
	seen := map[string]bool{}
	for i, raw := range doc.Datasets {
		d := &out[i]
		if err := decodeDataset(raw, d); err != nil {
			return nil, fmt.Errorf("parse dataset catalog: datasets[%d]: %w", i, err)
		}
		if seen[d.Name] {
			return nil, fmt.Errorf("parse dataset catalog: datasets[%d]: dataset %q declared twice", i, d.Name)
		}
		seen[d.Name] = true
		r, err := ResolveEntry(*d)
		if err != nil {
			return nil, fmt.Errorf("parse dataset catalog: datasets[%d]: %w", i, err)
		}
		*d = r
	}
	return out, nil
}

// decodeDataset decodes one datasets[] entry strictly; its error names the
// dataset when the entry has a name.
func decodeDataset(raw json.RawMessage, d *Dataset) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(d)
	if err == nil {
		return nil
	}
	var named struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &named) == nil && named.Name != "" {
		return fmt.Errorf("dataset %s: %s", named.Name, strings.TrimPrefix(err.Error(), "json: "))
	}
	return err
}

var identRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Validate checks the declaration is complete and self-consistent. Names are
// restricted to lower snake case because they become Parquet, Hive and SQL
// identifiers in every target engine.
func (d Dataset) Validate() error {
	if !identRE.MatchString(d.Name) {
		return fmt.Errorf("dataset %q: name must match %s", d.Name, identRE)
	}
	if d.Version < 1 {
		return fmt.Errorf("dataset %s: version %d must be >= 1", d.Name, d.Version)
	}
	if err := d.validateContract(); err != nil {
		return err
	}
	switch d.Partition {
	case PartitionEventTime, PartitionActivity, PartitionStatDate, PartitionSnapshot:
	default:
		return fmt.Errorf("dataset %s: unknown partition %q", d.Name, d.Partition)
	}
	switch d.Mode {
	case ModeIncrementalAppend, ModeFullRefresh:
	default:
		return fmt.Errorf("dataset %s: unknown mode %q", d.Name, d.Mode)
	}
	switch d.Read {
	case ReadUnionAllPartitions, ReadLatestSnapshot:
	default:
		return fmt.Errorf("dataset %s: unknown read %q", d.Name, d.Read)
	}
	if err := d.validateTenantType(); err != nil {
		return err
	}
	if len(d.Columns) == 0 {
		return fmt.Errorf("dataset %s: no columns", d.Name)
	}
	seen := map[string]bool{}
	since := 1
	for i, c := range d.Columns {
		if !identRE.MatchString(c.Name) {
			return fmt.Errorf("dataset %s: column %d name %q must match %s", d.Name, i, c.Name, identRE)
		}
		if c.Name == "dt" {
			// dt is the Hive partition column engines add from the path.
			return fmt.Errorf("dataset %s: column name %q is reserved for the partition", d.Name, c.Name)
		}
		if seen[c.Name] {
			return fmt.Errorf("dataset %s: column %q declared twice", d.Name, c.Name)
		}
		seen[c.Name] = true
		if err := c.Type.validate(); err != nil || c.Type.Kind == "" {
			return fmt.Errorf("dataset %s: column %s: invalid type %q", d.Name, c.Name, c.Type)
		}
		if c.SourceTimeZone != "" {
			if c.Type.Kind != KindTimestamp {
				return fmt.Errorf("dataset %s: column %s: source_time_zone %q only applies to timestamp columns", d.Name, c.Name, c.SourceTimeZone)
			}
			if _, err := time.LoadLocation(c.SourceTimeZone); err != nil || c.SourceTimeZone == "Local" {
				return fmt.Errorf("dataset %s: column %s: source_time_zone %q is not an IANA time zone", d.Name, c.Name, c.SourceTimeZone)
			}
		}
		if c.Dictionary != DictionaryDefault && c.Type.Kind != KindString && c.Type.Kind != KindJSON {
			return fmt.Errorf("dataset %s: column %s: dictionary only applies to string and json columns", d.Name, c.Name)
		}
		if err := d.validateVersions(c, since); err != nil {
			return err
		}
		since = c.SinceVersion()
	}
	// Partition, mode and read agree (snapshot.go). An incremental feed is
	// read by a union of its partitions; only a full refresh may be read as
	// its latest snapshot (F4 "read").
	if err := d.validateSnapshot(); err != nil {
		return err
	}
	if d.Mode == ModeIncrementalAppend && d.Read != ReadUnionAllPartitions {
		return fmt.Errorf("dataset %s: mode %s needs read %q", d.Name, d.Mode, ReadUnionAllPartitions)
	}
	if d.Partition == PartitionActivity {
		// Current state is the latest row per id by the order column (Q3).
		if d.Mode != ModeIncrementalAppend {
			return fmt.Errorf("dataset %s: activity partition needs mode %q", d.Name, ModeIncrementalAppend)
		}
		for _, f := range []struct{ field, col string }{{"id_column", d.IDColumn}, {"order_column", d.OrderColumn}} {
			c, ok := d.Column(f.col)
			if !ok {
				return fmt.Errorf("dataset %s: %s %q is not a column", d.Name, f.field, f.col)
			}
			if c.Nullable {
				return fmt.Errorf("dataset %s: %s %q must not be nullable", d.Name, f.field, f.col)
			}
		}
	}
	if d.Partition != PartitionSnapshot {
		if err := d.validatePartitionColumn(); err != nil {
			return err
		}
	}
	if err := ValidSourceName(d.Source); d.Source != "" && err != nil {
		return fmt.Errorf("dataset %s: source %q: %w", d.Name, d.Source, err)
	}
	if !relationRE.MatchString(d.Relation) {
		return fmt.Errorf("dataset %s: relation %q must match %s", d.Name, d.Relation, relationRE)
	}
	from := regexp.MustCompile(`(?i)\bFROM\s+` + regexp.QuoteMeta(d.Relation) + `\b`)
	for q := range d.Queries {
		if !isDialect(q) {
			return fmt.Errorf("dataset %s: queries: unknown dialect %q (want one of %s)", d.Name, q, strings.Join(Dialects, ", "))
		}
	}
	for _, dialect := range Dialects {
		q := strings.TrimSpace(d.Queries[dialect])
		if q == "" {
			return fmt.Errorf("dataset %s: queries.%s: no query (give one, or tenant_column to have it generated)", d.Name, dialect)
		}
		if err := d.checkPlaceholders(dialect, q); err != nil {
			return fmt.Errorf("dataset %s: queries.%s: %w", d.Name, dialect, err)
		}
		if !from.MatchString(q) {
			return fmt.Errorf("dataset %s: queries.%s: does not read FROM its relation %q", d.Name, dialect, d.Relation)
		}
		if err := d.checkSelectList(q); err != nil {
			return fmt.Errorf("dataset %s: queries.%s: %w", d.Name, dialect, err)
		}
	}
	if err := d.checkWindowZone("queries."+DialectPostgres, d.Queries[DialectPostgres]); err != nil {
		return err
	}
	if err := d.checkWindowZone("fingerprint."+DialectPostgres, d.Fingerprint[DialectPostgres]); err != nil {
		return err
	}
	return d.validateFingerprint()
}

var pgParamRE = regexp.MustCompile(`\$[0-9]+`)

var relationRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)

// validatePartitionColumn checks the partition column exists, is required,
// and has the type the partition semantics need.
func (d Dataset) validatePartitionColumn() error {
	c, ok := d.Column(d.PartitionColumn)
	if !ok {
		return fmt.Errorf("dataset %s: partition_column %q is not a column", d.Name, d.PartitionColumn)
	}
	want := KindTimestamp
	if d.Partition == PartitionStatDate {
		want = KindDate
	}
	if c.Type.Kind != want || c.Nullable {
		return fmt.Errorf("dataset %s: partition_column %s must be a required %s for partition %s", d.Name, c.Name, want, d.Partition)
	}
	return nil
}

// validateVersions checks a column's Since and NullableSince against the
// dataset version; prevSince is the Since of the column before it.
func (d Dataset) validateVersions(c Column, prevSince int) error {
	if c.Since < 0 || c.SinceVersion() > d.Version {
		return fmt.Errorf("dataset %s: column %s: since %d outside 1..%d (the dataset version)", d.Name, c.Name, c.Since, d.Version)
	}
	if c.SinceVersion() < prevSince {
		// Columns are only ever appended: a later column cannot be older.
		return fmt.Errorf("dataset %s: column %s: since %d is before the since %d of the column before it", d.Name, c.Name, c.SinceVersion(), prevSince)
	}
	if c.SinceVersion() > 1 && !c.Nullable {
		return fmt.Errorf("dataset %s: column %s: a column appended in version %d must be nullable", d.Name, c.Name, c.SinceVersion())
	}
	if c.NullableSince == 0 {
		return nil
	}
	switch {
	case c.NullableSince < 0 || c.NullableSince > d.Version:
		return fmt.Errorf("dataset %s: column %s: nullable_since %d outside 1..%d (the dataset version)", d.Name, c.Name, c.NullableSince, d.Version)
	case !c.Nullable:
		return fmt.Errorf("dataset %s: column %s: nullable_since is set on a required column", d.Name, c.Name)
	case c.SinceVersion() > 1:
		return fmt.Errorf("dataset %s: column %s: nullable_since is set on a column appended in version %d, which was never required", d.Name, c.Name, c.SinceVersion())
	}
	return nil
}

// checkPlaceholders makes sure the query binds exactly (account, start, end)
// and nothing else, so no caller is tempted to build SQL from strings (D5).
// A snapshot's query binds the account alone: it has no window.
func (d Dataset) checkPlaceholders(dialect, q string) error {
	want, bound := []string{"$1", "$2", "$3"}, "$1 account, $2 day start, $3 day end"
	if d.Partition == PartitionSnapshot {
		want, bound = want[:1], "$1 account: a snapshot reads the whole current table, with no day window"
	}
	switch dialect {
	case DialectSQLite:
		if n := strings.Count(q, "?"); n != len(want) {
			return fmt.Errorf("want %d ? placeholders, found %d (bind only %s)", len(want), n, bound)
		}
	case DialectPostgres:
		seen := map[string]bool{}
		for _, m := range pgParamRE.FindAllString(q, -1) {
			if !slices.Contains(want, m) {
				return fmt.Errorf("unexpected placeholder %s (bind only %s)", m, bound)
			}
			seen[m] = true
		}
		for _, p := range want {
			if !seen[p] {
				return fmt.Errorf("missing placeholder %s", p)
			}
		}
	}
	return nil
}

// Column returns the column called name.
func (d Dataset) Column(name string) (Column, bool) {
	for _, c := range d.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// ColumnNames returns the column names in declared order.
func (d Dataset) ColumnNames() []string {
	names := make([]string, len(d.Columns))
	for i, c := range d.Columns {
		names[i] = c.Name
	}
	return names
}

// Query returns the source query for dialect. Its bound parameters are, in
// order: account id, day start, day end (half-open window).
func (d Dataset) Query(dialect string) (string, error) {
	q, ok := d.Queries[dialect]
	if !ok {
		return "", fmt.Errorf("dataset %s: query for dialect %q: %w", d.Name, dialect, ErrUnknownDialect)
	}
	return q, nil
}

// SourceDDL returns the CREATE TABLE statements of the source tables the
// shipped queries read, for dialect ("sqlite" or "postgres").
func SourceDDL(dialect string) (string, error) {
	b, err := ddlFS.ReadFile("schema/" + dialect + ".sql")
	if err != nil || strings.ContainsAny(dialect, "./") {
		return "", fmt.Errorf("source ddl for dialect %q: %w", dialect, ErrUnknownDialect)
	}
	return string(b), nil
}

func (d Dataset) clone() Dataset {
	d.Columns = append([]Column(nil), d.Columns...)
	if d.Queries != nil {
		q := make(map[string]string, len(d.Queries))
		for k, v := range d.Queries {
			q[k] = v
		}
		d.Queries = q
	}
	d.Fingerprint = maps.Clone(d.Fingerprint)
	d.OrderBy = append([]string(nil), d.OrderBy...)
	return d
}
