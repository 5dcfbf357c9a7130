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
// most readers), json embedded as JSON, double as a JSON number. NaN and
// ±Inf are not in the value model: sources refuse them as bad rows and so
// does Write (dataset.CheckDouble); a batch built by hand that holds one
// gets the strings "NaN", "Infinity" and "-Infinity" (what Spark and
// BigQuery read back), as JSON cannot express them.
type ndjsonWriter struct {
	ds     dataset.Dataset
	gz     *gzip.Writer
	bw     *bufio.Writer
	keys   [][]byte // `{"name":` / `,"name":` prefixes, precomputed
	line   []byte
	rowBuf rowBuffer
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
		k := appendJSONString([]byte{sep}, []byte(c.Name))
		keys[i] = append(k, ':')
	}
	return &ndjsonWriter{ds: ds, gz: gz, bw: bufio.NewWriterSize(gz, 64<<10), keys: keys, rowBuf: rowBuffer{ds: ds}}, nil
}

// Write buffers one row into the writer's own batch (see WriteBatch).
func (w *ndjsonWriter) Write(row []any) error {
	if w.closed {
		return ErrClosed
	}
	full, err := w.rowBuf.add(row, w.rows)
	if err != nil || !full {
		return err
	}
	return w.rowBuf.flush(w.writeBatch)
}

// WriteBatch writes every row of b as one line.
func (w *ndjsonWriter) WriteBatch(b *dataset.Batch) error {
	if w.closed {
		return ErrClosed
	}
	if err := w.rowBuf.flush(w.writeBatch); err != nil {
		return err
	}
	return w.writeBatch(b)
}

func (w *ndjsonWriter) writeBatch(b *dataset.Batch) error {
	if err := checkBatch(w.ds, b); err != nil {
		return err
	}
	for r := range b.Len() {
		line, err := w.appendRow(w.line[:0], b, r)
		if err != nil {
			return err
		}
		w.line = line
		if _, err := w.bw.Write(line); err != nil {
			return fmt.Errorf("encode ndjson dataset %s row %d: %w", w.ds.Name, b.RowNum(r), err)
		}
		w.rows++
	}
	return nil
}

// appendRow appends row r of b as a JSON object and a newline.
func (w *ndjsonWriter) appendRow(line []byte, b *dataset.Batch, r int) ([]byte, error) {
	for i := range b.Cols {
		line = append(line, w.keys[i]...)
		v := &b.Cols[i]
		if v.IsNull(r) {
			line = append(line, "null"...)
			continue
		}
		var err error
		if line, err = w.appendValue(line, b, v, r); err != nil {
			return line, err
		}
	}
	return append(line, '}', '\n'), nil
}

// appendValue appends row r of v, not NULL, as a JSON value.
func (w *ndjsonWriter) appendValue(line []byte, b *dataset.Batch, v *dataset.Vector, r int) ([]byte, error) {
	switch v.Column.Type.Kind {
	case dataset.KindDate:
		line = append(line, '"')
		line = civil.FromEpochDays(v.Int32[r]).AppendText(line)
		line = append(line, '"')
	case dataset.KindTimestamp:
		line = append(line, '"')
		line = dataset.AppendTimestamp(line, time.UnixMicro(v.Int64[r]))
		line = append(line, '"')
	case dataset.KindInt64:
		line = strconv.AppendInt(line, v.Int64[r], 10)
	case dataset.KindDouble:
		line = appendFloat(line, v.Double[r])
	case dataset.KindDecimal:
		line = append(line, '"')
		line = v.Decimal(r).AppendText(line)
		line = append(line, '"')
	case dataset.KindBoolean:
		line = strconv.AppendBool(line, v.Bool[r])
	case dataset.KindString:
		line = appendJSONString(line, v.BytesAt(r))
	case dataset.KindBinary:
		line = appendBase64(line, v.BytesAt(r))
	case dataset.KindJSON:
		j := v.BytesAt(r)
		if bytes.ContainsAny(j, "\r\n") {
			// A newline inside a pretty-printed value would split
			// the record; compacting keeps one object per line.
			var cb bytes.Buffer
			if err := json.Compact(&cb, j); err != nil {
				return line, &dataset.RowError{Dataset: w.ds.Name, Row: b.RowNum(r), Column: v.Column.Name,
					Value: json.RawMessage(j), Reason: "invalid json"}
			}
			j = cb.Bytes()
		}
		line = append(line, j...)
	case dataset.KindList:
		return w.appendList(line, b, v, r)
	}
	return line, nil
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
func appendJSONString(b []byte, s []byte) []byte {
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
		r, size := utf8.DecodeRune(s[i:])
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
	if err := w.rowBuf.flush(w.writeBatch); err != nil {
		return err
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
	if err := w.rowBuf.flush(w.writeBatch); err != nil {
		return err
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

func (w *ndjsonWriter) Rows() int64 { return w.rows + int64(w.rowBuf.pending()) }
