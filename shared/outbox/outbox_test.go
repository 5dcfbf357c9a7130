package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/events"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// memStore is an outbox in memory, as the ledger's behaves: a record is
// kept once, pending until marked published.
type memStore struct {
	evs   map[string]*ledger.Event
	order []string
}

func (s *memStore) RecordEvent(_ context.Context, ev ledger.Event) (bool, error) {
	if s.evs == nil {
		s.evs = map[string]*ledger.Event{}
	}
	if _, ok := s.evs[ev.ID]; ok {
		return false, nil
	}
	s.evs[ev.ID] = &ev
	s.order = append(s.order, ev.ID)
	return true, nil
}

func (s *memStore) EventPublished(_ context.Context, ev ledger.Event) error {
	e, ok := s.evs[ev.ID]
	if !ok {
		return ledger.ErrNotFound
	}
	e.Publishes++
	if e.PublishedAt.IsZero() {
		e.PublishedAt = time.Unix(1, 0)
	}
	return nil
}

func (s *memStore) PendingEvents(_ context.Context, shard, _ int) ([]ledger.Event, ledger.ReadStats, error) {
	var out []ledger.Event
	for _, id := range s.order {
		if e := s.evs[id]; e.Pending() && ledger.OutboxShard(e.Key.AccountID) == shard {
			out = append(out, *e)
		}
	}
	return out, ledger.ReadStats{Queries: 1}, nil
}

// busOf counts publishes by id; it fails while down.
type busOf struct {
	n    map[string]int
	down bool
}

func (b *busOf) Publish(_ context.Context, _ string, detail any) error {
	if b.down {
		return errors.New("bus unavailable")
	}
	var d struct{ ID string }
	if err := json.Unmarshal(detail.(json.RawMessage), &d); err != nil {
		return err
	}
	if b.n == nil {
		b.n = map[string]int{}
	}
	b.n[d.ID]++
	return nil
}

func TestEventIDs(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 10, 12, 0, 5, 700, time.UTC)
	for _, tc := range []struct{ got, want string }{
		{events.CommittedID("acct_x", "events", "2026-03-09", 2), "acct_x/events/2026-03-09/2"},
		{events.StoppedID("acct_x", "events", "2026-03-09", 0, at), "acct_x/events/2026-03-09/0/stopped/2026-03-10T12:00:05Z"},
	} {
		if tc.got != tc.want {
			t.Errorf("id %q, want %q", tc.got, tc.want)
		}
	}
	d := &events.Committed{Account: "acct_x", Dataset: "events", Day: "2026-03-09", Generation: 2}
	ev, err := CommittedEvent(d)
	if err != nil || ev.ID != d.ID || d.ID != "acct_x/events/2026-03-09/2" || ev.Kind != ledger.EventCommitted {
		t.Fatalf("CommittedEvent: %+v %v", ev, err)
	}
	var back events.Committed
	if err := json.Unmarshal(ev.Detail, &back); err != nil || back.ID != d.ID {
		t.Fatalf("detail %s: %v", ev.Detail, err)
	}
	// The same day and generation under contract v2: an id and an outbox
	// item of its own; v1's (the contract named or not) as ever.
	for _, tc := range []struct{ contract, id, ds string }{
		{"", "acct_x/events/2026-03-09/2", "events"},
		{"v1", "acct_x/events/2026-03-09/2", "events"},
		{"v2", "acct_x/events.v2/2026-03-09/2", "events.v2"},
	} {
		ev, err := CommittedEvent(&events.Committed{Account: "acct_x", Dataset: "events", Contract: tc.contract, Day: "2026-03-09", Generation: 2})
		if err != nil || ev.ID != tc.id || ev.Key.Dataset != tc.ds {
			t.Errorf("contract %q: id %q, key %s, %v; want %s under %s", tc.contract, ev.ID, ev.Key, err, tc.id, tc.ds)
		}
	}
	if _, err := CommittedEvent(&events.Committed{Day: "yesterday"}); err == nil {
		t.Errorf("CommittedEvent of day %q: no error", "yesterday")
	}
	st, err := StoppedEvent(partition.Stop{Key: partition.Key{AccountID: "acct_x", Dataset: "events", Day: civil.MustParse("2026-03-09")}, At: at, Cause: partition.StopFailed})
	if err != nil || st.ID != "acct_x/events/2026-03-09/0/stopped/2026-03-10T12:00:05Z" || !st.At.Equal(at.Truncate(time.Second)) {
		t.Fatalf("StoppedEvent: %+v %v", st, err)
	}
}

// TestOutboxAtLeastOnce: a send whose publish fails leaves the event
// pending; a republish within the grace leaves it, one after publishes it
// once, and a send of the same event again records nothing new. An outbox
// without a bus records nothing.
func TestOutboxAtLeastOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, bus := &memStore{}, &busOf{down: true}
	o := &Outbox{Store: store, Bus: bus, On: true}
	ev, err := CommittedEvent(&events.Committed{Account: "acct_x", Dataset: "events", Day: "2026-03-09", Generation: 1})
	if err != nil {
		t.Fatal(err)
	}
	ev.RecordedAt = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	if err := o.Send(ctx, ev); !errors.Is(err, events.ErrPublish) || len(store.order) != 1 {
		t.Fatalf("send with the bus down: %v", err)
	}
	bus.down = false
	r, err := o.Republish(ctx, ev.RecordedAt.Add(30*time.Second), time.Minute)
	if err != nil || r.Published != 0 || r.Queries != ledger.OutboxShards || bus.n[ev.ID] != 0 {
		t.Fatalf("republish within the grace: %+v %v, %d publishes", r, err, bus.n[ev.ID])
	}
	r, err = o.Republish(ctx, ev.RecordedAt.Add(time.Minute), time.Minute)
	if err != nil || r.Pending != 1 || r.Published != 1 || bus.n[ev.ID] != 1 {
		t.Fatalf("republish after the grace: %+v %v, %d publishes", r, err, bus.n[ev.ID])
	}
	if err := o.Send(ctx, ev); err != nil || len(store.order) != 1 || bus.n[ev.ID] != 2 {
		t.Fatalf("a second send: %v, %d recorded, %d publishes", err, len(store.order), bus.n[ev.ID])
	}
	if r, _ := o.Republish(ctx, ev.RecordedAt.Add(time.Hour), time.Minute); r.Pending != 0 {
		t.Fatalf("pending after publishes: %+v", r)
	}

	off := &Outbox{Store: &memStore{}, Bus: bus}
	if err := off.Send(ctx, ev); err != nil || len(off.Store.(*memStore).order) != 0 {
		t.Fatalf("an outbox without a bus: %v, recorded %v", err, off.Store.(*memStore).order)
	}
}
