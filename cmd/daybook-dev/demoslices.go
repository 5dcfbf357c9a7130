package main

import (
	"slices"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// demoSliceRows is the SLICE_ROWS the demo runs the exporter with: the
// upper quartile of the closed days' events rows over every account, so the
// busiest quarter of the days is exported in slices whatever the hour the
// demo runs at. (A fixed figure, the events per day, left some hours of the day with
// no closed day above it: which days are closed follows the accounts' time
// zones, and their sizes are random.) rows is the source's count per
// account id, dataset and day.
func demoSliceRows(accts []account.Account, rows map[string]map[string]map[string]int64, now time.Time) int64 {
	var counts []int64
	for _, a := range accts {
		for _, d := range civil.Range(a.StartDate, a.WithDefaults(0).ClosedThrough(now)) {
			if n := rows[a.ID]["events"][d.String()]; n > 0 {
				counts = append(counts, n)
			}
		}
	}
	if len(counts) == 0 {
		return 0
	}
	slices.Sort(counts)
	q := counts[3*(len(counts)-1)/4]
	if q == counts[len(counts)-1] {
		q-- // the busiest days alike: they still go in slices
	}
	return max(q, 1)
}

// demoSlicePlan is what the exporter will export in slices with
// sliceRows: each closed day of a dataset partitioned on a timestamp whose
// rows pass it (the exporter's rule, with the source's count as the
// expected rows). Keys are "account/dataset/day".
func demoSlicePlan(catalog *dataset.Set, accts []account.Account, rows map[string]map[string]map[string]int64, now time.Time, sliceRows int64) []string {
	var plan []string
	for _, a := range accts {
		for _, name := range a.Datasets {
			ds, err := catalog.Get(name)
			if err != nil || !ds.Sliceable() {
				continue
			}
			for _, d := range civil.Range(a.StartDate, a.WithDefaults(0).ClosedThrough(now)) {
				if sliceRows > 0 && rows[a.ID][name][d.String()] > sliceRows {
					plan = append(plan, a.ID+"/"+name+"/"+d.String())
				}
			}
		}
	}
	return plan
}
