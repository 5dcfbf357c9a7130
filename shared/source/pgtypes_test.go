package source

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/daybook-dev/daybook/shared/dataset"
)

func vectorOf(t testing.TB, typ string, zone string) *dataset.Vector {
	t.Helper()
	ty, err := dataset.ParseType(typ)
	if err != nil {
		t.Fatal(err)
	}
	ds := dataset.Dataset{Name: "t", Version: 1, Columns: []dataset.Column{{Name: "c", Type: ty, SourceTimeZone: zone}}}
	return &dataset.NewBatch(ds, 64).Cols[0]
}

func pgBinary(t testing.TB, oid uint32, v any) []byte {
	t.Helper()
	b, err := pgtype.NewMap().Encode(oid, pgtype.BinaryFormatCode, v, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func numericBinary(t testing.TB, s string) []byte {
	t.Helper()
	var n pgtype.Numeric
	if err := n.Scan(s); err != nil {
		t.Fatal(err)
	}
	return pgBinary(t, pgtype.NumericOID, n)
}

// TestNumericWide: the binary decode of a decimal above 18 digits gives
// the text path's value, or its refusal, for every value.
func TestNumericWide(t *testing.T) {
	for _, tc := range []struct{ typ, value string }{
		{"decimal(20,10)", "1234567890.0123456789"},
		{"decimal(20,10)", "-9999999999.9999999999"},
		{"decimal(20,10)", "0.0000000001"},
		{"decimal(20,10)", "-0.0000000001"},
		{"decimal(20,10)", "0"},
		{"decimal(20,10)", "12345678901"},                           // 11 integer digits: exceeds
		{"decimal(20,10)", "1.00000000001"},                         // past the scale
		{"decimal(20,10)", "1.00000000000000"},                      // trailing zeros past the scale are fine
		{"decimal(38,0)", "99999999999999999999999999999999999999"}, // the widest
		{"decimal(38,0)", "-99999999999999999999999999999999999999"},
		{"decimal(38,0)", "100000000000000000000000000000000000000"}, // 39 digits
		{"decimal(38,0)", "1" + strings.Repeat("0", 60)},
		{"decimal(38,38)", "0.12345678901234567890123456789012345678"},
		{"decimal(38,38)", "-0.00000000000000000000000000000000000001"},
		{"decimal(38,10)", "123456789012345678.5"},
		{"decimal(25,3)", "0.001"},
		{"decimal(25,3)", "0.0001"},
		{"decimal(25,3)", "-420000000000000000000"},
		{"decimal(19,1)", "NaN"},
		{"decimal(19,1)", "Infinity"},
		{"decimal(19,1)", "-Infinity"},
	} {
		bin := numericBinary(t, tc.value)
		wide := vectorOf(t, tc.typ, "")
		text := vectorOf(t, tc.typ, "")
		col := pgColumn{dec: pgNumericWide}
		gotReason := col.decode(wide, bin)
		var n pgtype.Numeric
		_ = n.Scan(tc.value)
		txt, _ := n.MarshalJSON() // PostgreSQL's text form, as the text path gets it
		txt = bytes.Trim(txt, `"`)
		wantReason := text.AppendCoerced(string(txt))
		if gotReason != wantReason {
			t.Errorf("%s %s: binary reason %q, text reason %q", tc.typ, tc.value, gotReason, wantReason)
			continue
		}
		if gotReason == "" && !bytes.Equal(wide.Bytes, text.Bytes) {
			t.Errorf("%s %s: binary %x, text %x (%s)", tc.typ, tc.value, wide.Bytes, text.Bytes, text.Decimal(0))
		}
	}
}

// TestDecodeAllocs: the decoders of the new source types allocate nothing
// per value once the vector has grown.
func TestDecodeAllocs(t *testing.T) {
	berlin := vectorOf(t, "timestamp", "Europe/Berlin")
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		vec  *dataset.Vector
		col  pgColumn
		v    []byte
	}{
		{"timestamp in a zone", berlin, pgColumn{dec: pgTimestampLocal, loc: loc}, pgBinary(t, pgtype.TimestampOID, time.Date(2026, 3, 5, 1, 0, 0, 0, time.UTC))},
		{"uuid", vectorOf(t, "string", ""), pgColumn{dec: pgUUID}, pgBinary(t, pgtype.UUIDOID, [16]byte{0x0b, 0x9c, 0x1f, 0x4e, 0x5a, 0x3d, 0x4c, 0x2b, 0x9e, 0x8f, 0x7a, 0x6b, 0x5c, 0x4d, 0x3e, 0x2f})},
		{"inet as text", vectorOf(t, "string", ""), pgColumn{dec: pgStringText}, []byte("2001:db8::1/64")},
		{"text[]", vectorOf(t, "json", ""), pgColumn{dec: pgArrayJSON, elem: "text"}, pgBinary(t, pgtype.TextArrayOID, []string{"a", "b c", `q"d`})},
		{"int4[]", vectorOf(t, "json", ""), pgColumn{dec: pgArrayJSON, elem: "int4"}, pgBinary(t, pgtype.Int4ArrayOID, []int32{1, -2, 3})},
		{"numeric(20,10)", vectorOf(t, "decimal(20,10)", ""), pgColumn{dec: pgNumericWide}, numericBinary(t, "1234567890.0123456789")},
	} {
		// Grow the vector and the column's buffer first.
		for range 64 {
			if reason := tc.col.decode(tc.vec, tc.v); reason != "" {
				t.Fatalf("%s: %s", tc.name, reason)
			}
		}
		allocs := testing.AllocsPerRun(100, func() {
			tc.vec.Bytes, tc.vec.Int64 = tc.vec.Bytes[:0], tc.vec.Int64[:0]
			if tc.vec.Offsets != nil {
				tc.vec.Offsets = tc.vec.Offsets[:1]
			}
			for range 32 {
				tc.col.decode(tc.vec, tc.v)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per 32 values, want 0", tc.name, allocs)
		}
	}
	want := []string{`["a","b c","q\"d"]`}
	vec := vectorOf(t, "json", "")
	col := pgColumn{dec: pgArrayJSON, elem: "text"}
	if r := col.decode(vec, pgBinary(t, pgtype.TextArrayOID, []string{"a", "b c", `q"d`})); r != "" || string(vec.BytesAt(0)) != want[0] {
		t.Errorf("text[] as JSON: %q %s", r, vec.BytesAt(0))
	}
	if got := time.UnixMicro(berlin.Int64[0]).UTC(); !got.Equal(time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("01:00 in Berlin read as %s, want midnight UTC", got)
	}
}

// TestSourceTimeZoneNeedsPostgres: a column declaring source_time_zone is
// refused by the database/sql path (SQLite here), which could only read
// its text as UTC, before any row.
func TestSourceTimeZoneNeedsPostgres(t *testing.T) {
	db := openDB(t)
	insertEvent(t, db, acct, "e1", "2026-11-28T10:00:00.000000Z")
	ds := mustDataset(t, "events")
	for i := range ds.Columns {
		if ds.Columns[i].Name == "received_at" {
			ds.Columns[i].SourceTimeZone = "Europe/Berlin"
		}
	}
	src, err := NewSQL(db, dataset.DialectSQLite, "sqlite:demo.db")
	if err != nil {
		t.Fatal(err)
	}
	called := false
	_, err = src.Batches(t.Context(), dayQuery(ds, acct, time.UTC), func(*dataset.Batch) error { called = true; return nil })
	var te *dataset.TypeError
	if !errors.As(err, &te) || te.Column != "received_at" || called {
		t.Errorf("Batches = %v (rows handed on: %v), want a type error naming received_at and no rows", err, called)
	}
}

// BenchmarkDecimalWide compares the binary decode of a numeric(20,10)
// value with the text path it replaces.
//
//	go test ./shared/source -run '^$' -bench DecimalWide -benchmem
func BenchmarkDecimalWide(b *testing.B) {
	bin := numericBinary(b, "1234567890.0123456789")
	for _, tc := range []struct {
		name string
		col  pgColumn
		v    []byte
	}{
		{"binary", pgColumn{dec: pgNumericWide}, bin},
		{"text", pgColumn{dec: pgAsText}, []byte("1234567890.0123456789")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			vec := vectorOf(b, "decimal(20,10)", "")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%64 == 0 {
					vec.Bytes, vec.Offsets = vec.Bytes[:0], vec.Offsets[:1]
				}
				if r := tc.col.decode(vec, tc.v); r != "" {
					b.Fatal(r)
				}
			}
		})
	}
}

// TestArrayJSON: arrays of every element kind become JSON arrays, nested
// for more dimensions, NULL elements as null; a bad element is refused.
func TestArrayJSON(t *testing.T) {
	m := pgtype.NewMap()
	enc := func(oid uint32, v any) []byte {
		b, err := m.Encode(oid, pgtype.BinaryFormatCode, v, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name, elem string
		v          []byte
		want       string
		reason     string
	}{
		{"int8", "int8", enc(pgtype.Int8ArrayOID, []int64{-9223372036854775808, 0, 9223372036854775807}), `[-9223372036854775808,0,9223372036854775807]`, ""},
		{"int2 with null", "int2", enc(pgtype.Int2ArrayOID, []*int16{ptr(int16(-1)), nil}), `[-1,null]`, ""},
		{"2-D int4", "int4", enc(pgtype.Int4ArrayOID, [][]int32{{1, 2}, {3, 4}}), `[[1,2],[3,4]]`, ""},
		{"bool", "bool", enc(pgtype.BoolArrayOID, []bool{true, false}), `[true,false]`, ""},
		{"float4", "float4", enc(pgtype.Float4ArrayOID, []float32{0.1, -2.5}), `[0.1,-2.5]`, ""},
		{"float8", "float8", enc(pgtype.Float8ArrayOID, []float64{1e300, 0.1}), `[1e+300,0.1]`, ""},
		{"text escapes", "text", enc(pgtype.TextArrayOID, []string{"tab\there", "line\nbreak", `back\slash`, "\x01"}), `["tab\there","line\nbreak","back\\slash","\u0001"]`, ""},
		{"empty", "text", enc(pgtype.TextArrayOID, []string{}), `[]`, ""},
		{"uuid", "uuid", enc(pgtype.UUIDArrayOID, [][16]byte{{0xff, 1}}), `["ff010000-0000-0000-0000-000000000000"]`, ""},
		{"NaN", "float8", enc(pgtype.Float8ArrayOID, []float64{math.NaN()}), "", "array element: NaN is not a number"},
		{"truncated", "int4", enc(pgtype.Int4ArrayOID, []int32{1, 2})[:20], "", errLength},
	} {
		vec := vectorOf(t, "json", "")
		col := pgColumn{dec: pgArrayJSON, elem: tc.elem}
		r := col.decode(vec, tc.v)
		if tc.reason != "" {
			if !strings.HasPrefix(r, tc.reason) || len(vec.Offsets) != 1 {
				t.Errorf("%s: reason %q, want %q and nothing appended", tc.name, r, tc.reason)
			}
			continue
		}
		if r != "" || string(vec.BytesAt(0)) != tc.want {
			t.Errorf("%s: %q %s, want %s", tc.name, r, vec.BytesAt(0), tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
