//go:build !noduckdb

package encode

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // test-only: cgo reader used as the independent oracle
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

func testDatasets(t *testing.T) []dataset.Dataset {
	t.Helper()
	cat := datasettest.Example(t).Datasets()
	return append(cat, datasettest.AllTypes())
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

func TestNDJSONDuckDB(t *testing.T) {
	db := duckcheck.Open(t)
	for _, ds := range testDatasets(t) {
		t.Run(ds.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "part-00000.ndjson.gz")
			rows := datasettest.Edge(ds)
			writeFile(t, path, fileformat.NDJSON, ds, Options{}, rows)
			// The column types are given to DuckDB here (NDJSON carries none), so
			// only the values are under test: DuckDB must parse every one of them
			// into the declared type exactly, as a warehouse load would (a
			// binary column's base64 decoded with from_base64).
			from := duckcheck.NDJSON(path, ds, false)
			duckcheck.CheckRows(t, ds, duckcheck.ReadBack(t, db, from, ds, ""), rows, true)
		})
	}
}

func TestNDJSONText(t *testing.T) {
	ds, _ := datasettest.Example(t).Get("events")
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
	ds, _ := datasettest.Example(t).Get("events")
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "dt=2026-11-28", "part-00000.parquet"), fileformat.Parquet, ds, Options{}, datasettest.Edge(ds))
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
	if dt != "2026-11-28" || n != datasettest.EdgeVariants {
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

// TestParquetLogicalTypes checks the footer directly (F5), independently of
// how any one engine maps types.
func TestParquetLogicalTypes(t *testing.T) {
	ds, _ := datasettest.Example(t).Get("events")
	var buf bytes.Buffer
	w, _ := New(fileformat.Parquet, &buf, ds, Options{})
	for _, r := range datasettest.Edge(ds) {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	md := f.Metadata()
	if md.NumRows != datasettest.EdgeVariants {
		t.Fatalf("NumRows = %d", md.NumRows)
	}
	elems := md.Schema[1:]
	if len(elems) != len(ds.Columns) {
		t.Fatalf("%d schema elements", len(elems))
	}
	for i, c := range ds.Columns {
		e := elems[i]
		if e.Name != c.Name {
			t.Errorf("column %d is %s, want %s", i, e.Name, c.Name)
		}
		wantRep := format.Required
		if c.Nullable {
			wantRep = format.Optional
		}
		if rep, _ := e.RepetitionType.Get(); rep != wantRep {
			t.Errorf("%s repetition %v", c.Name, rep)
		}
		phys, _ := e.Type.Get()
		ok := false
		switch lt := e.LogicalType.Value.(type) {
		case *format.TimestampType:
			_, micros := lt.Unit.Value.(*format.MicroSeconds)
			ok = c.Type.Kind == dataset.KindTimestamp && lt.IsAdjustedToUTC && micros && phys == format.Int64
		case *format.DecimalType:
			ok = c.Type.Kind == dataset.KindDecimal && lt.Precision == 18 && lt.Scale == 2 && phys == format.Int64
		case *format.JsonType:
			ok = c.Type.Kind == dataset.KindJSON && phys == format.ByteArray
		case *format.StringType:
			ok = c.Type.Kind == dataset.KindString && phys == format.ByteArray
		case nil:
			ok = c.Type.Kind == dataset.KindDouble && phys == format.Double ||
				c.Type.Kind == dataset.KindBoolean && phys == format.Boolean
		}
		if !ok {
			t.Errorf("column %s: element %+v", c.Name, e)
		}
	}
	kv := map[string]string{}
	for _, p := range md.KeyValueMetadata {
		kv[p.Key] = p.Value
	}
	if kv["daybook.dataset"] != "events" || kv["daybook.schema_version"] != "1" {
		t.Errorf("key/value metadata %v", kv)
	}
	ds2, _ := datasettest.Example(t).Get("daily_stats")
	s, _ := Schema(ds2, Options{})
	if lt := s.Fields()[0].Type().LogicalType(); lt == nil {
		t.Errorf("stat_date has no logical type")
	} else if _, ok := lt.Value.(*format.DateType); !ok {
		t.Errorf("stat_date logical type %v", lt)
	}
}

func TestRowGroupsBounded(t *testing.T) {
	ds, _ := datasettest.Example(t).Get("events")
	tests := []struct {
		name       string
		opts       Options
		rows       int
		flushAfter int
		wantGroups int
	}{
		{"row cap", Options{MaxRowGroupRows: 10}, 25, 0, 3},
		{"explicit flush", Options{}, 20, 7, 2},
		{"flush on exact boundary adds no empty group", Options{MaxRowGroupRows: 10}, 20, 20, 2},
		{"byte cap", Options{MaxRowGroupBytes: 1}, 3000, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, _ := New(fileformat.Parquet, &buf, ds, tt.opts)
			gen := newEventGen(1)
			for i := range tt.rows {
				if err := w.Write(gen.next()); err != nil {
					t.Fatal(err)
				}
				if i+1 == tt.flushAfter {
					if err := w.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.RowGroups()); n != tt.wantGroups || f.NumRows() != int64(tt.rows) {
				t.Fatalf("%d row groups, %d rows; want %d, %d", n, f.NumRows(), tt.wantGroups, tt.rows)
			}
		})
	}
}

func TestWriteRefusesBadRows(t *testing.T) {
	ds, _ := datasettest.Example(t).Get("events")
	good := func() []any { return newEventGen(1).next() }
	tests := []struct {
		name   string
		mutate func(r []any) []any
		want   string
	}{
		{"null required", func(r []any) []any { r[0] = nil; return r }, "column event_id: null in required column"},
		{"string for timestamp", func(r []any) []any { r[2] = "2026-11-28"; return r }, "column occurred_at: want timestamp value, got string"},
		{"decimal scale", func(r []any) []any { r[7] = dataset.NewDecimal(1, 3); return r }, "column amount: decimal"},
		{"decimal precision", func(r []any) []any { r[7] = dataset.NewDecimal(1e18, 2); return r }, "column amount: decimal"},
		{"string for json", func(r []any) []any { r[9] = "{}"; return r }, "column attributes: want json value, got string"},
		{"column count", func(r []any) []any { return r[:4] }, "got 4 columns, want 10"},
		{"NaN double", func(r []any) []any { r[6] = math.NaN(); return r }, "column value: NaN is not a number"},
		{"infinite double", func(r []any) []any { r[6] = math.Inf(1); return r }, "column value: infinity is not a number"},
	}
	for _, f := range []fileformat.Format{fileformat.Parquet, fileformat.NDJSON} {
		for _, tt := range tests {
			t.Run(string(f)+"/"+tt.name, func(t *testing.T) {
				var buf bytes.Buffer
				w, _ := New(f, &buf, ds, Options{})
				if err := w.Write(good()); err != nil {
					t.Fatal(err)
				}
				err := w.Write(tt.mutate(good()))
				if !errors.Is(err, dataset.ErrRowMismatch) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "row 2") {
					t.Fatalf("got %v, want %q", err, tt.want)
				}
				if w.Rows() != 1 {
					t.Fatalf("Rows() = %d after a refused row", w.Rows())
				}
				w.Close()
				if err := w.Write(good()); !errors.Is(err, ErrClosed) {
					t.Fatalf("write after close: %v", err)
				}
			})
		}
	}
	if _, err := New(fileformat.Parquet, io.Discard, ds, Options{Compression: "lzo"}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "lzo") {
		t.Fatalf("lzo: %v", err)
	}
	if _, err := New("csv", io.Discard, ds, Options{}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "csv") {
		t.Fatalf("csv: %v", err)
	}
}

func TestTwosComplement(t *testing.T) {
	for _, s := range []string{"0", "1", "-1", "127", "-128", "128", "-129", "99999999999999999999999999999999999999", "-99999999999999999999999999999999999999"} {
		t.Run(s, func(t *testing.T) {
			d, err := dataset.ParseDecimal(s, 0)
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, decimalBytes(38))
			ok := dataset.TwosComplement(b, d.BigInt())
			if !ok || len(b) != 16 {
				t.Fatalf("encode %s: %x %v", s, b, ok)
			}
			back := new(bigIntT).SetBytes(b)
			if b[0]&0x80 != 0 {
				back.Sub(back, new(bigIntT).Lsh(bigOne, 128))
			}
			if back.String() != d.BigInt().String() || dataset.FromTwosComplement(b).String() != back.String() {
				t.Fatalf("%s -> %x -> %s", s, b, back)
			}
		})
	}
}

// TestWriteBatchSameAsWrite: a file written from batches is byte for byte
// the file written row by row, for every format, and the batches can be
// reused (reset and refilled) between calls.
func TestWriteBatchSameAsWrite(t *testing.T) {
	ds := datasettest.AllTypes()
	rows := append(datasettest.Edge(ds), datasettest.Varied(ds, 3000)...)
	for _, f := range []fileformat.Format{fileformat.Parquet, fileformat.NDJSON} {
		t.Run(string(f), func(t *testing.T) {
			var byRow, byBatch bytes.Buffer
			w, err := New(f, &byRow, ds, Options{MaxRowGroupRows: 1000})
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
			w, _ = New(f, &byBatch, ds, Options{MaxRowGroupRows: 1000})
			writeBatches(t, w, ds, rows, 700)
			if w.Rows() != int64(len(rows)) || !bytes.Equal(byRow.Bytes(), byBatch.Bytes()) {
				t.Fatalf("batches: %d rows, %d bytes; rows: %d bytes", w.Rows(), byBatch.Len(), byRow.Len())
			}
		})
	}
}
