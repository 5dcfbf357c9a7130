package dataset

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

func testDataset() Dataset {
	return Dataset{Name: "t", Columns: []Column{
		{Name: "day", Type: Type{Kind: KindDate}},
		{Name: "at", Type: Type{Kind: KindTimestamp}},
		{Name: "n", Type: Type{Kind: KindInt64}},
		{Name: "f", Type: Type{Kind: KindDouble}, Nullable: true},
		{Name: "amt", Type: DecimalType(18, 2), Nullable: true},
		{Name: "ok", Type: Type{Kind: KindBoolean}},
		{Name: "s", Type: Type{Kind: KindString}},
		{Name: "attributes", Type: Type{Kind: KindJSON}, Nullable: true},
	}}
}

func TestCoerceGood(t *testing.T) {
	at := time.Date(2026, 11, 28, 10, 0, 0, 123456000, time.UTC)
	want := []any{civil.FromEpochDays(20785), at, int64(42), 1.5, NewDecimal(1234, 2), true, "héllo", json.RawMessage(`{"a":1}`)}
	tests := []struct {
		name string
		row  []any
	}{
		{"model types", []any{civil.FromEpochDays(20785), at, int64(42), 1.5, NewDecimal(1234, 2), true, "héllo", json.RawMessage(`{"a":1}`)}},
		{"sqlite text", []any{"2026-11-28", "2026-11-28T10:00:00.123456Z", "42", "1.5", "12.34", "true", []byte("héllo"), `{"a":1}`}},
		{"sqlite numbers", []any{"2026-11-28", "2026-11-28 10:00:00.123456", int64(42), 1.5, 12.34, int64(1), "héllo", []byte(`{"a":1}`)}},
		{"offset and unix micros", []any{time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), "2026-11-28T11:00:00.123456+01:00", 42.0, 1.5, "12.340", "1", "héllo", `{"a":1}`}},
		{"unix micros int", []any{"2026-11-28 00:00:00", at.UnixMicro(), int64(42), float32(1.5), NewDecimal(12340, 3), "t", "héllo", `{"a":1}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := append([]any(nil), tt.row...)
			if err := testDataset().Coerce(row, 1); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if !equalValue(row[i], want[i]) {
					t.Errorf("column %d: got %#v, want %#v", i, row[i], want[i])
				}
			}
			if err := testDataset().CheckRow(row, 1); err != nil {
				t.Fatal(err)
			}
		})
	}
	nulls := []any{"2026-11-28", at, int64(1), nil, nil, false, "", nil}
	if err := testDataset().Coerce(nulls, 1); err != nil {
		t.Fatal(err)
	}
}

func equalValue(a, b any) bool {
	switch x := a.(type) {
	case Decimal:
		y, ok := b.(Decimal)
		return ok && x.Equal(y)
	case json.RawMessage:
		y, ok := b.(json.RawMessage)
		return ok && string(x) == string(y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y) && x.Location() == time.UTC
	}
	return a == b
}

func TestUnixUnits(t *testing.T) {
	want := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for _, n := range []int64{want.Unix(), want.UnixMilli(), want.UnixMicro(), want.UnixNano()} {
		if got := ParseUnix(n); !got.Equal(want) {
			t.Errorf("ParseUnix(%d) = %s", n, got)
		}
	}
}

func TestCoerceBad(t *testing.T) {
	good := func() []any {
		return []any{"2026-11-28", "2026-11-28T10:00:00Z", int64(1), 1.0, "1.00", int64(0), "x", "{}"}
	}
	tests := []struct {
		name   string
		col    int
		value  any
		column string
		reason string
	}{
		{"null required", 2, nil, "n", "null in required column"},
		{"wrong type", 2, true, "n", "wrong type, want int64"},
		{"unparsable int", 2, "12a", "n", "unparsable int64"},
		{"fractional int", 2, 1.5, "n", "not an integer"},
		{"unparsable date", 0, "28/11/2026", "day", "unparsable date"},
		{"date with time of day", 0, "2026-11-28 10:00:00", "day", "unparsable date"},
		{"unparsable timestamp", 1, "yesterday", "at", "unparsable timestamp"},
		{"decimal too precise", 4, "1.234", "amt", "unparsable decimal"},
		{"decimal too wide", 4, "12345678901234567.00", "amt", "exceeds precision 18"},
		{"decimal from float too precise", 4, 0.125, "amt", "more fractional digits"},
		{"boolean out of range", 5, int64(2), "ok", "boolean must be 0 or 1"},
		{"invalid utf8", 6, []byte{0xff}, "s", "not valid UTF-8"},
		{"invalid json", 7, `{"a":`, "attributes", "invalid json"},
		{"json wrong type", 7, int64(3), "attributes", "want json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := good()
			row[tt.col] = tt.value
			err := testDataset().Coerce(row, 7)
			var re *RowError
			if !errors.As(err, &re) || !errors.Is(err, ErrRowMismatch) {
				t.Fatalf("want RowError, got %v", err)
			}
			msg := err.Error()
			for _, s := range []string{"dataset t", "row 7", "column " + tt.column, tt.reason} {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q lacks %q", msg, s)
				}
			}
			if re.Column != tt.column || re.Row != 7 {
				t.Errorf("RowError = %+v", re)
			}
		})
	}
	t.Run("column count", func(t *testing.T) {
		err := testDataset().Coerce(good()[:3], 9)
		if !errors.Is(err, ErrRowMismatch) || !strings.Contains(err.Error(), "got 3 columns, want 8") || !strings.Contains(err.Error(), "row 9") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("value is quoted and bounded", func(t *testing.T) {
		row := good()
		row[2] = strings.Repeat("9", 500) + "x"
		err := testDataset().Coerce(row, 1)
		if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), `"999`) {
			t.Fatalf("got %v", err)
		}
	})
}
