//go:build !noduckdb

package main

import (
	"path/filepath"
	"reflect"
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
		return duckcheck.NDJSON(filepath.Join(dir, layout.Version, ds.Name, "*", "*"+fileformat.NDJSON.Extension()), ds, true)
	}
	return duckcheck.Parquet(filepath.Join(dir, layout.Version, ds.Name, "*", "*"+fileformat.Parquet.Extension()), true)
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
				m.Provenance.Source != "sqlite" || m.Provenance.Relation != ds.Relation || len(m.Schema) != len(ds.Columns) ||
				!m.Provenance.WindowStart.Equal(testDay.Start(time.UTC)) || !m.Provenance.WindowEnd.Equal(testDay.AddDays(1).Start(time.UTC)) ||
				m.Provenance.RowCount != int64(tc.rows) || m.Provenance.SnapshotAt.IsZero() {
				t.Errorf("manifest header %+v", m)
			}
			// Provenance says where the rows came from, never how: no SQL
			// text, bound values or source name reach the bucket (F3, F7).
			raw := string(e.get(layout.ManifestKey(e.prefix, tc.ds, testDay)))
			for _, internal := range []string{"SELECT", "?", "sqlite:test.db", `"query"`, `"params"`} {
				if strings.Contains(raw, internal) {
					t.Errorf("_manifest.json holds %q", internal)
				}
			}

			dir := e.download()
			from := fromClause(dir, ds, tc.format)
			var wantTypes [][2]string
			for _, c := range ds.Columns {
				wantTypes = append(wantTypes, [2]string{c.Name, duckcheck.Type(c.Type)})
			}
			wantTypes = append(wantTypes, [2]string{"dt", "DATE"})
			if got := duckcheck.Describe(t, db, from); !reflect.DeepEqual(got, wantTypes) {
				t.Errorf("DESCRIBE\n got %v\nwant %v", got, wantTypes)
			}
			got := duckcheck.ReadBack(t, db, from, ds, orderBy[tc.ds], "CAST(dt AS VARCHAR)")
			duckcheck.CheckRows(t, ds, got, want, true)
			for r := range got {
				if dt := got[r][len(ds.Columns)]; dt != testDay.String() {
					t.Errorf("row %d: dt %v", r+1, dt)
				}
			}
		})
	}
}
