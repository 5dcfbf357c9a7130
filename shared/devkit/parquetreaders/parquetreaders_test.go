package parquetreaders

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// TestJSReaderMissing checks that a machine without node or without the
// pinned npm packages gets an error that says how to install them.
func TestJSReaderMissing(t *testing.T) {
	dir, err := JSDir()
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T) string // returns the reader directory
		want  string
	}{
		{"no node on PATH", func(t *testing.T) string {
			t.Setenv("PATH", t.TempDir())
			return dir
		}, "node not found on PATH"},
		{"packages not installed", func(t *testing.T) string {
			d := t.TempDir()
			if err := os.WriteFile(filepath.Join(d, "package-lock.json"), lock, 0o644); err != nil {
				t.Fatal(err)
			}
			return d
		}, "is not installed"},
		{"other version installed", func(t *testing.T) string {
			d := t.TempDir()
			if err := os.WriteFile(filepath.Join(d, "package-lock.json"), lock, 0o644); err != nil {
				t.Fatal(err)
			}
			pkg := filepath.Join(d, "node_modules", "hyparquet")
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"version":"0.0.1"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			return d
		}, "is not installed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readJS(tt.setup(t), []string{"unused.parquet"})
			if !errors.Is(err, ErrJSReaderMissing) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), JSInstallHint) {
				t.Fatalf("got %v, want %q and the install hint", err, tt.want)
			}
		})
	}
}

func TestIncompatibilities(t *testing.T) {
	v1 := func(enc, levels string) Page { return Page{Type: "DATA_PAGE", Encoding: enc, LevelEncoding: levels} }
	dict := Page{Type: "DICTIONARY_PAGE", Encoding: "PLAIN"}
	tests := []struct {
		name  string
		chunk Chunk
		want  int
	}{
		{"plain", Chunk{Encodings: []string{"PLAIN", "RLE"}, Pages: []Page{v1("PLAIN", "RLE")}}, 0},
		{"dictionary with fallback", Chunk{Encodings: []string{"PLAIN", "RLE_DICTIONARY"}, Pages: []Page{dict, v1("RLE_DICTIONARY", "RLE"), v1("PLAIN", "RLE")}}, 0},
		{"legacy dictionary, bit-packed levels", Chunk{Encodings: []string{"PLAIN_DICTIONARY", "BIT_PACKED"}, Pages: []Page{dict, v1("PLAIN_DICTIONARY", "BIT_PACKED")}}, 0},
		{"version 2 page", Chunk{Encodings: []string{"PLAIN"}, Pages: []Page{{Type: "DATA_PAGE_V2", Encoding: "PLAIN"}}}, 1},
		{"delta in a version 1 page", Chunk{Encodings: []string{"DELTA_BINARY_PACKED"}, Pages: []Page{v1("DELTA_BINARY_PACKED", "RLE")}}, 2},
		{"delta strings listed only in the chunk", Chunk{Encodings: []string{"DELTA_LENGTH_BYTE_ARRAY"}, Pages: []Page{v1("PLAIN", "RLE")}}, 1},
		{"byte stream split", Chunk{Encodings: []string{"PLAIN"}, Pages: []Page{v1("BYTE_STREAM_SPLIT", "RLE")}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Incompatibilities([]Chunk{tt.chunk}); len(got) != tt.want {
				t.Fatalf("got %q, want %d findings", got, tt.want)
			}
		})
	}
}

func TestDuckLogical(t *testing.T) {
	tests := []struct {
		in       string
		prec, sc int64
		want     string
	}{
		{"", 0, 0, ""},
		{"StringType()", 0, 0, "STRING"},
		{"JsonType()", 0, 0, "JSON"},
		{"DateType()", 0, 0, "DATE"},
		{"DecimalType(scale=2, precision=18)", 18, 2, "DECIMAL(18,2)"},
		{"TimestampType(isAdjustedToUTC=1, unit=TimeUnit(MILLIS=<null>, MICROS=MicroSeconds(), NANOS=<null>))", 0, 0, "TIMESTAMP(MICROS,UTC)"},
		{"TimestampType(isAdjustedToUTC=0, unit=TimeUnit(MILLIS=MilliSeconds(), MICROS=<null>, NANOS=<null>))", 0, 0, "TIMESTAMP(MILLIS,LOCAL)"},
		{"IntType(bitWidth=@, isSigned=1)", 0, 0, "INTEGER(64,signed)"},
		{"IntType(bitWidth= , isSigned=0)", 0, 0, "INTEGER(32,unsigned)"},
		{"ListType()", 0, 0, "LIST"},
		{"UUIDType()", 0, 0, "other:UUIDType()"},
	}
	for _, tt := range tests {
		if got := duckLogical(tt.in, tt.prec, tt.sc); got != tt.want {
			t.Errorf("duckLogical(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCanonical(t *testing.T) {
	big38, _ := dataset.ParseDecimal("-99999999999999999999999999999999999999", 0)
	tests := []struct {
		in   any
		want Value
	}{
		{nil, Null},
		{civil.FromEpochDays(-719162), Text("-719162")},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), Text("-62135596800000000")},
		{time.Date(2026, 11, 28, 10, 0, 0, 123456000, time.FixedZone("X", 3600)), Text("1795856400123456")},
		{int64(math.MinInt64), Text("-9223372036854775808")},
		{math.Copysign(0, -1), Text("-0")},
		{math.NaN(), Text("NaN")},
		{math.Inf(1), Text("+Inf")},
		{1e21, Text("1e+21")},
		{dataset.NewDecimal(-5, 2), Text("-0.05")},
		{big38, Text("-99999999999999999999999999999999999999")},
		{true, Text("true")},
		{"", Text("")},
		{json.RawMessage(`{"a": 1}`), Text(`{"a": 1}`)},
		{[]any{}, Text(`[]`)},
		{[]any{nil}, Text(`[null]`)},
		{[]any{int64(1), int64(-2), nil}, Text(`["1","-2",null]`)},
		{[]any{"a \"q\"", "", nil, "é"}, Text(`["a \"q\"","",null,"é"]`)},
		{[]any{dataset.NewDecimal(-5, 2), civil.FromEpochDays(-1), math.Copysign(0, -1), false}, Text(`["-0.05","-1","-0","false"]`)},
	}
	for _, tt := range tests {
		if got := Canonical(tt.in); got != tt.want {
			t.Errorf("Canonical(%#v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestWantColumnsList(t *testing.T) {
	ds := dataset.Dataset{Columns: []dataset.Column{
		{Name: "prices", Type: dataset.ListType(dataset.DecimalType(9, 2)), Nullable: true},
		{Name: "flags", Type: dataset.ListType(dataset.Type{Kind: dataset.KindBoolean})},
	}}
	want := []Column{
		{Name: "prices", Physical: "INT32", Logical: "LIST of DECIMAL(9,2)", Repetition: "OPTIONAL"},
		{Name: "flags", Physical: "BOOLEAN", Logical: "LIST of BOOLEAN", Repetition: "REQUIRED"},
	}
	got := WantColumns(ds)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("column %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestWantColumnsDecimalStorage(t *testing.T) {
	tests := []struct {
		precision int
		want      string
	}{
		{1, "INT32"}, {9, "INT32"}, {10, "INT64"}, {18, "INT64"},
		{19, "FIXED_LEN_BYTE_ARRAY(9)"}, {38, "FIXED_LEN_BYTE_ARRAY(16)"},
	}
	for _, tt := range tests {
		ds := dataset.Dataset{Columns: []dataset.Column{{Name: "d", Type: dataset.DecimalType(tt.precision, 0)}}}
		if got := WantColumns(ds)[0].Physical; got != tt.want {
			t.Errorf("decimal(%d,0): %s, want %s", tt.precision, got, tt.want)
		}
	}
}

// TestNDJSONValue: the NDJSON form of each type (docs/types.md), as
// JSON.stringify prints it, reads as the canonical text of the value.
func TestNDJSONValue(t *testing.T) {
	ty := func(s string) dataset.Type {
		t.Helper()
		x, err := dataset.ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, tc := range []struct {
		typ, raw string
		want     Value
	}{
		{"string", `"a\"b"`, Text(`a"b`)},
		{"int64", `-12`, Text("-12")},
		{"double", `0.25`, Text("0.25")},
		{"double", `1e+21`, Text("1e+21")},
		{"decimal(18,2)", `"-0.05"`, Text("-0.05")},
		{"boolean", `true`, Text("true")},
		{"date", `"1969-12-31"`, Text("-1")},
		{"timestamp", `"2026-11-28T00:00:00.000001Z"`, Canonical(time.Date(2026, 11, 28, 0, 0, 0, 1000, time.UTC))},
		{"json", `{"a":[1,null]}`, Text(`{"a":[1,null]}`)},
		{"binary", `"AAH/"`, Text("0001ff")},
		{"list<int64>", `[1,null,-2]`, Text(`["1",null,"-2"]`)},
		{"string", `null`, Null},
	} {
		got, err := ndjsonValue(ty(tc.typ), json.RawMessage(tc.raw))
		if err != nil || got != tc.want {
			t.Errorf("%s %s: %v, %v; want %v", tc.typ, tc.raw, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ typ, raw string }{{"int64", `1.5`}, {"date", `"28/11/2026"`}, {"timestamp", `12`}, {"boolean", `"true"`}} {
		if got, err := ndjsonValue(ty(tc.typ), json.RawMessage(tc.raw)); err == nil {
			t.Errorf("%s %s: read %v, want an error", tc.typ, tc.raw, got)
		}
	}
}
