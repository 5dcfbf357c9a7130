package main

import (
	"cmp"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/demosource"
)

// TestDemoSlicesAtAnyInstant runs the demo's planning (its source, its
// SLICE_ROWS, the days the exporter will slice) at fixed instants across a
// day and across the daylight-saving changes of 2026 (Europe's and North
// America's), for make demo's size and the end-to-end test's: at every
// instant every account has closed days and some of them, not all, are
// exported in slices. With SLICE_ROWS fixed at the events per day some
// instants had none, and the end-to-end test failed at those hours.
func TestDemoSlicesAtAnyInstant(t *testing.T) {
	t.Parallel()
	var instants []time.Time
	for h := 0; h < 24; h += 3 {
		instants = append(instants, time.Date(2026, 11, 25, h, 1, 0, 0, time.UTC))
	}
	instants = append(instants,
		time.Date(2026, 12, 1, 19, 1, 0, 0, time.UTC),  // main's test failed at this one
		time.Date(2026, 3, 8, 6, 30, 0, 0, time.UTC),   // New York: 01:30 EST
		time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC),   // New York: 03:30 EDT
		time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC),  // Berlin: 01:30 CET
		time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC),  // Berlin: 03:30 CEST
		time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), // Berlin: 02:30 CEST
		time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC), // Berlin: 02:30 CET
		time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC),  // New York: 01:30 EDT
		time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC),  // New York: 01:30 EST
	)
	sizes := []struct {
		name      string
		days, per int
		instants  []time.Time
	}{
		{"end-to-end test", e2eDemo.Days, e2eDemo.EventsPerDay, instants},
		// demosource's defaults, as make demo runs it: a larger source, so
		// two instants.
		{"make demo", 0, 0, []time.Time{instants[0], instants[8]}},
	}
	for _, size := range sizes {
		t.Run(size.name, func(t *testing.T) {
			oldRuleNone := 0
			for _, now := range size.instants {
				src, err := demosource.Generate(context.Background(), demosource.Options{
					Path: filepath.Join(t.TempDir(), "source.db"), Now: now, Days: size.days, EventsPerDay: size.per, Seed: e2eDemo.Seed, Stage: "demo",
				})
				if err != nil {
					t.Fatal(err)
				}
				sliceable := 0
				for _, a := range src.Accounts {
					closed := a.WithDefaults(0).ClosedThrough(now)
					if closed.Before(a.StartDate) {
						t.Errorf("%s: account %s has no closed day (start %s, closed through %s)", now.Format(time.RFC3339), a.ID, a.StartDate, closed)
					}
					sliceable += 2 * len(civil.Range(a.StartDate, closed)) // events and profiles
				}
				rows := demoSliceRows(src.Accounts, src.Rows, now)
				plan := demoSlicePlan(datasettest.Example(t), src.Accounts, src.Rows, now, rows)
				if len(plan) == 0 || len(plan) >= sliceable {
					t.Errorf("%s: SLICE_ROWS %d slices %d of %d closed days of events and profiles, want some but not all", now.Format(time.RFC3339), rows, len(plan), sliceable)
				}
				per := int64(cmp.Or(size.per, demosource.DefaultEventsPerDay))
				if len(demoSlicePlan(datasettest.Example(t), src.Accounts, src.Rows, now, per)) == 0 {
					oldRuleNone++
				}
			}
			t.Logf("SLICE_ROWS = events per day (the old rule) sliced nothing at %d of %d instants", oldRuleNone, len(size.instants))
		})
	}
}
