package dataset

import (
	"encoding/json"
	"errors"
	"math"
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
	t.Parallel()
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
	t.Parallel()
	want := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for _, n := range []int64{want.Unix(), want.UnixMilli(), want.UnixMicro(), want.UnixNano()} {
		if got := ParseUnix(n); !got.Equal(want) {
			t.Errorf("ParseUnix(%d) = %s", n, got)
		}
	}
}

func TestCoerceBad(t *testing.T) {
	t.Parallel()
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
		{"json string not utf-8", 7, []byte("{\"a\":\"\xff\"}"), "attributes", "invalid json (or not valid UTF-8)"},
		{"json key not utf-8", 7, "{\"\xc3\":1}", "attributes", "not valid UTF-8"},
		{"NaN", 3, math.NaN(), "f", "NaN is not a number"},
		{"NaN text", 3, "NaN", "f", "NaN is not a number"},
		{"infinity", 3, math.Inf(1), "f", "infinity is not a number"},
		{"negative infinity text", 3, "-Infinity", "f", "infinity is not a number"},
		{"overflowing text", 3, "1e999", "f", "infinity is not a number"},
		{"float32 infinity", 3, float32(math.Inf(-1)), "f", "infinity is not a number"},
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

// TestCheckRowRefusesNonFinite: a row built in memory (not coerced) meets
// the same NaN policy when checked against the value model.
func TestCheckRowRefusesNonFinite(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		row := []any{civil.FromEpochDays(20785), at, int64(1), f, nil, true, "x", nil}
		if err := testDataset().CheckRow(row, 3); !errors.Is(err, ErrRowMismatch) || !strings.Contains(err.Error(), "column f") {
			t.Errorf("CheckRow with %v = %v", f, err)
		}
	}
}

// TestWindow: the partition column's value must lie in the day's window:
// [start, end) for instants, the day itself for a stat_date.
func TestWindow(t *testing.T) {
	t.Parallel()
	day := civil.MustParse("2026-11-28")
	zone := time.FixedZone("UTC+2", 2*3600)
	start, end := day.Start(zone), day.AddDays(1).Start(zone) // 2026-11-27T22:00Z .. 2026-11-28T22:00Z
	ev := Dataset{Name: "ev", PartitionColumn: "at", Columns: []Column{{Name: "id", Type: Type{Kind: KindString}}, {Name: "at", Type: Type{Kind: KindTimestamp}}}}
	st := Dataset{Name: "st", Partition: PartitionStatDate, PartitionColumn: "d", Columns: []Column{{Name: "d", Type: Type{Kind: KindDate}}}}
	inside := func(ds Dataset) any {
		if ds.Partition == PartitionStatDate {
			return day
		}
		return start
	}
	for _, tc := range []struct {
		name string
		ds   Dataset
		v    any
		want string // "" : in the window
	}{
		{"first instant", ev, start, ""},
		{"last microsecond", ev, end.Add(-time.Microsecond), ""},
		{"the end is outside", ev, end, `column at: outside the partition's day 2026-11-28 [2026-11-27T22:00:00.000000Z, 2026-11-28T22:00:00.000000Z) (value "2026-11-28T22:00:00.000000Z"`},
		{"before the start", ev, start.Add(-time.Second), `value "2026-11-27T21:59:59.000000Z"`},
		{"the day", st, day, ""},
		{"another day", st, day.AddDays(-1), `column d: dated outside the partition's day 2026-11-28 (value "2026-11-27"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := tc.ds.Window(day, start, end)
			if err != nil {
				t.Fatal(err)
			}
			// Row 12 of the partition is the second row of a batch whose
			// first row is in the window.
			b := NewBatch(tc.ds, 4)
			b.Reset(11)
			for _, v := range []any{inside(tc.ds), tc.v} {
				row := make([]any, len(tc.ds.Columns))
				for i, c := range tc.ds.Columns {
					row[i] = map[Kind]any{KindString: "x", KindTimestamp: v, KindDate: v}[c.Type.Kind]
				}
				if err := b.AppendRow(row); err != nil {
					t.Fatal(err)
				}
			}
			err = w.CheckBatch(b)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrRowMismatch) || !strings.Contains(err.Error(), "row 12") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want it to name row 12 and %q", err, tc.want)
			}
		})
	}
	if _, err := (Dataset{Name: "x", PartitionColumn: "nope"}).Window(day, start, end); err == nil {
		t.Error("Window of a dataset without its partition column")
	}
}
