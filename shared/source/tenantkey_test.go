package source

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
)

// clicksCatalog is a dataset keyed by a tenant column of type %s, with its
// queries generated from tenant_column, as `catalog init` writes it.
const clicksCatalog = `
datasets:
  - name: clicks
    version: 1
    partition: event_time
    partition_column: created_at
    relation: clicks
    mode: incremental_append
    read: union_all_partitions
    tenant_column: org_id
    tenant_type: %s
    columns:
      - {name: click_id, type: string}
      - {name: created_at, type: timestamp}
      - {name: attributes, type: json, nullable: true}
`

func clicksDataset(t *testing.T, tenantType string) dataset.Dataset {
	t.Helper()
	cat, err := dataset.Parse(fmt.Appendf(nil, clicksCatalog, tenantType))
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := cat.Get("clicks")
	return ds
}

// TestPostgresIntegerTenant: a bigint tenant column is exported through
// the pgx binary path, the account's key bound as the integer, and the
// account reads its tenant's rows only. On the old code every partition
// failed with "parameter 1 of type int64": the binary path bound only text
// and time parameters.
func TestPostgresIntegerTenant(t *testing.T) {
	db := pgDB(t, true)
	pgExec(t, db, `CREATE TABLE clicks (org_id bigint NOT NULL, click_id text NOT NULL, created_at timestamptz NOT NULL, attributes jsonb)`)
	pgExec(t, db, `INSERT INTO clicks VALUES (7, 'mine', '2026-11-28 10:00:00+00', NULL), (8, 'theirs', '2026-11-28 11:00:00+00', NULL)`)
	ds := clicksDataset(t, dataset.TenantInt64)
	q := dayQuery(ds, "acct_clicksaccountaa", time.UTC)
	q.TenantKey = "7"
	rows, prov, err := collect(t, newPGSource(t, db), q)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, ds, rows, [][]any{{"mine", utc("2026-11-28T10:00:00Z"), nil}})
	checkProvenance(t, prov, ds, 1, "2026-11-28T00:00:00.000000Z", "2026-11-29T00:00:00.000000Z")
}

// plainConnector opens PostgreSQL connections through pgx's database/sql
// driver behind a connection type of its own, so SQL reads them as it reads
// any other PostgreSQL driver's: through database/sql (scanRows), not
// pgx's binary path.
type plainConnector struct{ dsn string }

func (c plainConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := stdlib.GetDefaultDriver().Open(c.dsn)
	return plainConn{conn}, err
}

func (plainConnector) Driver() driver.Driver { return stdlib.GetDefaultDriver() }

type plainConn struct{ driver.Conn }

// TestTenantKeyTypes: the tenant key is a typed value wherever it is bound
// (the export, the fingerprint, the slice bounds and, on PostgreSQL,
// `catalog check`), on every way a source is read (pgx's binary path,
// another PostgreSQL driver through database/sql, SQLite), for string,
// integer and uuid tenant columns: the account reads its tenant's rows only,
// whether its key is written canonically or not (a key stored before keys
// were canonical: "0007", "+7", an upper-case uuid). On the old code an
// upper-case uuid read no row from SQLite (bound as the text it was, while
// the column holds the lower-case text), and an integer key failed the
// binary path.
func TestTenantKeyTypes(t *testing.T) {
	const (
		mineUUID   = "6f1c2a4e-0d3b-4e5f-8a9b-1c2d3e4f5a6b"
		theirsUUID = "0a0a0a0a-1b1b-4c2c-8d3d-4e4e4e4e4e4e"
	)
	types := []struct {
		tenantType    string
		pg, sqlite    string // the tenant column's type
		mine, theirs  string // the tenants as the source holds them
		keys          []string
		pgLit, sqlLit func(string) string
	}{
		{dataset.TenantString, "text", "TEXT", "org-7", "org-8", []string{"org-7"}, quote, quote},
		{dataset.TenantInt64, "bigint", "INTEGER", "7", "8", []string{"7", "0007", "+7"}, bare, bare},
		{dataset.TenantInt64, "integer", "INTEGER", "7", "8", []string{"7"}, bare, bare},
		{dataset.TenantUUID, "uuid", "TEXT", mineUUID, theirsUUID, []string{mineUUID, strings.ToUpper(mineUUID)}, quote, quote},
	}
	drivers := []string{"pgx", "postgres database/sql", "sqlite"}
	ctx := context.Background()
	for _, drv := range drivers {
		for _, ty := range types {
			t.Run(drv+"/"+ty.tenantType+"_"+ty.pg, func(t *testing.T) {
				ds := clicksDataset(t, ty.tenantType)
				var db *sql.DB
				var dialect string
				rowsAt := [][2]string{{ty.mine, "10:00"}, {ty.theirs, "11:00"}, {ty.mine, "12:00"}}
				switch drv {
				case "sqlite":
					dialect = dataset.DialectSQLite
					var err error
					if db, err = sql.Open("sqlite", filepath.Join(t.TempDir(), "clicks.db")); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { db.Close() })
					pgExec(t, db, `CREATE TABLE clicks (org_id `+ty.sqlite+` NOT NULL, click_id TEXT NOT NULL, created_at TEXT NOT NULL, attributes TEXT)`)
					for i, r := range rowsAt {
						pgExec(t, db, fmt.Sprintf(`INSERT INTO clicks VALUES (%s, 'c%d', '2026-11-28T%s:00.000000Z', NULL)`, ty.sqlLit(r[0]), i, r[1]))
					}
				default:
					dialect = dataset.DialectPostgres
					dsn := pgSchema(t)
					if drv == "pgx" {
						db = openPG(t, dsn)
					} else {
						db = sql.OpenDB(plainConnector{dsn})
						t.Cleanup(func() { db.Close() })
					}
					pgExec(t, db, `CREATE TABLE clicks (org_id `+ty.pg+` NOT NULL, click_id text NOT NULL, created_at timestamptz NOT NULL, attributes jsonb)`)
					pgExec(t, db, `CREATE INDEX ON clicks (org_id, created_at)`)
					for i, r := range rowsAt {
						pgExec(t, db, fmt.Sprintf(`INSERT INTO clicks VALUES (%s, 'c%d', '2026-11-28 %s:00+00', NULL)`, ty.pgLit(r[0]), i, r[1]))
					}
				}
				src, err := NewSQL(db, dialect, drv)
				if err != nil {
					t.Fatal(err)
				}
				for _, key := range ty.keys {
					q := dayQuery(ds, "acct_clicksaccountaa", time.UTC)
					q.TenantKey = key
					rows, _, err := collect(t, src, q)
					if err != nil {
						t.Fatalf("key %q: export: %v", key, err)
					}
					sameRows(t, ds, rows, [][]any{{"c0", utc("2026-11-28T10:00:00Z"), nil}, {"c2", utc("2026-11-28T12:00:00Z"), nil}})
					sum, err := src.Fingerprint(ctx, q)
					if err != nil || sum.Rows != 2 {
						t.Errorf("key %q: fingerprint %+v, %v; want the tenant's 2 rows", key, sum, err)
					}
					// One bound halfway through the tenant's rows: its second
					// row, not the other tenant's row between them.
					bounds, err := src.SliceBounds(ctx, q, 2, 0)
					if err != nil || len(bounds) != 1 || !bounds[0].Equal(utc("2026-11-28T12:00:00Z")) {
						t.Errorf("key %q: slice bounds %v, %v; want [12:00]", key, bounds, err)
					}
				}
				if drv != "pgx" {
					return
				}
				conn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				fs, err := pgcatalog.CheckDataset(ctx, conn, ds)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fs {
					if f.Severity == pgcatalog.SeverityError {
						t.Errorf("catalog check: %+v", f)
					}
				}
			})
		}
	}
}

func quote(s string) string { return "'" + s + "'" }
func bare(s string) string  { return s }

// pgSchema creates a fresh schema and returns a DSN whose search_path is
// it.
func pgSchema(t *testing.T) string {
	t.Helper()
	srv := postgres(t)
	name := fmt.Sprintf("t%d_%s", pgSeq.Add(1), nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_"))
	name = name[:min(len(name), 60)]
	admin, err := sql.Open("pgx", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return srv.DSN + " search_path=" + name + " timezone=America/New_York"
}

func openPG(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
