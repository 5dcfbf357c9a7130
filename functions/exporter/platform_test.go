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

// platformRow is one invoices row: what is inserted (SQL text, nil for
// NULL, in table order after org_id) and what the files must hold (the
// value model, in catalog order).
type platformRow struct {
	in   []any
	want []any
}

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

func dec(t *testing.T, s string, scale int) dataset.Decimal {
	t.Helper()
	d, err := dataset.ParseDecimal(s, scale)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// platformInvoices are the rows of testDay (2026-03-05, the account's zone
// UTC) in created_at order, with the awkward values of every type, and two
// rows just outside the day in Berlin wall time.
func platformInvoices(t *testing.T) (day []platformRow, outside [][]any) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	day = []platformRow{
		{
			in: []any{"0B9C1F4E-5A3D-4C2B-9E8F-7A6B5C4D3E2F", "2026-03-05 01:00:00", "1234567890.0123456789", "EUR", "enterprise",
				"192.168.0.1", "10.0.0.0/8", `{a,"b c","quote\"d",NULL}`, "2147483647", "32767", "0.1", "true", "9999-12-31",
				"Grüße 👋 \"q\"", "2026-03-05 12:34:56.789012+00", `{"vip": true, "plan": {"seats": [1, 2.5, "x"]}}`},
			want: []any{"0b9c1f4e-5a3d-4c2b-9e8f-7a6b5c4d3e2f", berlin(t, "2026-03-05 01:00:00"), dec(t, "1234567890.0123456789", 10), "EUR", "enterprise",
				"192.168.0.1", "10.0.0.0/8", raw(`["a","b c","quote\"d",null]`), int64(2147483647), int64(32767), float64(float32(0.1)), true,
				civil.MustParse("9999-12-31"), "Grüße 👋 \"q\"", time.Date(2026, 3, 5, 12, 34, 56, 789012000, time.UTC), raw(`{"vip": true, "plan": {"seats": [1, 2.5, "x"]}}`)},
		},
		{
			in: []any{"00000000-0000-0000-0000-000000000001", "2026-03-05 13:30:00.5", "-9999999999.9999999999", "US", "free",
				"2001:db8::1/64", nil, "{}", "-2147483648", nil, nil, "false", nil, nil, nil, nil},
			want: []any{"00000000-0000-0000-0000-000000000001", berlin(t, "2026-03-05 13:30:00.5"), dec(t, "-9999999999.9999999999", 10), "US ", "free",
				"2001:db8::1/64", nil, raw(`[]`), int64(-2147483648), nil, nil, false, nil, nil, nil, nil},
		},
		{
			in: []any{"ffffffff-ffff-ffff-ffff-ffffffffffff", "2026-03-06 00:59:59.999999", "0.0000000001", "JPY", "team",
				nil, nil, nil, "0", "-1", "-3.4e+38", "true", "2026-03-31", "tab\there", nil, `[]`},
			want: []any{"ffffffff-ffff-ffff-ffff-ffffffffffff", berlin(t, "2026-03-06 00:59:59.999999"), dec(t, "0.0000000001", 10), "JPY", "team",
				nil, nil, nil, int64(0), int64(-1), float64(float32(-3.4e38)), true, civil.MustParse("2026-03-31"), "tab\there", nil, raw(`[]`)},
		},
	}
	// 00:59:59 on the 5th in Berlin is 23:59:59Z on the 4th; 01:00 on the
	// 6th is midnight UTC, the next day.
	for i, wall := range []string{"2026-03-05 00:59:59.999999", "2026-03-06 01:00:00"} {
		outside = append(outside, []any{"11111111-1111-1111-1111-11111111111" + string(rune('0'+i)), wall, "1", "EUR", "free",
			nil, nil, nil, "1", nil, nil, "false", nil, nil, nil, nil})
	}
	return day, outside
}

const invoiceColumns = "org_id, invoice_id, created_at, amount, currency, tier, client_ip, network, labels, line_count, quantity, weight, paid, due_on, note, paid_at, attributes"

func insertInvoices(t *testing.T, db *sql.DB, org string, rows ...[]any) {
	t.Helper()
	for i, r := range rows {
		args := append([]any{org}, r...)
		if _, err := db.Exec("INSERT INTO invoices ("+invoiceColumns+") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17)", args...); err != nil {
			t.Fatalf("insert invoice %d: %v", i, err)
		}
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
	srv := pgserver.New(t)
	db, err := sql.Open("pgx", srv.DSN+" timezone=Asia/Tokyo") // the session zone must not matter
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := platformsource.Create(e.ctx, db); err != nil {
		t.Fatal(err)
	}
	org := e.acct.ID
	dayRows, outside := platformInvoices(t)
	var in [][]any
	for _, r := range dayRows {
		in = append(in, r.in)
	}
	insertInvoices(t, db, org, append(in, outside...)...)
	insertInvoices(t, db, "acct_someoneelse", dayRows[0].in) // another tenant's row, same day
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
		want = append(want, r.want)
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
