package encode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// ndjsonWriter writes one JSON object per line, keys in declared order, every
// column present (null included) so loaders see the full schema on every
// line. Values: date "YYYY-MM-DD", timestamp RFC 3339 UTC with six
// fractional digits, decimal as a string (exact; JSON numbers are doubles to
// most readers), json embedded as JSON, double as a JSON number except
// NaN/±Inf, which JSON cannot express and are written as the strings "NaN",
// "Infinity" and "-Infinity" (what Spark and BigQuery read back).
type ndjsonWriter struct {
	ds     dataset.Dataset
	gz     *gzip.Writer
	bw     *bufio.Writer
	keys   [][]byte // `{"name":` / `,"name":` prefixes, precomputed
	line   []byte
	rows   int64
	closed bool
}

func newNDJSON(w io.Writer, ds dataset.Dataset, opts Options) (*ndjsonWriter, error) {
	level := opts.GzipLevel
	if level == 0 {
		level = gzip.DefaultCompression
	}
	gz, err := gzip.NewWriterLevel(w, level)
	if err != nil {
		return nil, fmt.Errorf("encode ndjson dataset %s: gzip level %d: %w", ds.Name, level, err)
	}
	keys := make([][]byte, len(ds.Columns))
	for i, c := range ds.Columns {
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		k := appendJSONString([]byte{sep}, c.Name)
		keys[i] = append(k, ':')
	}
	return &ndjsonWriter{ds: ds, gz: gz, bw: bufio.NewWriterSize(gz, 64<<10), keys: keys}, nil
}

func (w *ndjsonWriter) Write(row []any) error {
	if w.closed {
		return ErrClosed
	}
	rowNum := w.rows + 1
	if len(row) != len(w.ds.Columns) {
		return &dataset.RowError{Dataset: w.ds.Name, Row: rowNum,
			Reason: fmt.Sprintf("got %d columns, want %d", len(row), len(w.ds.Columns))}
	}
	b := w.line[:0]
	for i, c := range w.ds.Columns {
		b = append(b, w.keys[i]...)
		v := row[i]
		if v == nil {
			if !c.Nullable {
				return mismatch(w.ds, rowNum, i, v, "null in required column")
			}
			b = append(b, "null"...)
			continue
		}
		ok := true
		switch c.Type.Kind {
		case dataset.KindDate:
			var d civil.Date
			if d, ok = v.(civil.Date); ok {
				b = append(b, '"')
				b = d.AppendText(b)
				b = append(b, '"')
			}
		case dataset.KindTimestamp:
			var t time.Time
			if t, ok = v.(time.Time); ok {
				b = append(b, '"')
				b = dataset.AppendTimestamp(b, t.Truncate(time.Microsecond))
				b = append(b, '"')
			}
		case dataset.KindInt64:
			var n int64
			if n, ok = v.(int64); ok {
				b = strconv.AppendInt(b, n, 10)
			}
		case dataset.KindDouble:
			var f float64
			if f, ok = v.(float64); ok {
				b = appendFloat(b, f)
			}
		case dataset.KindDecimal:
			var d dataset.Decimal
			if d, ok = v.(dataset.Decimal); ok {
				if d.Scale() != c.Type.Scale || d.Digits() > c.Type.Precision {
					return mismatch(w.ds, rowNum, i, v, fmt.Sprintf("decimal does not fit %s", c.Type))
				}
				b = append(b, '"')
				b = d.AppendText(b)
				b = append(b, '"')
			}
		case dataset.KindBoolean:
			var x bool
			if x, ok = v.(bool); ok {
				b = strconv.AppendBool(b, x)
			}
		case dataset.KindString:
			var s string
			if s, ok = v.(string); ok {
				b = appendJSONString(b, s)
			}
		case dataset.KindJSON:
			var j json.RawMessage
			if j, ok = v.(json.RawMessage); ok {
				if bytes.ContainsAny(j, "\r\n") {
					// A newline inside a pretty-printed value would split
					// the record; compacting keeps one object per line.
					var cb bytes.Buffer
					if err := json.Compact(&cb, j); err != nil {
						return mismatch(w.ds, rowNum, i, v, "invalid json")
					}
					j = cb.Bytes()
				}
				b = append(b, j...)
			}
		default:
			ok = false
		}
		if !ok {
			return mismatch(w.ds, rowNum, i, v, fmt.Sprintf("want %s value, got %T", c.Type, v))
		}
	}
	b = append(b, '}', '\n')
	w.line = b
	if _, err := w.bw.Write(b); err != nil {
		return fmt.Errorf("encode ndjson dataset %s row %d: %w", w.ds.Name, rowNum, err)
	}
	w.rows++
	return nil
}

func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	// Same rule as encoding/json: plain notation unless the exponent is
	// extreme; always the shortest form that round-trips.
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.AppendFloat(b, f, 'e', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD
// and U+2028/U+2029 are escaped so the line stays valid JavaScript too.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func (w *ndjsonWriter) Flush() error {
	if w.closed {
		return ErrClosed
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("encode ndjson dataset %s: flush: %w", w.ds.Name, err)
	}
	if err := w.gz.Flush(); err != nil {
		return fmt.Errorf("encode ndjson dataset %s: flush gzip: %w", w.ds.Name, err)
	}
	return nil
}

func (w *ndjsonWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("encode ndjson dataset %s: close: %w", w.ds.Name, err)
	}
	if err := w.gz.Close(); err != nil {
		return fmt.Errorf("encode ndjson dataset %s: close gzip: %w", w.ds.Name, err)
	}
	return nil
}

func (w *ndjsonWriter) Rows() int64 { return w.rows }
