//go:build !noduckdb

package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/duckcheck"
	"github.com/daybook-dev/daybook/shared/devkit/publicschemas"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
	"github.com/daybook-dev/daybook/shared/source"
)

// TestBucketReadmePromisesOnAPublicSchema holds the bucket README's
// promises to datasets catalog init wrote for a schema nobody here wrote,
// the Citus tutorial's ad analytics (bigint tenant, UTC wall-clock times),
// on PostgreSQL: clicks (event_time, no updated_at: its README says rows
// added or removed restate a day, a row changed in place does not),
// campaigns (event_time with changed_column updated_at: an update in
// place restates its day) and ads (activity on updated_at: the current
// state is the newest row per ad across days). Late data: a late click and
// an updated campaign are each found by the restatement check and
// delivered as one new generation that says what it restated; the click
// changed in place is not, as promised. Load scripts: every day's
// duckdb.sql, run twice and then the restated generation's, leaves each
// source row once, with its newest values. Current state: the query at
// the end of the ads scripts, over two loaded days, gives each ad's newest
// row, the one in the source.
func TestBucketReadmePromisesOnAPublicSchema(t *testing.T) {
	db := pgDB(t, " timezone=America/Sao_Paulo") // the session zone must not matter
	s := publicschemas.CitusAds()
	dayA, dayB := testDay.AddDays(-1), testDay
	if _, err := s.Load(t.Context(), db, civil.Range(dayA, dayB)); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Campaigns created on day B; ads last updated on day A.
	exec(`UPDATE campaigns SET created_at = $1::timestamp + id * interval '1 minute', updated_at = $1::timestamp + id * interval '1 minute'`, dayB.String()+" 08:00:00")
	exec(`UPDATE ads SET updated_at = $1::timestamp + id * interval '1 second'`, dayA.String()+" 10:00:00")

	// The entries as catalog init writes them.
	var entries []dataset.Dataset
	for _, o := range []pgcatalog.EntryOptions{
		{TenantColumn: "company_id", PartitionColumn: "clicked_at", Partition: dataset.PartitionEventTime, SourceTimeZone: "UTC"},
		{TenantColumn: "company_id", PartitionColumn: "created_at", Partition: dataset.PartitionEventTime, SourceTimeZone: "UTC"},
		{TenantColumn: "company_id", PartitionColumn: "updated_at", Partition: dataset.PartitionActivity, IDColumn: "id", SourceTimeZone: "UTC"},
	} {
		table := map[string]string{"clicked_at": "clicks", "created_at": "campaigns", "updated_at": "ads"}[o.PartitionColumn]
		tab, err := pgcatalog.ReadTable(t.Context(), db, table)
		if err != nil {
			t.Fatal(err)
		}
		d, err := pgcatalog.Entry(tab, o)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, d)
	}
	// The account first, under the example catalog; then its datasets and
	// its tenant's key under the schema's.
	e := newEnv(t, envOpts{})
	cat := e.useCatalogDoc(dataset.CatalogYAML(entries))
	clicks, _ := cat.Get("clicks")
	campaigns, _ := cat.Get("campaigns")
	ads, _ := cat.Get("ads")
	if clicks.LateData() != dataset.LateRows || campaigns.LateData() != dataset.LateChanges || campaigns.ChangedColumn != "updated_at" || !ads.Reseedable() {
		t.Fatalf("init's entries: clicks %q, campaigns %q (changed_column %q), ads %s", clicks.LateData(), campaigns.LateData(), campaigns.ChangedColumn, ads.Partition)
	}

	e.acct.Datasets, e.acct.TenantKey = []string{"clicks", "campaigns", "ads"}, "1"
	if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
		t.Fatal(err)
	}
	src, err := source.NewSQL(db, dataset.DialectPostgres, "postgres:citus")
	if err != nil {
		t.Fatal(err)
	}
	e.exp.Source = src
	e.withLifecycle()

	first := map[string]ledger.Row{"clicks": e.export("clicks", dayB), "campaigns": e.export("campaigns", dayB), "ads": e.export("ads", dayA)}
	for ds, r := range first {
		if r.State != ledger.StateCompleted || r.Generation != 1 || r.Fingerprint.Value == "" {
			t.Fatalf("%s: first export %+v", ds, r)
		}
	}
	count := func(q string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	dayClicks := `SELECT count(*) FROM clicks WHERE company_id = 1 AND clicked_at >= $1::timestamp AND clicked_at < $2::timestamp`
	if n := count(dayClicks, dayB.String(), dayB.AddDays(1).String()); first["clicks"].Rows != n || n == 0 {
		t.Fatalf("clicks %s: %d rows exported, %d in the source", dayB, first["clicks"].Rows, n)
	}

	check := func(ds string, r ledger.Row) ledger.Row {
		t.Helper()
		e.clk.Advance(testRestate.Interval)
		if err := e.process(checkBody(t, r)); err != nil {
			t.Fatal(err)
		}
		return e.row(ds, r.Day)
	}
	restated := func(ds string, r ledger.Row, rows int64) ledger.Row {
		t.Helper()
		if q := check(ds, r); q.State != ledger.StateQueued || q.Reason != partition.ReasonRestatement {
			t.Fatalf("%s %s after the check: %+v; want queued as a restatement", ds, r.Day, q)
		}
		r2 := e.export(ds, r.Day)
		m := e.committed(ds, r.Day)
		want := manifest.Restatement{PreviousGeneration: r.Generation, PreviousRows: r.Rows, Rows: rows}
		if r2.Generation != r.Generation+1 || r2.Rows != rows || m.Reason != manifest.ReasonRestatement || m.Restatement == nil || *m.Restatement != want {
			t.Fatalf("%s %s restated: row %+v, manifest reason %s restatement %+v; want %+v", ds, r.Day, r2, m.Reason, m.Restatement, want)
		}
		return r2
	}

	// Late data: a click that arrives late restates its day; a click
	// changed in place does not (the README says so for clicks).
	exec(`INSERT INTO clicks (id, company_id, ad_id, clicked_at, site_url, cost_per_click_usd, user_ip, user_data)
		VALUES (990001, 1, NULL, $1::timestamp, 'https://late.example/', 0.5, '192.0.2.1', '{"late": true}')`, dayB.String()+" 23:59:59.999999")
	clicks2 := restated("clicks", first["clicks"], first["clicks"].Rows+1)
	exec(`UPDATE clicks SET site_url = 'https://changed.example/' WHERE id = 990001`)
	if r := check("clicks", clicks2); r.State != ledger.StateCompleted || r.Generation != clicks2.Generation {
		t.Errorf("clicks changed in place, without an updated_at: %+v; the README says it is not noticed", r)
	}
	exec(`UPDATE clicks SET site_url = 'https://late.example/' WHERE id = 990001`)

	// A campaign updated in place restates its day (changed_column).
	exec(`UPDATE campaigns SET monthly_budget = 4242, updated_at = updated_at + interval '1 hour' WHERE company_id = 1 AND id = 101`)
	restated("campaigns", first["campaigns"], first["campaigns"].Rows)

	// An ad changed on day B: its newest row is in day B, the old one
	// stays in day A's generation 1.
	exec(`UPDATE ads SET name = 'renamed on B', updated_at = $1::timestamp WHERE company_id = 1 AND id = 1011`, dayB.String()+" 09:30:00")
	e.export("ads", dayB)

	// The load scripts, as the bucket README says to run them: each day's
	// twice, the restated generations replacing generation 1's rows.
	dir := e.download()
	root := strings.TrimSuffix(filepath.ToSlash(dir), e.prefix)
	duck := duckcheck.Open(t)
	script := func(ds string, day civil.Date) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(layout.LoadKey(e.prefix, ds, day, "duckdb"))))
		if err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(string(b), "s3://"+e.acct.Destination.Bucket+"/", root)
	}
	for _, p := range []struct {
		ds  string
		day civil.Date
	}{{"clicks", dayB}, {"campaigns", dayB}, {"ads", dayA}, {"ads", dayB}} {
		for range 2 {
			if _, err := duck.Exec(script(p.ds, p.day)); err != nil {
				t.Fatalf("%s %s duckdb.sql: %v", p.ds, p.day, err)
			}
		}
	}
	same := func(what, duckQ, pgQ string, args ...any) {
		t.Helper()
		got, want := rowsText(t, duck, duckQ), rowsText(t, db, pgQ, args...)
		if got != want || want == "" {
			t.Errorf("%s:\n DuckDB %s\n source %s", what, got, want)
		}
	}
	same("clicks of day B, each once, the late one included",
		`SELECT id, site_url FROM clicks ORDER BY id`,
		`SELECT id, site_url FROM clicks WHERE company_id = 1 AND clicked_at >= $1::timestamp AND clicked_at < $2::timestamp ORDER BY id`, dayB.String(), dayB.AddDays(1).String())
	same("campaigns of day B with the updated budget",
		`SELECT id, coalesce(CAST(monthly_budget AS VARCHAR), '-') FROM campaigns ORDER BY id`,
		`SELECT id, coalesce(monthly_budget::text, '-') FROM campaigns WHERE company_id = 1 ORDER BY id`)

	// The current-state query at the end of the ads scripts: each ad's
	// newest row across the days loaded, as the source holds it now.
	text := script("ads", dayB)
	i := strings.Index(text, "-- Current state")
	if i < 0 {
		t.Fatalf("the ads script has no current-state query:\n%s", text)
	}
	var q []string
	for _, l := range strings.Split(text[i:], "\n")[1:] {
		if l, ok := strings.CutPrefix(l, "-- "); ok {
			q = append(q, l)
		}
	}
	current := strings.Join(q, "\n")
	if n := count(`SELECT count(*) FROM ads WHERE company_id = 1`); n < 2 {
		t.Fatalf("%d ads", n)
	}
	same("ads' current state",
		`SELECT id, name, epoch_us(updated_at) FROM (`+current+`) ORDER BY id`,
		`SELECT id, name, (extract(epoch FROM updated_at AT TIME ZONE 'UTC') * 1000000)::bigint FROM ads WHERE company_id = 1 ORDER BY id`)
	if rows := rowsText(t, duck, `SELECT count(*) FROM ads WHERE id = 1011`); rows != "2" {
		t.Errorf("ad 1011 is in %s loaded rows, want 2 (its day A row and its day B row)", rows)
	}
}

// rowsText runs q and renders its rows as text, one "a|b|c" per row,
// rows joined by "; ".
func rowsText(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "; ")
}
