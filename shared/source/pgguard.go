package source

// The source is shared by every tenant: what one partition's read may cost
// it is bounded here.
//
//   - Time. A read runs in a read-only transaction whose statement_timeout
//     and idle_in_transaction_session_timeout are the time left until the
//     read's deadline (the exporter's run context: the Lambda's deadline
//     less its reserve). A client that is killed, frozen or cut off cannot
//     cancel its query; the server then ends it itself at the deadline
//     instead of running it to the end. A query the server ends so is
//     ErrStatementTimeout, which is also context.DeadlineExceeded (the run
//     ran out of time). Without a deadline (the CLI) no timeout is set.
//   - Memory. pgx reads a whole protocol message before anything looks at
//     its values, so one huge value (a 500 MB jsonb) would be read into
//     memory before dataset.CheckJSONSize refuses it. The PostgreSQL binary
//     read caps the message size (pgproto3's Frontend.SetMaxBodyLen) at the
//     largest row the dataset accepts, every column at its largest accepted
//     value (messageCap): a larger message is refused from its 5-byte header,
//     before its body is read, and the partition fails naming the row and,
//     from a second query of that row's value sizes, the column.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// ErrStatementTimeout: the server cancelled a query at the read's deadline
// (statement_timeout). Errors wrapping it wrap context.DeadlineExceeded and
// ErrUnavailable too.
var ErrStatementTimeout = errors.New("source: the query ran until the run's deadline and the database cancelled it (statement_timeout)")

type statementTimedOut struct{ err error }

func (e statementTimedOut) Error() string { return ErrStatementTimeout.Error() + ": " + e.err.Error() }
func (e statementTimedOut) Unwrap() []error {
	return []error{ErrStatementTimeout, context.DeadlineExceeded, ErrUnavailable, e.err}
}

// serverTimeout marks err as ErrStatementTimeout when it is PostgreSQL's
// cancel of a statement by statement_timeout (SQLSTATE 57014, "canceling
// statement due to statement timeout"; a cancel asked for by the client has
// the same code and another message).
func serverTimeout(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "57014" && strings.Contains(pe.Message, "statement timeout") {
		return statementTimedOut{err}
	}
	return err
}

// timeLeft is the time until ctx's deadline in whole milliseconds, rounded
// up (PostgreSQL's timeouts are in milliseconds, and 0 turns them off), and
// whether ctx has one. A deadline already passed is ctx's error.
func timeLeft(ctx context.Context) (int64, bool, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false, nil
	}
	left := time.Until(dl)
	if left <= 0 {
		return 0, true, fmt.Errorf("source: the run's deadline passed before the query: %w", context.DeadlineExceeded)
	}
	return int64((left + time.Millisecond - 1) / time.Millisecond), true, nil
}

// queryer is what a dataset query runs on: the pool, or one of its read
// transactions.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ queryer = (*sql.DB)(nil)
	_ queryer = (*sql.Tx)(nil)
)

// inReadTx runs fn's queries through database/sql with the read's bounds:
// on PostgreSQL in a read-only transaction whose statement_timeout and
// idle_in_transaction_session_timeout are the time left until ctx's
// deadline (set_config(…, true): for the transaction only); on SQLite,
// which runs in the process, on the pool, bounded by ctx alone.
func (s *SQL) inReadTx(ctx context.Context, fn func(q queryer) error) error {
	if s.dialect != dataset.DialectPostgres {
		return fn(s.db)
	}
	ms, deadline, err := timeLeft(ctx)
	if err != nil {
		return err
	}
	// READ ONLY by statement, not by sql.TxOptions: a driver that has no
	// BeginTx of its own is refused read-only options by database/sql.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sql source %s: begin: %w", s.name, unavailable{err})
	}
	if _, err := tx.ExecContext(ctx, `SET TRANSACTION READ ONLY`); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("sql source %s: begin: %w", s.name, unavailable{err})
	}
	if deadline {
		limit := fmt.Sprint(ms)
		if _, err := tx.ExecContext(ctx, `SELECT set_config('statement_timeout', $1, true), set_config('idle_in_transaction_session_timeout', $1, true)`, limit); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("sql source %s: set statement_timeout: %w", s.name, unavailable{err})
		}
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return serverTimeout(err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sql source %s: commit: %w", s.name, unavailable{err})
	}
	return nil
}

// pgBegin opens the binary read's transaction on pc with the read's bounds
// (see the file comment): read only, statement_timeout and
// idle_in_transaction_session_timeout the time left until ctx's deadline,
// and messages of at most messageCap(ds) bytes. The caller commits it
// (pgCommit) or closes the connection.
func (s *SQL) pgBegin(ctx context.Context, pc *pgconn.PgConn, ds dataset.Dataset, maxMessage int) error {
	ms, deadline, err := timeLeft(ctx)
	if err != nil {
		return err
	}
	pc.Frontend().SetMaxBodyLen(maxMessage)
	q := "BEGIN READ ONLY"
	if deadline {
		q += fmt.Sprintf("; SET LOCAL statement_timeout = %d; SET LOCAL idle_in_transaction_session_timeout = %d", ms, ms)
	}
	if _, err := pc.Exec(ctx, q).ReadAll(); err != nil {
		return fmt.Errorf("sql source %s: dataset %s: begin: %w", s.name, ds.Name, unavailable{err})
	}
	return nil
}

// pgCommit ends the binary read's transaction.
func (s *SQL) pgCommit(ctx context.Context, pc *pgconn.PgConn, ds dataset.Dataset) error {
	if _, err := pc.Exec(ctx, "COMMIT").ReadAll(); err != nil {
		return fmt.Errorf("sql source %s: dataset %s: commit: %w", s.name, ds.Name, unavailable{err})
	}
	return nil
}

// Message sizes: a DataRow is a 2-byte column count, then per column a
// 4-byte length and the value. A message above the cap is refused (see
// the file comment); the cap is never below minMessageCap, which holds any
// other message the server sends a read (a RowDescription of 1,600
// columns, an error), and has rowSlack to spare.
const (
	minMessageCap = 1 << 20
	rowSlack      = 64 << 10
	// fixedValueBytes bounds a value of a kind of fixed or small size on
	// the wire (numbers, dates, instants, booleans, decimals of 38 digits,
	// a uuid or inet as text).
	fixedValueBytes = 256
)

// maxValueBytes is the most bytes a value of c may take on the wire and
// still be accepted (the checks of shared/dataset): a JSON value
// dataset.MaxJSONBytes (and jsonb's version byte), a string
// dataset.MaxStringBytes, a binary dataset.MaxBinaryBytes; a list is held to
// what a JSON value may be.
func maxValueBytes(c dataset.Column) int {
	switch c.Type.Kind {
	case dataset.KindJSON, dataset.KindList:
		return dataset.MaxJSONBytes + 1
	case dataset.KindString:
		return dataset.MaxStringBytes
	case dataset.KindBinary:
		return dataset.MaxBinaryBytes
	}
	return fixedValueBytes
}

// messageCap is the largest protocol message a read of ds accepts: a row
// with every column at its largest accepted value (maxValueBytes), and
// rowSlack, at least minMessageCap.
func messageCap(ds dataset.Dataset) int {
	n := 2 + rowSlack
	for _, c := range ds.Columns {
		n += 4 + maxValueBytes(c)
	}
	return max(n, minMessageCap)
}

// tooLarge turns a message refused by its size (pgproto3's
// ExceededMaxBodyLenErr, row the number of the row it carried) into the
// dataset.RowError of that row, naming the column whose value passed what
// it accepts: the row's value sizes are asked of the source (valueSizes);
// when that fails, the columns that could hold it are named instead.
func (s *SQL) tooLarge(ctx context.Context, err error, q Query, text string, args []any, row int64) error {
	var big *pgproto3.ExceededMaxBodyLenErr
	if !errors.As(err, &big) {
		return err
	}
	ds := q.Dataset
	rowErr := &dataset.RowError{Dataset: ds.Name, Row: row,
		Reason: fmt.Sprintf("the row is %d bytes on the wire, more than the %d bytes a row of this dataset may take (each column at the largest value it accepts); it was refused before it was read", big.ActualBodyLen, big.MaxExpectedBodyLen)}
	sizes, serr := s.valueSizes(ctx, q, text, args, row)
	if serr != nil {
		var cols []string
		for _, c := range ds.Columns {
			if maxValueBytes(c) > fixedValueBytes {
				cols = append(cols, c.Name)
			}
		}
		rowErr.Column = strings.Join(cols, " or ")
		rowErr.Reason += fmt.Sprintf(" (which column could not be asked: %v)", serr)
		return rowErr
	}
	worst := -1
	for i, c := range ds.Columns {
		if worst < 0 || sizes[i]-int64(maxValueBytes(c)) > sizes[worst]-int64(maxValueBytes(ds.Columns[worst])) {
			worst = i
		}
	}
	c := ds.Columns[worst]
	rowErr.Column = c.Name
	rowErr.Reason = fmt.Sprintf("a %s value of %d bytes (as text), more than the %d bytes daybook accepts; ", c.Type, sizes[worst], maxValueBytes(c)) + rowErr.Reason
	return rowErr
}

// valueSizes asks the source for the size of each value of row (1-based)
// of q's result: the query again, the row alone, each value's length as
// text. It runs under the read's bounds (inReadTx).
func (s *SQL) valueSizes(ctx context.Context, q Query, text string, args []any, row int64) ([]int64, error) {
	ds := q.Dataset
	lens := make([]string, len(ds.Columns))
	for i, c := range ds.Columns {
		lens[i] = fmt.Sprintf("coalesce(octet_length(daybook_row.%s::text), 0)", pgx.Identifier{c.Name}.Sanitize())
	}
	query := fmt.Sprintf("SELECT %s FROM (%s) AS daybook_row OFFSET $%d LIMIT 1", strings.Join(lens, ", "), text, len(args)+1)
	sizes := make([]int64, len(ds.Columns))
	dest := make([]any, len(sizes))
	for i := range sizes {
		dest[i] = &sizes[i]
	}
	err := s.inReadTx(ctx, func(tx queryer) error {
		return tx.QueryRowContext(ctx, query, append(args, row-1)...).Scan(dest...)
	})
	return sizes, err
}
