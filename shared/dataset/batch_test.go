package dataset

import (
	"encoding/json"
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

func TestBatchRoundTrip(t *testing.T) {
	t.Parallel()
	ds := testDataset()
	ds.Columns = append(ds.Columns, Column{Name: "wide", Type: DecimalType(38, 4), Nullable: true})
	wide, _ := new(big.Int).SetString("-1234567890123456789012345678901234", 10)
	at := time.Date(2026, 11, 28, 10, 0, 0, 123456000, time.UTC)
	rows := [][]any{
		{civil.FromEpochDays(20785), at, int64(42), 1.5, NewDecimal(1234, 2), true, "héllo", json.RawMessage(`{"a":1}`), NewDecimalBig(wide, 4)},
		{civil.FromEpochDays(-1), at.Add(time.Microsecond), int64(-7), nil, nil, false, "", nil, nil},
	}
	b := NewBatch(ds, 4)
	b.Reset(11)
	for _, r := range rows {
		if err := b.AppendRow(r); err != nil {
			t.Fatal(err)
		}
	}
	if b.Len() != 2 || b.Full() || b.RowNum(1) != 12 {
		t.Fatalf("len %d full %v row %d", b.Len(), b.Full(), b.RowNum(1))
	}
	for i, want := range rows {
		got := b.Row(i, nil)
		for c := range want {
			if d, ok := want[c].(Decimal); ok {
				if g, ok := got[c].(Decimal); !ok || !g.Equal(d) {
					t.Errorf("row %d column %d: %v, want %v", i, c, got[c], d)
				}
				continue
			}
			if !reflect.DeepEqual(got[c], want[c]) {
				t.Errorf("row %d column %d: %#v, want %#v", i, c, got[c], want[c])
			}
		}
	}
	b.Reset(13)
	if b.Len() != 0 || len(b.Cols[6].Bytes) != 0 || len(b.Cols[6].Offsets) != 1 {
		t.Fatalf("reset left %d rows, %d bytes", b.Len(), len(b.Cols[6].Bytes))
	}
}

func TestBatchAppendErrors(t *testing.T) {
	t.Parallel()
	ds := testDataset()
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	good := func() []any {
		return []any{civil.FromEpochDays(20785), at, int64(1), nil, nil, true, "s", nil}
	}
	tests := []struct {
		name    string
		coerced bool // AppendCoerced, else AppendRow
		col     int
		v       any
		want    string
	}{
		{"model: wrong type", false, 2, "1", "column n: want int64 value, got string"},
		{"model: null in required", false, 6, nil, "column s: null in required column"},
		{"model: decimal beyond precision", false, 4, NewDecimal(1e18, 2), "column amt: decimal does not fit decimal(18,2)"},
		{"coerced: unparsable", true, 1, "yesterday", "column at: unparsable timestamp"},
		{"coerced: invalid json", true, 7, `{"a":`, "column attributes: invalid json"},
		{"coerced: invalid utf-8", true, 6, "\xff", "column s: string is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBatch(ds, 8)
			b.Reset(100)
			if err := b.AppendRow(good()); err != nil {
				t.Fatal(err)
			}
			row := good()
			row[tt.col] = tt.v
			var err error
			if tt.coerced {
				err = b.AppendCoerced(row)
			} else {
				err = b.AppendRow(row)
			}
			var re *RowError
			if !errors.As(err, &re) || re.Row != 101 || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want row 101 and %q", err, tt.want)
			}
			// The refused row left nothing behind: the next one lines up.
			if err := b.AppendRow(good()); err != nil {
				t.Fatal(err)
			}
			for i := range b.Cols {
				v := &b.Cols[i]
				n := len(v.Int32) + len(v.Int64) + len(v.Double) + len(v.Bool) + max(0, len(v.Offsets)-1)
				if n != 2 || (v.Null != nil && len(v.Null) != 2) {
					t.Errorf("column %s holds %d values after a refused row", v.Column.Name, n)
				}
			}
		})
	}
}

func TestBatchFull(t *testing.T) {
	t.Parallel()
	ds := Dataset{Name: "j", Columns: []Column{{Name: "attributes", Type: Type{Kind: KindJSON}}}}
	b := NewBatch(ds, 1000)
	big := json.RawMessage(`"` + strings.Repeat("x", MaxBatchBytes/2) + `"`)
	for i := 0; !b.Full(); i++ {
		if i > 2 {
			t.Fatal("a batch past MaxBatchBytes is not full")
		}
		if err := b.AppendRow([]any{big}); err != nil {
			t.Fatal(err)
		}
	}
	if b.Len() != 2 {
		t.Fatalf("full after %d rows, want 2", b.Len())
	}
}

func TestBatchView(t *testing.T) {
	t.Parallel()
	ds := testDataset()
	b := NewBatch(ds, 8)
	b.Reset(1)
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	var rows [][]any
	for i := range 5 {
		r := []any{civil.FromEpochDays(int32(i)), at, int64(i), nil, NewDecimal(int64(i), 2), i%2 == 0, strings.Repeat("s", i), json.RawMessage(`[` + strings.Repeat("1,", i) + `1]`)}
		if i%2 == 1 {
			r[3] = float64(i)
		}
		rows = append(rows, r)
		if err := b.AppendRow(r); err != nil {
			t.Fatal(err)
		}
	}
	var view Batch
	for _, r := range [][2]int{{0, 5}, {1, 3}, {4, 5}, {2, 2}} {
		v := b.View(r[0], r[1], &view)
		if v.Len() != r[1]-r[0] || (v.Len() > 0 && v.RowNum(0) != int64(r[0])+1) {
			t.Fatalf("view %v: len %d first %d", r, v.Len(), v.FirstRow)
		}
		for i := range v.Len() {
			got, want := v.Row(i, nil), b.Row(r[0]+i, nil)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("view %v row %d: %v, want %v", r, i, got, want)
			}
		}
	}
}
