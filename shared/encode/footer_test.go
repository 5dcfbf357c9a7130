//go:build !noduckdb

package encode_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/parquetreaders"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// TestFooterMatrix reads the footer and every page header of each file of
// the reader matrix with Arrow's metadata API: a compatible file uses only
// version 1 data pages and the PLAIN, RLE and dictionary encodings (a compact
// one must not, or the profiles are not wired), and every column chunk of
// either profile carries its exact null count, minimum and maximum, and
// every data page header a null count and, unless all its values are NULL,
// bounds; except JSON columns (encode.HasBounds), whose chunks carry their
// null count only and whose pages no bounds.
func TestFooterMatrix(t *testing.T) {
	for _, f := range writeMatrix(t) {
		t.Run(f.name, func(t *testing.T) {
			chunks, err := parquetreaders.Footer(f.path)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(f.ds.Columns) * groups(len(f.rows)); len(chunks) != want {
				t.Fatalf("%d column chunks, want %d", len(chunks), want)
			}
			bad := parquetreaders.Incompatibilities(chunks)
			switch {
			case f.profile == encode.ProfileCompatible && len(bad) > 0:
				t.Errorf("outside the compatible subset:\n%s", strings.Join(bad, "\n"))
			case f.profile == encode.ProfileCompact && len(f.rows) > 0 && len(bad) == 0:
				t.Errorf("compact file uses only the compatible subset")
			}
			for _, ch := range chunks {
				checkStats(t, f.ds, f.rows, ch)
				bounded := encode.HasBounds(f.ds.Columns[slices.IndexFunc(f.ds.Columns, func(c dataset.Column) bool { return c.Name == ch.Column })])
				for i, p := range ch.Pages {
					allNull := p.NullCount == int64(p.Values)
					if !bounded {
						if p.HasMinMax {
							t.Errorf("row group %d column %s page %d: bounds on a column that carries none", ch.RowGroup, ch.Column, i)
						}
						continue
					}
					if p.Type != "DICTIONARY_PAGE" && !(p.HasNullCount && (p.HasMinMax || allNull)) {
						t.Errorf("row group %d column %s page %d: statistics: null count %v %d of %d values, bounds %v",
							ch.RowGroup, ch.Column, i, p.HasNullCount, p.NullCount, p.Values, p.HasMinMax)
					}
				}
			}
		})
	}
}

func groups(rows int) int { return (rows + matrixRowGroupRows - 1) / matrixRowGroupRows }

// checkStats compares a column chunk's statistics with the rows of its row
// group.
func checkStats(t *testing.T, ds dataset.Dataset, rows [][]any, ch parquetreaders.Chunk) {
	t.Helper()
	c := slices.IndexFunc(ds.Columns, func(c dataset.Column) bool { return c.Name == ch.Column })
	if c < 0 {
		t.Fatalf("chunk of unknown column %s", ch.Column)
	}
	group := rows[ch.RowGroup*matrixRowGroupRows : min(len(rows), (ch.RowGroup+1)*matrixRowGroupRows)]
	var nulls int64
	var lo, hi any
	var values []any // the leaf values: a list's elements, one NULL for a NULL or empty list
	for _, r := range group {
		l, isList := r[c].([]any)
		switch {
		case ds.Columns[c].Type.Kind != dataset.KindList:
			values = append(values, r[c])
		case !isList || len(l) == 0:
			values = append(values, nil)
		default:
			values = append(values, l...)
		}
	}
	for _, v := range values {
		switch {
		case v == nil:
			nulls++
		case isNaN(v): // NaN is in no minimum or maximum
		case lo == nil:
			lo, hi = v, v
		default:
			if compareValues(v, lo) < 0 {
				lo = v
			}
			if compareValues(v, hi) > 0 {
				hi = v
			}
		}
	}
	where := "row group " + strconv.Itoa(ch.RowGroup) + " column " + ch.Column
	if !ch.HasNullCount || ch.NullCount != nulls {
		t.Errorf("%s: null count %v %d, want %d", where, ch.HasNullCount, ch.NullCount, nulls)
	}
	if !encode.HasBounds(ds.Columns[c]) {
		if ch.HasMinMax {
			t.Errorf("%s: bounds [%v, %v] on a column that carries none", where, ch.Min, ch.Max)
		}
		return
	}
	if !ch.HasMinMax {
		t.Errorf("%s: no minimum and maximum", where)
		return
	}
	if !sameBound(ch.Min, lo) || !sameBound(ch.Max, hi) {
		t.Errorf("%s: bounds [%v, %v], want [%v, %v]", where, ch.Min, ch.Max, parquetreaders.Canonical(lo), parquetreaders.Canonical(hi))
	}
}

func isNaN(v any) bool { f, ok := v.(float64); return ok && math.IsNaN(f) }

// sameBound compares a bound with a value; zeros of either sign are the
// same bound (writers may write -0 for a minimum of +0).
func sameBound(got parquetreaders.Value, want any) bool {
	if f, ok := want.(float64); ok {
		g, err := strconv.ParseFloat(got.Text, 64)
		return got.Valid && err == nil && g == f
	}
	return got == parquetreaders.Canonical(want)
}

// compareValues orders two values of the same column the way Parquet
// statistics do: numbers by value, strings and JSON by unsigned bytes.
func compareValues(a, b any) int {
	switch x := a.(type) {
	case civil.Date:
		return cmp.Compare(x.EpochDays(), b.(civil.Date).EpochDays())
	case time.Time:
		return x.Compare(b.(time.Time))
	case int64:
		return cmp.Compare(x, b.(int64))
	case float64:
		return cmp.Compare(x, b.(float64))
	case dataset.Decimal:
		return x.BigInt().Cmp(b.(dataset.Decimal).BigInt())
	case bool:
		return cmp.Compare(boolInt(x), boolInt(b.(bool)))
	case string:
		return strings.Compare(x, b.(string))
	case json.RawMessage:
		return strings.Compare(string(x), string(b.(json.RawMessage)))
	case []byte:
		return strings.Compare(string(x), string(b.([]byte)))
	}
	panic(fmt.Sprintf("no order for %T", a))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestProfileEncodings pins the pages each profile writes for each column
// type, read from the page headers of the all-types file: "s" and "j" hold
// unique values (their dictionary overflows and the rest of the row group
// falls back to PLAIN), "tag" a few repeated ones.
func TestProfileEncodings(t *testing.T) {
	const (
		v1dict    = "DATA_PAGE/RLE_DICTIONARY/RLE DICTIONARY_PAGE/PLAIN/"
		v1unique  = "DATA_PAGE/PLAIN/RLE DATA_PAGE/RLE_DICTIONARY/RLE DICTIONARY_PAGE/PLAIN/"
		v2dict    = "DATA_PAGE_V2/RLE_DICTIONARY/ DICTIONARY_PAGE/PLAIN/"
		v2unique  = "DATA_PAGE_V2/PLAIN/ DATA_PAGE_V2/RLE_DICTIONARY/ DICTIONARY_PAGE/PLAIN/"
		v1plain   = "DATA_PAGE/PLAIN/RLE"
		v2plain   = "DATA_PAGE_V2/PLAIN/"
		v2delta   = "DATA_PAGE_V2/DELTA_BINARY_PACKED/"
		dictChunk = "PLAIN RLE_DICTIONARY"
	)
	tests := []struct {
		column       string
		physical     string
		compatible   string // distinct page type/encoding/level encoding, sorted
		compact      string
		chunkCompat  string // the column chunk's encodings (nullable columns add RLE)
		chunkCompact string
	}{
		{"d", "INT32", v1plain, v2delta, "PLAIN", "DELTA_BINARY_PACKED"},
		{"ts", "INT64", v1plain, v2delta, "PLAIN", "DELTA_BINARY_PACKED"},
		{"i", "INT64", v1plain, v2delta, "PLAIN", "DELTA_BINARY_PACKED"},
		{"dec9", "INT32", v1plain, v2delta, "PLAIN", "DELTA_BINARY_PACKED"},
		{"dec18", "INT64", v1plain, v2delta, "PLAIN", "DELTA_BINARY_PACKED"},
		{"f", "DOUBLE", v1plain, v2plain, "PLAIN", "PLAIN"},
		{"b", "BOOLEAN", v1plain, v2plain, "PLAIN", "PLAIN"},
		{"dec38", "FIXED_LEN_BYTE_ARRAY", v1plain, v2plain, "PLAIN", "PLAIN"},
		{"s", "BYTE_ARRAY", v1unique, v2unique, dictChunk, dictChunk},
		{"j", "BYTE_ARRAY", v1unique, v2unique, dictChunk, dictChunk},
		{"tag", "BYTE_ARRAY", v1dict, v2dict, dictChunk, dictChunk},
	}
	chunks := map[encode.Profile][]parquetreaders.Chunk{}
	for _, f := range writeMatrix(t) {
		if f.ds.Name == "all_types" && f.codec == fileformat.Zstd && f.rows != nil {
			var err error
			if chunks[f.profile], err = parquetreaders.Footer(f.path); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tt := range tests {
		for _, nullable := range []bool{false, true} {
			column := tt.column
			if nullable {
				column += "_null"
			}
			for _, p := range []struct {
				profile      encode.Profile
				pages, chunk string
			}{
				{encode.ProfileCompatible, tt.compatible, tt.chunkCompat},
				{encode.ProfileCompact, tt.compact, tt.chunkCompact},
			} {
				t.Run(p.profile.String()+"/"+column, func(t *testing.T) {
					wantChunk := strings.Fields(p.chunk)
					if nullable {
						wantChunk = append(wantChunk, "RLE")
					}
					slices.Sort(wantChunk)
					pages, chunk := encodingsOf(chunks[p.profile], column)
					if pages != p.pages || strings.Join(chunk, " ") != strings.Join(wantChunk, " ") {
						t.Errorf("pages %q chunk %v\nwant  %q chunk %v", pages, chunk, p.pages, wantChunk)
					}
					t.Logf("%-10s %-13s %-20s chunk %-34s pages %s", p.profile, column, tt.physical, strings.Join(chunk, ","), pages)
				})
			}
		}
	}
}

// encodingsOf returns the distinct page type/encoding/level encoding of
// column across its chunks, and the union of the chunks' encodings, sorted.
func encodingsOf(chunks []parquetreaders.Chunk, column string) (pages string, chunk []string) {
	var ps []string
	for _, ch := range chunks {
		if ch.Column != column {
			continue
		}
		for _, p := range ch.Pages {
			ps = append(ps, p.Type+"/"+p.Encoding+"/"+p.LevelEncoding)
		}
		chunk = append(chunk, ch.Encodings...)
	}
	slices.Sort(ps)
	slices.Sort(chunk)
	return strings.Join(slices.Compact(ps), " "), slices.Compact(chunk)
}
