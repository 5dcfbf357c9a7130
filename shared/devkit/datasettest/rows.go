package datasettest

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// AllTypes is a dataset with every column kind both required and nullable,
// decimals of each Parquet storage (INT32 up to 9 digits, INT64 up to 18,
// fixed-length bytes above), a string declared low-cardinality and one
// declared high-cardinality (written without a dictionary), and a list of
// every list element type (decimal elements of each storage).
func AllTypes() dataset.Dataset {
	ds := dataset.Dataset{Name: "all_types", Version: 1}
	add := func(name string, t dataset.Type, dict dataset.DictionaryHint) {
		ds.Columns = append(ds.Columns,
			dataset.Column{Name: name, Type: t, Dictionary: dict},
			dataset.Column{Name: name + "_null", Type: t, Nullable: true, Dictionary: dict})
	}
	none := dataset.DictionaryDefault
	add("d", dataset.Type{Kind: dataset.KindDate}, none)
	add("ts", dataset.Type{Kind: dataset.KindTimestamp}, none)
	add("i", dataset.Type{Kind: dataset.KindInt64}, none)
	add("f", dataset.Type{Kind: dataset.KindDouble}, none)
	add("dec9", dataset.DecimalType(9, 3), none)
	add("dec18", dataset.DecimalType(18, 2), none)
	add("dec38", dataset.DecimalType(38, 10), none)
	add("dec38s0", dataset.DecimalType(38, 0), none)
	add("b", dataset.Type{Kind: dataset.KindBoolean}, none)
	add("s", dataset.Type{Kind: dataset.KindString}, none)
	add("tag", dataset.Type{Kind: dataset.KindString}, dataset.DictionaryOn)
	add("id", dataset.Type{Kind: dataset.KindString}, dataset.DictionaryOff)
	add("j", dataset.Type{Kind: dataset.KindJSON}, none)
	add("bin", dataset.Type{Kind: dataset.KindBinary}, none)
	for _, e := range []struct {
		name string
		t    dataset.Type
	}{
		{"l_b", dataset.Type{Kind: dataset.KindBoolean}},
		{"l_i", dataset.Type{Kind: dataset.KindInt64}},
		{"l_f", dataset.Type{Kind: dataset.KindDouble}},
		{"l_s", dataset.Type{Kind: dataset.KindString}},
		{"l_d", dataset.Type{Kind: dataset.KindDate}},
		{"l_ts", dataset.Type{Kind: dataset.KindTimestamp}},
		{"l_dec9", dataset.DecimalType(9, 2)},
		{"l_dec18", dataset.DecimalType(18, 4)},
		{"l_dec38", dataset.DecimalType(38, 10)},
	} {
		add(e.name, dataset.ListType(e.t), none)
	}
	return ds
}

// EdgeVariants is the number of rows Edge returns.
const EdgeVariants = 4

// Edge returns EdgeVariants rows of ds with the awkward values of each type:
// row 0 the minimum-ish values and NULL in every nullable column, row 1 the
// maximum-ish ones (year 9999, the widest decimals, the smallest double, escapes
// and emoji),
// row 2 typical values, row 3 the year 1, negative zero and small negative
// decimals.
func Edge(ds dataset.Dataset) [][]any {
	rows := make([][]any, EdgeVariants)
	for v := range rows {
		for _, c := range ds.Columns {
			rows[v] = append(rows[v], edge(c, v))
		}
	}
	return rows
}

func edge(c dataset.Column, v int) any {
	if v == 0 && c.Nullable {
		return nil
	}
	switch c.Type.Kind {
	case dataset.KindDate:
		// 1969-12-31, 9999-12-31, 2026-11-28, 0001-01-01
		return []civil.Date{civil.FromEpochDays(-1), civil.FromEpochDays(2932896), civil.FromEpochDays(20785), civil.FromEpochDays(-719162)}[v]
	case dataset.KindTimestamp:
		return []time.Time{
			time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
			time.Date(2026, 11, 28, 10, 0, 0, 123456000, time.UTC),
			time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		}[v]
	case dataset.KindInt64:
		return []int64{math.MinInt64, math.MaxInt64, 42, 0}[v]
	case dataset.KindDouble:
		// The extremes of the finite doubles: NaN and infinities are not in
		// the value model (dataset.CheckDouble), so no source hands them on.
		return []float64{-math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1, math.Copysign(0, -1)}[v]
	case dataset.KindDecimal:
		// The widest values the declared precision allows, a typical one and
		// the smallest negative one.
		maxUnscaled := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.Type.Precision)), nil), big.NewInt(1))
		switch v {
		case 0:
			return dataset.NewDecimalBig(new(big.Int).Neg(maxUnscaled), c.Type.Scale)
		case 1:
			return dataset.NewDecimalBig(maxUnscaled, c.Type.Scale)
		case 2:
			return dataset.NewDecimal(1230, c.Type.Scale)
		}
		return dataset.NewDecimal(-1, c.Type.Scale)
	case dataset.KindBoolean:
		return []bool{false, true, true, false}[v]
	case dataset.KindString:
		return []string{"", "héllo \"q\" \\ \n\t\x01 \u2028 ✓ 😀", "page_view", "日本語 ∑ 𝄞"}[v]
	case dataset.KindJSON:
		return json.RawMessage([]string{`{}`, `{"nested":{"a":[1,2.5,"x\"y"]},"u":"é😀"}`, `[1,"two",null]`, `"just a string"`}[v])
	case dataset.KindBinary:
		// Empty (in row 3 also where the column is nullable, so a NULL
		// and an empty value meet in one column), every byte value (NUL,
		// invalid UTF-8), a typical hash prefix, and empty again.
		all := make([]byte, 256)
		for i := range all {
			all[i] = byte(i)
		}
		return [][]byte{{}, all, {0xde, 0xad, 0xbe, 0xef}, {}}[v]
	case dataset.KindList:
		// Empty, the element's extremes around a NULL element, a typical
		// one, and a lone NULL element.
		e := c.ElemColumn()
		return [][]any{{}, {edge(e, 1), nil, edge(e, 3)}, {edge(e, 2)}, {nil}}[v]
	}
	panic("datasettest: unknown kind " + c.Type.Kind)
}

// Varied returns n deterministic rows of ds that fill pages, row groups and
// dictionaries the way a real day does: a NULL in every fifth row of
// nullable columns, a few repeated values in columns declared
// low-cardinality, and unique values in every other string and JSON column
// (so a bounded dictionary overflows). Unlike EventGen's, every row is a
// fresh slice the caller may keep.
func Varied(ds dataset.Dataset, n int) [][]any {
	base := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	rows := make([][]any, n)
	for i := range rows {
		row := make([]any, len(ds.Columns))
		for ci, c := range ds.Columns {
			if c.Nullable && (i+ci)%5 == 2 {
				continue
			}
			row[ci] = varied(c, i, base)
		}
		rows[i] = row
	}
	return rows
}

var vocabulary = []string{"alpha", "beta", "gamma", "δέλτα", "page_view", "🚀"}

func varied(c dataset.Column, i int, base time.Time) any {
	n := int64(i)
	switch c.Type.Kind {
	case dataset.KindDate:
		return civil.FromEpochDays(20000 + int32(i%400))
	case dataset.KindTimestamp:
		return base.Add(time.Duration(n*1_234_567) * time.Microsecond)
	case dataset.KindInt64:
		return n*n*31 - 5000
	case dataset.KindDouble:
		return float64(i%1000)/8 - 50
	case dataset.KindDecimal:
		if c.Type.Precision > 18 {
			u := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.Type.Precision-2)), nil)
			u.Add(u, big.NewInt(n*7919))
			if i%2 == 1 {
				u.Neg(u)
			}
			return dataset.NewDecimalBig(u, c.Type.Scale)
		}
		limit := int64(1)
		for range c.Type.Precision {
			limit *= 10
		}
		return dataset.NewDecimal((n*7919)%limit-limit/2, c.Type.Scale)
	case dataset.KindBoolean:
		return i%3 == 0
	case dataset.KindString:
		if c.Dictionary == dataset.DictionaryOn {
			return vocabulary[i%len(vocabulary)]
		}
		return "id-" + strconv.Itoa(1_000_000+i) + "-✓"
	case dataset.KindJSON:
		return json.RawMessage(`{"i":` + strconv.Itoa(i) + `,"tag":"` + vocabulary[i%len(vocabulary)] + `"}`)
	case dataset.KindBinary:
		return []byte{byte(i), byte(i >> 8), 0, 0xff}
	case dataset.KindList:
		l := []any{varied(c.ElemColumn(), i, base), varied(c.ElemColumn(), i+1, base)}
		return l[:i%3] // empty, one element or two
	}
	panic("datasettest: unknown kind " + c.Type.Kind)
}
