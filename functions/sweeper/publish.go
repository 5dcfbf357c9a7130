package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/outbox"
	"github.com/daybook-dev/daybook/shared/partition"
)

// stoppedHook is the ledger's Stopped hook in the sweeper
// (outbox.Outbox.StoppedHook): a sweep that retires a dead claim on its
// last attempt publishes `daybook.partition.stopped`, recorded with the
// retirement. A failure is
// logged and counted (EventPublishFailures); the partition has stopped all
// the same, and a recorded event not published goes out with a later sweep.
func stoppedHook(o *outbox.Outbox, m *metrics.Emitter, log *slog.Logger) func(context.Context, partition.Stop) {
	return o.StoppedHook(func(ctx context.Context, st partition.Stop, err error) {
		log.WarnContext(ctx, "partition event not published; the partition is not affected", "detail_type", events.DetailStopped,
			"account", st.AccountID, "dataset", st.Dataset, "day", st.Day.String(), "error", err.Error())
		_ = m.Emit(map[string]any{"detail_type": events.DetailStopped}, metrics.Metric{Name: "EventPublishFailures", Unit: metrics.Count, Value: 1})
	})
}

// RepublishGrace is how old a pending event must be before a sweep
// publishes it again: a younger one belongs to a run that is publishing it.
const RepublishGrace = time.Minute

// withRepublish publishes the outbox's pending events after each sweep
// (outbox.Outbox.Republish: events.ledger.OutboxShards index queries when
// none is pending). Its failures are logged and counted
// (EventPublishFailures) and never fail the sweep: the events stay pending
// for the next one.
type withRepublish struct {
	Runner
	Outbox  *outbox.Outbox
	Now     func() time.Time
	Metrics *metrics.Emitter
	Log     *slog.Logger
}

func (w withRepublish) Run(ctx context.Context, tick time.Time) (Summary, error) {
	sum, err := w.Runner.Run(ctx, tick)
	rp, perr := w.Outbox.Republish(ctx, w.Now(), RepublishGrace)
	if rp.Pending > 0 || perr != nil {
		_ = w.Metrics.Emit(nil, metrics.Metric{Name: "EventsRepublished", Unit: metrics.Count, Value: float64(rp.Published)},
			metrics.Metric{Name: "EventPublishFailures", Unit: metrics.Count, Value: float64(len(rp.Errors))})
	}
	if perr != nil {
		w.Log.WarnContext(ctx, "pending partition events not all published; the next sweep tries again", "republished", rp, "error", perr.Error())
	} else if rp.Pending > 0 {
		w.Log.InfoContext(ctx, "pending partition events published", "republished", rp)
	}
	return sum, err
}
