package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // test-only: the independent reader

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
)

// fromClause reads every delivered file of ds under dir (the account's
// prefix) with Hive partitioning, as a customer's engine would.
func fromClause(dir string, ds dataset.Dataset, format string) string {
	if format == "ndjson" {
		var cols []string
		for _, c := range ds.Columns {
			cols = append(cols, fmt.Sprintf("'%s': '%s'", c.Name, duckcheck.Type(c.Type)))
		}
		glob := filepath.Join(dir, layout.Version, ds.Name, "*", "*"+fileformat.NDJSON.Extension())
		return fmt.Sprintf("read_ndjson('%s', columns={%s}, hive_partitioning=true)", glob, strings.Join(cols, ", "))
	}
	glob := filepath.Join(dir, layout.Version, ds.Name, "*", "*"+fileformat.Parquet.Extension())
	return fmt.Sprintf("read_parquet('%s', hive_partitioning=true)", glob)
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

// readBack selects the declared columns and dt in a form that compares
// exactly: instants as epoch microseconds, doubles as float64, the rest as
// DuckDB's text.
func readBack(t *testing.T, db *sql.DB, from string, ds dataset.Dataset) [][]any {
	t.Helper()
	var exprs []string
	for _, c := range ds.Columns {
		q := `"` + c.Name + `"`
		switch c.Type.Kind {
		case dataset.KindTimestamp:
			exprs = append(exprs, "epoch_us("+q+")")
		case dataset.KindDouble:
			exprs = append(exprs, q)
		default:
			exprs = append(exprs, "CAST("+q+" AS VARCHAR)")
		}
	}
	exprs = append(exprs, "CAST(dt AS VARCHAR)")
	rows, err := db.Query("SELECT " + strings.Join(exprs, ", ") + " FROM " + from + " ORDER BY " + orderBy[ds.Name])
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

// expect renders a generated value the way readBack reads it.
func expect(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UnixMicro()
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return v
}

func sameJSON(a, b any) bool {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	if !ok1 || !ok2 {
		return a == nil && b == nil
	}
	var x, y any
	return json.Unmarshal([]byte(as), &x) == nil && json.Unmarshal([]byte(bs), &y) == nil && reflect.DeepEqual(x, y)
}

// TestRoundTrip exports one day per dataset (and one NDJSON account) into
// moto and reads the bucket back with DuckDB: row count, values, declared
// types and the Hive dt column. Rows of the neighbouring days stay out.
func TestRoundTrip(t *testing.T) {
	db := duckcheck.Open(t)
	for _, tc := range []struct {
		name, ds, format string
		rows             int
	}{
		{"events", "events", "", 25},
		{"profiles", "profiles", "", 25},
		{"daily_stats", "daily_stats", "", 25},
		{"events ndjson", "events", "ndjson", 25},
		{"daily_stats ndjson", "daily_stats", "ndjson", 12},
		{"events empty day", "events", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{datasets: []string{tc.ds}, format: tc.format})
			ds := mustDataset(t, tc.ds)
			want := genRows(tc.ds, testDay, tc.rows)
			e.insert(tc.ds, want...)
			e.insert(tc.ds, genRows(tc.ds, testDay.AddDays(-1), 3)...)
			e.insert(tc.ds, genRows(tc.ds, testDay.AddDays(1), 3)...)

			row := e.export(tc.ds, testDay)
			m := e.committed(tc.ds, testDay)
			ext := fileformat.Parquet.Extension()
			if tc.format == "ndjson" {
				ext = fileformat.NDJSON.Extension()
			}
			if row.Generation != 1 || m.Totals.Rows != int64(tc.rows) || len(m.Files) != 1 || !strings.HasSuffix(m.Files[0].Key, "/part-00000"+ext) {
				t.Fatalf("row %+v manifest totals %+v files %+v", row, m.Totals, m.Files)
			}
			if m.Dataset != tc.ds || m.Day != testDay.String() || m.Partition != ds.Partition || m.Reason != "scheduled" ||
				m.Provenance.Source != "sqlite:test.db" || m.Provenance.Query == "" || len(m.Schema) != len(ds.Columns) {
				t.Errorf("manifest header %+v", m)
			}

			dir := e.download()
			from := fromClause(dir, ds, tc.format)
			var wantTypes [][2]string
			for _, c := range ds.Columns {
				wantTypes = append(wantTypes, [2]string{c.Name, duckcheck.Type(c.Type)})
			}
			wantTypes = append(wantTypes, [2]string{"dt", "DATE"})
			if got := describe(t, db, from); !reflect.DeepEqual(got, wantTypes) {
				t.Errorf("DESCRIBE\n got %v\nwant %v", got, wantTypes)
			}
			got := readBack(t, db, from, ds)
			if len(got) != len(want) {
				t.Fatalf("DuckDB read %d rows, the source has %d for the day", len(got), len(want))
			}
			for r := range want {
				for i, c := range ds.Columns {
					w, g := expect(want[r][i]), got[r][i]
					ok := reflect.DeepEqual(g, w)
					if c.Type.Kind == dataset.KindJSON {
						ok = sameJSON(g, w)
					}
					if !ok {
						t.Errorf("row %d column %s: read %#v, wrote %#v", r+1, c.Name, g, w)
					}
				}
				if dt := got[r][len(ds.Columns)]; dt != testDay.String() {
					t.Errorf("row %d: dt %v", r+1, dt)
				}
			}
		})
	}
}
