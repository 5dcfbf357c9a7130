// Package pgcatalog reads what a PostgreSQL database says about its own
// tables (columns in order, types with their modifiers, NOT NULL, comments,
// enums, the plan of a query) and holds the one mapping from PostgreSQL
// types to catalog column types, documented in docs/types.md. The catalog
// init and check commands and the exporter's check of a query's result
// columns all go through Map and CheckColumn, so they cannot disagree.
package pgcatalog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// ErrUnmapped is wrapped by Map's refusal of a source type that has no
// catalog type.
var ErrUnmapped = errors.New("no catalog type")

// SourceType is a PostgreSQL type as the database describes it: a domain
// is described by its base type, an array by its element.
type SourceType struct {
	// Display is format_type(oid, typmod): "numeric(20,10)",
	// "timestamp without time zone", "text[]", "plan_tier" (an enum).
	Display string
	// Name is pg_type.typname of the (base) type: "numeric", "timestamp",
	// "_text" for text[].
	Name string
	// Type is pg_type.typtype: 'b' base, 'e' enum, 'c' composite, 'r'
	// range, 'm' multirange, 'p' pseudo.
	Type byte
	// Mod is the type modifier (atttypmod), -1 for none.
	Mod int32
	// Elem is the element type of an array; nil otherwise.
	Elem *SourceType
}

// IsArray reports whether t is an array type.
func (t SourceType) IsArray() bool { return t.Elem != nil }

// Mapping is the catalog side of a source type.
type Mapping struct {
	Type dataset.Type
	// LocalTime is set for timestamp without time zone: the column needs a
	// source_time_zone.
	LocalTime bool
	// Enum is set for an enum (and an array of them): a low-cardinality
	// string, declared with "dictionary": true by catalog init.
	Enum bool
}

// scalar maps a scalar base type name to its catalog kind.
var scalar = map[string]dataset.Kind{
	"bool":        dataset.KindBoolean,
	"int2":        dataset.KindInt64,
	"int4":        dataset.KindInt64,
	"int8":        dataset.KindInt64,
	"float4":      dataset.KindDouble,
	"float8":      dataset.KindDouble,
	"text":        dataset.KindString,
	"varchar":     dataset.KindString,
	"bpchar":      dataset.KindString,
	"name":        dataset.KindString,
	"citext":      dataset.KindString,
	"uuid":        dataset.KindString,
	"inet":        dataset.KindString,
	"cidr":        dataset.KindString,
	"date":        dataset.KindDate,
	"timestamptz": dataset.KindTimestamp,
	"timestamp":   dataset.KindTimestamp,
	"json":        dataset.KindJSON,
	"jsonb":       dataset.KindJSON,
	"bytea":       dataset.KindBinary,
}

// ArrayElements are the element types an array may have to be exported (as
// a JSON array): those whose binary form the source decodes into JSON.
var ArrayElements = []string{"bool", "int2", "int4", "int8", "float4", "float8", "text", "varchar", "bpchar", "name", "citext", "uuid", "enum"}

// NumericMod returns the precision and scale a numeric type modifier
// holds; ok is false for an unconstrained numeric (mod -1). The scale is
// signed: PostgreSQL 15 allows numeric(p,-s).
func NumericMod(mod int32) (precision, scale int, ok bool) {
	if mod < 4 {
		return 0, 0, false
	}
	m := mod - 4
	precision = int((m >> 16) & 0xffff)
	scale = int(m & 0x7ff)
	if scale&0x400 != 0 { // an 11-bit two's complement scale
		scale -= 0x800
	}
	return precision, scale, true
}

// Map returns the catalog type of a source type, or an error wrapping
// ErrUnmapped that says what to do instead.
func Map(t SourceType) (Mapping, error) {
	if t.IsArray() {
		e := *t.Elem
		if e.Type == 'e' || elementOK(e.Name) {
			return Mapping{Type: dataset.Type{Kind: dataset.KindJSON}, Enum: e.Type == 'e'}, nil
		}
		if lt, err := ListType(t); err == nil {
			// Arrays of dates, instants and decimals have no JSON form
			// here: they are lists (see ListElements).
			return Mapping{Type: lt}, nil
		} else if e.Name == "numeric" {
			return Mapping{}, err
		}
		return Mapping{}, fmt.Errorf("%s: arrays of %s have no catalog type (arrays of %s export as JSON); convert it in the query, e.g. to_jsonb(column): %w",
			t.Display, e.Display, strings.Join(ArrayElements, ", "), ErrUnmapped)
	}
	if t.Type == 'e' {
		return Mapping{Type: dataset.Type{Kind: dataset.KindString}, Enum: true}, nil
	}
	if t.Name == "numeric" {
		p, s, ok := NumericMod(t.Mod)
		switch {
		case !ok:
			return Mapping{}, fmt.Errorf("%s: numeric without a precision has no exact catalog type; declare the column numeric(p,s) with p up to %d, or cast it in the query: %w",
				t.Display, dataset.MaxDecimalPrecision, ErrUnmapped)
		case s < 0:
			return Mapping{}, fmt.Errorf("%s: a negative scale (%d) has no catalog type; cast it in the query to numeric(p,0): %w", t.Display, s, ErrUnmapped)
		case p > dataset.MaxDecimalPrecision:
			return Mapping{}, fmt.Errorf("%s: precision %d is wider than the %d digits every warehouse loads: %w", t.Display, p, dataset.MaxDecimalPrecision, ErrUnmapped)
		case s > p:
			return Mapping{}, fmt.Errorf("%s: a scale (%d) larger than the precision has no catalog type; cast it in the query to numeric(%d,%d): %w", t.Display, s, s, s, ErrUnmapped)
		}
		return Mapping{Type: dataset.DecimalType(p, s)}, nil
	}
	k, ok := scalar[t.Name]
	if !ok {
		return Mapping{}, fmt.Errorf("%s has no catalog type; cast it in the query (e.g. column::text): %w", t.Display, ErrUnmapped)
	}
	return Mapping{Type: dataset.Type{Kind: k}, LocalTime: t.Name == "timestamp"}, nil
}

func elementOK(name string) bool {
	for _, e := range ArrayElements {
		if e == name {
			return true
		}
	}
	return false
}

// Severity grades a finding.
type Severity string

// The severities: an error fails catalog check and the export; a warning
// is reported and changes nothing.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// CheckColumn compares a declared column with the type the source has for
// it: "" when they agree, else the severity and the reason. A source type
// whose values all fit the declared type without change but that is not
// the mapped type (numeric(10,2) into decimal(18,2)) is a warning: never
// silent. Everything else that differs is an error, narrowing first of all
// (numeric(20,10) into decimal(18,2)).
func CheckColumn(c dataset.Column, t SourceType) (Severity, string) {
	if c.Type.Kind == dataset.KindList {
		return checkList(c, t)
	}
	want := c.Type
	m, err := Map(t)
	if err != nil {
		if t.Name == "numeric" && !t.IsArray() && want.Kind == dataset.KindDecimal {
			if _, _, ok := NumericMod(t.Mod); !ok {
				// A computed numeric (sum(x), x * 2) carries no modifier:
				// every value is checked against the declared type.
				return SeverityWarning, fmt.Sprintf("source type %s has no precision: each value is checked against the declared %s", t.Display, want)
			}
		}
		return SeverityError, fmt.Sprintf("source type %s does not map to the declared %s: %s", t.Display, want, strings.TrimSuffix(err.Error(), ": "+ErrUnmapped.Error()))
	}
	got := m.Type
	switch {
	case got == want:
	case got.Kind == dataset.KindDecimal && want.Kind == dataset.KindDecimal:
		if got.Scale <= want.Scale && got.Precision-got.Scale <= want.Precision-want.Scale {
			return SeverityWarning, fmt.Sprintf("source type %s is narrower than the declared %s (its values fit; declare %s to match)", t.Display, want, got)
		}
		return SeverityError, fmt.Sprintf("source type %s does not fit the declared %s (it would need %s)", t.Display, want, got)
	case got.Kind == dataset.KindString && want.Kind == dataset.KindJSON && !m.Enum:
		return SeverityWarning, fmt.Sprintf("source type %s is text, not json: each value is checked as JSON", t.Display)
	default:
		return SeverityError, fmt.Sprintf("source type %s maps to %s, not the declared %s", t.Display, got, want)
	}
	switch {
	case m.LocalTime && c.SourceTimeZone == "":
		return SeverityError, fmt.Sprintf("source type %s holds wall-clock times without a zone: declare the zone they are in as source_time_zone", t.Display)
	case !m.LocalTime && c.SourceTimeZone != "" && want.Kind == dataset.KindTimestamp:
		return SeverityError, fmt.Sprintf("source type %s holds instants, but the column declares source_time_zone %q (only for timestamp without time zone)", t.Display, c.SourceTimeZone)
	}
	return "", ""
}
