package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/daybook-dev/daybook/shared/metrics"
)

// fakeRunner counts sweeps.
type fakeRunner struct {
	runs int
	sum  Summary
	err  error
}

func (f *fakeRunner) Run(context.Context) (Summary, error) {
	f.runs++
	return f.sum, f.err
}

// TestHandlerSweepsWhateverThePayload: the schedule is the contract, not the
// body: the sample schedule event, an empty payload, {} and an unexpected
// body each run exactly one sweep (S4: safe to invoke by hand).
func TestHandlerSweepsWhateverThePayload(t *testing.T) {
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

// TestHandlerPublishesExhaustedLevel: PartitionsExhausted is the level the
// sweep counted (partitions currently stopped retrying), every sweep, so the
// alarm (Maximum over 15 minutes > 0) stays raised until they are requeued.
func TestHandlerPublishesExhaustedLevel(t *testing.T) {
	var buf bytes.Buffer
	r := &fakeRunner{sum: Summary{Accounts: 1, Exhausted: 4, Retired: 1, ExhaustedCounted: true}}
	h := Handler{Sweeper: r, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: &metrics.Emitter{W: &buf, Stage: "test"}}
	if _, err := h.Handle(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("EMF line %q: %v", buf.String(), err)
	}
	if line["PartitionsExhausted"] != 4.0 {
		t.Errorf("PartitionsExhausted = %v, want 4 (the level): %s", line["PartitionsExhausted"], buf.String())
	}
}

// A sweep that could not count every account publishes no level: the alarm
// keeps its state (TreatMissingData: missing) instead of clearing.
func TestHandlerWithholdsAnIncompleteLevel(t *testing.T) {
	var buf bytes.Buffer
	r := &fakeRunner{sum: Summary{Accounts: 2, Exhausted: 1, Errors: 1}, err: errors.New("count failed")}
	h := Handler{Sweeper: r, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: &metrics.Emitter{W: &buf, Stage: "test"}}
	if _, err := h.Handle(t.Context(), nil); err == nil {
		t.Fatal("want the sweep's error")
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("EMF line %q: %v", buf.String(), err)
	}
	if _, ok := line["PartitionsExhausted"]; ok {
		t.Errorf("published an incomplete level: %s", buf.String())
	}
	if line["SweepErrors"] != 1.0 {
		t.Errorf("SweepErrors = %v", line["SweepErrors"])
	}
}
