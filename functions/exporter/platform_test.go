//go:build !noduckdb

package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/devkit/parquetreaders"
	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
	"github.com/daybook-dev/daybook/shared/devkit/platformsource"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
	"github.com/daybook-dev/daybook/shared/source"
)

// berlin is the instant of a wall-clock time in the platform's zone.
func berlin(t *testing.T, wall string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(platformsource.Zone)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := time.ParseInLocation("2006-01-02 15:04:05.999999", wall, loc)
	if err != nil {
		t.Fatal(err)
	}
	return ts.UTC()
}

func insertInvoices(t *testing.T, db *sql.DB, org string, rows ...[]any) {
	t.Helper()
	if err := platformsource.Insert(t.Context(), db, org, rows...); err != nil {
		t.Fatal(err)
	}
}

// TestPlatformCatalogEndToEnd exports a catalog that is not the demo's: the
// platform schema's entries as catalog init writes them (tenant column
// org_id, wall-clock timestamps in Europe/Berlin, numeric(20,10), uuid,
// char(3), an enum, inet, cidr, a text[], int4, int2, float4, jsonb, and
// the daily seat snapshots), through the exporter into the bucket, as
// Parquet and as NDJSON, and reads every value back with DuckDB, Arrow and
// hyparquet. Then a migration retypes a column: the next export fails
// before reading a row, as a schema mismatch naming the column and both
// types.
func TestPlatformCatalogEndToEnd(t *testing.T) {
	e := newEnv(t, envOpts{})
	db := platformDB(t, e, " timezone=Asia/Tokyo") // the session zone must not matter
	org := e.acct.ID
	dayRows, outside, err := platformsource.Invoices(testDay)
	if err != nil {
		t.Fatal(err)
	}
	var in [][]any
	for _, r := range dayRows {
		in = append(in, r.In)
	}
	insertInvoices(t, db, org, append(in, outside...)...)
	insertInvoices(t, db, "acct_someoneelse", dayRows[0].In) // another tenant's row, same day
	if _, err := db.Exec(`INSERT INTO seat_snapshots VALUES ($1, '2026-03-05', 'team', 12, 9, '{"region": "eu"}'), ($1, '2026-03-04', 'team', 11, 9, NULL)`, org); err != nil {
		t.Fatal(err)
	}
	snapshotWant := [][]any{{civil.MustParse("2026-03-05"), "team", int64(12), int64(9), json.RawMessage(`{"region": "eu"}`)}}

	// The catalog, as catalog init writes it.
	entry := func(table, part, kind, zone string) dataset.Dataset {
		tab, err := pgcatalog.ReadTable(e.ctx, db, table)
		if err != nil {
			t.Fatal(err)
		}
		d, err := pgcatalog.Entry(tab, pgcatalog.EntryOptions{TenantColumn: "org_id", PartitionColumn: part, Partition: kind, SourceTimeZone: zone})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	invoices := entry("invoices", "created_at", dataset.PartitionEventTime, platformsource.Zone)
	snapshots := entry("seat_snapshots", "snapshot_date", dataset.PartitionStatDate, "")
	doc, err := json.Marshal(map[string]any{"datasets": []dataset.Dataset{invoices, snapshots}})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := dataset.ParseCatalog(doc)
	if err != nil {
		t.Fatalf("the catalog does not load: %v", err)
	}
	invoices, snapshots = cat[0], cat[1]

	src, err := source.NewSQL(db, dataset.DialectPostgres, "postgres:platform")
	if err != nil {
		t.Fatal(err)
	}
	exp := *e.exp
	exp.Source = src
	gen := int64(0)
	export := func(ds dataset.Dataset, format fileformat.Format) (*Written, error) {
		gen++
		a := e.acct
		a.Destination.Format = format
		c := ledger.Claim{Key: partition.Key{AccountID: a.ID, Dataset: ds.Name, Day: testDay}, Token: "tok", Attempt: 1, Generation: gen, Reason: partition.ReasonScheduled}
		return exp.Export(e.ctx, Partition{Account: a, Dataset: ds, Day: testDay, Claim: c, RunID: "run_platform"}, e.svc.Log)
	}
	fetch := func(w *Written, ext string) []string {
		t.Helper()
		dir := t.TempDir()
		var paths []string
		for i, f := range w.Manifest.Files {
			b := e.get(f.Key)
			if b == nil {
				b = e.get(path.Join(path.Dir(w.ManifestKey), f.Key))
			}
			if b == nil {
				t.Fatalf("data file %s not in the bucket", f.Key)
			}
			p := filepath.Join(dir, "part-"+string(rune('a'+i))+ext)
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, p)
		}
		return paths
	}
	var want [][]any
	for _, r := range dayRows {
		want = append(want, r.Want)
	}

	duck := duckcheck.Open(t)
	var parquetFiles []string
	var parquetSets []struct {
		ds   dataset.Dataset
		want [][]any
	}
	for _, tc := range []struct {
		ds   dataset.Dataset
		want [][]any
	}{{invoices, want}, {snapshots, snapshotWant}} {
		for _, format := range []fileformat.Format{fileformat.Parquet, fileformat.NDJSON} {
			w, err := export(tc.ds, format)
			if err != nil {
				t.Fatalf("export %s as %s: %v", tc.ds.Name, format, err)
			}
			if w.Manifest.Totals.Rows != int64(len(tc.want)) {
				t.Fatalf("%s as %s: %d rows, want %d", tc.ds.Name, format, w.Manifest.Totals.Rows, len(tc.want))
			}
			ext := ".parquet"
			from := func(p string) string { return duckcheck.Parquet(p, false) }
			if format == fileformat.NDJSON {
				ext = ".ndjson.gz"
				from = func(p string) string { return duckcheck.NDJSON(p, tc.ds, false) }
			}
			paths := fetch(w, ext)
			if len(paths) != 1 {
				t.Fatalf("%s as %s: %d files", tc.ds.Name, format, len(paths))
			}
			t.Run(tc.ds.Name+"/"+string(format)+"/duckdb", func(t *testing.T) {
				got := duckcheck.ReadBack(t, duck, from(paths[0]), tc.ds, "")
				duckcheck.CheckRows(t, tc.ds, got, tc.want, format == fileformat.NDJSON)
			})
			if format == fileformat.Parquet {
				parquetFiles = append(parquetFiles, paths[0])
				parquetSets = append(parquetSets, tc)
				t.Run(tc.ds.Name+"/parquet/arrow", func(t *testing.T) {
					got, err := parquetreaders.ReadArrow(paths[0])
					if err != nil {
						t.Fatal(err)
					}
					checkPlatformTable(t, tc.ds, tc.want, got)
				})
			}
		}
	}
	js, err := parquetreaders.ReadHyparquet(parquetFiles...)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range parquetSets {
		t.Run(s.ds.Name+"/parquet/hyparquet", func(t *testing.T) { checkPlatformTable(t, s.ds, s.want, js[i]) })
	}

	// A migration retypes a column; the next export fails before any row
	// is read: a schema mismatch for the customer, the column and both
	// types for the operator.
	if _, err := db.Exec(`ALTER TABLE invoices ALTER COLUMN amount TYPE numeric(30,12)`); err != nil {
		t.Fatal(err)
	}
	_, err = export(invoices, fileformat.Parquet)
	var te *dataset.TypeError
	if !errors.As(err, &te) || te.Column != "amount" || te.Declared != "decimal(20,10)" || te.Found != "numeric(30,12)" {
		t.Fatalf("export after the migration: %v; want a type error naming amount, decimal(20,10), numeric(30,12)", err)
	}
	if code := classify(err); code != manifest.CodeSchemaMismatch {
		t.Errorf("classified %s, want %s", code, manifest.CodeSchemaMismatch)
	}
	if msg := newFailure(err).Error(); !strings.Contains(msg, "column amount") || !strings.Contains(msg, "numeric(30,12)") || !strings.Contains(msg, "decimal(20,10)") {
		t.Errorf("the operator's message %q does not name the column and both types", msg)
	}
	if _, err := db.Exec(`ALTER TABLE invoices ALTER COLUMN created_at TYPE timestamptz USING created_at AT TIME ZONE 'Europe/Berlin'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`ALTER TABLE invoices ALTER COLUMN amount TYPE numeric(20,10)`); err != nil {
		t.Fatal(err)
	}
	_, err = export(invoices, fileformat.Parquet)
	if !errors.As(err, &te) || te.Column != "created_at" || !strings.Contains(te.Reason, "source_time_zone") {
		t.Errorf("export after created_at became timestamptz: %v; want a type error naming created_at and its source_time_zone", err)
	}
}

// checkPlatformTable compares what a Parquet reader decoded with the
// declared columns and every value written.
func checkPlatformTable(t *testing.T, ds dataset.Dataset, rows [][]any, got *parquetreaders.Table) {
	t.Helper()
	wantCols := parquetreaders.WantColumns(ds)
	if len(got.Columns) != len(wantCols) {
		t.Fatalf("%d columns, want %d", len(got.Columns), len(wantCols))
	}
	for i, w := range wantCols {
		g := got.Columns[i]
		g.Engine, w.Engine = "", ""
		if g != w {
			t.Errorf("column %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if len(got.Rows) != len(rows) {
		t.Fatalf("read %d rows, wrote %d", len(got.Rows), len(rows))
	}
	for r, row := range rows {
		for c, v := range row {
			if w := parquetreaders.Canonical(v); got.Rows[r][c] != w {
				t.Errorf("row %d column %s: read %v, want %v", r+1, ds.Columns[c].Name, got.Rows[r][c], w)
			}
		}
	}
}

// pgDB is a database of a PostgreSQL server of the test's own (pgserver),
// opened with the DSN options given ("" for none) and closed when t ends.
func pgDB(t *testing.T, options string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", pgserver.New(t).DSN+options)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// platformDB is pgDB holding the platform schema (platformsource.Create).
func platformDB(t *testing.T, e *env, options string) *sql.DB {
	t.Helper()
	db := pgDB(t, options)
	if err := platformsource.Create(e.ctx, db); err != nil {
		t.Fatal(err)
	}
	return db
}
