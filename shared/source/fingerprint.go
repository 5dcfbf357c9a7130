package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Fingerprinter summarises one partition of the source cheaply: the
// dataset's fingerprint query (dataset.Dataset.FingerprintQuery), bound like
// its export query, reduced to a hash. Two calls give the same hash exactly
// when the query's row is the same, so a changed hash means the day's rows
// changed since the first call. A Source that can is a Fingerprinter too.
type Fingerprinter interface {
	// Fingerprint returns the partition's fingerprint row, summarised. A
	// dataset with no fingerprint query is an error wrapping
	// dataset.ErrNoFingerprint.
	Fingerprint(ctx context.Context, q Query) (Summary, error)
}

// Summary is a partition's fingerprint row, summarised.
type Summary struct {
	// Hash is the hex SHA-256 of the row (FingerprintOf).
	Hash string
	// Rows is the row's first column when it is an integer: the catalog's
	// fingerprint queries begin with count(*), so it is the partition's
	// row count, which sizes a sliced export (E7) at no extra query. -1
	// when the first column is not an integer.
	Rows int64
}

var _ Fingerprinter = (*SQL)(nil)

// Fingerprint implements Fingerprinter: it runs the dataset's fingerprint
// query for the source's dialect with the bound parameters of q (Params),
// wants exactly one row, and hashes a canonical text of its values.
func (s *SQL) Fingerprint(ctx context.Context, q Query) (Summary, error) {
	if err := q.Validate(); err != nil {
		return Summary{}, err
	}
	text, err := q.Dataset.FingerprintQuery(s.dialect)
	if err != nil {
		return Summary{}, err
	}
	what := fmt.Sprintf("sql source %s: fingerprint of dataset %s day %s", s.name, q.Dataset.Name, q.Day)
	var sum Summary
	err = s.inReadTx(ctx, func(db queryer) error {
		var err error
		sum, err = fingerprintRow(ctx, db, text, q.Params(s.dialect), what)
		return err
	})
	return sum, err
}

// fingerprintRow runs the fingerprint query text on db and summarises its
// one row.
func fingerprintRow(ctx context.Context, db queryer, text string, args []any, what string) (Summary, error) {
	rows, err := db.QueryContext(ctx, text, args...)
	if err != nil {
		return Summary{}, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return Summary{}, fmt.Errorf("%s: columns: %w", what, err)
	}
	vals := make([]any, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return Summary{}, fmt.Errorf("%s: %w", what, err)
		}
		return Summary{}, fmt.Errorf("%s: the query returned no row; it must return exactly one", what)
	}
	if err := rows.Scan(dest...); err != nil {
		return Summary{}, fmt.Errorf("%s: scan: %w", what, err)
	}
	if rows.Next() {
		return Summary{}, fmt.Errorf("%s: the query returned more than one row; it must return exactly one", what)
	}
	if err := rows.Err(); err != nil {
		return Summary{}, fmt.Errorf("%s: %w", what, err)
	}
	count := int64(-1)
	if len(vals) > 0 {
		if n, ok := vals[0].(int64); ok {
			count = n
		}
	}
	return Summary{Hash: FingerprintOf(vals), Rows: count}, nil
}

// FingerprintOf hashes one fingerprint row: the hex SHA-256 of a canonical
// text of its values (the column count, then each value with its kind),
// independent of the driver's representation of equal values (an instant
// in any zone, text as string or bytes).
func FingerprintOf(vals []any) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(vals)))
	for _, v := range vals {
		b.WriteByte(0x1f)
		switch x := v.(type) {
		case nil:
			b.WriteString("n")
		case int64:
			b.WriteString("i" + strconv.FormatInt(x, 10))
		case float64:
			b.WriteString("f" + strconv.FormatFloat(x, 'g', -1, 64))
		case bool:
			b.WriteString("b" + strconv.FormatBool(x))
		case time.Time:
			b.WriteString("t" + x.UTC().Format(time.RFC3339Nano))
		case []byte:
			b.WriteString("s" + string(x))
		case string:
			b.WriteString("s" + x)
		default:
			b.WriteString(fmt.Sprintf("%T:%v", x, x))
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}
