package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/daybook-dev/daybook/shared/metrics"
)

// ScheduleEvent is the input EventBridge Scheduler sends (the template's
// Input with the scheduler's context attributes filled in). A hand-made
// invocation may send {} or nothing.
type ScheduleEvent struct {
	Source string `json:"source"`
	// ScheduledTime is the tick the sweep runs for (RFC 3339): the sweep
	// closes days as of it (closesAsOf).
	ScheduledTime string `json:"scheduled_time"`
	ExecutionID   string `json:"execution_id"`
	Attempt       string `json:"attempt"`
}

// Tick returns ScheduledTime as a time; zero when it is empty.
func (ev ScheduleEvent) Tick() (time.Time, error) {
	if ev.ScheduledTime == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, ev.ScheduledTime)
	if err != nil {
		return time.Time{}, fmt.Errorf("scheduled_time %q is not an RFC 3339 time: %w", ev.ScheduledTime, err)
	}
	return t, nil
}

// MaxTickAge is the oldest a tick may be and still say which days a sweep
// closes. The scheduler gives a tick up after 10 minutes of retries and
// Lambda an asynchronous event after 15 (template.yaml), so a tick from the
// schedule arrives within 25 minutes; an older one is a replay (a dead
// letter sent again, the sample event), and the sweep runs as of its clock.
const MaxTickAge = time.Hour

// closesAsOf is the instant a sweep for tick closes days as of: the tick
// when it is set, not after now (the function's clock) and at most
// MaxTickAge before it; otherwise now. A sweep therefore never closes a day
// its clock has not closed, and every run of one tick (a retry, a second
// delivery, the fan-out workers of its sweep) closes the same days, however
// late it runs. Wake times, leases, retries and budgets keep the clock.
func closesAsOf(tick, now time.Time) time.Time {
	if tick.IsZero() || tick.After(now) || now.Sub(tick) > MaxTickAge {
		return now
	}
	return tick
}

// Runner runs one sweep for a schedule tick (zero: none, the clock's).
type Runner interface {
	Run(ctx context.Context, tick time.Time) (Summary, error)
}

var _ Runner = (*Sweeper)(nil)

// ShardRunner runs a fan-out worker on one shard message.
type ShardRunner interface {
	RunShards(ctx context.Context, job ShardJob) (Summary, error)
}

var _ ShardRunner = (*Sweeper)(nil)

// Handler translates a schedule event into one sweep, and a message of the
// sweep queue into one fan-out worker.
type Handler struct {
	Sweeper Runner
	Shards  ShardRunner
	Log     *slog.Logger
	Metrics *metrics.Emitter
}

// Invoke is the Lambda entry point: an SQS event comes from the sweep
// queue's event source (fan-out shard messages, HandleShards); anything else
// is a scheduled or hand-made sweep (Handle).
func (h Handler) Invoke(ctx context.Context, raw json.RawMessage) (any, error) {
	var ev events.SQSEvent
	if json.Unmarshal(raw, &ev) == nil && len(ev.Records) > 0 && ev.Records[0].EventSource == "aws:sqs" {
		return h.HandleShards(ctx, ev), nil
	}
	return h.Handle(ctx, raw)
}

// HandleShards runs one worker per message (the event source's batch size
// is 1) and reports the messages whose worker failed, which then go to the
// sweeper's dead-letter queue: a failed worker's accounts stay woken, and
// the next sweep takes them.
func (h Handler) HandleShards(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	var resp events.SQSEventResponse
	for _, m := range ev.Records {
		log := h.Log.With("message_id", m.MessageId)
		var job ShardJob
		err := json.Unmarshal([]byte(m.Body), &job)
		if err == nil {
			err = job.validate()
		}
		if err != nil {
			log.ErrorContext(ctx, "malformed shard message", "error", err.Error(), "body", m.Body)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			continue
		}
		log = log.With("sweep", job.Sweep, "shards", job.Shards)
		sum, err := h.Shards.RunShards(ctx, job)
		h.emit(ctx, job.Sweep, sum)
		if err != nil {
			log.ErrorContext(ctx, "shard sweep finished with errors", "summary", sum, "error", err.Error())
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			continue
		}
		log.InfoContext(ctx, "shard sweep finished", "summary", sum)
	}
	return resp
}

// Handle is the Lambda entry point: one sweep for the event's tick
// (ScheduledTime). The summary is logged and returned; a
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
	tick, terr := ev.Tick()
	if terr != nil {
		// Like an unexpected body: the sweep runs, as of the clock.
		log.WarnContext(ctx, "sweeping as of the clock", "error", terr.Error())
	}
	sum, err := h.Sweeper.Run(ctx, tick)
	h.emit(ctx, ev.ExecutionID, sum)
	if err != nil {
		log.ErrorContext(ctx, "sweep finished with errors", "summary", sum, "error", err.Error())
		return sum, fmt.Errorf("sweep: %w", err)
	}
	log.InfoContext(ctx, "sweep finished", "summary", sum)
	return sum, nil
}

func (h Handler) emit(_ context.Context, executionID string, sum Summary) {
	ms := []metrics.Metric{
		{Name: "PartitionsClaimed", Unit: metrics.Count, Value: float64(sum.Claimed)},
		{Name: "PartitionsDue", Unit: metrics.Count, Value: float64(sum.Due)},
		{Name: "OldestDueAge", Unit: metrics.Seconds, Value: float64(sum.OldestDueAgeSeconds)},
		{Name: "SweepErrors", Unit: metrics.Count, Value: float64(sum.Errors)},
		{Name: "ClaimBudget", Unit: metrics.Count, Value: float64(sum.Budget)},
		{Name: "AccountsWoken", Unit: metrics.Count, Value: float64(sum.Woken)},
	}
	// PartitionsStopped feeds the template's alarm on partitions that
	// stopped retrying (Maximum over 15 minutes > 0): a level, the number of
	// partitions currently stopped, published only when every shard was
	// counted (never by a fan-out worker), so a failing sweep cannot clear
	// the alarm.
	if sum.StoppedCounted {
		ms = append(ms, metrics.Metric{Name: "PartitionsStopped", Unit: metrics.Count, Value: float64(sum.Stopped)})
	}
	if h.Metrics != nil {
		_ = h.Metrics.Emit(map[string]any{"execution_id": executionID}, ms...)
	}
}
