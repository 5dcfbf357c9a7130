package loadsql

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// evolvedDataset is the synthetic dataset at schema version 3: version 2
// appended region, version 3 appended limit (a reserved word) and
// first_seen (a DATE), and loosened order, required until version 2.
func evolvedDataset() dataset.Dataset {
	ds := syntheticDataset()
	ds.Version = 3
	ds.Columns = append(ds.Columns,
		dataset.Column{Name: "region", Type: dataset.Type{Kind: dataset.KindString}, Nullable: true, Since: 2},
		dataset.Column{Name: "limit", Type: dataset.Type{Kind: dataset.KindInt64}, Nullable: true, Since: 3},
		dataset.Column{Name: "first_seen", Type: dataset.Type{Kind: dataset.KindDate}, Nullable: true, Since: 3},
	)
	if ds.Columns[1].Name != "order" || ds.Columns[1].Nullable {
		panic("syntheticDataset changed: column 1 is no longer the required order")
	}
	ds.Columns[1].Nullable, ds.Columns[1].NullableSince = true, 3
	return ds
}

// atVersion returns ds as it was at schema version v: without the columns
// appended later, and with the columns loosened later still required.
func atVersion(ds dataset.Dataset, v int) dataset.Dataset {
	old := ds
	old.Version = v
	old.Columns = nil
	for _, c := range ds.Columns {
		if c.SinceVersion() > v {
			continue
		}
		if c.NullableSince > v {
			c.Nullable, c.NullableSince = false, 0
		}
		old.Columns = append(old.Columns, c)
	}
	return old
}

// The evolved dataset's versions follow the compatibility rules, so the
// tests below evolve a table the way a real schema change would.
func TestEvolvedDatasetIsCompatible(t *testing.T) {
	ds := evolvedDataset()
	for v := 1; v < ds.Version; v++ {
		for w := v + 1; w <= ds.Version; w++ {
			if err := datasettest.Compatible(atVersion(ds, v), atVersion(ds, w)); err != nil {
				t.Errorf("version %d to %d: %v", v, w, err)
			}
		}
	}
	if got := len(atVersion(ds, 1).Columns); got != len(syntheticDataset().Columns) {
		t.Fatalf("version 1 has %d columns, want the synthetic dataset's %d", got, len(syntheticDataset().Columns))
	}
}

func TestEvolutionGolden(t *testing.T) {
	ds := evolvedDataset()
	for _, engine := range Engines {
		t.Run(engine, func(t *testing.T) {
			p, ok := forEngine(engine, goldenPartition(t, ds, fileformat.Parquet))
			if !ok {
				t.Fatalf("%s writes no script for the evolved dataset", engine)
			}
			got, err := Generate(engine, p)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join(p.Store, engine, "group.v3.sql"), got)
		})
	}
}

// Each engine's script carries its evolution statements, in order, before
// the load; a dataset that never changed gets none.
func TestEvolutionStatements(t *testing.T) {
	tests := []struct {
		engine string
		want   []string // in this order
		before string   // the evolution comes before this ("": not checked)
	}{
		{EngineDuckDB, []string{
			`ALTER TABLE "group" ADD COLUMN IF NOT EXISTS "region" VARCHAR;`,
			`ALTER TABLE "group" ADD COLUMN IF NOT EXISTS "limit" BIGINT;`,
			`ALTER TABLE "group" ADD COLUMN IF NOT EXISTS "first_seen" DATE;`,
			`ALTER TABLE "group" ALTER COLUMN "order" DROP NOT NULL;`,
		}, "BEGIN TRANSACTION;"},
		{EngineSnowflake, []string{
			`ALTER TABLE "GROUP" ADD COLUMN IF NOT EXISTS region VARCHAR;`,
			`ALTER TABLE "GROUP" ADD COLUMN IF NOT EXISTS "LIMIT" BIGINT;`,
			`ALTER TABLE "GROUP" ADD COLUMN IF NOT EXISTS first_seen DATE;`,
			`ALTER TABLE "GROUP" ALTER COLUMN "ORDER" DROP NOT NULL;`,
		}, "BEGIN;"},
		{EngineBigQuery, []string{
			"ALTER TABLE `group` ADD COLUMN IF NOT EXISTS `region` STRING;",
			"ALTER TABLE `group` ADD COLUMN IF NOT EXISTS `limit` INT64;",
			"ALTER TABLE `group` ADD COLUMN IF NOT EXISTS `first_seen` DATE;",
			"ALTER TABLE `group` ALTER COLUMN `order` DROP NOT NULL;",
		}, "LOAD DATA INTO"},
		{EngineRedshift, []string{
			`CREATE OR REPLACE PROCEDURE "group_daybook_evolve"()`,
			`IF NOT EXISTS (SELECT 1 FROM svv_columns WHERE table_schema = current_schema() AND table_name = 'group' AND column_name = 'region') THEN`,
			`ALTER TABLE "group" ADD COLUMN "region" VARCHAR(65535);`,
			`ALTER TABLE "group" ADD COLUMN "limit" BIGINT;`,
			`ALTER TABLE "group" ADD COLUMN "first_seen" DATE;`,
			`AND column_name = 'order' AND is_nullable = 'NO') THEN`,
			`RAISE EXCEPTION 'daybook: column order of table group is NOT NULL`,
			`CALL "group_daybook_evolve"();`,
			`DROP PROCEDURE "group_daybook_evolve"();`,
		}, "BEGIN;"},
		// Athena registers the day first (ADD COLUMNS may fail harmlessly),
		// then adds the columns and registers the day again.
		{EngineAthena, []string{
			"ALTER TABLE `group` DROP IF EXISTS PARTITION (`dt` = '2026-11-28');",
			"ALTER TABLE `group` ADD IF NOT EXISTS\n    PARTITION (`dt` = '2026-11-28')",
			"ALTER TABLE `group` ADD COLUMNS (\n    `region` STRING\n);",
			"ALTER TABLE `group` ADD COLUMNS (\n    `limit` BIGINT,\n    `first_seen` DATE\n);",
			"ALTER TABLE `group` DROP IF EXISTS PARTITION (`dt` = '2026-11-28');",
			"ALTER TABLE `group` ADD IF NOT EXISTS\n    PARTITION (`dt` = '2026-11-28')",
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			s, err := Generate(tt.engine, goldenPartition(t, evolvedDataset(), fileformat.Parquet))
			if err != nil {
				t.Fatal(err)
			}
			at := 0
			for _, w := range tt.want {
				i := strings.Index(s[at:], w)
				if i < 0 {
					t.Fatalf("lacks, after offset %d, %q:\n%s", at, w, s)
				}
				at += i + len(w)
			}
			if b := strings.Index(s, tt.before); tt.before != "" && (b < 0 || b < at) {
				t.Fatalf("the evolution does not come before %q:\n%s", tt.before, s)
			}
			// Version 1 of the same dataset has nothing to evolve.
			s, err = Generate(tt.engine, goldenPartition(t, atVersion(evolvedDataset(), 1), fileformat.Parquet))
			if err != nil {
				t.Fatal(err)
			}
			for _, never := range []string{"ADD COLUMN", "DROP NOT NULL", "PROCEDURE", "DROP IF EXISTS PARTITION"} {
				if strings.Contains(s, never) {
					t.Errorf("version 1 script contains %q:\n%s", never, s)
				}
			}
		})
	}
}

// A qualified table is evolved in its own schema, with the catalog looked up
// there (in lower case, as Redshift stores names).
func TestRedshiftEvolutionQualified(t *testing.T) {
	p := goldenPartition(t, evolvedDataset(), fileformat.Parquet)
	p.TableName = "Analytics.group_raw"
	s, err := Generate(EngineRedshift, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`CREATE OR REPLACE PROCEDURE "Analytics"."group_raw_daybook_evolve"()`,
		`WHERE table_schema = 'analytics' AND table_name = 'group_raw'`,
		`ALTER TABLE "Analytics"."group_raw" ADD COLUMN "region" VARCHAR(65535);`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("lacks %q:\n%s", want, s)
		}
	}
}

func isNullable(t *testing.T, db *sql.DB, table, column string) string {
	t.Helper()
	var s string
	err := db.QueryRow(`SELECT is_nullable FROM information_schema.columns WHERE table_name = ? AND column_name = ?`, table, column).Scan(&s)
	if err != nil {
		t.Fatalf("is_nullable of %s.%s: %v", table, column, err)
	}
	return s
}

// The script of the newest schema version, run against a table created by
// the script of an older version, adds the appended columns (NULL in the
// rows already there), drops the NOT NULL of the loosened column, and loads
// the day; run again, it changes nothing.
func TestDuckDBEvolution(t *testing.T) {
	ds := evolvedDataset()
	day1, day2 := mustDay(t, "2026-11-27"), mustDay(t, "2026-11-28")
	for _, format := range []fileformat.Format{fileformat.Parquet, fileformat.NDJSON} {
		for from := 1; from <= ds.Version; from++ {
			t.Run(fmt.Sprintf("%s/from_v%d", format, from), func(t *testing.T) {
				db := duckcheck.Open(t)
				m := mirror{root: t.TempDir(), bucket: "acme-exports"}
				old := atVersion(ds, from)
				pOld := m.write(t, old, format, day1, 1, []int{5})
				run(t, db, pOld)
				wantOrder := "NO"
				if from >= 3 {
					wantOrder = "YES"
				}
				if got := isNullable(t, db, ds.Name, "order"); got != wantOrder {
					t.Fatalf("after the version %d script, order is_nullable = %s, want %s", from, got, wantOrder)
				}

				pNew := m.write(t, ds, format, day2, 1, []int{4, 3})
				for range 2 { // the second run must change nothing
					run(t, db, pNew)
				}

				got := map[string]string{}
				for _, c := range tableColumns(t, db, ds.Name) {
					got[c[0]] = c[1]
				}
				if len(got) != len(ds.Columns)+1 || got[dtColumn] != "DATE" {
					t.Fatalf("columns %v, want the %d of version %d plus dt", got, len(ds.Columns), ds.Version)
				}
				for _, c := range ds.Columns {
					if got[c.Name] != describeType(c.Type) {
						t.Errorf("column %s is %q, want %q", c.Name, got[c.Name], describeType(c.Type))
					}
				}
				if got := isNullable(t, db, ds.Name, "order"); got != "YES" {
					t.Fatalf("order is_nullable = %s after the evolution, want YES", got)
				}

				table := quoteDouble(ds.Name)
				dayCount := func(day string) int64 {
					return count(t, db, "SELECT count(*) FROM "+table+" WHERE dt = DATE '"+day+"'")
				}
				if n1, n2 := dayCount(day1.String()), dayCount(day2.String()); n1 != 5 || n2 != 7 {
					t.Fatalf("days have %d and %d rows, want 5 and 7", n1, n2)
				}
				sameRows(t, db, pOld) // the old day's rows, on the old columns
				sameRows(t, db, pNew) // the new day's rows, on every column
				var added []string
				for _, c := range ds.Columns {
					if c.SinceVersion() > from {
						added = append(added, quoteDouble(c.Name)+" IS NOT NULL")
					}
				}
				if len(added) > 0 {
					q := "SELECT count(*) FROM " + table + " WHERE dt = DATE '" + day1.String() + "' AND (" + strings.Join(added, " OR ") + ")"
					if n := count(t, db, q); n != 0 {
						t.Fatalf("%d old rows have a value in a column added after version %d", n, from)
					}
				}
				// The new day has NULLs where the old schema refused them, and
				// values in the added columns.
				q := "SELECT count(*) FILTER (WHERE \"order\" IS NULL), count(\"limit\"), count(\"region\") FROM " + table + " WHERE dt = DATE '" + day2.String() + "'"
				var nulls, limits, regions int64
				if err := db.QueryRow(q).Scan(&nulls, &limits, &regions); err != nil {
					t.Fatal(err)
				}
				if nulls == 0 || limits == 0 || regions == 0 {
					t.Fatalf("new day: %d NULL orders, %d limits, %d regions; want each > 0", nulls, limits, regions)
				}
			})
		}
	}
}

func TestWriteComment(t *testing.T) {
	long := strings.Repeat("x", 90)
	tests := []struct{ name, text, want string }{
		{"short", "one two", "-- one two\n"},
		{"wraps at 80", strings.Repeat("abcd ", 20), strings.Repeat("-- "+strings.TrimSpace(strings.Repeat("abcd ", 15))+"\n", 1) + "-- " + strings.TrimSpace(strings.Repeat("abcd ", 5)) + "\n"},
		{"long word stays whole", "a " + long + " b", "-- a\n-- " + long + "\n-- b\n"},
		{"empty", "  ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeComment(&b, tt.text)
			if b.String() != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
			for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
				if len(l) > 80 && !strings.Contains(l, long) {
					t.Errorf("line of %d characters: %q", len(l), l)
				}
			}
		})
	}
}
