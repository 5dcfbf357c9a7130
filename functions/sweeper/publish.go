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

// publishStopped publishes `daybook.partition.stopped` for each dead
// claim a sweep retired on its last attempt (ledger.StoppedError), recorded
// with the retirement. A failure is logged and counted
// (EventPublishFailures); the partition has stopped all the same, and a
// recorded event not published goes out with a later sweep.
func (s *Sweeper) publishStopped(ctx context.Context, stops []partition.Stop) {
	for _, st := range stops {
		if err := s.Outbox.PublishStopped(ctx, st); err != nil {
			s.log().WarnContext(ctx, "partition event not published; the partition is not affected", "detail_type", events.DetailStopped,
				"account", st.AccountID, "dataset", st.Dataset, "day", st.Day.String(), "error", err.Error())
			_ = s.Metrics.Emit(map[string]any{"detail_type": events.DetailStopped}, metrics.Metric{Name: "EventPublishFailures", Unit: metrics.Count, Value: 1})
		}
	}
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
