package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/daybook-dev/daybook/shared/metrics"
)

// fakeRunner counts sweeps and keeps the tick of the last.
type fakeRunner struct {
	runs int
	tick time.Time
	sum  Summary
	err  error
}

func (f *fakeRunner) Run(_ context.Context, tick time.Time) (Summary, error) {
	f.runs++
	f.tick = tick
	return f.sum, f.err
}

// TestHandlerSweepsWhateverThePayload: the schedule is the contract, not the
// body: the sample schedule event, an empty payload, {} and an unexpected
// body each run exactly one sweep (S4: safe to invoke by hand).
func TestHandlerSweepsWhateverThePayload(t *testing.T) {
	t.Parallel()
	sample, err := os.ReadFile("../../events/sweeper-schedule.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev ScheduleEvent
	if err := json.Unmarshal(sample, &ev); err != nil || ev.ScheduledTime == "" || ev.ExecutionID == "" {
		t.Fatalf("sample event %s decodes to %+v (%v)", sample, ev, err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name string
		raw  json.RawMessage
	}{
		{"sample schedule event", sample},
		{"empty payload", nil},
		{"empty object", json.RawMessage(`{}`)},
		{"null", json.RawMessage(`null`)},
		{"unexpected body", json.RawMessage(`[1,2,3]`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{sum: Summary{Accounts: 2, Claimed: 3, Enqueued: 3}}
			sum, err := Handler{Sweeper: r, Log: log}.Handle(t.Context(), tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if r.runs != 1 || sum != r.sum {
				t.Errorf("%d sweeps, summary %+v", r.runs, sum)
			}
		})
	}
	t.Run("sweep error", func(t *testing.T) {
		boom := errors.New("throttled")
		r := &fakeRunner{sum: Summary{Accounts: 1, Errors: 1}, err: boom}
		sum, err := Handler{Sweeper: r, Log: log}.Handle(t.Context(), sample)
		if !errors.Is(err, boom) || sum.Errors != 1 || r.runs != 1 {
			t.Errorf("Handle = %+v, %v; want the summary and the error", sum, err)
		}
	})
}

// TestHandlerSweepsForTheEventsTick: the sample schedule event's
// scheduled_time is the tick its sweep runs for, and it decides what the
// sweep closes when the function runs within MaxTickAge of it; the same
// event replayed a week later sweeps as of the clock. An event without a
// tick, or with one that is not a time, sweeps once with none (the clock's).
func TestHandlerSweepsForTheEventsTick(t *testing.T) {
	t.Parallel()
	sample, err := os.ReadFile("../../events/sweeper-schedule.json")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &fakeRunner{}
	if _, err := (Handler{Sweeper: r, Log: log}).Handle(t.Context(), sample); err != nil {
		t.Fatal(err)
	}
	tick := time.Date(2026, 11, 29, 12, 15, 0, 0, time.UTC)
	if r.runs != 1 || !r.tick.Equal(tick) {
		t.Fatalf("%d sweeps, tick %s; want one for the sample's %s", r.runs, r.tick, tick)
	}
	if got := closesAsOf(r.tick, tick.Add(20*time.Second)); !got.Equal(tick) {
		t.Errorf("the sample run 20 s after its tick closes days as of %s, want its tick", got)
	}
	if week := tick.AddDate(0, 0, 7); !closesAsOf(r.tick, week).Equal(week) {
		t.Errorf("the sample replayed a week later closes days as of %s, want the clock", closesAsOf(r.tick, week))
	}
	for _, raw := range []string{`{}`, `{"source":"daybook.schedule","scheduled_time":"yesterday"}`} {
		r := &fakeRunner{}
		if _, err := (Handler{Sweeper: r, Log: log}).Handle(t.Context(), json.RawMessage(raw)); err != nil || r.runs != 1 || !r.tick.IsZero() {
			t.Errorf("%s: %v, %d sweeps, tick %s; want one, with none", raw, err, r.runs, r.tick)
		}
	}
}

// TestHandlerPublishesStoppedLevel: PartitionsStopped is the level the
// sweep counted (partitions currently stopped retrying), every sweep, so the
// alarm (Maximum over 15 minutes > 0) stays raised until they are requeued.
func TestHandlerPublishesStoppedLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := &fakeRunner{sum: Summary{Accounts: 1, Stopped: 4, Retired: 1, StoppedCounted: true}}
	h := Handler{Sweeper: r, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: &metrics.Emitter{W: &buf, Stage: "test"}}
	if _, err := h.Handle(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("EMF line %q: %v", buf.String(), err)
	}
	if line["PartitionsStopped"] != 4.0 {
		t.Errorf("PartitionsStopped = %v, want 4 (the level): %s", line["PartitionsStopped"], buf.String())
	}
}

// A sweep that could not count every account publishes no level: the alarm
// keeps its state (TreatMissingData: missing) instead of clearing.
func TestHandlerWithholdsAnIncompleteLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := &fakeRunner{sum: Summary{Accounts: 2, Stopped: 1, Errors: 1}, err: errors.New("count failed")}
	h := Handler{Sweeper: r, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: &metrics.Emitter{W: &buf, Stage: "test"}}
	if _, err := h.Handle(t.Context(), nil); err == nil {
		t.Fatal("want the sweep's error")
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("EMF line %q: %v", buf.String(), err)
	}
	if _, ok := line["PartitionsStopped"]; ok {
		t.Errorf("published an incomplete level: %s", buf.String())
	}
	if line["SweepErrors"] != 1.0 {
		t.Errorf("SweepErrors = %v", line["SweepErrors"])
	}
}

// fakeShards records the shard jobs it ran; a job with budget 13 fails.
type fakeShards struct{ jobs []ShardJob }

func (f *fakeShards) RunShards(_ context.Context, j ShardJob) (Summary, error) {
	f.jobs = append(f.jobs, j)
	if j.Budget == 13 {
		return Summary{Errors: 1}, errors.New("boom")
	}
	return Summary{Claimed: j.Budget}, nil
}

// TestInvokeDispatches: an SQS event from the sweep queue runs one worker
// per message and reports the failed and malformed ones; any other payload
// is a sweep.
func TestInvokeDispatches(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r, sh := &fakeRunner{sum: Summary{Claimed: 1}}, &fakeShards{}
	h := Handler{Sweeper: r, Shards: sh, Log: log}
	ev := `{"Records":[
		{"messageId":"ok","eventSource":"aws:sqs","body":"{\"kind\":\"sweep_shards\",\"shards\":[0,1],\"budget\":7}"},
		{"messageId":"fails","eventSource":"aws:sqs","body":"{\"kind\":\"sweep_shards\",\"shards\":[2],\"budget\":13}"},
		{"messageId":"junk","eventSource":"aws:sqs","body":"{\"kind\":\"job\"}"},
		{"messageId":"bad shard","eventSource":"aws:sqs","body":"{\"kind\":\"sweep_shards\",\"shards\":[16],\"budget\":1}"}]}`
	out, err := h.Invoke(t.Context(), json.RawMessage(ev))
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := out.(events.SQSEventResponse)
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if !ok || strings.Join(failed, ",") != "fails,junk,bad shard" || len(sh.jobs) != 2 || r.runs != 0 {
		t.Errorf("response %+v (%T), failures %v, ran %+v, sweeps %d", out, out, failed, sh.jobs, r.runs)
	}
	out, err = h.Invoke(t.Context(), json.RawMessage(`{"source":"daybook.schedule"}`))
	if sum, ok := out.(Summary); err != nil || !ok || sum.Claimed != 1 || r.runs != 1 {
		t.Errorf("schedule event: %+v %v, sweeps %d", out, err, r.runs)
	}
}
