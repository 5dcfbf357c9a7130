package duckcheck

import (
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Parquet is the FROM clause that reads the Parquet files matching glob;
// with hive, the Hive partition columns of their paths (dt) come too.
func Parquet(glob string, hive bool) string {
	return fmt.Sprintf("read_parquet('%s'%s)", glob, hiveOpt(hive))
}

// NDJSON is the FROM clause that reads the (gzipped) NDJSON files matching
// glob with the declared column types of ds, which NDJSON does not carry,
// as a warehouse load would; with hive, as Parquet.
func NDJSON(glob string, ds dataset.Dataset, hive bool) string {
	cols := make([]string, len(ds.Columns))
	var decode []string
	for i, c := range ds.Columns {
		typ := Type(c.Type)
		if c.Type.Kind == dataset.KindBinary {
			// A binary value is a base64 string in NDJSON: read the text,
			// then decode it, as the load script does.
			typ = "VARCHAR"
			decode = append(decode, fmt.Sprintf(`from_base64("%s") AS "%s"`, c.Name, c.Name))
		}
		cols[i] = fmt.Sprintf("'%s': '%s'", c.Name, typ)
	}
	from := fmt.Sprintf("read_ndjson('%s', columns={%s}%s)", glob, strings.Join(cols, ", "), hiveOpt(hive))
	if len(decode) == 0 {
		return from
	}
	return fmt.Sprintf("(SELECT * REPLACE (%s) FROM %s)", strings.Join(decode, ", "), from)
}

func hiveOpt(hive bool) string {
	if hive {
		return ", hive_partitioning=true"
	}
	return ""
}

// Describe returns the (name, type) of every column DuckDB reads from from.
func Describe(t testing.TB, db *sql.DB, from string) [][2]string {
	t.Helper()
	rows, err := db.Query("DESCRIBE SELECT * FROM " + from)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var name, typ string
		var a, b, c, d sql.NullString
		if err := rows.Scan(&name, &typ, &a, &b, &c, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]string{name, typ})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ReadBack selects the declared columns of ds from from, then the extra
// expressions, ordered by orderBy unless it is empty. Each column comes in a
// form that compares exactly with Expect: instants as epoch microseconds,
// doubles as float64, the rest as DuckDB's text.
func ReadBack(t testing.TB, db *sql.DB, from string, ds dataset.Dataset, orderBy string, extra ...string) [][]any {
	t.Helper()
	exprs := make([]string, 0, len(ds.Columns)+len(extra))
	for _, c := range ds.Columns {
		q := `"` + c.Name + `"`
		switch c.Type.Kind {
		case dataset.KindTimestamp:
			exprs = append(exprs, "epoch_us("+q+")")
		case dataset.KindDouble:
			exprs = append(exprs, q)
		case dataset.KindBinary:
			exprs = append(exprs, "lower(hex("+q+"))")
		case dataset.KindList:
			exprs = append(exprs, listExpr(q, c.Type))
		default:
			exprs = append(exprs, "CAST("+q+" AS VARCHAR)")
		}
	}
	exprs = append(exprs, extra...)
	q := "SELECT " + strings.Join(exprs, ", ") + " FROM " + from
	if orderBy != "" {
		q += " ORDER BY " + orderBy
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(exprs))
		ptrs := make([]any, len(exprs))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Expect renders a value of the dataset value model the way ReadBack reads
// it back.
func Expect(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case time.Time:
		return x.UnixMicro()
	case float64:
		return x
	case json.RawMessage:
		return string(x)
	case []byte:
		return hex.EncodeToString(x)
	case []any:
		return expectList(x)
	case fmt.Stringer:
		return x.String()
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	return v
}

// Same reports whether got (read by ReadBack) is want (rendered by Expect)
// for column c: doubles bit for bit (NaN and the sign of zero included); JSON
// as values when semanticJSON, since NDJSON may re-render the text, and then
// a double -0 may read back as 0: the text says "-0", but JSON readers
// (DuckDB's among them) parse it as zero.
func Same(c dataset.Column, got, want any, semanticJSON bool) bool {
	if g, ok := got.(float64); ok {
		w, ok := want.(float64)
		return ok && (g == w && (semanticJSON || math.Signbit(g) == math.Signbit(w)) || math.IsNaN(g) && math.IsNaN(w))
	}
	if c.Type.Kind == dataset.KindList && c.Type.Elem == dataset.KindDouble && got != nil && want != nil {
		gs, ok1 := got.(string)
		ws, ok2 := want.(string)
		return ok1 && ok2 && sameDoubles(gs, ws, semanticJSON)
	}
	if (semanticJSON && c.Type.Kind == dataset.KindJSON || c.Type.Kind == dataset.KindList) && got != nil && want != nil {
		gs, ok1 := got.(string)
		ws, ok2 := want.(string)
		var a, b any
		return ok1 && ok2 && json.Unmarshal([]byte(gs), &a) == nil && json.Unmarshal([]byte(ws), &b) == nil && reflect.DeepEqual(a, b)
	}
	return reflect.DeepEqual(got, want)
}

// CheckRows compares the declared columns of every row read (extra
// expressions after them are ignored) with the rows written, in order.
func CheckRows(t testing.TB, ds dataset.Dataset, got, want [][]any, semanticJSON bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("DuckDB read %d rows, %d were written", len(got), len(want))
	}
	for r := range want {
		for i, c := range ds.Columns {
			w := Expect(want[r][i])
			if !Same(c, got[r][i], w, semanticJSON) {
				t.Errorf("row %d column %s: read %#v, wrote %#v", r+1, c.Name, got[r][i], w)
			}
		}
	}
}
