package encode

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // test-only: cgo reader used as the independent oracle

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// edge returns the value of column c for variant v (0: minimum-ish, 1:
// maximum-ish / awkward, 2: typical). Variant 0 rows carry NULL in every
// nullable column.
func edge(c dataset.Column, v int) any {
	if v == 0 && c.Nullable {
		return nil
	}
	switch c.Type.Kind {
	case dataset.KindDate:
		return []civil.Date{civil.FromEpochDays(-1), civil.FromEpochDays(2932896), civil.FromEpochDays(20785)}[v] // 1969-12-31, 9999-12-31, 2026-11-28
	case dataset.KindTimestamp:
		return []time.Time{
			time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
			time.Date(2026, 11, 28, 10, 0, 0, 123456000, time.UTC),
		}[v]
	case dataset.KindInt64:
		return []int64{math.MinInt64, math.MaxInt64, 42}[v]
	case dataset.KindDouble:
		return []float64{math.Inf(-1), math.NaN(), 0.1}[v]
	case dataset.KindDecimal:
		// The widest values the declared precision allows, and a typical one.
		maxUnscaled := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.Type.Precision)), nil), big.NewInt(1))
		switch v {
		case 0:
			return dataset.NewDecimalBig(new(big.Int).Neg(maxUnscaled), c.Type.Scale)
		case 1:
			return dataset.NewDecimalBig(maxUnscaled, c.Type.Scale)
		}
		return dataset.NewDecimal(1230, c.Type.Scale)
	case dataset.KindBoolean:
		return []bool{false, true, true}[v]
	case dataset.KindString:
		return []string{"", "héllo \"q\" \\ \n\t\x01 \u2028 ✓ 😀", "page_view"}[v]
	case dataset.KindJSON:
		return json.RawMessage([]string{`{}`, `{"nested":{"a":[1,2.5,"x\"y"]},"u":"é😀"}`, `[1,"two",null]`}[v])
	}
	panic("unknown kind " + c.Type.Kind)
}

func edgeRows(ds dataset.Dataset) [][]any {
	rows := make([][]any, 3)
	for v := range rows {
		for _, c := range ds.Columns {
			rows[v] = append(rows[v], edge(c, v))
		}
	}
	return rows
}

// wideDataset exercises decimals wider than int64 (fixed-length storage).
func wideDataset() dataset.Dataset {
	return dataset.Dataset{Name: "wide", Version: 1, Columns: []dataset.Column{
		{Name: "big", Type: dataset.DecimalType(38, 10)},
		{Name: "big_null", Type: dataset.DecimalType(38, 10), Nullable: true},
		{Name: "small", Type: dataset.DecimalType(9, 3), Nullable: true},
		{Name: "attributes", Type: dataset.Type{Kind: dataset.KindJSON}, Nullable: true},
	}}
}

func testDatasets(t *testing.T) []dataset.Dataset {
	t.Helper()
	cat, err := dataset.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	return append(cat, wideDataset())
}

func writeFile(t *testing.T, path string, f fileformat.Format, ds dataset.Dataset, opts Options, rows [][]any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	w, err := New(f, fh, ds, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Rows() != int64(len(rows)) {
		t.Fatalf("Rows() = %d, want %d", w.Rows(), len(rows))
	}
}

func describe(t *testing.T, db *sql.DB, from string) [][2]string {
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
	return out
}

func checkDescribe(t *testing.T, db *sql.DB, from string, ds dataset.Dataset) {
	t.Helper()
	got := describe(t, db, from)
	var want [][2]string
	for _, c := range ds.Columns {
		want = append(want, [2]string{c.Name, duckcheck.Type(c.Type)})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DESCRIBE %s\n got %v\nwant %v", from, got, want)
	}
}

// readBack selects every column in a form that compares exactly: instants
// as epoch microseconds, doubles as float64, the rest as DuckDB's text.
func readBack(t *testing.T, db *sql.DB, from string, ds dataset.Dataset) [][]any {
	t.Helper()
	exprs := make([]string, len(ds.Columns))
	for i, c := range ds.Columns {
		q := `"` + c.Name + `"`
		switch c.Type.Kind {
		case dataset.KindTimestamp:
			exprs[i] = "epoch_us(" + q + ")"
		case dataset.KindDouble:
			exprs[i] = q
		default:
			exprs[i] = "CAST(" + q + " AS VARCHAR)"
		}
	}
	rows, err := db.Query("SELECT " + strings.Join(exprs, ", ") + " FROM " + from)
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

func expectText(c dataset.Column, v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case time.Time:
		return x.UnixMicro()
	case float64:
		return x
	case json.RawMessage:
		return string(x)
	case fmt.Stringer:
		return x.String()
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	return v
}

func sameValue(c dataset.Column, got, want any, semanticJSON bool) bool {
	if g, ok := got.(float64); ok {
		w, ok := want.(float64)
		return ok && (g == w && math.Signbit(g) == math.Signbit(w) || math.IsNaN(g) && math.IsNaN(w))
	}
	if semanticJSON && c.Type.Kind == dataset.KindJSON && got != nil && want != nil {
		var a, b any
		return json.Unmarshal([]byte(got.(string)), &a) == nil && json.Unmarshal([]byte(want.(string)), &b) == nil && reflect.DeepEqual(a, b)
	}
	return reflect.DeepEqual(got, want)
}

func checkValues(t *testing.T, ds dataset.Dataset, got [][]any, want [][]any, semanticJSON bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d rows, wrote %d", len(got), len(want))
	}
	for r := range want {
		for i, c := range ds.Columns {
			w := expectText(c, want[r][i])
			if !sameValue(c, got[r][i], w, semanticJSON) {
				t.Errorf("row %d column %s: read %#v, wrote %#v", r+1, c.Name, got[r][i], w)
			}
		}
	}
}

func TestParquetDuckDB(t *testing.T) {
	db := duckcheck.Open(t)
	for _, ds := range testDatasets(t) {
		for _, codec := range []fileformat.Codec{fileformat.Snappy, fileformat.Zstd} {
			t.Run(ds.Name+"/"+string(codec), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "part-00000.parquet")
				rows := edgeRows(ds)
				writeFile(t, path, fileformat.Parquet, ds, Options{Compression: codec}, rows)
				from := "read_parquet('" + path + "')"
				checkDescribe(t, db, from, ds)
				checkValues(t, ds, readBack(t, db, from, ds), rows, false)
			})
		}
	}
}

func TestNDJSONDuckDB(t *testing.T) {
	db := duckcheck.Open(t)
	for _, ds := range testDatasets(t) {
		t.Run(ds.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "part-00000.ndjson.gz")
			rows := edgeRows(ds)
			writeFile(t, path, fileformat.NDJSON, ds, Options{}, rows)
			var cols []string
			for _, c := range ds.Columns {
				cols = append(cols, fmt.Sprintf("'%s': '%s'", c.Name, duckcheck.Type(c.Type)))
			}
			// The column types are given to DuckDB here (NDJSON carries none), so
			// only the values are under test: DuckDB must parse every one of them
			// into the declared type exactly, as a warehouse load would.
			from := fmt.Sprintf("read_ndjson('%s', columns={%s})", path, strings.Join(cols, ", "))
			checkValues(t, ds, readBack(t, db, from, ds), rows, true)
		})
	}
}

func TestNDJSONText(t *testing.T) {
	ds, _ := dataset.Get("events")
	var buf bytes.Buffer
	w, _ := New(fileformat.NDJSON, &buf, ds, Options{})
	row := []any{"e1", "page_view", time.Date(2026, 11, 28, 10, 0, 0, 123456789, time.UTC),
		time.Date(2026, 11, 28, 11, 0, 0, 0, time.FixedZone("X", 3600)), nil, "u", 1e21, dataset.NewDecimal(-5, 2), false,
		json.RawMessage("{\n  \"a\": 1\n}")}
	if err := w.Write(row); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(zr)
	want := `{"event_id":"e1","event_type":"page_view","occurred_at":"2026-11-28T10:00:00.123456Z","received_at":"2026-11-28T10:00:00.000000Z",` +
		`"session_id":null,"user_id":"u","value":1e+21,"amount":"-0.05","is_test":false,"attributes":{"a":1}}` + "\n"
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestHivePartitioning(t *testing.T) {
	db := duckcheck.Open(t)
	ds, _ := dataset.Get("events")
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "dt=2026-11-28", "part-00000.parquet"), fileformat.Parquet, ds, Options{}, edgeRows(ds))
	from := "read_parquet('" + root + "/*/*.parquet', hive_partitioning=true)"
	got := describe(t, db, from)
	if last := got[len(got)-1]; last[0] != "dt" {
		t.Fatalf("no dt column: %v", got)
	}
	var dt string
	var n int
	if err := db.QueryRow("SELECT CAST(dt AS VARCHAR), count(*) FROM "+from+" GROUP BY dt").Scan(&dt, &n); err != nil {
		t.Fatal(err)
	}
	if dt != "2026-11-28" || n != 3 {
		t.Fatalf("dt=%s rows=%d", dt, n)
	}
}

func TestEmptyFiles(t *testing.T) {
	db := duckcheck.Open(t)
	for _, ds := range testDatasets(t) {
		t.Run(ds.Name, func(t *testing.T) {
			dir := t.TempDir()
			pq := filepath.Join(dir, "part-00000.parquet")
			writeFile(t, pq, fileformat.Parquet, ds, Options{}, nil)
			from := "read_parquet('" + pq + "')"
			checkDescribe(t, db, from, ds)
			var n int
			if err := db.QueryRow("SELECT count(*) FROM " + from).Scan(&n); err != nil || n != 0 {
				t.Fatalf("count = %d, %v", n, err)
			}
			nd := filepath.Join(dir, "part-00000.ndjson.gz")
			writeFile(t, nd, fileformat.NDJSON, ds, Options{}, nil)
			b, _ := os.ReadFile(nd)
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if rest, err := io.ReadAll(zr); err != nil || len(rest) != 0 {
				t.Fatalf("empty ndjson: %q, %v", rest, err)
			}
		})
	}
}
