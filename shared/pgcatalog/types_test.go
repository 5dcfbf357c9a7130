package pgcatalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
)

// numericMod is the atttypmod PostgreSQL stores for numeric(p,s).
func numericMod(p, s int) int32 { return int32(p<<16|(s&0x7ff)) + 4 }

func TestNumericMod(t *testing.T) {
	for _, tc := range []struct{ p, s int }{{20, 10}, {38, 0}, {1, 1}, {5, -2}, {10, -1000}, {1000, 1000}} {
		p, s, ok := pgcatalog.NumericMod(numericMod(tc.p, tc.s))
		if !ok || p != tc.p || s != tc.s {
			t.Errorf("NumericMod(numeric(%d,%d)) = %d, %d, %v", tc.p, tc.s, p, s, ok)
		}
	}
	if _, _, ok := pgcatalog.NumericMod(-1); ok {
		t.Error("NumericMod(-1) ok, want unconstrained")
	}
}

func TestMap(t *testing.T) {
	base := func(name string) pgcatalog.SourceType {
		return pgcatalog.SourceType{Display: name, Name: name, Type: 'b', Mod: -1}
	}
	num := func(p, s int) pgcatalog.SourceType {
		return pgcatalog.SourceType{Display: "numeric", Name: "numeric", Type: 'b', Mod: numericMod(p, s)}
	}
	arr := func(elem pgcatalog.SourceType) pgcatalog.SourceType {
		return pgcatalog.SourceType{Display: elem.Display + "[]", Name: "_" + elem.Name, Type: 'b', Mod: -1, Elem: &elem}
	}
	enum := pgcatalog.SourceType{Display: "plan_tier", Name: "plan_tier", Type: 'e', Mod: -1}
	for _, tc := range []struct {
		in    pgcatalog.SourceType
		want  string // the catalog type; "" for refused
		local bool
		enum  bool
		err   string // part of the refusal
	}{
		{in: base("text"), want: "string"},
		{in: base("varchar"), want: "string"},
		{in: base("bpchar"), want: "string"},
		{in: base("int2"), want: "int64"},
		{in: base("int4"), want: "int64"},
		{in: base("int8"), want: "int64"},
		{in: base("float4"), want: "double"},
		{in: base("float8"), want: "double"},
		{in: base("bool"), want: "boolean"},
		{in: base("date"), want: "date"},
		{in: base("timestamptz"), want: "timestamp"},
		{in: base("timestamp"), want: "timestamp", local: true},
		{in: base("uuid"), want: "string"},
		{in: base("json"), want: "json"},
		{in: base("jsonb"), want: "json"},
		{in: base("inet"), want: "string"},
		{in: base("cidr"), want: "string"},
		{in: enum, want: "string", enum: true},
		{in: num(20, 10), want: "decimal(20,10)"},
		{in: num(38, 38), want: "decimal(38,38)"},
		{in: num(1, 0), want: "decimal(1,0)"},
		{in: num(39, 2), err: "precision 39 is wider than the 38 digits"},
		{in: num(5, -2), err: "negative scale (-2)"},
		{in: num(2, 5), err: "scale (5) larger than the precision"},
		{in: base("numeric"), err: "numeric without a precision"},
		{in: arr(base("text")), want: "json"},
		{in: arr(base("int4")), want: "json"},
		{in: arr(enum), want: "json", enum: true},
		{in: arr(base("jsonb")), err: "arrays of jsonb have no catalog type"},
		{in: base("interval"), err: "interval has no catalog type"},
		{in: base("bytea"), want: "binary"},
		{in: arr(base("bytea")), err: "arrays of bytea have no catalog type"},
	} {
		m, err := pgcatalog.Map(tc.in)
		if tc.want == "" {
			if err == nil || !errors.Is(err, pgcatalog.ErrUnmapped) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Map(%s) = %v, %v; want an ErrUnmapped containing %q", tc.in.Display, m.Type, err, tc.err)
			}
			continue
		}
		if err != nil || m.Type.String() != tc.want || m.LocalTime != tc.local || m.Enum != tc.enum {
			t.Errorf("Map(%s) = %+v, %v; want %s local=%v enum=%v", tc.in.Display, m, err, tc.want, tc.local, tc.enum)
		}
	}
}

func TestCheckColumn(t *testing.T) {
	num := func(p, s int) pgcatalog.SourceType {
		return pgcatalog.SourceType{Display: "numeric(x)", Name: "numeric", Type: 'b', Mod: numericMod(p, s)}
	}
	base := func(name string) pgcatalog.SourceType {
		return pgcatalog.SourceType{Display: name, Name: name, Type: 'b', Mod: -1}
	}
	col := func(ty string) dataset.Column {
		typ, err := dataset.ParseType(ty)
		if err != nil {
			t.Fatal(err)
		}
		return dataset.Column{Name: "c", Type: typ}
	}
	local := col("timestamp")
	local.SourceTimeZone = "Europe/Berlin"
	for _, tc := range []struct {
		name string
		c    dataset.Column
		in   pgcatalog.SourceType
		want pgcatalog.Severity
		msg  string
	}{
		{"same decimal", col("decimal(20,10)"), num(20, 10), "", ""},
		{"narrowing decimal", col("decimal(18,2)"), num(20, 10), pgcatalog.SeverityError, "does not fit the declared decimal(18,2)"},
		{"fewer integer digits", col("decimal(18,2)"), num(20, 2), pgcatalog.SeverityError, "does not fit"},
		{"widening decimal", col("decimal(18,2)"), num(10, 2), pgcatalog.SeverityWarning, "narrower than the declared"},
		{"computed numeric", col("decimal(18,2)"), base("numeric"), pgcatalog.SeverityWarning, "each value is checked"},
		{"int into string", col("string"), base("int4"), pgcatalog.SeverityError, "maps to int64, not the declared string"},
		{"text into int", col("int64"), base("text"), pgcatalog.SeverityError, "maps to string, not the declared int64"},
		{"text as json", col("json"), base("text"), pgcatalog.SeverityWarning, "checked as JSON"},
		{"local without zone", col("timestamp"), base("timestamp"), pgcatalog.SeverityError, "declare the zone"},
		{"local with zone", local, base("timestamp"), "", ""},
		{"zone on instants", local, base("timestamptz"), pgcatalog.SeverityError, "only for timestamp without time zone"},
		{"bytea", col("binary"), base("bytea"), "", ""},
		{"bytea into string", col("string"), base("bytea"), pgcatalog.SeverityError, "maps to binary, not the declared string"},
		{"text into binary", col("binary"), base("text"), pgcatalog.SeverityError, "maps to string, not the declared binary"},
		{"unmapped", col("string"), base("interval"), pgcatalog.SeverityError, "interval has no catalog type"},
	} {
		sev, msg := pgcatalog.CheckColumn(tc.c, tc.in)
		if sev != tc.want || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: CheckColumn = %q %q, want %q containing %q", tc.name, sev, msg, tc.want, tc.msg)
		}
	}
}
