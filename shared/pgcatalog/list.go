package pgcatalog

import (
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// ListElements are the element types of an array a column may declare as
// list<T> (a Parquet LIST): the scalar types whose binary form the source
// decodes, enums included. Map maps an array of a JSON-capable element
// (ArrayElements) to json, a JSON array, as catalog init always wrote it,
// and an array of dates, instants or numeric(p,s) to its list<T>; a
// catalog may declare list<T> for the former too, and CheckColumn accepts
// either.
var ListElements = []string{"bool", "int2", "int4", "int8", "float4", "float8", "text", "varchar", "bpchar", "name", "citext", "uuid", "enum", "date", "timestamptz", "numeric(p,s)"}

// ListType is the list<T> type a column of array type t may declare, or
// an error saying why there is none.
func ListType(t SourceType) (dataset.Type, error) {
	if !t.IsArray() {
		return dataset.Type{}, fmt.Errorf("%s is not an array", t.Display)
	}
	e := *t.Elem
	if e.Mod < 0 {
		e.Mod = t.Mod // numeric(20,10)[]: the column's modifier is its elements'
	}
	ok := e.Type == 'e' || e.Name == "numeric" || e.Name == "date" || e.Name == "timestamptz"
	for _, n := range ArrayElements {
		ok = ok || n == e.Name
	}
	if !ok {
		return dataset.Type{}, fmt.Errorf("%s: arrays of %s have no list type (lists hold %s); declare the column json, or convert it in the query: %w",
			t.Display, e.Display, strings.Join(ListElements, ", "), ErrUnmapped)
	}
	m, err := Map(e)
	if err != nil {
		return dataset.Type{}, fmt.Errorf("%s: element: %w", t.Display, err)
	}
	return dataset.ListType(m.Type), nil
}

// checkList is CheckColumn for a column declared list<T>.
func checkList(c dataset.Column, t SourceType) (Severity, string) {
	want := c.Type
	got, err := ListType(t)
	if err != nil {
		return SeverityError, fmt.Sprintf("source type %s does not map to the declared %s: %s", t.Display, want, strings.TrimSuffix(err.Error(), ": "+ErrUnmapped.Error()))
	}
	if got == want {
		return "", ""
	}
	g, w := got.ElemType(), want.ElemType()
	if g.Kind == dataset.KindDecimal && w.Kind == dataset.KindDecimal && g.Scale <= w.Scale && g.Precision-g.Scale <= w.Precision-w.Scale {
		return SeverityWarning, fmt.Sprintf("source type %s is narrower than the declared %s (its values fit; declare %s to match)", t.Display, want, got)
	}
	return SeverityError, fmt.Sprintf("source type %s maps to %s, not the declared %s", t.Display, got, want)
}
