package main

import (
	"context"
	"testing"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset/example"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

// members is a snapshot dataset (a complete copy of a dimension table per
// day) appended to the example catalog.
const members = `
  - name: members
    version: 1
    description: "Members of the organisation, a complete copy per day."
    partition: snapshot
    relation: members
    mode: full_refresh
    read: latest_snapshot
    tenant_column: account_id
    order_by: [member_id]
    columns:
      - {name: member_id, type: string}
      - {name: role, type: string}
      - {name: attributes, type: json, nullable: true}
`

// TestSnapshotDatasetMaterializesOnlyTheNewestDay: an account whose start
// date is days back gets every closed day of an incremental dataset, but
// only the newest closed day of a snapshot dataset: a copy taken now is
// that day's, and one labelled as an older day would be today's table
// under a wrong date. On the old code the snapshot dataset got all three
// days.
func TestSnapshotDatasetMaterializesOnlyTheNewestDay(t *testing.T) {
	t.Parallel()
	cat := datasettest.Catalog(t, append(example.YAML(), members...))

	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l := newCatalogLedger(t, clk, "snapshot", cat)
	a := storeAccount(t, l, accountSpec{salt: "snap", start: "2026-03-29", tz: "UTC", datasets: []string{"events", "members"}})
	if _, err := sweeper(only(l, a), &recordingSQS{}, clk, 10, 100).Run(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	from, to := civil.MustParse("2026-03-29"), civil.MustParse("2026-03-31")
	for _, c := range []struct {
		ds   string
		want int
	}{{"events", 3}, {"members", 1}} {
		n, err := l.Partitions().Count(ctx, a.ID, c.ds, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("%s: %d rows for %s..%s, want %d", c.ds, n, from, to, c.want)
		}
	}
	if n, err := l.Partitions().Count(ctx, a.ID, "members", to, to); err != nil || n != 1 {
		t.Errorf("members: the newest closed day %s has %d rows (%v), want 1", to, n, err)
	}
	// The next day closes: its copy is made, the watermark having advanced.
	clk.Advance(24 * 60 * 60 * 1e9)
	if _, err := sweeper(only(l, a), &recordingSQS{}, clk, 10, 100).Run(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Partitions().Count(ctx, a.ID, "members", from, to.AddDays(1)); err != nil || n != 2 {
		t.Errorf("members after the next day closed: %d rows (%v), want 2", n, err)
	}
}
