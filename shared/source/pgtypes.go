package source

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
)

// resultTypes describes the query's result columns in one round trip and
// checks each against its declared column with the mapping catalog check
// uses (pgcatalog.CheckColumn), before any row is read: a source migration
// that retypes a column fails the partition naming the column and both
// types, instead of delivering values of another type or failing on some
// row. Warnings (a narrower numeric, text checked as JSON) pass.
func resultTypes(ctx context.Context, pc *pgconn.PgConn, ds dataset.Dataset, fields []pgconn.FieldDescription) ([]pgcatalog.SourceType, error) {
	oids := make([]uint32, len(fields))
	mods := make([]int32, len(fields))
	for i, f := range fields {
		oids[i], mods[i] = f.DataTypeOID, f.TypeModifier
	}
	a, b := pgcatalog.TypesArgs(oids, mods)
	res := pc.ExecParams(ctx, pgcatalog.TypesQuery, [][]byte{[]byte(a), []byte(b)}, nil, nil, nil).Read()
	if res.Err != nil {
		return nil, fmt.Errorf("dataset %s: describe result types: %w", ds.Name, unavailable{res.Err})
	}
	if len(res.Rows) != len(fields) {
		return nil, fmt.Errorf("dataset %s: describe result types: %d of %d types found", ds.Name, len(res.Rows), len(fields))
	}
	out := make([]pgcatalog.SourceType, len(fields))
	for i, row := range res.Rows {
		f := make([]string, len(row))
		for j, v := range row {
			f[j] = string(v)
		}
		st, _, err := pgcatalog.TypeFromRow(f)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: describe result types: %w", ds.Name, err)
		}
		c := ds.Columns[i]
		if sev, reason := pgcatalog.CheckColumn(c, st); sev == pgcatalog.SeverityError {
			return nil, &dataset.TypeError{Dataset: ds.Name, Column: c.Name, Declared: c.Type.String(), Found: st.Display, Reason: reason}
		}
		out[i] = st
	}
	return out, nil
}

// pgColumn is how one result column is read.
type pgColumn struct {
	dec    pgDecoder
	format int16
	loc    *time.Location // pgTimestampLocal: the declared source_time_zone
	elem   string         // pgArrayJSON: the element's base type name
	buf    []byte         // pgArrayJSON: the value being built, reused
	list   *pgColumn      // pgList: how each element is read
}

// More decoders, for the types whose reading depends on more than the
// result's OID.
const (
	pgTimestampLocal pgDecoder = iota + 100 // timestamp without time zone → timestamp, read in the column's source_time_zone
	pgUUID                                  // uuid → string, canonical lower-case form
	pgStringText                            // text format of a type mapped to string (inet, cidr, citext, enum) → string
	pgArrayJSON                             // array → json array
	pgNumericWide                           // numeric → decimal above 18 digits
	pgBytea                                 // bytea → binary, the bytes as they are
	pgList                                  // one-dimensional array → list<T>
)

// planColumn chooses how column c, whose result has type st, is read.
func planColumn(c dataset.Column, f pgconn.FieldDescription, st pgcatalog.SourceType, trustText bool) pgColumn {
	p := pgColumn{dec: decoderFor(c.Type, f.DataTypeOID, trustText), format: pgtype.BinaryFormatCode}
	switch {
	case c.Type.Kind == dataset.KindTimestamp && st.Name == "timestamp" && !st.IsArray():
		p.dec, p.loc = pgTimestampLocal, c.SourceLocation()
		if p.loc == nil {
			p.loc = time.UTC // unreachable: resultTypes refused the column
		}
	case c.Type.Kind == dataset.KindString && !st.IsArray() && st.Name == "uuid":
		p.dec = pgUUID
	case c.Type.Kind == dataset.KindString && !st.IsArray() && p.dec == pgAsText:
		p.dec = pgStringText
	case c.Type.Kind == dataset.KindDecimal && c.Type.Precision > 18 && st.Name == "numeric" && !st.IsArray():
		p.dec = pgNumericWide
	case c.Type.Kind == dataset.KindBinary && st.Name == "bytea" && !st.IsArray():
		p.dec = pgBytea
	case c.Type.Kind == dataset.KindList && st.IsArray():
		planList(&p, c, st, trustText)
	case c.Type.Kind == dataset.KindJSON && st.IsArray():
		p.dec, p.elem = pgArrayJSON, st.Elem.Name
		if st.Elem.Type == 'e' {
			p.elem = "enum"
		}
	}
	if p.dec == pgAsText || p.dec == pgStringText {
		p.format = pgtype.TextFormatCode
	}
	return p
}

func (p *pgColumn) decode(vec *dataset.Vector, v []byte) string {
	switch p.dec {
	case pgTimestampLocal:
		if len(v) != 8 {
			return errLength
		}
		n := int64(binary.BigEndian.Uint64(v))
		if n == math.MaxInt64 || n == math.MinInt64 {
			return "unparsable timestamp"
		}
		us := n + pgEpochMicros
		if p.loc != time.UTC {
			w := time.UnixMicro(us).UTC()
			us = time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), p.loc).UnixMicro()
		}
		vec.AppendInt64(us)
	case pgUUID:
		if len(v) != 16 {
			return errLength
		}
		var s [36]byte
		appendUUID(s[:0], v)
		vec.AppendBytes(s[:])
	case pgStringText:
		if reason := dataset.CheckString(v); reason != "" {
			return reason
		}
		vec.AppendBytes(v)
	case pgArrayJSON:
		var reason string
		p.buf, reason = appendArrayJSON(p.buf[:0], v, p.elem)
		if reason != "" {
			return reason
		}
		if reason := dataset.CheckJSONSize(p.buf); reason != "" {
			return reason
		}
		vec.AppendBytes(p.buf)
	case pgNumericWide:
		var b [dataset.WideDecimalBytes]byte
		if reason := numericWide(b[:], v, vec.Column.Type); reason != "" {
			return reason
		}
		vec.AppendBytes(b[:])
	case pgList:
		return p.decodeList(vec, v)
	case pgBytea:
		if reason := dataset.CheckBinary(v); reason != "" {
			return reason
		}
		vec.AppendBytes(v)
	default:
		return p.dec.decode(vec, v)
	}
	return ""
}

// u128 is an unsigned 128-bit number.
type u128 struct{ hi, lo uint64 }

// mulAdd returns n*m + a, and false on overflow.
func (n u128) mulAdd(m, a uint64) (u128, bool) {
	h1, lo := bits.Mul64(n.lo, m)
	h2, hi := bits.Mul64(n.hi, m)
	hi, c1 := bits.Add64(hi, h1, 0)
	lo, c2 := bits.Add64(lo, a, 0)
	hi, c3 := bits.Add64(hi, 0, c2)
	return u128{hi, lo}, h2 == 0 && c1 == 0 && c3 == 0
}

func (n u128) less(o u128) bool { return n.hi < o.hi || n.hi == o.hi && n.lo < o.lo }

// pow10x128 holds 10^0 .. 10^38.
var pow10x128 = func() (t [dataset.MaxDecimalPrecision + 1]u128) {
	t[0] = u128{0, 1}
	for i := 1; i < len(t); i++ {
		t[i], _ = t[i-1].mulAdd(10, 0)
	}
	return t
}()

// numericWide writes the binary numeric v as the unscaled value of a
// decimal of type t (precision 19..38) into dst, 16 bytes big-endian two's
// complement (dataset.WideDecimalBytes), refusing what the text path
// refuses: NaN and infinities, digits past the scale, and more digits than
// the precision. It allocates nothing.
func numericWide(dst, v []byte, t dataset.Type) string {
	// The reasons are built only when a value is refused.
	unparsable := func() string { return "unparsable decimal at scale " + strconv.Itoa(t.Scale) }
	exceeds := func() string { return fmt.Sprintf("decimal exceeds precision %d", t.Precision) }
	if len(v) < 8 {
		return errLength
	}
	ndigits := int(binary.BigEndian.Uint16(v))
	weight := int(int16(binary.BigEndian.Uint16(v[2:])))
	sign := binary.BigEndian.Uint16(v[4:])
	if sign != 0 && sign != 0x4000 { // NaN, Infinity, -Infinity
		return unparsable()
	}
	if len(v) != 8+2*ndigits {
		return errLength
	}
	// The base-10000 positions the scale covers: weight down to pmin.
	pmin := -((t.Scale + 3) / 4)
	digit := func(p int) uint64 {
		if i := weight - p; i >= 0 && i < ndigits {
			return uint64(binary.BigEndian.Uint16(v[8+2*i:]))
		}
		return 0
	}
	for i := range ndigits { // digits below pmin are fractional digits past the scale
		if weight-i < pmin && binary.BigEndian.Uint16(v[8+2*i:]) != 0 {
			return unparsable()
		}
	}
	// The lowest position holds up to 3 decimal digits past the scale
	// (extra): they must be zero, and are dropped as it is added.
	extra := -4*pmin - t.Scale
	var n u128
	for p := max(weight, pmin); p >= pmin; p-- {
		d, m := digit(p), uint64(10000)
		if p == pmin && extra > 0 {
			x := uint64(pow10(extra))
			if d%x != 0 {
				return unparsable()
			}
			d, m = d/x, 10000/x
		}
		var ok bool
		if n, ok = n.mulAdd(m, d); !ok {
			return exceeds()
		}
	}
	if !n.less(pow10x128[t.Precision]) {
		return exceeds()
	}
	if sign == 0x4000 {
		lo, c := bits.Add64(^n.lo, 1, 0)
		n = u128{^n.hi + c, lo}
	}
	binary.BigEndian.PutUint64(dst[0:], n.hi)
	binary.BigEndian.PutUint64(dst[8:], n.lo)
	return ""
}

const hexDigits = "0123456789abcdef"

func appendUUID(b, u []byte) []byte {
	for i, x := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[x>>4], hexDigits[x&0xf])
	}
	return b
}

// appendArrayJSON appends the binary array v as a JSON array (nested for
// more than one dimension; NULL elements as null); elem is the element's
// base type name (pgcatalog.ArrayElements).
func appendArrayJSON(b, v []byte, elem string) ([]byte, string) {
	if len(v) < 12 {
		return b, errLength
	}
	ndim := int(int32(binary.BigEndian.Uint32(v)))
	if ndim == 0 {
		return append(b, '[', ']'), ""
	}
	if ndim < 0 || ndim > 6 || len(v) < 12+8*ndim {
		return b, errLength
	}
	var dimsBuf [6]int
	dims := dimsBuf[:ndim]
	for i := range dims {
		dims[i] = int(int32(binary.BigEndian.Uint32(v[12+8*i:])))
		if dims[i] < 0 {
			return b, errLength
		}
	}
	rest := v[12+8*ndim:]
	var reason string
	b, rest, reason = appendDim(b, rest, dims, elem)
	if reason == "" && len(rest) != 0 {
		reason = errLength
	}
	return b, reason
}

func appendDim(b, v []byte, dims []int, elem string) ([]byte, []byte, string) {
	b = append(b, '[')
	for i := range dims[0] {
		if i > 0 {
			b = append(b, ',')
		}
		if len(dims) > 1 {
			var reason string
			if b, v, reason = appendDim(b, v, dims[1:], elem); reason != "" {
				return b, v, reason
			}
			continue
		}
		if len(v) < 4 {
			return b, v, errLength
		}
		n := int(int32(binary.BigEndian.Uint32(v)))
		v = v[4:]
		if n < 0 {
			b = append(b, "null"...)
			continue
		}
		if n > len(v) {
			return b, v, errLength
		}
		var reason string
		if b, reason = appendElem(b, v[:n], elem); reason != "" {
			return b, v, "array element: " + reason
		}
		v = v[n:]
	}
	return append(b, ']'), v, ""
}

func appendElem(b, e []byte, elem string) ([]byte, string) {
	switch elem {
	case "bool":
		if len(e) != 1 {
			return b, errLength
		}
		return strconv.AppendBool(b, e[0] != 0), ""
	case "int2", "int4", "int8":
		switch len(e) {
		case 2:
			return strconv.AppendInt(b, int64(int16(binary.BigEndian.Uint16(e))), 10), ""
		case 4:
			return strconv.AppendInt(b, int64(int32(binary.BigEndian.Uint32(e))), 10), ""
		case 8:
			return strconv.AppendInt(b, int64(binary.BigEndian.Uint64(e)), 10), ""
		}
		return b, errLength
	case "float4", "float8":
		var f float64
		bits := 64
		switch len(e) {
		case 4:
			f, bits = float64(math.Float32frombits(binary.BigEndian.Uint32(e))), 32
		case 8:
			f = math.Float64frombits(binary.BigEndian.Uint64(e))
		default:
			return b, errLength
		}
		if reason := dataset.CheckDouble(f); reason != "" {
			return b, reason
		}
		return strconv.AppendFloat(b, f, 'g', -1, bits), ""
	case "uuid":
		if len(e) != 16 {
			return b, errLength
		}
		b = append(b, '"')
		return append(appendUUID(b, e), '"'), ""
	}
	// text, varchar, bpchar, name, citext, enum: the binary form is the text.
	if reason := dataset.CheckString(e); reason != "" {
		return b, reason
	}
	return appendJSONString(b, e), ""
}

// appendJSONString appends s (valid UTF-8, no NUL) as a JSON string.
func appendJSONString(b, s []byte) []byte {
	b = append(b, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
