package source

import (
	"encoding/binary"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
)

// elemOIDs are the OIDs of the base types a list<T> column's array may
// hold (pgcatalog.ListElements); an enum's elements decode as text.
var elemOIDs = map[string]uint32{
	"bool": pgtype.BoolOID, "int2": pgtype.Int2OID, "int4": pgtype.Int4OID, "int8": pgtype.Int8OID,
	"float4": pgtype.Float4OID, "float8": pgtype.Float8OID,
	"text": pgtype.TextOID, "varchar": pgtype.VarcharOID, "bpchar": pgtype.BPCharOID, "name": pgtype.NameOID,
	"citext": pgtype.TextOID, "uuid": pgtype.UUIDOID, "date": pgtype.DateOID,
	"timestamptz": pgtype.TimestamptzOID, "timestamp": pgtype.TimestampOID, "numeric": pgtype.NumericOID,
}

// planList plans a list<T> column whose result is the array type st: its
// elements are decoded as a column of T whose result is st's element type,
// in binary format (the array's elements are always binary in a binary
// array). It reports false when the element has no binary decoder (the
// type check refused such a column before).
func planList(p *pgColumn, c dataset.Column, st pgcatalog.SourceType, trustText bool) bool {
	e := *st.Elem
	oid, ok := elemOIDs[e.Name]
	if e.Type == 'e' {
		oid, ok = pgtype.TextOID, true // an enum's binary form is its label
	}
	if !ok {
		return false
	}
	ep := planColumn(c.ElemColumn(), pgconn.FieldDescription{DataTypeOID: oid, TypeModifier: e.Mod}, e, trustText)
	if ep.dec == pgAsText {
		return false
	}
	if ep.dec == pgStringText {
		ep.dec = pgString
	}
	p.dec, p.list = pgList, &ep
	return true
}

// decodeList appends a one-dimensional binary array to a list vector:
// ndim, a has-null flag, the element OID, per dimension its length and
// lower bound, then each element as a length (-1 for NULL) and its binary
// form. An array of more dimensions is refused: a list has one. On a
// refusal the partition fails, so the elements appended so far are left.
func (p *pgColumn) decodeList(vec *dataset.Vector, v []byte) string {
	if len(v) < 12 {
		return errLength
	}
	ndim := int(int32(binary.BigEndian.Uint32(v)))
	if ndim == 0 {
		vec.AppendListEnd()
		return ""
	}
	if ndim != 1 {
		return "a multi-dimensional array has no list type: declare the column json to deliver it as nested JSON arrays"
	}
	if len(v) < 20 {
		return errLength
	}
	n := int(int32(binary.BigEndian.Uint32(v[12:])))
	rest := v[20:]
	el := vec.Elem
	for range n {
		if len(rest) < 4 {
			return errLength
		}
		size := int(int32(binary.BigEndian.Uint32(rest)))
		rest = rest[4:]
		if size < 0 {
			el.AppendNull()
			continue
		}
		if size > len(rest) {
			return errLength
		}
		if reason := p.list.decode(el, rest[:size]); reason != "" {
			return "array element: " + reason
		}
		rest = rest[size:]
	}
	if len(rest) != 0 {
		return errLength
	}
	vec.AppendListEnd()
	return ""
}
