package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/daybook-dev/daybook/shared/metrics"
)

// ScheduleEvent is the input EventBridge Scheduler sends (the template's
// Input with the scheduler's context attributes filled in). A hand-made
// invocation may send {} or nothing.
type ScheduleEvent struct {
	Source        string `json:"source"`
	ScheduledTime string `json:"scheduled_time"`
	ExecutionID   string `json:"execution_id"`
	Attempt       string `json:"attempt"`
}

// Runner runs one sweep.
type Runner interface {
	Run(ctx context.Context) (Summary, error)
}

var _ Runner = (*Sweeper)(nil)

// Handler translates a schedule event into one sweep.
type Handler struct {
	Sweeper Runner
	Log     *slog.Logger
	Metrics *metrics.Emitter
}

// Handle is the Lambda entry point. The summary is logged and returned; a
// sweep that hit errors still returns its summary with the error, so Lambda
// retries the asynchronous invocation and then sends the event to the
// sweeper DLQ (the function's on-failure destination).
func (h Handler) Handle(ctx context.Context, raw json.RawMessage) (Summary, error) {
	var ev ScheduleEvent
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &ev); err != nil {
			// An unexpected payload must not stop the sweep: the schedule is the contract, not the body.
			h.Log.WarnContext(ctx, "unrecognised sweeper event; sweeping anyway", "error", err.Error())
		}
	}
	log := h.Log.With("scheduled_time", ev.ScheduledTime, "execution_id", ev.ExecutionID, "attempt", ev.Attempt)
	sum, err := h.Sweeper.Run(ctx)
	ms := []metrics.Metric{
		{Name: "PartitionsClaimed", Unit: metrics.Count, Value: float64(sum.Claimed)},
		{Name: "PartitionsDue", Unit: metrics.Count, Value: float64(sum.Due)},
		{Name: "OldestDueAge", Unit: metrics.Seconds, Value: float64(sum.OldestDueAgeSeconds)},
		{Name: "SweepErrors", Unit: metrics.Count, Value: float64(sum.Errors)},
	}
	// PartitionsExhausted feeds the template's alarm on partitions that
	// stopped retrying (Maximum over 15 minutes > 0): a level, the number of
	// partitions currently exhausted, published only when every account was
	// counted, so a failing sweep cannot clear the alarm.
	if sum.ExhaustedCounted {
		ms = append(ms, metrics.Metric{Name: "PartitionsExhausted", Unit: metrics.Count, Value: float64(sum.Exhausted)})
	}
	_ = h.Metrics.Emit(map[string]any{"execution_id": ev.ExecutionID}, ms...)
	if err != nil {
		log.ErrorContext(ctx, "sweep finished with errors", "summary", sum, "error", err.Error())
		return sum, fmt.Errorf("sweep: %w", err)
	}
	log.InfoContext(ctx, "sweep finished", "summary", sum)
	return sum, nil
}
