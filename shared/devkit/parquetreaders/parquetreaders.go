// Package parquetreaders is test support: three independent Parquet readers
// (DuckDB, Apache Arrow's Go reader, and hyparquet, a JavaScript reader run
// with Node) that decode a delivered file into one comparable form, plus a
// footer and page-header inspection written against Arrow's metadata API, not
// the library daybook writes with. ReadNodeNDJSON reads gzipped NDJSON with
// Node's zlib and JSON.parse into the same form. Only tests import it.
//
// Every reader returns a Table: the leaf columns as the file's schema
// describes them (physical type, logical type, repetition) and as the reader
// maps them (its own type name), and every value as canonical text:
//
//	DATE        days since 1970-01-01, e.g. "-1"
//	TIMESTAMP   microseconds since 1970-01-01T00:00:00Z, e.g. "1796032800123456"
//	INT64       decimal integer
//	DOUBLE      strconv.FormatFloat(f, 'g', -1, 64): "0.1", "-0", "NaN", "+Inf"
//	DECIMAL     exact, exactly scale fractional digits: "-0.05", "12.30"
//	BOOLEAN     "true" or "false"
//	STRING/JSON the text itself, byte for byte
//	BYTE_ARRAY  without an annotation (binary): lower-case hex, "" when empty
//	LIST        a JSON array of the elements' canonical texts, null for a
//	            NULL element: `["1","-2",null]`, `[]` when empty (a NULL list
//	            is NULL); written by ListText, so every reader spells it alike
//
// A list column (a three-level LIST group) is described by its group: Name
// and Repetition are the group's, Physical is the element's physical type,
// and Logical is "LIST of " + the element's logical type (its physical type
// when it has none), e.g. "LIST of DECIMAL(9,2)", with "REQUIRED " before
// the element's type when the element is not OPTIONAL (as docs/types.md
// spells it).
//
// Canonical gives the same text for a value of the dataset value model, so a
// test compares what it wrote with what each reader read, value by value.
package parquetreaders

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// Column is one leaf column as a reader sees it.
type Column struct {
	Name string
	// Physical is the Parquet physical type: INT32, INT64, DOUBLE, BOOLEAN,
	// BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY(n).
	Physical string
	// Logical is the Parquet logical type: DATE, TIMESTAMP(MICROS,UTC),
	// DECIMAL(p,s), INTEGER(64,signed), STRING, JSON, or "" for none.
	Logical string
	// Repetition is REQUIRED or OPTIONAL.
	Repetition string
	// Engine is the type the reader maps the column to (DuckDB's SQL type,
	// Arrow's data type); "" when the reader has no type system of its own.
	Engine string
}

// Value is one canonical value; Valid is false for NULL.
type Value struct {
	Text  string
	Valid bool
}

// Null is the NULL value.
var Null = Value{}

// Text returns a non-NULL value.
func Text(s string) Value { return Value{Text: s, Valid: true} }

func (v Value) String() string {
	if !v.Valid {
		return "NULL"
	}
	return strconv.Quote(v.Text)
}

// Table is a whole file as one reader decoded it.
type Table struct {
	Reader  string
	Columns []Column
	Rows    [][]Value
}

// WantColumns returns the columns every reader must report for ds, Engine
// left empty: the types daybook's Parquet encoder promises for each declared
// column type, in either profile.
func WantColumns(ds dataset.Dataset) []Column {
	out := make([]Column, len(ds.Columns))
	for i, c := range ds.Columns {
		if c.Type.Kind == dataset.KindList {
			// The group of a three-level LIST, its element OPTIONAL.
			e := WantColumns(dataset.Dataset{Columns: []dataset.Column{c.ElemColumn()}})[0]
			out[i] = Column{Name: c.Name, Physical: e.Physical, Logical: ListLogical(e), Repetition: "REQUIRED"}
			if c.Nullable {
				out[i].Repetition = "OPTIONAL"
			}
			continue
		}
		col := Column{Name: c.Name, Repetition: "REQUIRED"}
		if c.Nullable {
			col.Repetition = "OPTIONAL"
		}
		switch c.Type.Kind {
		case dataset.KindDate:
			col.Physical, col.Logical = "INT32", "DATE"
		case dataset.KindTimestamp:
			col.Physical, col.Logical = "INT64", "TIMESTAMP(MICROS,UTC)"
		case dataset.KindInt64:
			col.Physical, col.Logical = "INT64", "INTEGER(64,signed)"
		case dataset.KindDouble:
			col.Physical = "DOUBLE"
		case dataset.KindBoolean:
			col.Physical = "BOOLEAN"
		case dataset.KindString:
			col.Physical, col.Logical = "BYTE_ARRAY", "STRING"
		case dataset.KindJSON:
			col.Physical, col.Logical = "BYTE_ARRAY", "JSON"
		case dataset.KindBinary:
			col.Physical = "BYTE_ARRAY"
		case dataset.KindDecimal:
			p, s := c.Type.Precision, c.Type.Scale
			col.Logical = fmt.Sprintf("DECIMAL(%d,%d)", p, s)
			switch {
			case p <= 9:
				col.Physical = "INT32"
			case p <= 18:
				col.Physical = "INT64"
			default:
				col.Physical = fmt.Sprintf("FIXED_LEN_BYTE_ARRAY(%d)", decimalBytes(p))
			}
		}
		out[i] = col
	}
	return out
}

// ListLogical is the Logical of a list column whose element is e.
func ListLogical(e Column) string {
	t := cmp.Or(e.Logical, e.Physical)
	if e.Repetition != "OPTIONAL" {
		t = "REQUIRED " + t
	}
	return "LIST of " + t
}

// decimalBytes is the fewest bytes that hold every unscaled value of
// precision p in two's complement.
func decimalBytes(p int) int {
	bits := math.Ceil(float64(p)*math.Log2(10)) + 1
	return int(math.Ceil(bits / 8))
}

func integerName(bits int, signed bool) string {
	if signed {
		return fmt.Sprintf("INTEGER(%d,signed)", bits)
	}
	return fmt.Sprintf("INTEGER(%d,unsigned)", bits)
}

// ArrowType is the Arrow data type Arrow's Parquet reader must produce for a
// declared column type (JSON has no Arrow type and reads as binary).
func ArrowType(t dataset.Type) string {
	switch t.Kind {
	case dataset.KindDate:
		return "date32"
	case dataset.KindTimestamp:
		return "timestamp[us, tz=UTC]"
	case dataset.KindInt64:
		return "int64"
	case dataset.KindDouble:
		return "float64"
	case dataset.KindDecimal:
		return fmt.Sprintf("decimal(%d, %d)", t.Precision, t.Scale)
	case dataset.KindBoolean:
		return "bool"
	case dataset.KindString:
		return "utf8"
	case dataset.KindJSON, dataset.KindBinary:
		return "binary"
	case dataset.KindList:
		return "list<element: " + ArrowType(t.ElemType()) + ", nullable>"
	}
	return "?"
}

// Canonical returns the canonical text of v, a value of the dataset value
// model (nil is NULL).
func Canonical(v any) Value {
	switch x := v.(type) {
	case nil:
		return Null
	case civil.Date:
		return Text(strconv.FormatInt(int64(x.EpochDays()), 10))
	case time.Time:
		return Text(strconv.FormatInt(x.UnixMicro(), 10))
	case int64:
		return Text(strconv.FormatInt(x, 10))
	case float64:
		return Text(FormatDouble(x))
	case dataset.Decimal:
		return Text(x.String())
	case bool:
		return Text(strconv.FormatBool(x))
	case string:
		return Text(x)
	case json.RawMessage:
		return Text(string(x))
	case []byte:
		return Text(hex.EncodeToString(x))
	case []any:
		elems := make([]Value, len(x))
		for i, e := range x {
			if _, ok := e.([]any); ok {
				panic("parquetreaders: a list of lists has no canonical form")
			}
			elems[i] = Canonical(e)
		}
		return ListText(elems)
	}
	panic(fmt.Sprintf("parquetreaders: no canonical form for %T", v))
}

// ListText is the canonical text of a list of the canonical values elems
// (never NULL: a NULL list is Null).
func ListText(elems []Value) Value {
	b := []byte{'['}
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		if !e.Valid {
			b = append(b, "null"...)
			continue
		}
		q, _ := json.Marshal(e.Text) // a string always marshals
		b = append(b, q...)
	}
	return Text(string(append(b, ']')))
}

// FormatDouble is the canonical text of a double.
func FormatDouble(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
