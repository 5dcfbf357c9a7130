package source

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// pgRows reads the query on one of the pool's connections with pgx's
// extended protocol, results in binary format, and decodes each value
// straight into the batch's typed vectors: no value is boxed into an
// interface, no instant or number goes through text. A column whose
// (declared kind, PostgreSQL type) pair has no binary decoder here comes as
// text and is coerced like a database/sql value. A pool of another
// PostgreSQL driver is read through database/sql (scanRows).
func (s *SQL) pgRows(ctx context.Context, q Query, text string, args []any, bt *batcher) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sql source %s: dataset %s: connection: %w", s.name, q.Dataset.Name, unavailable{err})
	}
	ran := false
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return nil
		}
		ran = true
		return s.pgRead(ctx, c.Conn().PgConn(), q, text, args, bt)
	})
	conn.Close()
	if !ran && err == nil {
		return s.inReadTx(ctx, func(tx queryer) error { return s.scanRows(ctx, tx, q, text, args, bt) })
	}
	return s.tooLarge(ctx, serverTimeout(err), q, text, args, bt.b.RowNum(bt.b.Len()))
}

// pgRead reads the query on pc in a transaction of the read's bounds
// (pgBegin: time and message size, pgguard.go).
func (s *SQL) pgRead(ctx context.Context, pc *pgconn.PgConn, q Query, text string, args []any, bt *batcher) (err error) {
	ds := q.Dataset
	if err := s.pgBegin(ctx, pc, ds, messageCap(ds)); err != nil {
		return err
	}
	defer func() {
		if err != nil && !pc.IsClosed() {
			// Reading the rest of a large result to reuse the connection
			// would cost the whole read; drop the connection instead (the
			// pool discards a closed one), and its transaction with it.
			pc.Close(context.WithoutCancel(ctx))
		}
	}()
	sd, err := pc.Prepare(ctx, "", text, nil)
	if err != nil {
		return fmt.Errorf("sql source %s: query dataset %s day %s: %w", s.name, ds.Name, q.Day, unavailable{err})
	}
	names := make([]string, len(sd.Fields))
	for i, f := range sd.Fields {
		names[i] = f.Name
	}
	if err := checkColumns(ds, names); err != nil {
		return err
	}
	types, err := resultTypes(ctx, pc, ds, sd.Fields)
	if err != nil {
		return err
	}
	// resultTypes ran its own query on the unnamed statement: prepare the
	// export query again.
	if sd, err = pc.Prepare(ctx, "", text, nil); err != nil {
		return fmt.Errorf("sql source %s: query dataset %s day %s: %w", s.name, ds.Name, q.Day, unavailable{err})
	}
	decs := make([]pgColumn, len(sd.Fields))
	formats := make([]int16, len(sd.Fields))
	trustText := serverUTF8(pc)
	for i, f := range sd.Fields {
		decs[i] = planColumn(ds.Columns[i], f, types[i], trustText)
		formats[i] = decs[i].format
	}
	params := make([][]byte, len(args))
	for i, a := range args {
		if params[i], err = dataset.ParamText(a); err != nil {
			return fmt.Errorf("sql source %s: dataset %s: parameter %d: %w", s.name, ds.Name, i+1, err)
		}
	}

	rr := pc.ExecPrepared(ctx, "", params, nil, formats)
	rd := &pgRowDecoder{ds: ds, decs: decs, fields: sd.Fields, formats: formats}
	if depth := s.decodeDepth(); depth > 0 {
		if err := decodeAhead(rr, rd, bt, depth); err != nil {
			return err
		}
	} else {
		for rr.NextRow() {
			if err := bt.room(); err != nil {
				return err
			}
			if err := rd.row(bt.b, rr.Values()); err != nil {
				return err
			}
		}
	}
	if _, err := rr.Close(); err != nil {
		return fmt.Errorf("sql source %s: dataset %s: after row %d: %w", s.name, ds.Name, bt.b.RowNum(bt.b.Len())-1, unavailable{err})
	}
	return s.pgCommit(ctx, pc, ds)
}

// pgRowDecoder decodes one result row's values into a batch.
type pgRowDecoder struct {
	ds      dataset.Dataset
	decs    []pgColumn
	fields  []pgconn.FieldDescription
	formats []int16
}

// row appends the values of one row (nil for NULL) to b and ends the row.
func (d *pgRowDecoder) row(b *dataset.Batch, vals [][]byte) error {
	for i, v := range vals {
		vec := &b.Cols[i]
		if v == nil {
			if !vec.Column.Nullable {
				return &dataset.RowError{Dataset: d.ds.Name, Row: b.RowNum(b.Len()), Column: vec.Column.Name, Reason: "null in required column"}
			}
			vec.AppendNull()
			continue
		}
		if reason := d.decs[i].decode(vec, v); reason != "" {
			return &dataset.RowError{Dataset: d.ds.Name, Row: b.RowNum(b.Len()), Column: vec.Column.Name,
				Value: pgValue(d.fields[i].DataTypeOID, d.formats[i], v), Reason: reason}
		}
	}
	b.EndRow()
	return nil
}

// pgDecoder decodes one binary value of a PostgreSQL type into a vector of
// a declared kind.
type pgDecoder uint8

const (
	pgAsText     pgDecoder = iota // text format, coerced as database/sql text
	pgBool                        // bool → boolean
	pgInt2                        // int2 → int64
	pgInt4                        // int4 → int64
	pgInt8                        // int8 → int64
	pgFloat4                      // float4 → double
	pgFloat8                      // float8 → double
	pgDate                        // date → date
	pgTimestamp                   // timestamptz, timestamp (as UTC) → timestamp
	pgString                      // text, varchar, bpchar, name → string (checked here)
	pgStringUTF8                  // the same from a server that guarantees UTF-8 (see serverUTF8): only the length checked
	pgJSON                        // json → json (the server checked it; see serverUTF8)
	pgJSONB                       // jsonb → json (the server checked it; see serverUTF8)
	pgJSONText                    // text, or json from a server that does not guarantee UTF-8 → json (checked here)
	pgJSONBText                   // jsonb from a server that does not guarantee UTF-8 → json (checked here)
	pgNumeric                     // numeric → decimal up to 18 digits
)

// serverUTF8 reports whether every text the connection receives is valid
// UTF-8 by the server's guarantee: the database's encoding is UTF8 (the
// server refuses invalid UTF-8 on input) and so is the connection's (pgx
// asks for it; nothing is converted on the way). Only then are json and
// jsonb values trusted unchecked: PostgreSQL validates both as JSON on
// input, but a SQL_ASCII database stores and returns any bytes above 0x7F
// unchecked, inside JSON strings too. Only then, too, is a text value's
// UTF-8 not checked again: no PostgreSQL text holds a NUL in any encoding,
// and a UTF8 database holds only valid UTF-8, so of dataset.CheckString
// only the length is left (the UTF-8 and NUL scans were 8% of an
// export's CPU).
func serverUTF8(pc *pgconn.PgConn) bool {
	return pc.ParameterStatus("server_encoding") == "UTF8" && pc.ParameterStatus("client_encoding") == "UTF8"
}

// decoderFor returns the binary decoder of a column of type t whose
// result has the PostgreSQL type oid, or pgAsText. json and jsonb values
// are trusted as the server validated them, and text values as valid
// UTF-8, only when trustText (see serverUTF8); otherwise they are checked
// like JSON text and strings from any source.
func decoderFor(t dataset.Type, oid uint32, trustText bool) pgDecoder {
	switch t.Kind {
	case dataset.KindBoolean:
		if oid == pgtype.BoolOID {
			return pgBool
		}
	case dataset.KindInt64:
		switch oid {
		case pgtype.Int2OID:
			return pgInt2
		case pgtype.Int4OID:
			return pgInt4
		case pgtype.Int8OID:
			return pgInt8
		}
	case dataset.KindDouble:
		switch oid {
		case pgtype.Float4OID:
			return pgFloat4
		case pgtype.Float8OID:
			return pgFloat8
		}
	case dataset.KindDate:
		if oid == pgtype.DateOID {
			return pgDate
		}
	case dataset.KindTimestamp:
		if oid == pgtype.TimestamptzOID || oid == pgtype.TimestampOID {
			return pgTimestamp
		}
	case dataset.KindString:
		switch oid {
		case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
			if trustText {
				return pgStringUTF8
			}
			return pgString
		}
	case dataset.KindJSON:
		switch oid {
		case pgtype.JSONOID:
			if !trustText {
				return pgJSONText
			}
			return pgJSON
		case pgtype.JSONBOID:
			if !trustText {
				return pgJSONBText
			}
			return pgJSONB
		case pgtype.TextOID, pgtype.VarcharOID:
			return pgJSONText
		}
	case dataset.KindDecimal:
		if oid == pgtype.NumericOID && t.Precision <= 18 {
			return pgNumeric
		}
	}
	return pgAsText
}

// Microseconds and days between the Unix epoch and PostgreSQL's (2000-01-01).
const (
	pgEpochMicros = 946_684_800_000_000
	pgEpochDays   = 10_957
)

const errLength = "wrong binary length"

// decode appends v to vec; it returns the reason v is refused, or "".
func (d pgDecoder) decode(vec *dataset.Vector, v []byte) string {
	switch d {
	case pgBool:
		if len(v) != 1 {
			return errLength
		}
		vec.AppendBool(v[0] != 0)
	case pgInt2, pgInt4, pgInt8:
		switch len(v) {
		case 2:
			vec.AppendInt64(int64(int16(binary.BigEndian.Uint16(v))))
		case 4:
			vec.AppendInt64(int64(int32(binary.BigEndian.Uint32(v))))
		case 8:
			vec.AppendInt64(int64(binary.BigEndian.Uint64(v)))
		default:
			return errLength
		}
	case pgFloat4:
		if len(v) != 4 {
			return errLength
		}
		f := float64(math.Float32frombits(binary.BigEndian.Uint32(v)))
		if reason := dataset.CheckDouble(f); reason != "" { // 'NaN', 'Infinity', '-Infinity'
			return reason
		}
		vec.AppendDouble(f)
	case pgFloat8:
		if len(v) != 8 {
			return errLength
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(v))
		if reason := dataset.CheckDouble(f); reason != "" { // 'NaN', 'Infinity', '-Infinity'
			return reason
		}
		vec.AppendDouble(f)
	case pgDate:
		if len(v) != 4 {
			return errLength
		}
		n := int32(binary.BigEndian.Uint32(v))
		if n == math.MaxInt32 || n == math.MinInt32 { // 'infinity', '-infinity'
			return "unparsable date"
		}
		vec.AppendInt32(n + pgEpochDays)
	case pgTimestamp:
		if len(v) != 8 {
			return errLength
		}
		n := int64(binary.BigEndian.Uint64(v))
		if n == math.MaxInt64 || n == math.MinInt64 { // 'infinity', '-infinity'
			return "unparsable timestamp"
		}
		vec.AppendInt64(n + pgEpochMicros)
	case pgString:
		if reason := dataset.CheckString(v); reason != "" {
			return reason
		}
		vec.AppendBytes(v)
	case pgStringUTF8:
		if len(v) > dataset.MaxStringBytes {
			return dataset.CheckString(v) // its reason for the length
		}
		vec.AppendBytes(v)
	case pgJSON:
		if reason := dataset.CheckJSONSize(v); reason != "" {
			return reason
		}
		vec.AppendBytes(v)
	case pgJSONB:
		if len(v) == 0 || v[0] != 1 {
			return "unknown jsonb binary version"
		}
		if reason := dataset.CheckJSONSize(v[1:]); reason != "" {
			return reason
		}
		vec.AppendBytes(v[1:])
	case pgJSONText:
		if reason := dataset.CheckJSONText(v); reason != "" {
			return reason
		}
		vec.AppendBytes(v)
	case pgJSONBText:
		if len(v) == 0 || v[0] != 1 {
			return "unknown jsonb binary version"
		}
		if reason := dataset.CheckJSONText(v[1:]); reason != "" {
			return reason
		}
		vec.AppendBytes(v[1:])
	case pgNumeric:
		n, reason := numericUnscaled(v, vec.Column.Type)
		if reason != "" {
			return reason
		}
		vec.AppendInt64(n)
	default:
		return vec.AppendCoerced(string(v))
	}
	return ""
}

// numericUnscaled converts a binary numeric to the unscaled value of a
// decimal of type t (precision up to 18), refusing what the text path
// refuses: NaN and infinities, digits past the scale, and more digits than
// the precision.
func numericUnscaled(v []byte, t dataset.Type) (int64, string) {
	unparsable := fmt.Sprintf("unparsable decimal at scale %d", t.Scale)
	if len(v) < 8 {
		return 0, errLength
	}
	ndigits := int(binary.BigEndian.Uint16(v))
	weight := int(int16(binary.BigEndian.Uint16(v[2:])))
	sign := binary.BigEndian.Uint16(v[4:])
	if sign != 0 && sign != 0x4000 { // NaN, Infinity, -Infinity
		return 0, unparsable
	}
	if len(v) != 8+2*ndigits {
		return 0, errLength
	}
	limit := pow10(t.Precision)
	var n int64
	for i := range ndigits {
		digit := int64(binary.BigEndian.Uint16(v[8+2*i:]))
		// The digit is worth digit × 10000^(weight-i), i.e. 10^exp of the
		// unscaled value.
		exp := 4*(weight-i) + t.Scale
		if exp < 0 {
			if exp < -4 || digit%pow10(-exp) != 0 {
				if digit != 0 {
					return 0, unparsable
				}
				continue
			}
			digit /= pow10(-exp)
			exp = 0
		}
		if digit == 0 {
			continue
		}
		if exp >= 18 || digit > (limit-1)/pow10(exp) {
			return 0, fmt.Sprintf("decimal exceeds precision %d", t.Precision)
		}
		n += digit * pow10(exp)
		if n >= limit {
			return 0, fmt.Sprintf("decimal exceeds precision %d", t.Precision)
		}
	}
	if sign == 0x4000 {
		n = -n
	}
	return n, ""
}

func pow10(n int) int64 {
	v := int64(1)
	for range n {
		v *= 10
	}
	return v
}

// pgValue decodes a refused value with pgx's type map, for the error
// message only.
func pgValue(oid uint32, format int16, v []byte) any {
	m := pgtype.NewMap()
	if t, ok := m.TypeForOID(oid); ok {
		if x, err := t.Codec.DecodeValue(m, oid, format, v); err == nil {
			return x
		}
	}
	if format == pgtype.TextFormatCode {
		return string(v)
	}
	return v
}
