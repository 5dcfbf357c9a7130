//go:build !noduckdb

package main

import (
	"cmp"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/devkit/parquetreaders"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/netguard"
)

// readBackRows is the rows of each dataset exported per store and format:
// a small day, read back whole by two readers.
const readBackRows = 25

// readBackEveryFormat exports a day of every dataset of the example catalog
// as Parquet and as NDJSON to the store dest names (nil: the env's S3 bucket
// on moto), through the exporter's own wiring for the store, reads every
// data file the manifests name back from the store, and decodes each with
// DuckDB and with a JavaScript reader (hyparquet for Parquet, Node's zlib
// and JSON.parse for NDJSON): the rows and every value must be the source's.
func readBackEveryFormat(t *testing.T, dest func(e *env) account.Destination) {
	duck := duckcheck.Open(t)
	names := datasettest.Example(t).Names()
	for _, format := range []fileformat.Format{fileformat.Parquet, fileformat.NDJSON} {
		t.Run(string(format), func(t *testing.T) {
			e := newEnv(t, envOpts{datasets: names, format: string(format)})
			cfg, _ := deployed(t)
			clients := &destination.Clients{Base: cfg, Endpoints: netguard.Policy{AllowLoopback: true}}
			if dest != nil {
				d := dest(e)
				d.Format = format
				if format != fileformat.Parquet {
					d.TableFormat = "" // an Iceberg table holds Parquet files only
				}
				e.acct.Destination = d
			}
			if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
				t.Fatal(err)
			}
			e.exp.Stores = clients
			b, err := clients.Open(e.ctx, e.acct.ID, e.acct.Destination, bucket.Options{})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for _, name := range names {
				ds := mustDataset(t, name)
				want := genRows(name, testDay, readBackRows)
				e.insert(name, want...)
				if r := e.export(name, testDay); r.State != "completed" {
					t.Fatalf("%s: %s (%s)", name, r.State, r.LastError)
				}
				paths := fetchDataFiles(t, e, b, name, filepath.Join(dir, name))
				t.Run(name+"/duckdb", func(t *testing.T) {
					from := duckcheck.Parquet(filepath.Join(dir, name, "*"+format.Extension()), false)
					if format == fileformat.NDJSON {
						from = duckcheck.NDJSON(filepath.Join(dir, name, "*"+format.Extension()), ds, false)
					}
					got := duckcheck.ReadBack(t, duck, from, ds, orderBy[name])
					duckcheck.CheckRows(t, ds, got, want, format == fileformat.NDJSON)
				})
				t.Run(name+"/javascript", func(t *testing.T) {
					read := func() ([]*parquetreaders.Table, error) { return parquetreaders.ReadHyparquet(paths...) }
					if format == fileformat.NDJSON {
						read = func() ([]*parquetreaders.Table, error) { return parquetreaders.ReadNodeNDJSON(ds, paths...) }
					}
					tables, err := read()
					if err != nil {
						t.Fatal(err)
					}
					var got [][]parquetreaders.Value
					for _, tbl := range tables {
						if format == fileformat.Parquet {
							checkColumns(t, ds, tbl)
						}
						got = append(got, tbl.Rows...)
					}
					checkCanonicalRows(t, ds, got, want)
				})
			}
		})
	}
}

// fetchDataFiles reads the committed manifest of ds's testDay from b and
// writes every data file it names into dir, returning their paths; the
// partition must hold one file at least.
func fetchDataFiles(t *testing.T, e *env, b *bucket.Bucket, ds, dir string) []string {
	day := testDay
	t.Helper()
	mk := layout.ManifestKey(e.prefix, ds, day)
	body, err := b.Get(e.ctx, mk, manifest.MaxManifestBytes)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) == 0 || m.Totals.Rows != readBackRows {
		t.Fatalf("%s %s: %d files, %d rows, want %d rows", ds, day, len(m.Files), m.Totals.Rows, readBackRows)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range m.Files {
		key := f.Key
		if !strings.HasPrefix(key, e.prefix+"/") {
			key = path.Join(path.Dir(mk), key)
		}
		data, err := b.Get(e.ctx, key, f.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		p := filepath.Join(dir, path.Base(key))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// checkColumns compares a Parquet reader's columns with the declared ones.
func checkColumns(t *testing.T, ds dataset.Dataset, got *parquetreaders.Table) {
	t.Helper()
	want := parquetreaders.WantColumns(ds)
	if len(got.Columns) != len(want) {
		t.Fatalf("%s: %d columns, want %d", got.Reader, len(got.Columns), len(want))
	}
	for i, w := range want {
		g := got.Columns[i]
		g.Engine = ""
		if g != w {
			t.Errorf("%s column %d:\n got %+v\nwant %+v", got.Reader, i, g, w)
		}
	}
}

// checkCanonicalRows compares the rows a reader read (in any order) with
// the source's rows, value by value in canonical text.
func checkCanonicalRows(t *testing.T, ds dataset.Dataset, got [][]parquetreaders.Value, rows [][]any) {
	t.Helper()
	want := make([][]parquetreaders.Value, len(rows))
	for r, row := range rows {
		want[r] = make([]parquetreaders.Value, len(row))
		for c, v := range row {
			want[r][c] = sourceCanonical(ds.Columns[c], v)
		}
	}
	byText := func(a, b []parquetreaders.Value) int {
		return slices.CompareFunc(a, b, func(x, y parquetreaders.Value) int {
			return cmp.Compare(x.String(), y.String())
		})
	}
	got = slices.Clone(got)
	slices.SortFunc(got, byText)
	slices.SortFunc(want, byText)
	if len(got) != len(want) {
		t.Fatalf("read %d rows, the source has %d", len(got), len(want))
	}
	for r := range want {
		for c, col := range ds.Columns {
			if got[r][c] != want[r][c] {
				t.Errorf("row %d column %s: read %v, the source has %v", r+1, col.Name, got[r][c], want[r][c])
			}
		}
	}
}

// sourceCanonical is the canonical text of a source value genRows made: a
// date and a decimal come as text there.
func sourceCanonical(c dataset.Column, v any) parquetreaders.Value {
	if s, ok := v.(string); ok && c.Type.Kind == dataset.KindDate {
		return parquetreaders.Canonical(civil.MustParse(s))
	}
	return parquetreaders.Canonical(v)
}
