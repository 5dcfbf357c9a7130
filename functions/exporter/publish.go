package main

import (
	"context"
	"log/slog"

	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/partition"
)

// publishStopped publishes `daybook.partition.stopped` for a partition
// whose failure stopped it (its last attempt): the event was recorded with
// the transition, so one not published now stays pending for the sweeper.
// A failure is logged and counted, never the run's.
func (rec *recorder) publishStopped(ctx context.Context, st partition.Stop, log *slog.Logger) {
	if err := rec.outbox().PublishStopped(ctx, st); err != nil {
		publishFailed(ctx, rec.metrics, log, events.DetailStopped, err)
	}
}

func publishFailed(ctx context.Context, m *metrics.Emitter, log *slog.Logger, detailType string, err error) {
	log.WarnContext(ctx, "partition event not published; the partition is not affected", "detail_type", detailType, "error", err.Error())
	_ = m.Emit(map[string]any{"detail_type": detailType}, metrics.Metric{Name: "EventPublishFailures", Unit: metrics.Count, Value: 1})
}
