package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/daybook-dev/daybook/shared/civil"
)

// ErrRowMismatch is wrapped by every error about a row that does not fit the
// declared schema (D1).
var ErrRowMismatch = errors.New("row does not match schema")

// RowError describes a row that does not fit the schema. It unwraps to
// ErrRowMismatch.
type RowError struct {
	Dataset string
	Row     int64  // 1-based row number within the partition; 0 before any row
	Column  string // empty for a wrong column count
	Value   any    // the offending value, as received
	Reason  string
}

func (e *RowError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dataset %s: ", e.Dataset)
	if e.Row > 0 { // 0 means the problem is in the query, before any row
		fmt.Fprintf(&b, "row %d: ", e.Row)
	}
	if e.Column == "" {
		fmt.Fprintf(&b, "%s: %v", e.Reason, ErrRowMismatch)
		return b.String()
	}
	fmt.Fprintf(&b, "column %s: %s (value %s): %v", e.Column, e.Reason, describe(e.Value), ErrRowMismatch)
	return b.String()
}

func (e *RowError) Unwrap() error { return ErrRowMismatch }

// describe renders a value for an error message, bounded so one huge cell
// cannot flood the logs or the ledger.
func describe(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		s = strconv.Quote(truncate(x))
	case []byte:
		s = strconv.Quote(truncate(string(x)))
	case json.RawMessage:
		s = strconv.Quote(truncate(string(x)))
	default:
		s = truncate(fmt.Sprintf("%v", x))
	}
	return fmt.Sprintf("%s of type %T", s, v)
}

func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Coerce converts the loosely typed values a database driver returns into the
// value model, in place, and checks nullability. rowNum (1-based) only feeds
// error messages. The value model, per column type:
//
//	date      civil.Date
//	timestamp time.Time in UTC, truncated to microseconds
//	int64     int64
//	double    float64, finite (NaN and ±Inf are refused: see CheckDouble)
//	decimal   Decimal at the column's scale, within its precision
//	boolean   bool
//	string    string (valid UTF-8)
//	json      json.RawMessage holding one valid JSON value, valid UTF-8
//	binary    []byte (empty is not NULL)
//	list<T>   []any of T's model values, nil for a NULL element (empty is not NULL)
//	NULL      nil
//
// Accepted inputs: the model types themselves; []byte alone for binary;
// string and []byte for every other type (text forms: YYYY-MM-DD, RFC 3339 or "YYYY-MM-DD HH:MM:SS[.f][zone]",
// decimal literals, true/false/1/0, any JSON); integers for int64, double,
// decimal, boolean (0/1) and timestamps (unix time, unit by magnitude, see
// ParseUnix); float64 for double, for integral int64 and for decimal;
// time.Time for timestamps and dates. []byte values are copied, so drivers
// may reuse their buffers.
func (d Dataset) Coerce(row []any, rowNum int64) error {
	if len(row) != len(d.Columns) {
		return &RowError{Dataset: d.Name, Row: rowNum,
			Reason: fmt.Sprintf("got %d columns, want %d (%s)", len(row), len(d.Columns), strings.Join(d.ColumnNames(), ", "))}
	}
	for i, c := range d.Columns {
		v := row[i]
		if v == nil {
			if !c.Nullable {
				return &RowError{Dataset: d.Name, Row: rowNum, Column: c.Name, Value: nil, Reason: "null in required column"}
			}
			continue
		}
		out, reason := coerceValue(c.Type, v)
		if reason != "" {
			return &RowError{Dataset: d.Name, Row: rowNum, Column: c.Name, Value: v, Reason: reason}
		}
		row[i] = out
	}
	return nil
}

// AppendCoerced coerces a row of loosely typed driver values as Coerce does
// and appends it to b, so row-at-a-time sources (database/sql) fill the
// same batches as typed ones. row is left as received. Errors name the
// partition row (b.RowNum) and the column; on error b is unchanged.
func (b *Batch) AppendCoerced(row []any) error {
	d := b.Dataset
	rowNum := b.RowNum(b.n)
	if len(row) != len(d.Columns) {
		return &RowError{Dataset: d.Name, Row: rowNum,
			Reason: fmt.Sprintf("got %d columns, want %d (%s)", len(row), len(d.Columns), strings.Join(d.ColumnNames(), ", "))}
	}
	for i, c := range d.Columns {
		v := row[i]
		if v == nil {
			if !c.Nullable {
				b.truncate(i)
				return &RowError{Dataset: d.Name, Row: rowNum, Column: c.Name, Value: nil, Reason: "null in required column"}
			}
			b.Cols[i].AppendNull()
			continue
		}
		if reason := b.Cols[i].AppendCoerced(v); reason != "" {
			b.truncate(i)
			return &RowError{Dataset: d.Name, Row: rowNum, Column: c.Name, Value: v, Reason: reason}
		}
	}
	b.n++
	return nil
}

// AppendCoerced coerces one non-NULL loosely typed value as Coerce does and
// appends it to v; it returns the reason the value is refused, or "" (then
// nothing was appended).
func (v *Vector) AppendCoerced(x any) string {
	out, reason := coerceValue(v.Column.Type, x)
	if reason != "" {
		return reason
	}
	return v.appendModel(out)
}

// The most bytes one value of a variable-length type may hold; a longer
// one is a bad row, refused naming its column and row. Strings are names,
// ids and labels: MaxStringBytes is Redshift's widest VARCHAR (65,535
// bytes), the narrowest string type of the warehouses the load scripts
// target, so every delivered string loads everywhere. JSON carries the
// payloads: MaxJSONBytes is Snowflake's VARIANT and default VARCHAR limit
// (16 MiB) and Redshift's SUPER object limit (16 MB); BigQuery's row limit
// is larger (100 MB). A cap per value also caps what one row costs the
// encoder: a Parquet writer keeps a page's values, and a column's
// statistics hold its minimum and maximum whole.
const (
	MaxStringBytes = 65535
	MaxJSONBytes   = 16 << 20
)

// CheckString is the check of a string column's value, whatever the source:
// the reason it is refused, or "". A string holds at most MaxStringBytes
// of valid UTF-8 and no NUL (U+0000): PostgreSQL text cannot hold one,
// Redshift's COPY refuses one, and C readers end the string there, so a
// NUL from a source that allows it (SQLite) is a bad row, not a value some
// loaders cut or refuse.
func CheckString(p []byte) string {
	if len(p) > MaxStringBytes {
		return fmt.Sprintf("string of %d bytes is longer than the %d bytes a string may hold", len(p), MaxStringBytes)
	}
	if !utf8.Valid(p) {
		return "string is not valid UTF-8"
	}
	if bytes.IndexByte(p, 0) >= 0 {
		return "string contains a NUL character (U+0000)"
	}
	return ""
}

// CheckJSONSize is the size check of a json column's value: the reason it
// is refused, or "". CheckJSONText includes it; a value of a JSON type the
// database validated gets only this one.
func CheckJSONSize(p []byte) string {
	if len(p) > MaxJSONBytes {
		return fmt.Sprintf("json of %d bytes is longer than the %d bytes a json value may hold", len(p), MaxJSONBytes)
	}
	return ""
}

// CheckJSONText is the check of a json column's value that arrives as text
// (a source whose type does not guarantee JSON): the reason it is refused,
// or "". It is CheckJSONSize, then one pass over p (ValidJSON): exactly one
// JSON value, and valid UTF-8 throughout, strings included (json.Valid
// accepts invalid UTF-8 inside strings). A raw NUL byte is not valid JSON;
// the escape \u0000 inside a JSON string is, and is kept as written. A
// value of a JSON type the database validated is not checked again:
// PostgreSQL json and jsonb are valid JSON by construction, and valid
// UTF-8 because the source requires a UTF8 database encoding (see
// source.SQL).
func CheckJSONText(p []byte) string {
	if reason := CheckJSONSize(p); reason != "" {
		return reason
	}
	if !ValidJSON(p) {
		return "invalid json (or not valid UTF-8)"
	}
	return ""
}

// CheckDecimal is the check of a decimal's unscaled value against the
// column's precision: the reason it is refused, or "".
func CheckDecimal(t Type, d Decimal) string {
	if d.Digits() > t.Precision {
		return fmt.Sprintf("decimal exceeds precision %d", t.Precision)
	}
	return ""
}

// CheckRow verifies that row already holds exactly the value model types
// (what an encoder accepts), without converting anything.
func (d Dataset) CheckRow(row []any, rowNum int64) error {
	if len(row) != len(d.Columns) {
		return &RowError{Dataset: d.Name, Row: rowNum,
			Reason: fmt.Sprintf("got %d columns, want %d", len(row), len(d.Columns))}
	}
	for i, c := range d.Columns {
		if reason := checkModel(c, row[i]); reason != "" {
			return &RowError{Dataset: d.Name, Row: rowNum, Column: c.Name, Value: row[i], Reason: reason}
		}
	}
	return nil
}

func checkModel(c Column, v any) string {
	if v == nil {
		if c.Nullable {
			return ""
		}
		return "null in required column"
	}
	ok := false
	switch c.Type.Kind {
	case KindDate:
		_, ok = v.(civil.Date)
	case KindTimestamp:
		_, ok = v.(time.Time)
	case KindInt64:
		_, ok = v.(int64)
	case KindDouble:
		var f float64
		if f, ok = v.(float64); ok {
			if reason := CheckDouble(f); reason != "" {
				return reason
			}
		}
	case KindDecimal:
		var x Decimal
		if x, ok = v.(Decimal); ok && (x.Scale() != c.Type.Scale || x.Digits() > c.Type.Precision) {
			return fmt.Sprintf("decimal does not fit %s", c.Type)
		}
	case KindBoolean:
		_, ok = v.(bool)
	case KindString:
		_, ok = v.(string)
	case KindJSON:
		_, ok = v.(json.RawMessage)
	case KindList:
		return checkListModel(c, v)
	case KindBinary:
		var p []byte
		if p, ok = v.([]byte); ok {
			if reason := CheckBinary(p); reason != "" {
				return reason
			}
		}
	}
	if !ok {
		return fmt.Sprintf("want %s value", c.Type)
	}
	return ""
}

// CheckDouble is the check of a double column's value, whatever the source
// (database/sql coercion, PostgreSQL's binary float4/float8, a row built in
// memory): the reason it is refused, or "". It is the one policy for NaN and
// ±Infinity, the same whatever the file format: the row is refused as bad,
// naming column, row and value. NDJSON has no number for them (a string in a DOUBLE column
// breaks loaders), writing null would hide a bug in the source behind a
// plausible-looking gap (and is impossible in a required column), and
// Parquet alone carrying them would make the formats disagree. An overflowing
// text value ("1e999") is the same infinity and is refused the same way.
func CheckDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN is not a number a file can carry (double columns refuse NaN and infinities)"
	case math.IsInf(f, 0):
		return "infinity is not a number a file can carry (double columns refuse NaN and infinities)"
	}
	return ""
}

func coerceValue(t Type, v any) (any, string) {
	if b, ok := v.([]byte); ok && t.Kind != KindJSON && t.Kind != KindBinary {
		v = string(b) // copies: drivers may reuse the buffer
	}
	switch t.Kind {
	case KindString:
		s, ok := v.(string)
		if !ok {
			return nil, "wrong type, want string"
		}
		if reason := CheckString(unsafeBytes(s)); reason != "" {
			return nil, reason
		}
		return s, ""
	case KindInt64:
		switch x := v.(type) {
		case int64:
			return x, ""
		case int:
			return int64(x), ""
		case int32:
			return int64(x), ""
		case float64:
			if x != math.Trunc(x) || x < -(1<<63) || x >= 1<<63 {
				return nil, "not an integer"
			}
			return int64(x), ""
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return nil, "unparsable int64"
			}
			return n, ""
		}
		return nil, "wrong type, want int64"
	case KindDouble:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		case int64:
			f = float64(x)
		case int:
			f = float64(x)
		case string:
			var err error
			if f, err = strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil && !errors.Is(err, strconv.ErrRange) {
				return nil, "unparsable double"
			}
		default:
			return nil, "wrong type, want double"
		}
		if reason := CheckDouble(f); reason != "" {
			return nil, reason
		}
		return f, ""
	case KindBoolean:
		switch x := v.(type) {
		case bool:
			return x, ""
		case int64:
			if x == 0 || x == 1 {
				return x == 1, ""
			}
			return nil, "boolean must be 0 or 1"
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "1", "true", "t":
				return true, ""
			case "0", "false", "f":
				return false, ""
			}
			return nil, "unparsable boolean"
		}
		return nil, "wrong type, want boolean"
	case KindDecimal:
		var dec Decimal
		switch x := v.(type) {
		case Decimal:
			dec = x
			if dec.Scale() != t.Scale {
				var err error
				if dec, err = ParseDecimal(x.String(), t.Scale); err != nil {
					return nil, "decimal has more fractional digits than the column scale"
				}
			}
		case int64:
			dec = NewDecimalBig(new(big.Int).Mul(big.NewInt(x), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)), t.Scale)
		case float64:
			// The shortest repr that round-trips is what the source meant;
			// refuse it if it needs more digits than the scale.
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, "decimal cannot be NaN or infinite"
			}
			var err error
			if dec, err = ParseDecimal(strconv.FormatFloat(x, 'f', -1, 64), t.Scale); err != nil {
				return nil, "decimal has more fractional digits than the column scale"
			}
		case string:
			var err error
			if dec, err = ParseDecimal(strings.TrimSpace(x), t.Scale); err != nil {
				return nil, "unparsable decimal at scale " + strconv.Itoa(t.Scale)
			}
		default:
			return nil, "wrong type, want decimal"
		}
		if reason := CheckDecimal(t, dec); reason != "" {
			return nil, reason
		}
		return dec, ""
	case KindTimestamp:
		switch x := v.(type) {
		case time.Time:
			return x.UTC().Truncate(time.Microsecond), ""
		case int64:
			return ParseUnix(x), ""
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, "timestamp cannot be NaN or infinite"
			}
			sec, frac := math.Modf(x)
			return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC(), ""
		case string:
			ts, err := ParseTimestamp(x)
			if err != nil {
				return nil, "unparsable timestamp"
			}
			return ts, ""
		}
		return nil, "wrong type, want timestamp"
	case KindDate:
		switch x := v.(type) {
		case civil.Date:
			return x, ""
		case time.Time:
			return civil.Of(x), ""
		case string:
			s := strings.TrimSpace(x)
			if len(s) > len(time.DateOnly) {
				// Drivers render DATE columns as midnight timestamps; accept
				// that, but never a time of day (it would hide a zone bug).
				ts, err := ParseTimestamp(s)
				if err != nil || ts != ts.Truncate(24*time.Hour) {
					return nil, "unparsable date"
				}
				return civil.Of(ts), ""
			}
			day, err := civil.Parse(s)
			if err != nil {
				return nil, "unparsable date"
			}
			return day, ""
		}
		return nil, "wrong type, want date"
	case KindJSON:
		var raw []byte
		switch x := v.(type) {
		case json.RawMessage:
			raw = x
		case []byte:
			raw = x
		case string:
			raw = []byte(x)
		default:
			return nil, "wrong type, want json text"
		}
		if reason := CheckJSONText(raw); reason != "" {
			return nil, reason
		}
		return json.RawMessage(append([]byte(nil), raw...)), ""
	case KindList:
		return coerceList(t, v)
	case KindBinary:
		p, ok := v.([]byte)
		if !ok {
			return nil, "wrong type, want binary bytes"
		}
		if reason := CheckBinary(p); reason != "" {
			return nil, reason
		}
		return append([]byte{}, p...), "" // drivers may reuse the buffer
	}
	return nil, "unsupported column type " + t.String()
}

// unsafeBytes views s as bytes for a read-only check.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// timestampLayouts are the text forms sources commonly produce: RFC 3339
// and the SQL/SQLite "YYYY-MM-DD HH:MM:SS" form, with or without a zone.
// A missing zone means UTC.
var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999-07",
	"2006-01-02 15:04:05.999999999 -0700 MST",
	"2006-01-02 15:04:05.999999999",
	time.DateOnly,
}

// ParseTimestamp parses a textual instant into UTC, truncated to
// microseconds (the precision of the exported files).
func ParseTimestamp(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Truncate(time.Microsecond), nil
		}
	}
	return time.Time{}, fmt.Errorf("parse timestamp %q: unknown format", truncate(s))
}

// ParseUnix interprets an integer unix time. The unit is inferred from the
// magnitude, as the source has no way to say it: below 1e11 seconds (up to
// year 5138), below 1e14 milliseconds, below 1e17 microseconds, else
// nanoseconds. Only instants before 1973 in a finer unit are misread.
func ParseUnix(n int64) time.Time {
	a := n
	if a < 0 {
		a = -a
	}
	switch {
	case a < 1e11:
		return time.Unix(n, 0).UTC()
	case a < 1e14:
		return time.UnixMilli(n).UTC()
	case a < 1e17:
		return time.UnixMicro(n).UTC()
	default:
		return time.Unix(0, n).UTC().Truncate(time.Microsecond)
	}
}

// FormatTimestamp renders an instant the way every file and the SQLite
// source store it: RFC 3339 UTC with exactly six fractional digits, so text
// comparison orders instants correctly.
func FormatTimestamp(t time.Time) string {
	return string(AppendTimestamp(nil, t))
}

// AppendTimestamp appends FormatTimestamp(t) to b.
func AppendTimestamp(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
}
