package dataset_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
)

func TestListType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, err string }{
		{in: "list<int64>", want: "list<int64>"},
		{in: "list<decimal(20,10)>", want: "list<decimal(20,10)>"},
		{in: " list<timestamp> ", want: "list<timestamp>"},
		{in: "list<json>", err: "list element type json is not one of"},
		{in: "list<binary>", err: "list element type binary is not one of"},
		{in: "list<list<int64>>", err: "a list has one dimension"},
		{in: "list<decimal(40,2)>", err: "decimal precision 40"},
		{in: "list<int64", err: "a list is list<T>"},
		{in: "binary", want: "binary"},
	} {
		got, err := dataset.ParseType(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseType(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("ParseType(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// TestListAndBinaryRows: a NULL list, an empty list and a NULL element, and
// NULL and empty bytes, survive a batch as four and two different values.
func TestListAndBinaryRows(t *testing.T) {
	t.Parallel()
	lt, _ := dataset.ParseType("list<string>")
	ds := dataset.Dataset{Name: "l", Columns: []dataset.Column{
		{Name: "l", Type: lt, Nullable: true},
		{Name: "b", Type: dataset.Type{Kind: dataset.KindBinary}, Nullable: true},
	}}
	rows := [][]any{
		{nil, nil},
		{[]any{}, []byte{}},
		{[]any{nil}, []byte{0}},
		{[]any{"a", nil, ""}, []byte{0xff, 0}},
	}
	b := dataset.NewBatch(ds, 2) // the list's elements outgrow their capacity
	for _, r := range rows {
		if err := b.AppendRow(r); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range rows {
		if got := b.Row(i, nil); !reflect.DeepEqual(got, want) {
			t.Errorf("row %d: %#v, want %#v", i, got, want)
		}
	}
	if err := b.AppendRow([]any{[]any{int64(1)}, nil}); err == nil || !strings.Contains(err.Error(), "element 0") {
		t.Errorf("an int64 element in a list<string>: %v", err)
	}
	if b.Len() != len(rows) {
		t.Errorf("a refused row changed the batch: %d rows", b.Len())
	}
	var v dataset.Batch
	if got := b.View(1, 3, &v).Row(1, nil); !reflect.DeepEqual(got, rows[2]) {
		t.Errorf("view row 1: %#v, want %#v", got, rows[2])
	}
}
