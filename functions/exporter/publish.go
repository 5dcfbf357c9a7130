package main

import (
	"context"
	"log/slog"

	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/outbox"
	"github.com/daybook-dev/daybook/shared/partition"
)

// stoppedHook is the ledger's Stopped hook (outbox.Outbox.StoppedHook):
// it publishes `daybook.partition.stopped` for every partition that stops
// retrying in this function (Fail on the last attempt), counting a
// failure; one not published stays pending for the sweeper.
func stoppedHook(o *outbox.Outbox, m *metrics.Emitter, log *slog.Logger) func(context.Context, partition.Stop) {
	return o.StoppedHook(func(ctx context.Context, st partition.Stop, err error) {
		publishFailed(ctx, m, log.With("account", st.AccountID, "dataset", st.Dataset, "day", st.Day.String()), events.DetailStopped, err)
	})
}

func publishFailed(ctx context.Context, m *metrics.Emitter, log *slog.Logger, detailType string, err error) {
	log.WarnContext(ctx, "partition event not published; the partition is not affected", "detail_type", detailType, "error", err.Error())
	_ = m.Emit(map[string]any{"detail_type": detailType}, metrics.Metric{Name: "EventPublishFailures", Unit: metrics.Count, Value: 1})
}
