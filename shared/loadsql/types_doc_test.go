package loadsql

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/doctable"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/parquetreaders"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// docTypeTable returns the rows of the markdown table under heading in
// docs/types.md, cells trimmed and backticks dropped.
func docTypeTable(t *testing.T, heading string) [][]string {
	t.Helper()
	rows, err := doctable.Rows("../../docs/types.md", heading)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestDocFileTypes checks the catalog type table of docs/types.md against
// the Parquet schema the encoder promises, the JSON type of an NDJSON value
// the encoder writes, and each engine's load script column type.
func TestDocFileTypes(t *testing.T) {
	engines := []struct {
		name string
		typ  func(dataset.Type) string
	}{{EngineDuckDB, duckdbType}, {EngineAthena, athenaType}, {EngineBigQuery, bigqueryType}, {EngineSnowflake, snowflakeType}, {EngineRedshift, redshiftType}}
	for _, r := range docTypeTable(t, "## Catalog type → files and load scripts") {
		typ, err := dataset.ParseType(r[0])
		if err != nil {
			t.Fatal(err)
		}
		ds := dataset.Dataset{Name: "doc", Version: 1, Columns: []dataset.Column{{Name: "c", Type: typ}}}
		w := parquetreaders.WantColumns(ds)[0]
		parquet := w.Physical
		if w.Logical != "" {
			parquet += ", " + w.Logical
		}
		if parquet != r[1] {
			t.Errorf("%s: Parquet %q in the doc, %q in the code", r[0], r[1], parquet)
		}
		if got := ndjsonKind(t, ds); got != r[2] {
			t.Errorf("%s: NDJSON %q in the doc, %q written", r[0], r[2], got)
		}
		for i, e := range engines {
			if got := e.typ(typ); got != r[3+i] {
				t.Errorf("%s: %s %q in the doc, %q in the code", r[0], e.name, r[3+i], got)
			}
		}
	}
}

// ndjsonKind writes a typical value of ds's one column as NDJSON and names
// the JSON type it was written as.
func ndjsonKind(t *testing.T, ds dataset.Dataset) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := encode.New(fileformat.NDJSON, &buf, ds, encode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(datasettest.Edge(ds)[2]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	line, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatal(err)
	}
	if ds.Columns[0].Type.Kind == dataset.KindJSON {
		return "JSON value"
	}
	if v := rec["c"]; len(v) > 0 && v[0] == '[' {
		return "JSON array"
	}
	switch v := rec["c"]; {
	case ds.Columns[0].Type.Kind == dataset.KindBinary:
		var s string
		b, err := []byte(nil), json.Unmarshal(v, &s)
		if err == nil {
			b, err = base64.StdEncoding.DecodeString(s)
		}
		if err != nil || !bytes.Equal(b, datasettest.Edge(ds)[2][0].([]byte)) {
			t.Fatalf("binary written as %s (%v), not the base64 of the value", v, err)
		}
		return "base64 string"
	case len(v) > 0 && v[0] == '"':
		return "string"
	case string(v) == "true" || string(v) == "false":
		return "boolean"
	default:
		return "number"
	}
}
