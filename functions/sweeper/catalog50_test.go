package main

import (
	"context"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
	"github.com/daybook-dev/daybook/shared/devkit/dynamometer"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// TestIdleCostWithFiftyDatasets: with a catalog of 50 datasets, every
// account enabling all of them, an idle sweep costs what it costs with the
// example catalog (TestIdleAccountsCostNothing): the same requests for 10
// and for 100 idle accounts, the wake and stopped shards and the stats.
func TestIdleCostWithFiftyDatasets(t *testing.T) {
	t.Parallel()
	s := datasettest.Catalog(t, datasettest.GeneratedCatalog(50))

	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	l, meter := metered(t, newCatalogLedger(t, clk, "fifty", s))
	tomorrow := clk.Now().Add(24 * time.Hour)
	idle := func(n int, salt string) isolate {
		return idleAccounts(t, l, n, accountSpec{salt: salt, start: "2026-03-01", tz: "UTC", datasets: s.Names()}, idleAt{wake: tomorrow, now: clk.Now()})
	}
	small, large := idle(10, "small50-"), idle(100, "large50-")
	clk.Advance(15 * time.Minute)
	cost := map[int]dynamometer.Counts{}
	for _, set := range []isolate{small, large} {
		meter.Reset()
		sum, err := sweeper(set, &recordingSQS{}, clk, 10, 100).Run(ctx, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if sum.Woken != 0 || sum.Claimed != 0 {
			t.Errorf("%d idle accounts: summary %+v", len(set.ids), sum)
		}
		cost[len(set.ids)] = meter.Counts()
	}
	if want := 2*ledger.FleetShards + 1; cost[10].Requests != want || cost[100].Requests != want {
		t.Errorf("requests %d for 10 and %d for 100 idle accounts, want %d each", cost[10].Requests, cost[100].Requests, want)
	}
}
