package ledger

// Export statistics for the sweeper's claim budget: Complete adds each
// export's duration to an hourly bucket (pk=STATS, sk=EXPORTS#<hour>, kept
// for a week through the table's TTL), and the sweeper reads the last
// buckets in one query. The same partition holds the reconcile marker
// (sk=RECONCILE), which sorts after the buckets and comes back with them.

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func exportBucket(t time.Time) string { return skExports + t.UTC().Format("2006-01-02T15") }

// recordExport adds one export of duration d to the current hour's bucket.
// It is best-effort: the partition is completed either way, and a lost
// sample only leaves the average one export short.
func (l *kernel) recordExport(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	now := l.now()
	upd := expression.Add(name(attrExportMS), val(d.Milliseconds())).
		Add(name(attrExports), val(1)).
		Set(name(AttrExpiresAt), val(now.Add(statsLifetime).Unix())).
		Set(name(attrUpdatedAt), val(fmtTime(now)))
	_, _ = l.update(ctx, tableKey(pkStats, exportBucket(now)), upd, expression.ConditionBuilder{}, types.ReturnValueNone)
}

// FleetStats is what the sweeper reads about the fleet in one query.
type FleetStats struct {
	// Exports and ExportTime are the exports completed, and their summed
	// durations, in the window asked for (whole hours).
	Exports    int64
	ExportTime time.Duration
	// ReconciledAt is when the last wake-index reconcile began (zero: never).
	ReconciledAt time.Time
}

// MeanExport returns the mean export duration, or ok=false with fewer than
// minSamples exports.
func (f FleetStats) MeanExport(minSamples int64) (time.Duration, bool) {
	if f.Exports < max(1, minSamples) {
		return 0, false
	}
	return f.ExportTime / time.Duration(f.Exports), true
}

// FleetStats reads the export buckets of the hours that overlap the last
// window (the current hour included) and the reconcile marker.
func (l Schedule) FleetStats(ctx context.Context, window time.Duration) (FleetStats, ReadStats, error) {
	var f FleetStats
	from := exportBucket(l.now().Add(-window))
	kc := expression.Key(AttrPK).Equal(val(pkStats)).And(expression.Key(AttrSK).GreaterThanEqual(val(from)))
	var bad []error
	stats, err := l.queryPages(ctx, "fleet stats", "", kc, "", 0, func(page *dynamodb.QueryOutput) error {
		for _, it := range page.Items {
			rec, err := decodeItem[statsRecord](it)
			if err != nil {
				bad = append(bad, err)
				continue
			}
			if rec.SK == skReconcile {
				if f.ReconciledAt, err = parseTime(rec.ReconciledAt); err != nil {
					bad = append(bad, malformed(it, attrReconciledAt, rec.ReconciledAt, err))
				}
				continue
			}
			f.Exports += rec.Exports
			f.ExportTime += time.Duration(rec.ExportMS) * time.Millisecond
		}
		return nil
	})
	return f, stats, errors.Join(append(bad, err)...)
}
