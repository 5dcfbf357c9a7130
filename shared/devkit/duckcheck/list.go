package duckcheck

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// listExpr reads a list column as a JSON array of each element's text in
// ReadBack's form (instants as epoch microseconds, the rest as DuckDB's
// text), null for a NULL element: a NULL list stays NULL, an empty one is
// [].
func listExpr(q string, t dataset.Type) string {
	elem := "CAST(x AS VARCHAR)"
	if t.Elem == dataset.KindTimestamp {
		elem = "CAST(epoch_us(x) AS VARCHAR)"
	}
	return "CAST(to_json(list_transform(" + q + ", x -> " + elem + ")) AS VARCHAR)"
}

// expectList renders a list value the way listExpr reads it back.
func expectList(l []any) string {
	out := make([]*string, len(l))
	for i, e := range l {
		var s string
		switch x := e.(type) {
		case nil:
			continue
		case time.Time:
			s = strconv.FormatInt(x.UnixMicro(), 10)
		case float64:
			s = strconv.FormatFloat(x, 'g', -1, 64)
		default:
			s = Expect(e).(string)
		}
		out[i] = &s
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// sameDoubles compares two lists of doubles read by listExpr or rendered by
// expectList element by element as numbers (DuckDB's text of a double is
// not Go's: "-50.0"), as Same compares doubles: the sign of zero too unless
// signBlind (a JSON reader parses an NDJSON -0 as zero).
func sameDoubles(got, want string, signBlind bool) bool {
	var g, w []*string
	if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil || len(g) != len(w) {
		return false
	}
	for i := range g {
		if g[i] == nil || w[i] == nil {
			if g[i] != w[i] {
				return false
			}
			continue
		}
		a, err1 := strconv.ParseFloat(*g[i], 64)
		b, err2 := strconv.ParseFloat(*w[i], 64)
		if err1 != nil || err2 != nil || a != b || !signBlind && math.Signbit(a) != math.Signbit(b) {
			return false
		}
	}
	return true
}
