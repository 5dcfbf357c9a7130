package loadsql

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	_ "github.com/duckdb/duckdb-go/v2" // test-only: runs the generated duckdb.sql

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// mirror lays out files like the bucket under root/<bucket>/.
type mirror struct {
	root   string
	bucket string
}

// value returns a deterministic value of column c for row i of generation
// gen; nullable columns are NULL on every third row.
func value(c dataset.Column, day civil.Date, gen, i int) any {
	if c.Nullable && i%3 == 2 {
		return nil
	}
	switch c.Type.Kind {
	case dataset.KindDate:
		return day
	case dataset.KindTimestamp:
		return day.Start(time.UTC).Add(time.Duration(i)*time.Minute + time.Duration(gen)*time.Microsecond)
	case dataset.KindInt64:
		return int64(gen*1000 + i)
	case dataset.KindDouble:
		return float64(i) + 0.25
	case dataset.KindDecimal:
		return dataset.NewDecimal(int64(gen*10000+i), c.Type.Scale)
	case dataset.KindBoolean:
		return i%2 == 0
	case dataset.KindJSON:
		return json.RawMessage(fmt.Sprintf(`{"gen":%d,"i":%d,"tag":"it's"}`, gen, i))
	default:
		return fmt.Sprintf("%s-%d-g%d", c.Name, i, gen)
	}
}

// write encodes rows into one file per element of split (rows per file) and
// returns the partition describing them, BaseURI pointing at the mirror.
func (m mirror) write(t *testing.T, ds dataset.Dataset, format fileformat.Format, day civil.Date, gen int, split []int) Partition {
	t.Helper()
	prefix := "tenants/acct_1/v1/" + ds.Name + "/dt=" + day.String() + "/"
	dir := filepath.Join(m.root, m.bucket, filepath.FromSlash(prefix))
	if err := os.RemoveAll(dir); err != nil { // the exporter deletes older generations
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := Partition{Dataset: ds, Day: day, Generation: int64(gen), Format: format, Bucket: m.bucket,
		PartitionPrefix: prefix, BaseURI: filepath.ToSlash(filepath.Join(m.root, m.bucket)) + "/"}
	row := 0
	for n, count := range split {
		key := fmt.Sprintf("%spart-%05d%s", prefix, n, format.Extension())
		path := filepath.Join(m.root, m.bucket, filepath.FromSlash(key))
		fh, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w, err := encode.New(format, fh, ds, encode.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for range count {
			r := make([]any, len(ds.Columns))
			for i, c := range ds.Columns {
				r[i] = value(c, day, gen, row)
			}
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
			row++
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := fh.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		p.Files = append(p.Files, File{Key: key, Rows: w.Rows(), Bytes: st.Size()})
	}
	return p
}

func run(t *testing.T, db *sql.DB, p Partition) {
	t.Helper()
	script, err := Generate(EngineDuckDB, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(script); err != nil {
		t.Fatalf("running duckdb.sql: %v\n%s", err, script)
	}
}

// describeType is how DESCRIBE / information_schema spells duckdbType.
func describeType(ty dataset.Type) string {
	s := duckdbType(ty)
	if s == "TIMESTAMPTZ" {
		return "TIMESTAMP WITH TIME ZONE"
	}
	return s
}

func tableColumns(t *testing.T, db *sql.DB, table string) [][2]string {
	t.Helper()
	rows, err := db.Query(`SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var n, ty string
		if err := rows.Scan(&n, &ty); err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]string{n, ty})
	}
	return out
}

func count(t *testing.T, db *sql.DB, q string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// source is the read of p's files straight from disk, with the declared
// types, to compare the loaded table against.
func source(p Partition) string {
	g, _ := newGen(EngineDuckDB, p)
	var uris []string
	for _, u := range g.fileURIs() {
		uris = append(uris, literal(EngineDuckDB, u))
	}
	list := "[" + strings.Join(uris, ", ") + "]"
	if p.Format == fileformat.Parquet {
		return "read_parquet(" + list + ")"
	}
	var cols []string
	for _, c := range p.Dataset.Columns {
		cols = append(cols, literal(EngineDuckDB, c.Name)+": "+literal(EngineDuckDB, duckdbType(c.Type)))
	}
	return "read_json(" + list + ", format = 'newline_delimited', columns = {" + strings.Join(cols, ", ") + "})"
}

// sameRows fails unless the day's rows of the table equal the rows of p's
// files, as multisets.
func sameRows(t *testing.T, db *sql.DB, p Partition) {
	t.Helper()
	var cols []string
	for _, c := range p.Dataset.Columns {
		cols = append(cols, "CAST("+quoteDouble(c.Name)+" AS VARCHAR)")
	}
	list := strings.Join(cols, ", ")
	table := quoteDouble(p.Dataset.Name)
	day := "DATE '" + p.Day.String() + "'"
	for _, q := range []string{
		fmt.Sprintf("SELECT count(*) FROM (SELECT %s FROM %s WHERE dt = %s EXCEPT ALL SELECT %s FROM %s)", list, table, day, list, source(p)),
		fmt.Sprintf("SELECT count(*) FROM (SELECT %s FROM %s EXCEPT ALL SELECT %s FROM %s WHERE dt = %s)", list, source(p), list, table, day),
	} {
		if n := count(t, db, q); n != 0 {
			t.Fatalf("%d rows differ between the table and the files of generation %d", n, p.Generation)
		}
	}
}

func TestDuckDBLoad(t *testing.T) {
	cat := datasettest.Example(t).Datasets()
	day1, day2 := mustDay(t, "2026-11-27"), mustDay(t, "2026-11-28")
	for _, ds := range append(cat, syntheticDataset()) {
		for _, format := range fileformat.Formats() {
			t.Run(ds.Name+"/"+string(format), func(t *testing.T) {
				db := duckcheck.Open(t)
				m := mirror{root: t.TempDir(), bucket: "acme-exports"}
				table := quoteDouble(ds.Name)

				// Another day, loaded first, must never be touched.
				other := m.write(t, ds, format, day1, 1, []int{4})
				run(t, db, other)

				gen1 := m.write(t, ds, format, day2, 1, []int{7, 5}) // part-00000 and part-00001
				run(t, db, gen1)

				// Column types are exactly the schema mapping, plus dt DATE.
				var want [][2]string
				for _, c := range ds.Columns {
					want = append(want, [2]string{c.Name, describeType(c.Type)})
				}
				want = append(want, [2]string{"dt", "DATE"})
				if got := tableColumns(t, db, ds.Name); !reflect.DeepEqual(got, want) {
					t.Fatalf("columns\n got %v\nwant %v", got, want)
				}
				dayCount := "SELECT count(*) FROM " + table + " WHERE dt = DATE '" + day2.String() + "'"
				if n := count(t, db, dayCount); n != 12 {
					t.Fatalf("day has %d rows, want 12 (the files' rows)", n)
				}
				sameRows(t, db, gen1)

				// Running it again does not double a row.
				run(t, db, gen1)
				if n := count(t, db, dayCount); n != 12 {
					t.Fatalf("after a rerun the day has %d rows, want 12", n)
				}

				// Generation 2: fewer rows, different files.
				gen2 := m.write(t, ds, format, day2, 2, []int{3})
				run(t, db, gen2)
				if n := count(t, db, dayCount); n != 3 {
					t.Fatalf("after generation 2 the day has %d rows, want 3", n)
				}
				sameRows(t, db, gen2)

				// The other day is untouched.
				if n := count(t, db, "SELECT count(*) FROM "+table+" WHERE dt = DATE '"+day1.String()+"'"); n != 4 {
					t.Fatalf("other day has %d rows, want 4", n)
				}
				sameRows(t, db, other)
				if n := count(t, db, "SELECT count(*) FROM "+table); n != 7 {
					t.Fatalf("table has %d rows, want 7", n)
				}
			})
		}
	}
}

func TestDuckDBCurrentState(t *testing.T) {
	ds, err := datasettest.Example(t).Get("profiles")
	if err != nil {
		t.Fatal(err)
	}
	day1, day2 := mustDay(t, "2026-11-27"), mustDay(t, "2026-11-28")
	// Profiles p1..p3 on day 1; p2, p3 (newer state) and p4 on day 2.
	profile := func(id string, day civil.Date, plan string, events int64) []any {
		at := day.Start(time.UTC).Add(10 * time.Hour)
		return []any{id, mustDay(t, "2026-01-01").Start(time.UTC), at, nil, "FR", plan, events, json.RawMessage(`{"v":"` + plan + `"}`)}
	}
	days := []struct {
		day  civil.Date
		rows [][]any
	}{
		{day1, [][]any{profile("p1", day1, "free", 1), profile("p2", day1, "free", 2), profile("p3", day1, "pro", 3)}},
		{day2, [][]any{profile("p2", day2, "pro", 20), profile("p3", day2, "team", 30), profile("p4", day2, "free", 4)}},
	}
	db := duckcheck.Open(t)
	root := t.TempDir()
	for _, d := range days {
		prefix := "t/v1/profiles/dt=" + d.day.String() + "/"
		key := prefix + "part-00000.parquet"
		path := filepath.Join(root, "b", filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w, err := encode.New(fileformat.Parquet, fh, ds, encode.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range d.rows {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		run(t, db, Partition{Dataset: ds, Day: d.day, Generation: 1, Format: fileformat.Parquet, Bucket: "b",
			PartitionPrefix: prefix, BaseURI: filepath.ToSlash(filepath.Join(root, "b")), Files: []File{{Key: key, Rows: 3, Bytes: 1}}})
	}
	q, err := CurrentState(EngineDuckDB, Partition{Dataset: ds})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT "profile_id", "plan", "event_count", CAST("dt" AS VARCHAR) FROM (` + strings.TrimSuffix(strings.TrimSpace(q), ";") + `) ORDER BY 1`)
	if err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id, plan, dt string
		var n int64
		if err := rows.Scan(&id, &plan, &n, &dt); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %d %s", id, plan, n, dt))
	}
	want := []string{"p1 free 1 2026-11-27", "p2 pro 20 2026-11-28", "p3 team 30 2026-11-28", "p4 free 4 2026-11-28"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("current state\n got %v\nwant %v", got, want)
	}
}

// TestDuckDBLoadEveryStore: the DuckDB script of a partition in GCS or
// Azure (its header says which secret the store's URIs need) runs on a
// local copy as S3's does and loads exactly the files' rows.
func TestDuckDBLoadEveryStore(t *testing.T) {
	ds, err := datasettest.Example(t).Get("events")
	if err != nil {
		t.Fatal(err)
	}
	day := mustDay(t, "2026-11-28")
	for _, store := range []string{StoreGCS, StoreAzure} {
		for _, format := range fileformat.Formats() {
			t.Run(store+"/"+string(format), func(t *testing.T) {
				db := duckcheck.Open(t)
				m := mirror{root: t.TempDir(), bucket: "acme-exports"}
				p := onStore(m.write(t, ds, format, day, 1, []int{3, 2}), store)
				run(t, db, p)
				if n := count(t, db, "SELECT count(*) FROM "+quoteDouble(ds.Name)+" WHERE dt = DATE '2026-11-28'"); n != 5 {
					t.Fatalf("the day has %d rows, want 5", n)
				}
				sameRows(t, db, p)
			})
		}
	}
}
