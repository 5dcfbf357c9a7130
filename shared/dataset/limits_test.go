package dataset

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

// TestValueLimits: through the coercion path (database/sql's
// AppendCoerced), a string holds up to MaxStringBytes and no NUL, a json
// value up to MaxJSONBytes (the escape \u0000 is JSON and kept); beyond is a
// bad row naming the column, the row and the limit, and the batch is left
// as it was.
func TestValueLimits(t *testing.T) {
	t.Parallel()
	ds := testDataset() // column 6 is the string s, 7 the json attributes
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	good := func() []any { return []any{civil.FromEpochDays(20785), at, int64(1), nil, nil, true, "s", nil} }
	jsonOf := func(n int) string { return `"` + strings.Repeat("j", n-2) + `"` } // n bytes of JSON
	for _, tt := range []struct {
		name string
		col  int
		v    any
		want string // "" : accepted
	}{
		{"string at the limit", 6, strings.Repeat("s", MaxStringBytes), ""},
		{"string past the limit", 6, strings.Repeat("s", MaxStringBytes+1), "column s: string of 65536 bytes is longer than the 65535 bytes a string may hold"},
		{"string past the limit as bytes", 6, []byte(strings.Repeat("s", MaxStringBytes+1)), "column s: string of 65536 bytes"},
		{"string with a NUL", 6, "a\x00b", "column s: string contains a NUL character (U+0000)"},
		{"json at the limit", 7, jsonOf(MaxJSONBytes), ""},
		{"json past the limit", 7, jsonOf(MaxJSONBytes + 1), "column attributes: json of 16777217 bytes is longer than the 16777216 bytes a json value may hold"},
		{"json with an escaped NUL", 7, `{"k":"a\u0000b"}`, ""},
		{"json with a raw NUL", 7, "{\"k\":\"a\x00b\"}", "column attributes: invalid json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBatch(ds, 8)
			b.Reset(100)
			if err := b.AppendRow(good()); err != nil {
				t.Fatal(err)
			}
			row := good()
			row[tt.col] = tt.v
			err := b.AppendCoerced(row)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if b.Len() != 2 {
					t.Fatalf("%d rows, want 2", b.Len())
				}
				return
			}
			var re *RowError
			if !errors.As(err, &re) || re.Row != 101 || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrRowMismatch) {
				t.Fatalf("got %v, want row 101 and %q", err, tt.want)
			}
			if len(err.Error()) > 400 {
				t.Errorf("the error carries the value: %d bytes", len(err.Error()))
			}
			if b.Len() != 1 {
				t.Errorf("%d rows after a refused one, want 1", b.Len())
			}
		})
	}
}
