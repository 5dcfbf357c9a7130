// Package source reads one partition's rows from where the customer data
// lives (D5). Sources stream: rows are handed to a callback a bounded
// batch at a time, so a day of any size never sits in memory (E2).
package source

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// Query names one partition to read.
type Query struct {
	AccountID string
	// TenantKey is the value bound to the dataset's tenant column
	// (account.Account.TenantKey); empty binds AccountID. Paths and
	// provenance use AccountID either way.
	TenantKey string
	Dataset   dataset.Dataset
	Day       civil.Date
	// Start and End are the half-open day window in the account's time zone,
	// computed by the caller (the source knows nothing about zones).
	Start, End time.Time
	// Shard is the account's source shard (account.Account.SourceShard),
	// "" for none: a Router reads a sharded source's shard of that name.
	Shard string
}

// Validate checks the query is well formed before it reaches a database.
func (q Query) Validate() error {
	if q.AccountID == "" {
		return errors.New("source query: empty account id")
	}
	if q.Dataset.Name == "" {
		return errors.New("source query: no dataset")
	}
	if _, err := q.Dataset.TenantValue(q.tenantKey()); err != nil {
		return fmt.Errorf("source query: account %s: tenant_key: %w", q.AccountID, err)
	}
	if !q.Start.Before(q.End) {
		return fmt.Errorf("source query: window start %s not before end %s",
			q.Start.Format(time.RFC3339), q.End.Format(time.RFC3339))
	}
	return nil
}

// Provenance records where a partition's rows came from (F3): the
// answer to "why does this day have fewer rows than I expected?". It is
// written into the customer's bucket, so it names the kind of source and the
// relation read, never SQL text, a DSN, a host or a user.
type Provenance struct {
	Source   string `json:"source"`   // kind of source: "postgres" or "sqlite"
	Relation string `json:"relation"` // the table or view the rows were read from
	// SourceName and SourceShard say which of the deployment's sources
	// (dataset.Dataset.SourceName) and which shard of it the rows came
	// from, by name (set by a Router; the shard only when the source is
	// sharded).
	SourceName  string `json:"source_name,omitempty"`
	SourceShard string `json:"source_shard,omitempty"`
	// WindowStart and WindowEnd are the day's half-open window, in UTC.
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	// SnapshotAt is when the read began: rows that reached the source after
	// it (late data) are not in this generation.
	SnapshotAt time.Time `json:"snapshot_at"`
	FinishedAt time.Time `json:"finished_at"`
	RowCount   int64     `json:"row_count"` // rows read from the source
}

// ErrUnavailable is wrapped by every error of a source that could not be
// read (connection, query, iteration), as opposed to a row that does not fit
// its schema (dataset.ErrRowMismatch). The error's text stays the driver's,
// which may name hosts and users: it is for logs and the ledger only.
var ErrUnavailable = errors.New("source unavailable")

// unavailable marks err as ErrUnavailable without changing its text.
type unavailable struct{ err error }

func (u unavailable) Error() string   { return u.err.Error() }
func (u unavailable) Unwrap() []error { return []error{ErrUnavailable, u.err} }

// BatchRows is the most rows a source puts in one batch (a batch also ends
// at dataset.MaxBatchBytes).
const BatchRows = 4096

// Source yields one partition's rows.
type Source interface {
	// Batches calls fn with consecutive batches of the partition's rows, in
	// order, columns as q.Dataset declares them, values already checked
	// against the dataset value model (see dataset.Batch). The source owns
	// the batch and reuses it for the next one: fn must not keep it or its
	// slices after it returns, except by swapping its rows into a batch of
	// its own (dataset.Batch.Swap); the source then fills the batch fn left. An error from fn stops the read and is
	// returned as is. An empty partition calls fn never.
	Batches(ctx context.Context, q Query, fn func(b *dataset.Batch) error) (Provenance, error)
}

// batcher hands a reused batch to fn whenever it fills, after checking the
// partition column of each of its rows against the day's window.
type batcher struct {
	b      *dataset.Batch
	window *dataset.Window
	fn     func(*dataset.Batch) error
	rows   int64 // rows handed on
	// refused is the partition row number of a row refused by the window
	// check (0 while none was): the rows before it are the rows read.
	refused int64
}

func newBatcher(q Query, fn func(*dataset.Batch) error) (*batcher, error) {
	w, err := q.Dataset.Window(q.Day, q.Start, q.End)
	if err != nil {
		return nil, err
	}
	b := dataset.NewBatch(q.Dataset, BatchRows)
	b.Reset(1)
	return &batcher{b: b, window: w, fn: fn}, nil
}

// room hands the batch on if it is full, so a row can be added.
func (bt *batcher) room() error {
	if !bt.b.Full() {
		return nil
	}
	return bt.flush()
}

// flush hands on the rows gathered so far. It is the one place that sees
// every row of every batch, whatever the source read them with, so the
// checks of whole batches live here, before fn: every row's partition
// column must lie in the day's window (dataset.Window.CheckBatch).
func (bt *batcher) flush() error {
	n := bt.b.Len()
	if n == 0 {
		return nil
	}
	if err := bt.window.CheckBatch(bt.b); err != nil {
		var rowErr *dataset.RowError
		if errors.As(err, &rowErr) {
			bt.refused = rowErr.Row
		}
		return err
	}
	if err := bt.fn(bt.b); err != nil {
		return err
	}
	bt.rows += int64(n)
	bt.b.Reset(bt.rows + 1)
	return nil
}

// read returns how many rows were read from the source: those handed on
// and those gathered since, less a row the window check refused and any
// after it.
func (bt *batcher) read() int64 {
	if bt.refused > 0 {
		return bt.refused - 1
	}
	return bt.rows + int64(bt.b.Len())
}

// SQL is a Source over database/sql. It runs only the dataset's declared
// query with bound parameters; it never builds SQL from values.
type SQL struct {
	db      *sql.DB
	dialect string
	name    string
	now     func() time.Time
	ahead   int // wireRows a PostgreSQL read decodes behind it: 0 from GOMAXPROCS, see decodeDepth and WithDecodeAhead
}

// NewSQL returns a source reading db with the dataset queries of dialect
// ("sqlite" or "postgres"). name identifies the source in errors and logs
// (never in the bucket); any password in a URL-shaped name is redacted.
func NewSQL(db *sql.DB, dialect, name string) (*SQL, error) {
	if db == nil {
		return nil, errors.New("sql source: nil db")
	}
	switch dialect {
	case dataset.DialectSQLite, dataset.DialectPostgres:
	default:
		return nil, fmt.Errorf("sql source: dialect %q: %w", dialect, dataset.ErrUnknownDialect)
	}
	return &SQL{db: db, dialect: dialect, name: redact(name), now: time.Now}, nil
}

// WithClock returns a copy of s that takes the provenance's snapshot and
// finish times from now instead of the wall clock.
func (s *SQL) WithClock(now func() time.Time) *SQL {
	c := *s
	c.now = now
	return &c
}

// WithDecodeAhead returns a copy of s whose PostgreSQL reads decode on a
// goroutine of their own with depth wireRows ahead when depth > 0, on the
// reading goroutine when depth < 0, and as GOMAXPROCS decides when 0 (see
// decodeDepth). It is for benchmarks that compare the two paths; the
// exporter never sets it.
func (s *SQL) WithDecodeAhead(depth int) *SQL {
	c := *s
	c.ahead = depth
	return &c
}

// Name returns the source's name for errors and logs.
func (s *SQL) Name() string { return s.name }

// redact strips credentials from a DSN-like name so they never reach a
// manifest or a log.
func redact(name string) string {
	if u, err := url.Parse(name); err == nil && u.User != nil {
		u.User = url.User(u.User.Username())
		return u.String()
	}
	if scheme, rest, ok := strings.Cut(name, "://"); ok {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			return scheme + "://" + rest[at+1:]
		}
	}
	return name
}

// Params returns the values the dataset's query in dialect binds for q, in
// order: (account, start, end), or (account) alone for a snapshot. Per partition semantics the window is
// instants or days; per dialect it is typed values (postgres) or the
// canonical text the SQLite schema stores, because SQLite compares TEXT and
// the driver's own time format would not order correctly. Anything that runs
// a dataset query outside SQL.Rows (the demo source's row counts) binds these.
func (q Query) Params(dialect string) []any {
	tenant, err := q.Dataset.TenantValue(q.tenantKey())
	if err != nil {
		tenant = q.tenantKey() // refused by Validate; the database refuses it too
	}
	if q.Dataset.IsSnapshot() {
		// A snapshot copies the tenant's current rows: no window.
		return []any{tenant}
	}
	if q.Dataset.Partition == dataset.PartitionStatDate {
		// A stat_date day is a calendar day, not an instant window: zone
		// offsets must not shift it.
		return []any{tenant, q.Day.String(), q.Day.AddDays(1).String()}
	}
	if dialect == dataset.DialectPostgres {
		return []any{tenant, q.Start.UTC(), q.End.UTC()}
	}
	return []any{tenant, dataset.FormatTimestamp(q.Start), dataset.FormatTimestamp(q.End)}
}

// tenantKey is the key bound to the tenant column: TenantKey, else the
// account id.
func (q Query) tenantKey() string {
	if q.TenantKey != "" {
		return q.TenantKey
	}
	return q.AccountID
}

// Batches implements Source. A PostgreSQL source opened with pgx's
// database/sql driver is read with pgx's binary protocol straight into the
// batch (see pgBatches); any other is scanned through database/sql and
// coerced (dataset.Batch.AppendCoerced). Either way every value is checked
// against the value model (D1) and every row's partition column against the
// day's window (batcher.flush), so a row the query should not have returned
// fails the partition instead of landing in it.
func (s *SQL) Batches(ctx context.Context, q Query, fn func(b *dataset.Batch) error) (Provenance, error) {
	ds := q.Dataset
	prov := Provenance{Source: s.dialect, Relation: ds.Relation, WindowStart: q.Start.UTC(), WindowEnd: q.End.UTC()}
	if err := q.Validate(); err != nil {
		return prov, err
	}
	text, err := ds.Query(s.dialect)
	if err != nil {
		return prov, err
	}
	bt, err := newBatcher(q, fn)
	if err != nil {
		return prov, err
	}
	prov.SnapshotAt = s.now().UTC()

	args := q.Params(s.dialect)
	if s.dialect == dataset.DialectPostgres {
		err = s.pgRows(ctx, q, text, args, bt)
	} else {
		err = s.scanRows(ctx, s.db, q, text, args, bt)
	}
	if err == nil {
		err = bt.flush()
	}
	prov.RowCount = bt.read()
	if err != nil {
		return prov, err
	}
	prov.FinishedAt = s.now().UTC()
	return prov, nil
}

// scanRows reads the query through database/sql on db (the pool, or a
// read transaction: inReadTx), a row at a time.
func (s *SQL) scanRows(ctx context.Context, db queryer, q Query, text string, args []any, bt *batcher) error {
	ds := q.Dataset
	for _, c := range ds.Columns {
		if c.SourceTimeZone != "" {
			// Only the PostgreSQL binary path reads wall-clock times in a
			// declared zone; text from another driver would be taken as UTC.
			return &dataset.TypeError{Dataset: ds.Name, Column: c.Name, Declared: c.Type.String() + " in " + c.SourceTimeZone, Found: s.dialect + " through database/sql",
				Reason: "source_time_zone is read only from PostgreSQL through the pgx driver"}
		}
	}
	rows, err := db.QueryContext(ctx, text, args...)
	if err != nil {
		return fmt.Errorf("sql source %s: query dataset %s day %s: %w", s.name, ds.Name, q.Day, unavailable{err})
	}
	defer rows.Close()

	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("sql source %s: dataset %s: columns: %w", s.name, ds.Name, unavailable{err})
	}
	if err := checkColumns(ds, cols); err != nil {
		return err
	}

	row := make([]any, len(cols))
	dest := make([]any, len(cols))
	for i := range row {
		dest[i] = &row[i]
	}
	for rows.Next() {
		if err := bt.room(); err != nil {
			return err
		}
		clear(row)
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("sql source %s: dataset %s: scan row %d: %w", s.name, ds.Name, bt.b.RowNum(bt.b.Len()), unavailable{err})
		}
		if err := bt.b.AppendCoerced(row); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sql source %s: dataset %s: after row %d: %w", s.name, ds.Name, bt.b.RowNum(bt.b.Len())-1, unavailable{err})
	}
	return nil
}

// checkColumns refuses a query whose result columns differ from the declared
// schema, before any row is read: a wrong query must not be "coerced" into
// shape.
func checkColumns(ds dataset.Dataset, cols []string) error {
	if len(cols) != len(ds.Columns) {
		return &dataset.RowError{Dataset: ds.Name, Row: 0,
			Reason: fmt.Sprintf("query returns %d columns (%s), schema declares %d (%s)",
				len(cols), strings.Join(cols, ", "), len(ds.Columns), strings.Join(ds.ColumnNames(), ", "))}
	}
	for i, c := range ds.Columns {
		// Postgres names a cast expression after the cast ("amount::text"
		// is "amount"); compare without any qualifier.
		got := cols[i]
		if j := strings.LastIndex(got, "."); j >= 0 {
			got = got[j+1:]
		}
		if !strings.EqualFold(got, c.Name) {
			return &dataset.RowError{Dataset: ds.Name, Row: 0, Column: c.Name, Value: cols[i],
				Reason: fmt.Sprintf("query column %d is %q, schema declares %q", i+1, cols[i], c.Name)}
		}
	}
	return nil
}
