//go:build !noduckdb

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/devkit/platformsource"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
	"github.com/daybook-dev/daybook/shared/source"
)

// TestSnapshotDatasetTwoDays exports the platform's members table, a
// dimension table with no day of its own, as a snapshot dataset (the entry
// catalog init writes with --partition snapshot) on two days with the
// table changed in between (a member left, one changed role, one joined):
// each day's partition is the organisation's complete table at the time,
// whenever its rows were created, and never another organisation's. The
// DuckDB load scripts the exporter wrote, run as the bucket README says
// (against a downloaded copy) and in either order, leave the newest copy
// only.
func TestSnapshotDatasetTwoDays(t *testing.T) {
	e := newEnv(t, envOpts{})
	db := platformDB(t, e, "")
	org := e.acct.ID
	for _, m := range [][]any{
		{org, "00000000-0000-0000-0000-00000000000a", "ana@example.com", "owner", "2019-06-01 09:00:00", `{"sso": true}`},
		{org, "00000000-0000-0000-0000-00000000000b", "ben@example.com", "member", "2026-03-05 23:30:00", nil},
		{org, "00000000-0000-0000-0000-00000000000c", "cy@example.com", "admin", "2024-01-01 00:00:00", nil},
		{"acct_someoneelse", "00000000-0000-0000-0000-00000000000d", "dee@example.com", "owner", "2025-01-01 00:00:00", nil},
	} {
		if _, err := db.Exec(`INSERT INTO members VALUES ($1, $2, $3, $4, $5, $6)`, m...); err != nil {
			t.Fatal(err)
		}
	}
	tab, err := pgcatalog.ReadTable(e.ctx, db, "members")
	if err != nil {
		t.Fatal(err)
	}
	entry, err := pgcatalog.Entry(tab, pgcatalog.EntryOptions{TenantColumn: "org_id", Partition: dataset.PartitionSnapshot, SourceTimeZone: platformsource.Zone})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(map[string]any{"datasets": []dataset.Dataset{entry}})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := dataset.ParseCatalog(doc)
	if err != nil {
		t.Fatalf("the snapshot entry does not load: %v", err)
	}
	ds := cat[0]
	if ds.Mode != dataset.ModeFullRefresh || ds.Read != dataset.ReadLatestSnapshot || ds.PartitionColumn != "" {
		t.Fatalf("catalog init's snapshot entry: mode %s read %s partition_column %q", ds.Mode, ds.Read, ds.PartitionColumn)
	}
	if q, _ := ds.Query(dataset.DialectPostgres); strings.Contains(q, "$2") || strings.Contains(q, "joined_at >=") {
		t.Fatalf("the snapshot query has a window: %s", q)
	}
	conn, err := db.Conn(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	findings, err := pgcatalog.CheckDataset(e.ctx, conn, ds)
	conn.Close()
	if err != nil || pgcatalog.HasErrors(findings) {
		t.Fatalf("catalog check of the snapshot entry: %v %+v", err, findings)
	}

	src, err := source.NewSQL(db, dataset.DialectPostgres, "postgres:platform")
	if err != nil {
		t.Fatal(err)
	}
	exp := *e.exp
	exp.Source = src
	day1, day2 := testDay, testDay.AddDays(1)
	gen := int64(0)
	export := func(day civil.Date) *Written {
		t.Helper()
		gen++
		c := ledger.Claim{Key: partition.Key{AccountID: org, Dataset: ds.Name, Day: day}, Token: "tok", Attempt: 1, Generation: gen, Reason: partition.ReasonScheduled}
		w, err := exp.Export(e.ctx, Partition{Account: e.acct, Dataset: ds, Day: day, Claim: c, RunID: "run_snapshot"}, e.svc.Log)
		if err != nil {
			t.Fatalf("export %s: %v", day, err)
		}
		if w.Manifest.Partition != dataset.PartitionSnapshot || w.Manifest.Mode != dataset.ModeFullRefresh || w.Manifest.Read != dataset.ReadLatestSnapshot {
			t.Errorf("%s manifest: partition %s mode %s read %s", day, w.Manifest.Partition, w.Manifest.Mode, w.Manifest.Read)
		}
		return w
	}
	if w := export(day1); w.Manifest.Totals.Rows != 3 {
		t.Fatalf("day 1: %d rows, want the organisation's 3 members", w.Manifest.Totals.Rows)
	}
	for _, q := range []string{
		`DELETE FROM members WHERE email = 'cy@example.com'`,
		`UPDATE members SET role = 'admin' WHERE email = 'ben@example.com'`,
		`INSERT INTO members VALUES ($1, '00000000-0000-0000-0000-00000000000e', 'eve@example.com', 'member', '2026-03-06 08:00:00', NULL)`,
	} {
		args := []any{}
		if strings.Contains(q, "$1") {
			args = append(args, org)
		}
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	if w := export(day2); w.Manifest.Totals.Rows != 3 {
		t.Fatalf("day 2: %d rows, want 3", w.Manifest.Totals.Rows)
	}

	// Load as the bucket README shows: a copy of the bucket, its s3://
	// URIs pointed at the copy.
	dir := e.download()
	root := strings.TrimSuffix(filepath.ToSlash(dir), e.prefix)
	script := func(day civil.Date) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(layout.LoadKey(e.prefix, ds.Name, day, "duckdb"))))
		if err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(string(b), "s3://"+e.acct.Destination.Bucket+"/", root)
	}
	day2Rows := [][]any{
		{"00000000-0000-0000-0000-00000000000a", "ana@example.com", "owner", berlin(t, "2019-06-01 09:00:00"), json.RawMessage(`{"sso": true}`), day2},
		{"00000000-0000-0000-0000-00000000000b", "ben@example.com", "admin", berlin(t, "2026-03-05 23:30:00"), nil, day2},
		{"00000000-0000-0000-0000-00000000000e", "eve@example.com", "member", berlin(t, "2026-03-06 08:00:00"), nil, day2},
	}
	withDT := ds
	withDT.Columns = append(withDT.Columns, dataset.Column{Name: "dt", Type: dataset.Type{Kind: dataset.KindDate}})
	for _, order := range [][]civil.Date{{day1, day2}, {day2, day1}, {day1, day2, day1}} {
		duck := duckcheck.Open(t)
		for _, d := range order {
			if _, err := duck.Exec(script(d)); err != nil {
				t.Fatalf("duckdb.sql of %s: %v", d, err)
			}
		}
		got := duckcheck.ReadBack(t, duck, "members", withDT, "email")
		duckcheck.CheckRows(t, withDT, got, day2Rows, true)
	}
	var m manifest.Manifest
	if err := json.Unmarshal(e.get(layout.ManifestKey(e.prefix, ds.Name, day2)), &m); err != nil {
		t.Fatal(err)
	}
	if m.Provenance.Relation != "members" || m.Provenance.RowCount != 3 {
		t.Errorf("day 2 provenance: %+v", m.Provenance)
	}
}
