package duckcheck

import (
	"encoding/json"
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
