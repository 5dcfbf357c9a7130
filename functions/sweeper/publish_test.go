package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/metrics"
	"github.com/daybook-dev/daybook/shared/outbox"
	"github.com/daybook-dev/daybook/shared/partition"
)

// recordingPublisher keeps the events published; its first fail calls fail.
type recordingPublisher struct {
	mu      sync.Mutex
	stopped []events.Stopped
	fail    int
}

func (p *recordingPublisher) Publish(_ context.Context, detailType string, detail any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail > 0 {
		p.fail--
		return errors.New("bus unavailable")
	}
	raw, ok := detail.(json.RawMessage) // the outbox publishes the recorded detail
	if !ok || detailType != events.DetailStopped {
		return nil
	}
	var s events.Stopped
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	p.stopped = append(p.stopped, s)
	return nil
}

// TestRetirementPublishesStopped: a sweep that retires dead claims on their
// last attempt publishes one stopped event for each; a publish that fails
// is logged and counted, and the sweep goes on; the event stays pending in
// the outbox, and the sweep after the grace publishes it, once.
func TestRetirementPublishesStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := at("2026-04-01T12:00:00Z")
	pub := &recordingPublisher{}
	var lines, logs bytes.Buffer
	l := newLedger(t, clk, "l")
	// The sweeper's ledger as main configures it (on its own client).
	cfg := sweeperLedger(t, l).Config()
	ob := &outbox.Outbox{Bus: pub, On: true}
	sl, err := ledger.New(dynamodb.NewFromConfig(sweeperAWS(t)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	twins.Store(l, sl)
	ob.Store = sl.Outbox()
	a := newAccount(t, l, "a", "2026-03-30") // 03-30, 03-31
	rec := &recordingSQS{}
	s := sweeper(only(l, a), rec, clk, 10, 10)
	// The sweeper's outbox, metrics and log, as main wires them.
	s.Outbox, s.Metrics, s.Config.Log = ob, &metrics.Emitter{W: &lines, Stage: "test"}, slog.New(slog.NewJSONHandler(&logs, nil))
	// Every attempt of both days starts and dies.
	for range cfg.MaxAttempts {
		if _, err := s.Run(ctx, clk.Now()); err != nil {
			t.Fatal(err)
		}
		for _, j := range rec.take() {
			if _, err := l.Partitions().Start(ctx, partition.Key{AccountID: j.AccountID, Dataset: j.Dataset, Day: civil.MustParse(j.Day)}, j.ClaimToken); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(2 * time.Hour)
	}
	if len(pub.stopped) != 0 {
		t.Fatalf("stopped events before the last attempt died: %+v", pub.stopped)
	}
	pub.fail = 1 // the first retirement's publish fails
	sum, err := s.Run(ctx, clk.Now())
	if err != nil || sum.Retired != 2 {
		t.Fatalf("sweep: %+v %v", sum, err)
	}
	if n := strings.Count(lines.String(), `"EventPublishFailures":1`); n != 1 || !strings.Contains(logs.String(), "partition event not published") {
		t.Fatalf("%d failed publishes counted, want 1:\n%s\n%s", n, lines.String(), logs.String())
	}
	clk.Advance(time.Minute)
	if sum, err := s.Run(ctx, clk.Now()); err != nil || sum.Retired != 0 || sum.Stopped != 2 {
		t.Fatalf("second sweep: %+v %v", sum, err)
	}
	if len(pub.stopped) != 1 {
		t.Fatalf("stopped events %+v, want one (the other publish failed)", pub.stopped)
	}
	st := pub.stopped[0]
	if st.Account != a.ID || st.Dataset != "events" || st.Attempts != cfg.MaxAttempts || st.Cause != partition.StopLeaseExpired || st.StoppedAt.IsZero() ||
		st.ID != events.StoppedID(a.ID, "events", st.Day, 0, st.StoppedAt) {
		t.Fatalf("stopped detail %+v", st)
	}

	// The failed one is pending, recorded a grace ago: the next sweep
	// publishes it, and no sweep after publishes anything again.
	rp := withRepublish{Runner: s, Outbox: ob, Now: clk.Now, Metrics: &metrics.Emitter{W: &lines, Stage: "test"}, Log: slog.New(slog.NewJSONHandler(&logs, nil))}
	for range 2 {
		if _, err := rp.Run(ctx, clk.Now()); err != nil {
			t.Fatal(err)
		}
		clk.Advance(RepublishGrace)
	}
	if len(pub.stopped) != 2 || pub.stopped[1].Day == st.Day {
		t.Fatalf("after the republishing sweeps: %+v, want the other day's once", pub.stopped)
	}
	for _, d := range []string{"2026-03-30", "2026-03-31"} {
		evs, err := l.Outbox().Events(ctx, partition.Key{AccountID: a.ID, Dataset: "events", Day: civil.MustParse(d)})
		if err != nil || len(evs) != 1 || evs[0].Pending() || evs[0].Publishes != 1 || evs[0].Kind != ledger.EventStopped {
			t.Fatalf("outbox of %s: %+v %v, want one published stopped event", d, evs, err)
		}
	}
}

// TestWireGivesTheSweepItsOutbox: the deployed function (wire, as build
// makes it) hands its sweep the outbox and the metrics it publishes a
// retired partition's stop with and counts a failed publish on, the same
// ones its republishing uses: TestRetirementPublishesStopped sets them by
// hand on a bare Sweeper.
func TestWireGivesTheSweepItsOutbox(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(envvar.From(map[string]string{"LEDGER_TABLE": "t", "JOBS_QUEUE_URL": "https://sqs.example/jobs"}))
	if err != nil {
		t.Fatal(err)
	}
	l := newLedger(t, at("2026-04-01T12:00:00Z"), "w")
	ob := &outbox.Outbox{Store: l.Outbox(), Bus: discardBus{}, On: true}
	em := &metrics.Emitter{W: io.Discard, Stage: "test"}
	h := wire(cfg, wiring{Ledger: ledgerOf(l), Queues: &idleQueues{}, Outbox: ob, Now: time.Now, Metrics: em, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	sw, ok := h.Shards.(*Sweeper)
	if !ok {
		t.Fatalf("the handler's shard runner is a %T, want the *Sweeper", h.Shards)
	}
	if sw.Outbox != ob || sw.Metrics != em {
		t.Fatalf("the wired sweep publishes stops with outbox %p and counts on %p, want %p and %p", sw.Outbox, sw.Metrics, ob, em)
	}
}
