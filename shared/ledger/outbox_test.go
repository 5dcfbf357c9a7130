package ledger

import (
	"errors"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// pendingOf is the pending events of account, across every shard.
func pendingOf(t *testing.T, l *Ledger, account string) []Event {
	t.Helper()
	var out []Event
	for shard := range OutboxShards {
		evs, stats, err := l.Outbox().PendingEvents(t.Context(), shard, 0)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Queries != 1 {
			t.Errorf("shard %d: %d queries, want 1", shard, stats.Queries)
		}
		for _, ev := range evs {
			if ev.Key.AccountID == account {
				if shard != OutboxShard(account) {
					t.Errorf("event %s pending in shard %d, its account's is %d", ev.ID, shard, OutboxShard(account))
				}
				out = append(out, ev)
			}
		}
	}
	return out
}

// TestOutbox: an event is recorded once (a second record, before or after
// its publish, changes nothing), is pending in its account's shard until
// marked published, and then is in no shard; a stopped event of the same
// generation is another event; a bad event is refused whole.
func TestOutbox(t *testing.T) {
	ctx := t.Context()
	clk := newClock("2026-03-10T12:00:00Z")
	l, _ := newTestLedger(t, clk)
	acct := testAccount(t, "a")
	key := partition.Key{AccountID: acct, Dataset: "events", Day: civil.MustParse("2026-03-09")}
	committed := Event{Key: key, Kind: EventCommitted, Generation: 2, ID: acct + "/events/2026-03-09/2", DetailType: "daybook.partition.committed", Detail: []byte(`{"generation":2}`)}
	stopped := Event{Key: key, Kind: EventStopped, Generation: 2, At: clk.Now(), ID: acct + "/events/2026-03-09/2/stopped", DetailType: "daybook.partition.stopped", Detail: []byte(`{"cause":"failed"}`)}

	for i, want := range []bool{true, false} {
		ok, err := l.Outbox().RecordEvent(ctx, committed)
		if err != nil || ok != want {
			t.Fatalf("record %d: %v %v, want %v", i, ok, err, want)
		}
		clk.Advance(time.Minute)
	}
	if ok, err := l.Outbox().RecordEvent(ctx, stopped); err != nil || !ok {
		t.Fatalf("record the stopped event: %v %v", ok, err)
	}
	got := pendingOf(t, l, acct)
	if len(got) != 2 || got[0].ID != committed.ID || got[1].ID != stopped.ID || string(got[0].Detail) != string(committed.Detail) ||
		!got[1].At.Equal(stopped.At) || got[0].RecordedAt.IsZero() || got[0].Publishes != 0 {
		t.Fatalf("pending %+v, want the committed event then the stopped one", got)
	}

	for range 2 {
		if err := l.Outbox().EventPublished(ctx, got[0]); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := l.Outbox().RecordEvent(ctx, committed); err != nil || ok {
		t.Fatalf("a record after the publish: %v %v, want nothing recorded", ok, err)
	}
	if p := pendingOf(t, l, acct); len(p) != 1 || p[0].ID != stopped.ID {
		t.Fatalf("pending after the publish %+v, want the stopped event only", p)
	}
	all, err := l.Outbox().Events(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Pending() || all[0].Publishes != 2 || !all[1].Pending() {
		t.Fatalf("events %+v, want the committed one published twice, the stopped one pending", all)
	}

	other := stopped
	other.Key.Dataset = "profiles"
	if err := l.Outbox().EventPublished(ctx, other); !errors.Is(err, ErrNotFound) {
		t.Errorf("marking an event never recorded: %v, want ErrNotFound", err)
	}
	for _, bad := range []Event{
		{Key: key, Kind: "X", Generation: 3, ID: "x", DetailType: "d", Detail: []byte("{}")},
		{Key: key, Kind: EventCommitted, Generation: 3, DetailType: "d", Detail: []byte("{}")},
		{Key: key, Kind: EventCommitted, Generation: 3, ID: "x", DetailType: "d"},
	} {
		if _, err := l.Outbox().RecordEvent(ctx, bad); !errors.Is(err, ErrEventInvalid) {
			t.Errorf("RecordEvent(%+v) = %v, want ErrEventInvalid", bad, err)
		}
	}
	if all, _ := l.Outbox().Events(ctx, key); len(all) != 2 {
		t.Errorf("a refused event was recorded: %+v", all)
	}
	if _, _, err := l.Outbox().PendingEvents(ctx, OutboxShards, 0); err == nil {
		t.Errorf("PendingEvents of shard %d: no error", OutboxShards)
	}
}
