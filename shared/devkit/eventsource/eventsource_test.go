package eventsource

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// sweeps is a sweeper that records the tick of each event and claims
// nothing.
type sweeps struct{ ticks []string }

func (s *sweeps) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	var ev struct {
		ScheduledTime string `json:"scheduled_time"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	s.ticks = append(s.ticks, ev.ScheduledTime)
	return []byte(`{"claimed":0}`), nil
}

// TestSweepSendsTheClockAsTheTick: the scheduler-shaped event carries the
// driver's clock as its tick, to the nanosecond, so the sweeper closes the
// days closed at exactly the instant a demo pinned its clock to.
func TestSweepSendsTheClockAsTheTick(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 4, 1, 1, 59, 59, 999_999_999, time.FixedZone("UTC-3", -3*3600))
	s := &sweeps{}
	if _, err := (&Driver{Sweeper: s}).Sweep(t.Context(), now, 0); err != nil {
		t.Fatal(err)
	}
	if len(s.ticks) != 1 {
		t.Fatalf("ticks %v", s.ticks)
	}
	tick, err := time.Parse(time.RFC3339Nano, s.ticks[0])
	if err != nil || !tick.Equal(now) {
		t.Errorf("scheduled_time %q (%v), want %s", s.ticks[0], err, now)
	}
}
