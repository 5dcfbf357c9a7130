package main

import (
	"context"
	"log/slog"

	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/partition"
)

// publishCommitted publishes `daybook.partition.committed` for a
// generation whose _SUCCESS is written. A failure is logged and counted
// (EventPublishFailures), never returned: the export is committed.
func (r *run) publishCommitted(ctx context.Context, w *Written, res ledger.Result) {
	s := r.s
	if s.Lifecycle == nil || s.Lifecycle.Events == nil {
		return
	}
	m := w.Manifest
	d := events.Committed{
		Version: events.DetailVersion, Account: m.AccountID, Dataset: m.Dataset, Day: m.Day, Generation: m.Generation,
		Rows: m.Totals.Rows, Bytes: w.Bytes, Files: m.Totals.Files, Bucket: r.Account.Destination.Bucket, ManifestKey: w.ManifestKey,
		Reason: m.Reason, Restated: m.Restatement != nil, Reseed: res.SeedEpoch > 0, SeedEpoch: res.SeedEpoch,
		SchemaVersion: m.SchemaVersion, RunID: m.RunID, CommittedAt: m.FinishedAt,
	}
	if r := m.Restatement; r != nil {
		d.Restatement = &events.Restatement{PreviousGeneration: r.PreviousGeneration, PreviousRows: r.PreviousRows, Rows: r.Rows}
	}
	if err := s.Lifecycle.Events.Publish(ctx, events.DetailCommitted, d); err != nil {
		publishFailed(ctx, s.Metrics, r.log, events.DetailCommitted, err)
	}
}

// stoppedHook is the ledger's Stopped hook: it publishes
// `daybook.partition.stopped` for every partition that stops retrying in
// this function (Fail on the last attempt), counting a failure.
func stoppedHook(p Publisher, m *metrics.Emitter, log *slog.Logger) func(context.Context, partition.Stop) {
	return func(ctx context.Context, st partition.Stop) {
		if err := p.Publish(ctx, events.DetailStopped, events.StoppedOf(st)); err != nil {
			publishFailed(ctx, m, log.With("account", st.AccountID, "dataset", st.Dataset, "day", st.Day.String()), events.DetailStopped, err)
		}
	}
}

func publishFailed(ctx context.Context, m *metrics.Emitter, log *slog.Logger, detailType string, err error) {
	log.WarnContext(ctx, "partition event not published; the partition is not affected", "detail_type", detailType, "error", err.Error())
	_ = m.Emit(map[string]any{"detail_type": detailType}, metrics.Metric{Name: "EventPublishFailures", Unit: metrics.Count, Value: 1})
}
