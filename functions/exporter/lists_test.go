//go:build !noduckdb

package main

import (
	"cmp"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/devkit/parquetreaders"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
	"github.com/daybook-dev/daybook/shared/source"
)

// typedSQL is a table with a bytea and an array of every element type a
// list<T> holds (issue 21 §2).
const typedSQL = `
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE typed (
    org_id  text NOT NULL,
    at      timestamptz NOT NULL,
    payload bytea,
    flags   bool[],
    smalls  int2[],
    ints    int4[],
    bigs    int8[],
    reals   float4[],
    dbls    float8[],
    tags    text[],
    codes   varchar(8)[],
    ccys    char(3)[],
    ids     uuid[],
    moods   mood[],
    days    date[],
    stamps  timestamptz[],
    prices  numeric(9,2)[],
    amounts numeric(20,10)[],
    attributes text[]
);
CREATE INDEX ON typed (org_id, at);
`

// TestListsAndBinaryEndToEnd exports a PostgreSQL table with a bytea and
// an array of every list element type, declared as catalog init writes it
// with each array turned into list<T> (attributes, a text[], stays
// json, the other choice), through the exporter to Parquet and NDJSON; DuckDB reads every
// value back from both, Arrow and hyparquet from the Parquet file, and the
// bucket's duckdb.sql loads the Parquet day.
// A NULL list, an empty list and a NULL element stay distinct, as do NULL
// and empty bytes. A two-dimensional array fails the partition naming the
// column.
func TestListsAndBinaryEndToEnd(t *testing.T) {
	e := newEnv(t, envOpts{})
	db := pgDB(t, "")
	if _, err := db.Exec(typedSQL); err != nil {
		t.Fatal(err)
	}
	org := e.acct.ID
	ins := func(at string, vals ...string) {
		t.Helper()
		args := []any{org, at}
		for _, v := range vals {
			if v == "NULL" {
				args = append(args, nil)
			} else {
				args = append(args, v)
			}
		}
		ph := make([]string, len(args))
		for i := range ph {
			ph[i] = "$" + strconv.Itoa(i+1)
		}
		if _, err := db.Exec("INSERT INTO typed VALUES ("+strings.Join(ph, ",")+")", args...); err != nil {
			t.Fatalf("insert %s: %v", at, err)
		}
	}
	ins("2026-03-05 01:00:00+00", `\xdeadbeef00ff`, `{t,f,NULL}`, `{-32768,32767}`, `{-2147483648,NULL,2147483647}`,
		`{-9223372036854775808,9223372036854775807}`, `{0.5,-1.25}`, `{0.1,NULL,-2.5}`, `{a,"b c","quote\"d",NULL,""}`,
		`{abc}`, `{EUR,US}`, `{0B9C1F4E-5A3D-4C2B-9E8F-7A6B5C4D3E2F}`, `{sad,happy,NULL}`, `{1969-12-31,9999-12-31}`,
		`{"2026-03-05 12:34:56.789012+00","1970-01-01 00:00:00+00"}`, `{-9999999.99,0.01,NULL}`,
		`{1234567890.0123456789,-0.0000000001}`, `{x,y}`)
	ins("2026-03-05 02:00:00+00", `\x`, `{}`, `{}`, `{}`, `{}`, `{}`, `{}`, `{}`, `{}`, `{}`, `{}`, `{}`, `{}`, `{}`, `{}`, `{}`, `{}`)
	ins("2026-03-05 03:00:00+00", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL")
	ins("2026-03-05 04:00:00+00", "NULL", `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`, `{NULL}`)

	ts := func(s string) time.Time {
		x, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	d := func(s string, scale int) dataset.Decimal {
		x, err := dataset.ParseDecimal(s, scale)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	l := func(v ...any) []any { return append([]any{}, v...) }
	nulls := func() []any { return []any{nil} }
	want := [][]any{
		{ts("2026-03-05 01:00:00"), []byte{0xde, 0xad, 0xbe, 0xef, 0x00, 0xff}, l(true, false, nil), l(int64(-32768), int64(32767)),
			l(int64(-2147483648), nil, int64(2147483647)), l(int64(-9223372036854775808), int64(9223372036854775807)), l(0.5, -1.25),
			l(0.1, nil, -2.5), l("a", "b c", `quote"d`, nil, ""), l("abc"), l("EUR", "US "), l("0b9c1f4e-5a3d-4c2b-9e8f-7a6b5c4d3e2f"),
			l("sad", "happy", nil), l(civil.MustParse("1969-12-31"), civil.MustParse("9999-12-31")),
			l(ts("2026-03-05 12:34:56.789012"), ts("1970-01-01 00:00:00")), l(d("-9999999.99", 2), d("0.01", 2), nil),
			l(d("1234567890.0123456789", 10), d("-0.0000000001", 10)), json.RawMessage(`["x","y"]`)},
		{ts("2026-03-05 02:00:00"), []byte{}, l(), l(), l(), l(), l(), l(), l(), l(), l(), l(), l(), l(), l(), l(), l(), json.RawMessage(`[]`)},
		{ts("2026-03-05 03:00:00"), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{ts("2026-03-05 04:00:00"), nil, nulls(), nulls(), nulls(), nulls(), nulls(), nulls(), nulls(), nulls(), nulls(), nulls(), nulls(), nulls(), nulls(), nulls(), nulls(), json.RawMessage(`[null]`)},
	}

	// The catalog entry as catalog init writes it, then every array but
	// attributes declared as the list catalog check accepts for it.
	tab, err := pgcatalog.ReadTable(e.ctx, db, "typed")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := pgcatalog.Entry(tab, pgcatalog.EntryOptions{TenantColumn: "org_id", PartitionColumn: "at", Partition: dataset.PartitionEventTime})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tab.Columns {
		i := slices.IndexFunc(ds.Columns, func(d dataset.Column) bool { return d.Name == c.Name })
		if i < 0 {
			continue // the tenant column
		}
		if c.Type.IsArray() && c.Name != "attributes" {
			if ds.Columns[i].Type, err = pgcatalog.ListType(c.Type); err != nil {
				t.Fatal(err)
			}
			ds.Columns[i].Dictionary = dataset.DictionaryDefault // the enum's hint is for strings
		}
		if sev, msg := pgcatalog.CheckColumn(ds.Columns[i], c.Type); sev == pgcatalog.SeverityError {
			t.Fatalf("catalog check of %s: %s", c.Name, msg)
		}
	}
	if got := ds.Columns[1].Type.String(); got != "binary" {
		t.Fatalf("bytea declared %s by catalog init, want binary", got)
	}
	doc, err := json.Marshal(map[string]any{"datasets": []dataset.Dataset{ds}})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := dataset.ParseCatalog(doc)
	if err != nil {
		t.Fatalf("the catalog does not load: %v", err)
	}
	ds = cat[0]
	if got := ds.Columns[16].Type.String(); got != "list<decimal(20,10)>" {
		t.Fatalf("amounts declared %s", got)
	}

	src, err := source.NewSQL(db, dataset.DialectPostgres, "postgres:typed")
	if err != nil {
		t.Fatal(err)
	}
	exp := *e.exp
	exp.Source = src
	gen := int64(0)
	export := func(format fileformat.Format) (*Written, error) {
		gen++
		a := e.acct
		a.Destination.Format = format
		c := ledger.Claim{Key: partition.Key{AccountID: a.ID, Dataset: ds.Name, Day: testDay}, Token: "tok", Attempt: 1, Generation: gen, Reason: partition.ReasonScheduled}
		return exp.Export(e.ctx, Partition{Account: a, Dataset: ds, Day: testDay, Claim: c, RunID: "run_typed"}, e.svc.Log)
	}
	duck := duckcheck.Open(t)
	for _, format := range []fileformat.Format{fileformat.NDJSON, fileformat.Parquet} {
		w, err := export(format)
		if err != nil {
			t.Fatalf("export as %s: %v", format, err)
		}
		if len(w.Manifest.Files) != 1 {
			t.Fatalf("%s: %d files", format, len(w.Manifest.Files))
		}
		f := w.Manifest.Files[0]
		b := e.get(f.Key)
		if b == nil {
			b = e.get(path.Join(path.Dir(w.ManifestKey), f.Key))
		}
		p := filepath.Join(t.TempDir(), "part"+map[fileformat.Format]string{fileformat.Parquet: ".parquet", fileformat.NDJSON: ".ndjson.gz"}[format])
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		from := duckcheck.Parquet(p, false)
		if format == fileformat.NDJSON {
			from = duckcheck.NDJSON(p, ds, false)
		}
		t.Run(string(format)+"/duckdb", func(t *testing.T) {
			for i, c := range duckcheck.Describe(t, duck, from) {
				if want := duckcheck.Type(ds.Columns[i].Type); c[1] != want {
					t.Errorf("column %s: DuckDB reads %s, want %s", c[0], c[1], want)
				}
			}
			duckcheck.CheckRows(t, ds, duckcheck.ReadBack(t, duck, from, ds, `"at"`), want, format == fileformat.NDJSON)
		})
		if format != fileformat.Parquet {
			continue
		}
		t.Run("parquet/arrow", func(t *testing.T) {
			got, err := parquetreaders.ReadArrow(p)
			if err != nil {
				t.Fatal(err)
			}
			checkPlatformTable(t, ds, want, sortedByInstant(got))
			for i, c := range got.Columns {
				if w := parquetreaders.ArrowType(ds.Columns[i].Type); c.Engine != w {
					t.Errorf("column %s: Arrow reads %s, want %s", c.Name, c.Engine, w)
				}
			}
		})
		t.Run("parquet/hyparquet", func(t *testing.T) {
			got, err := parquetreaders.ReadHyparquet(p)
			if err != nil {
				t.Fatal(err)
			}
			checkPlatformTable(t, ds, want, sortedByInstant(got[0]))
		})
	}

	// The Parquet day (the last generation) loaded by the bucket's own
	// duckdb.sql, its s3:// URIs pointed at a copy of the bucket.
	dir := e.download()
	root := strings.TrimSuffix(filepath.ToSlash(dir), e.prefix)
	script, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(layout.LoadKey(e.prefix, ds.Name, testDay, "duckdb"))))
	if err != nil {
		t.Fatal(err)
	}
	load := duckcheck.Open(t)
	if _, err := load.Exec(strings.ReplaceAll(string(script), "s3://"+e.acct.Destination.Bucket+"/", root)); err != nil {
		t.Fatalf("duckdb.sql: %v", err)
	}
	duckcheck.CheckRows(t, ds, duckcheck.ReadBack(t, load, ds.Name, ds, `"at"`), want, false)

	// A two-dimensional array has no list: the partition fails naming the
	// column, and no file is delivered for it.
	if _, err := db.Exec(`INSERT INTO typed (org_id, at, ints) VALUES ($1, '2026-03-05 05:00:00+00', '{{1,2},{3,4}}')`, org); err != nil {
		t.Fatal(err)
	}
	_, err = export(fileformat.Parquet)
	if err == nil || !strings.Contains(err.Error(), "ints") || !strings.Contains(err.Error(), "multi-dimensional") {
		t.Fatalf("export with a 2-D array: %v; want a refusal naming ints and the dimensions", err)
	}
}

// sortedByInstant returns got with its rows in the order of their first
// column, an instant (ReadBack orders DuckDB's by it too).
func sortedByInstant(got *parquetreaders.Table) *parquetreaders.Table {
	out := *got
	out.Rows = slices.Clone(got.Rows)
	slices.SortFunc(out.Rows, func(a, b []parquetreaders.Value) int {
		x, _ := strconv.ParseInt(a[0].Text, 10, 64)
		y, _ := strconv.ParseInt(b[0].Text, 10, 64)
		return cmp.Compare(x, y)
	})
	return &out
}
