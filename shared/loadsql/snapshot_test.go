package loadsql

import (
	"slices"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

func snapshotDataset(t *testing.T) dataset.Dataset {
	t.Helper()
	s, err := dataset.Parse([]byte(`
datasets:
  - name: members
    version: 1
    partition: snapshot
    relation: members
    mode: full_refresh
    read: latest_snapshot
    tenant_column: org_id
    columns:
      - {name: member_id, type: string}
      - {name: seats, type: int64}
      - {name: joined_at, type: timestamp}
      - {name: attributes, type: json, nullable: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Get("members")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSnapshotLoadKeepsTheNewestDay runs a snapshot dataset's duckdb.sql for
// days in every order (and one day twice, as a new generation): the
// table always ends with the rows of the newest day loaded and only those,
// where an incremental dataset's would hold the union. On the old code the
// scripts kept every day.
func TestSnapshotLoadKeepsTheNewestDay(t *testing.T) {
	ds := snapshotDataset(t)
	d1, d2, d3 := mustDay(t, "2026-03-04"), mustDay(t, "2026-03-05"), mustDay(t, "2026-03-06")
	for _, format := range fileformat.Formats() {
		t.Run(string(format), func(t *testing.T) {
			db := duckcheck.Open(t)
			m := mirror{root: t.TempDir(), bucket: "b"}
			p1 := m.write(t, ds, format, d1, 1, []int{3})
			p2 := m.write(t, ds, format, d2, 1, []int{2, 3})
			p3 := m.write(t, ds, format, d3, 1, []int{4})
			check := func(step string, want Partition) {
				t.Helper()
				if n := count(t, db, "SELECT count(DISTINCT dt) FROM members"); n != 1 {
					t.Fatalf("%s: the table holds %d days, want 1 (the newest)", step, n)
				}
				sameRows(t, db, want)
			}
			run(t, db, p2)
			check("day 2", p2)
			run(t, db, p1) // an older day's script, run late
			check("day 1 after day 2", p2)
			run(t, db, p3)
			check("day 3", p3)
			p3b := m.write(t, ds, format, d3, 2, []int{1})
			run(t, db, p3b) // the same day again, a new generation
			check("day 3 generation 2", p3b)
		})
	}
	script, err := Generate(EngineDuckDB, mirror{root: t.TempDir(), bucket: "b"}.write(t, ds, fileformat.Parquet, d1, 1, []int{1}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(script, "snapshot (mode full_refresh, read latest_snapshot)") {
		t.Errorf("the header does not say how to read the dataset:\n%s", script)
	}
}

// TestSnapshotScriptsEveryEngine: every engine's script for a snapshot
// keeps only the newest day: the native-table engines delete the older
// days after the load (inside its transaction, but for BigQuery and
// Databricks, which commit each statement on its own), Athena (files in
// place) gets a view of the newest registered day. An incremental dataset's scripts have
// neither.
func TestSnapshotScriptsEveryEngine(t *testing.T) {
	ds := snapshotDataset(t)
	m := mirror{root: t.TempDir(), bucket: "b"}
	p := m.write(t, ds, fileformat.Parquet, mustDay(t, "2026-03-05"), 1, []int{1})
	want := map[string]string{
		EngineDuckDB:     `DELETE FROM "members" WHERE "dt" < (SELECT MAX("dt") FROM "members");` + "\nCOMMIT;",
		EngineSnowflake:  `DELETE FROM members WHERE dt < (SELECT MAX(dt) FROM members);` + "\nCOMMIT;",
		EngineRedshift:   `DELETE FROM "members" WHERE "dt" < (SELECT MAX("dt") FROM "members");` + "\n\nCOMMIT;",
		EngineBigQuery:   "DELETE FROM `members` WHERE `dt` < (SELECT MAX(`dt`) FROM `members`);",
		EngineAthena:     `CREATE OR REPLACE VIEW "members_latest" AS` + "\n" + `SELECT * FROM "members" WHERE "dt" = (SELECT MAX("dt") FROM "members");`,
		EngineFabric:     `DELETE FROM [members] WHERE [dt] < (SELECT MAX([dt]) FROM [members]);` + "\nCOMMIT TRANSACTION;",
		EngineDatabricks: "DELETE FROM `members` WHERE `dt` < (SELECT MAX(`dt`) FROM `members`);",
	}
	inc := p
	inc.Dataset = syntheticDataset()
	inc.Files = slices.Clone(p.Files)
	inc.PartitionPrefix = strings.Replace(p.PartitionPrefix, "/members/", "/"+inc.Dataset.Name+"/", 1)
	for i := range inc.Files {
		inc.Files[i].Key = strings.Replace(p.Files[i].Key, "/members/", "/"+inc.Dataset.Name+"/", 1)
	}
	for _, engine := range Engines {
		p, ok := forEngine(engine, p)
		if !ok {
			continue
		}
		s, err := Generate(engine, p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(s, want[engine]) {
			t.Errorf("%s script lacks %q:\n%s", engine, want[engine], s)
		}
		if !strings.Contains(s, "keeps only the newest day loaded") {
			t.Errorf("%s script's header does not say it keeps the newest day", engine)
		}
		inc, _ := forEngine(engine, inc)
		s, err = Generate(engine, inc)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s, "MAX(") || strings.Contains(s, "_latest") {
			t.Errorf("%s: an incremental dataset's script prunes days:\n%s", engine, s)
		}
	}
}
