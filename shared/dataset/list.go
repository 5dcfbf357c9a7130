package dataset

import (
	"fmt"
	"strings"
)

// KindList is a column of arrays, declared "list<T>": a Parquet LIST
// (three-level, optional elements), a JSON array in NDJSON. Its model
// value is []any of element model values, nil for a NULL element; a NULL
// list (nil), an empty list ([]any{}) and a NULL element are distinct.
// The element kind is Type.Elem (with Precision and Scale for a decimal
// element); ListElements are the kinds an element may have.
const KindList Kind = "list"

// ListElements are the element kinds of a list<T>.
var ListElements = []Kind{KindBoolean, KindInt64, KindDouble, KindString, KindDate, KindTimestamp, KindDecimal}

// ListType returns list<elem>.
func ListType(elem Type) Type {
	return Type{Kind: KindList, Elem: elem.Kind, Precision: elem.Precision, Scale: elem.Scale}
}

// ElemType is the element type of a list<T>.
func (t Type) ElemType() Type { return Type{Kind: t.Elem, Precision: t.Precision, Scale: t.Scale} }

// ElemColumn is the column of a list column's elements: always nullable.
func (c Column) ElemColumn() Column {
	return Column{Name: "element", Type: c.Type.ElemType(), Nullable: true}
}

func parseList(s string) (Type, bool, error) {
	inner, ok := strings.CutPrefix(s, "list<")
	if !ok {
		return Type{}, false, nil
	}
	inner, ok = strings.CutSuffix(inner, ">")
	if !ok {
		return Type{}, true, fmt.Errorf("parse type %q: a list is list<T>", s)
	}
	elem, err := ParseType(inner)
	if err != nil {
		return Type{}, true, fmt.Errorf("parse type %q: element: %w", s, err)
	}
	if elem.Kind == KindList {
		return Type{}, true, fmt.Errorf("parse type %q: a list has one dimension (declare the column json to deliver nested arrays)", s)
	}
	t := ListType(elem)
	if err := t.validate(); err != nil {
		return Type{}, true, fmt.Errorf("parse type %q: %w", s, err)
	}
	return t, true, nil
}

func (t Type) validateList() error {
	for _, k := range ListElements {
		if k == t.Elem {
			return t.ElemType().validate()
		}
	}
	return fmt.Errorf("list element type %s is not one of %v (declare the column json to deliver other arrays as JSON)", t.ElemType(), ListElements)
}

// AppendListEnd closes a list value whose elements were appended to
// v.Elem since the previous row.
func (v *Vector) AppendListEnd() {
	v.notNull()
	v.ListOffsets = append(v.ListOffsets, uint32(v.Elem.Len()))
}

// Len is the number of values a vector holds.
func (v *Vector) Len() int {
	switch v.Storage {
	case StorageInt32:
		return len(v.Int32)
	case StorageInt64:
		return len(v.Int64)
	case StorageDouble:
		return len(v.Double)
	case StorageBool:
		return len(v.Bool)
	case StorageList:
		return len(v.ListOffsets) - 1
	}
	return len(v.Offsets) - 1
}

// List returns row i of a list vector as the elements [lo, hi) of v.Elem.
func (v *Vector) List(i int) (lo, hi int) { return int(v.ListOffsets[i]), int(v.ListOffsets[i+1]) }

func newListVector(c Column, capacity int) *Vector {
	e := &Vector{Column: c.ElemColumn(), Storage: StorageOf(c.Type.ElemType())}
	e.init(capacity)
	return e
}

// listModel appends x, a list of element model values, to a list vector.
func (v *Vector) listModel(x any) string {
	l, ok := x.([]any)
	if !ok {
		return fmt.Sprintf("want %s value", v.Column.Type)
	}
	for _, e := range l {
		if reason := v.Elem.appendModel(e); reason != "" {
			return "element: " + reason
		}
	}
	v.AppendListEnd()
	return ""
}

func checkListModel(c Column, v any) string {
	l, ok := v.([]any)
	if !ok {
		return fmt.Sprintf("want %s value", c.Type)
	}
	ec := c.ElemColumn()
	for i, e := range l {
		if e == nil {
			continue
		}
		if reason := checkModel(ec, e); reason != "" {
			return fmt.Sprintf("element %d: %s", i, reason)
		}
	}
	return ""
}

func coerceList(t Type, v any) (any, string) {
	l, ok := v.([]any)
	if !ok {
		return nil, "wrong type, want a list"
	}
	out := make([]any, len(l))
	for i, e := range l {
		if e == nil {
			continue
		}
		x, reason := coerceValue(t.ElemType(), e)
		if reason != "" {
			return nil, fmt.Sprintf("element %d: %s", i, reason)
		}
		out[i] = x
	}
	return out, ""
}
