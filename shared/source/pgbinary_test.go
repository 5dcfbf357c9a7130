package source

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// TestNumericUnscaled decodes PostgreSQL's binary numeric into the unscaled
// value of a decimal column, refusing what the text path refuses.
func TestNumericUnscaled(t *testing.T) {
	dec := dataset.DecimalType(18, 2)
	tests := []struct {
		text   string
		t      dataset.Type
		want   int64
		reason string
	}{
		{"0", dec, 0, ""},
		{"12.3", dec, 1230, ""},
		{"-0.05", dec, -5, ""},
		{"1.50", dec, 150, ""},
		{"10000", dec, 1000000, ""},
		{"9999999999999999.99", dec, 999999999999999999, ""},
		{"-9999999999999999.99", dec, -999999999999999999, ""},
		{"0.0001", dataset.DecimalType(9, 4), 1, ""},
		{"123456789.12", dec, 12345678912, ""},
		{"12.340000", dec, 1234, ""},
		{"12.345", dec, 0, "unparsable decimal at scale 2"},
		{"0.00001", dec, 0, "unparsable decimal at scale 2"},
		{"NaN", dec, 0, "unparsable decimal at scale 2"},
		{"Infinity", dec, 0, "unparsable decimal at scale 2"},
		{"12345678901234567.89", dec, 0, "decimal exceeds precision 18"},
		{"100000000000000000000000", dec, 0, "decimal exceeds precision 18"},
		{"1000", dataset.DecimalType(4, 2), 0, "decimal exceeds precision 4"},
	}
	m := pgtype.NewMap()
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			var n pgtype.Numeric
			if err := n.Scan(tt.text); err != nil {
				t.Fatal(err)
			}
			b, err := m.Encode(pgtype.NumericOID, pgtype.BinaryFormatCode, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, reason := numericUnscaled(b, tt.t)
			if got != tt.want || reason != tt.reason {
				t.Fatalf("got %d %q, want %d %q", got, reason, tt.want, tt.reason)
			}
		})
	}
}

// TestDecoderForJSON: json and jsonb skip the JSON check only when the
// connection guarantees UTF-8; text is always checked.
func TestDecoderForJSON(t *testing.T) {
	j := dataset.Type{Kind: dataset.KindJSON}
	for _, tc := range []struct {
		oid   uint32
		trust bool
		want  pgDecoder
	}{
		{pgtype.JSONOID, true, pgJSON},
		{pgtype.JSONBOID, true, pgJSONB},
		{pgtype.JSONOID, false, pgJSONText},
		{pgtype.JSONBOID, false, pgJSONBText},
		{pgtype.TextOID, true, pgJSONText},
	} {
		if got := decoderFor(j, tc.oid, tc.trust); got != tc.want {
			t.Errorf("decoderFor(json, %d, %v) = %d, want %d", tc.oid, tc.trust, got, tc.want)
		}
	}
	str := dataset.Type{Kind: dataset.KindString}
	for _, tc := range []struct {
		trust bool
		want  pgDecoder
	}{{true, pgStringUTF8}, {false, pgString}} {
		if got := decoderFor(str, pgtype.TextOID, tc.trust); got != tc.want {
			t.Errorf("decoderFor(string, text, %v) = %d, want %d", tc.trust, got, tc.want)
		}
	}
	for _, f := range []pgDecoder{pgFloat4, pgFloat8} {
		vec := &dataset.NewBatch(dataset.Dataset{Columns: []dataset.Column{{Name: "f", Type: dataset.Type{Kind: dataset.KindDouble}}}}, 1).Cols[0]
		nan := []byte{0x7f, 0xc0, 0, 0}
		if f == pgFloat8 {
			nan = []byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 0}
		}
		if reason := f.decode(vec, nan); !strings.Contains(reason, "NaN is not a number") || len(vec.Double) != 0 {
			t.Errorf("decoder %d on NaN: %q, %d values", f, reason, len(vec.Double))
		}
	}
}
