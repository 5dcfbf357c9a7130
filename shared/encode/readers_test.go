//go:build !noduckdb

package encode_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/devkit/parquetreaders"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// Small limits so a file of a couple of thousand rows has several row
// groups, many pages, and string columns whose dictionary overflows.
const (
	matrixRows          = 2000
	matrixRowGroupRows  = 700
	matrixDictionaryMax = 2 << 10
	matrixPageBytes     = 4 << 10
)

// matrixFile is one Parquet file of the reader matrix.
type matrixFile struct {
	name    string
	ds      dataset.Dataset
	profile encode.Profile
	codec   fileformat.Codec
	rows    [][]any
	path    string
}

// writeMatrix writes every dataset of the shipped example catalog and the all-types one,
// in both profiles and both codecs, once with rows covering every type
// (NULLs, extreme dates and timestamps, widest decimals, extreme doubles, unicode, JSON)
// and once empty.
func writeMatrix(t *testing.T) []matrixFile {
	t.Helper()
	cat := datasettest.Example(t).Datasets()
	dir := t.TempDir()
	var files []matrixFile
	for _, ds := range append(cat, datasettest.AllTypes()) {
		rows := append(datasettest.Edge(ds), datasettest.Varied(ds, matrixRows)...)
		for _, profile := range encode.Profiles() {
			for _, codec := range []fileformat.Codec{fileformat.Snappy, fileformat.Zstd} {
				for _, content := range []struct {
					name string
					rows [][]any
				}{{"rows", rows}, {"empty", nil}} {
					f := matrixFile{
						name: fmt.Sprintf("%s/%s/%s/%s", ds.Name, profile, codec, content.name),
						ds:   ds, profile: profile, codec: codec, rows: content.rows,
					}
					f.path = filepath.Join(dir, strings.ReplaceAll(f.name, "/", "-")+".parquet")
					opts := encode.Tuned(encode.Options{Compression: codec, Profile: profile, MaxRowGroupRows: matrixRowGroupRows},
						matrixDictionaryMax, matrixPageBytes)
					writeParquet(t, f.path, ds, opts, f.rows)
					files = append(files, f)
				}
			}
		}
	}
	return files
}

func writeParquet(t *testing.T, path string, ds dataset.Dataset, opts encode.Options, rows [][]any) {
	t.Helper()
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	w, err := encode.New(fileformat.Parquet, fh, ds, opts)
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
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReaderMatrix reads every file of the matrix with three independent
// readers (DuckDB, Apache Arrow's Go reader, hyparquet under Node) and
// checks each column's physical and logical type, the type the reader maps
// it to, and every value.
func TestReaderMatrix(t *testing.T) {
	files := writeMatrix(t)
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.path
	}
	// One node process for all files; a missing node or npm package fails
	// here with the install hint.
	js, err := parquetreaders.ReadHyparquet(paths...)
	if err != nil {
		t.Fatal(err)
	}
	db := duckcheck.Open(t)
	for i, f := range files {
		t.Run(f.name, func(t *testing.T) {
			readers := []struct {
				name   string
				read   func() (*parquetreaders.Table, error)
				engine func(dataset.Type) string // nil: the reader has no types of its own
			}{
				{"duckdb", func() (*parquetreaders.Table, error) { return parquetreaders.ReadDuckDB(db, f.path) }, duckcheck.Type},
				{"arrow", func() (*parquetreaders.Table, error) { return parquetreaders.ReadArrow(f.path) }, parquetreaders.ArrowType},
				{"hyparquet", func() (*parquetreaders.Table, error) { return js[i], nil }, nil},
			}
			for _, r := range readers {
				t.Run(r.name, func(t *testing.T) {
					got, err := r.read()
					if err != nil {
						t.Fatal(err)
					}
					checkTable(t, f.ds, f.rows, got, r.engine)
				})
			}
		})
	}
}

// checkTable compares what a reader decoded with the dataset's declared
// types and the rows written.
func checkTable(t *testing.T, ds dataset.Dataset, rows [][]any, got *parquetreaders.Table, engine func(dataset.Type) string) {
	t.Helper()
	want := parquetreaders.WantColumns(ds)
	if len(got.Columns) != len(want) {
		t.Fatalf("%d columns, want %d: %+v", len(got.Columns), len(want), got.Columns)
	}
	for i, w := range want {
		g := got.Columns[i]
		if engine != nil {
			w.Engine = engine(ds.Columns[i].Type)
		} else {
			g.Engine = ""
		}
		if g != w {
			t.Errorf("column %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if len(got.Rows) != len(rows) {
		t.Fatalf("read %d rows, wrote %d", len(got.Rows), len(rows))
	}
	bad := 0
	for r, row := range rows {
		for c, v := range row {
			if w := parquetreaders.Canonical(v); got.Rows[r][c] != w {
				if bad++; bad <= 10 {
					t.Errorf("row %d column %s: read %v, wrote %v", r+1, ds.Columns[c].Name, got.Rows[r][c], w)
				}
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d values differ in all", bad)
	}
}
