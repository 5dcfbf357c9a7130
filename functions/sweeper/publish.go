package main

import (
	"context"
	"log/slog"

	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/partition"
)

// Publisher publishes partition events.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

var _ Publisher = (*events.Publisher)(nil)

// stoppedHook is the ledger's Stopped hook in the sweeper: a sweep that
// retires a dead claim on its last attempt publishes
// `daybook.partition.stopped`. A failure is logged and counted
// (EventPublishFailures); the partition has stopped all the same.
func stoppedHook(p Publisher, m *metrics.Emitter, log *slog.Logger) func(context.Context, partition.Stop) {
	return func(ctx context.Context, st partition.Stop) {
		if err := p.Publish(ctx, events.DetailStopped, events.StoppedOf(st)); err != nil {
			log.WarnContext(ctx, "partition event not published; the partition is not affected", "detail_type", events.DetailStopped,
				"account", st.AccountID, "dataset", st.Dataset, "day", st.Day.String(), "error", err.Error())
			_ = m.Emit(map[string]any{"detail_type": events.DetailStopped}, metrics.Metric{Name: "EventPublishFailures", Unit: metrics.Count, Value: 1})
		}
	}
}
