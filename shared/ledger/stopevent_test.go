package ledger

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// testStoppedEvent is an outbox event of a stop, as shared/outbox makes
// one (which this package cannot import).
func testStoppedEvent(s partition.Stop) (Event, error) {
	id := fmt.Sprintf("%s/%s/%s/%d/stopped/%s", s.AccountID, s.Dataset, s.Day, s.Generation, fmtTime(s.At))
	return Event{Key: s.Key, Kind: EventStopped, Generation: s.Generation, At: s.At, ID: id, DetailType: "daybook.partition.stopped",
		Detail: fmt.Appendf(nil, `{"id":%q,"cause":%q,"attempts":%d}`, id, s.Cause, s.Attempts)}, nil
}

// TestStopRecordsItsEventInTheSameWrite: the transition that stops a
// partition (Fail on the last attempt; Claim retiring a dead claim on its
// last attempt) records the stopped event, pending, in the same write, so
// a function that dies right after it (before it publishes the stop) loses
// nothing; the hook's own record of the same stop changes nothing; a
// refused transition records nothing. On the code before, the event was
// recorded only by the hook, after the transition: none here.
func TestStopRecordsItsEventInTheSameWrite(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk, func(c *Config) { c.MaxAttempts = 1; c.StoppedEvent = testStoppedEvent })
	acct := testAccount(t, "stop")
	if _, err := l.Schedule().Materialize(ctx, acct, "events", civil.MustParse("2026-03-02"), civil.MustParse("2026-03-03")); err != nil {
		t.Fatal(err)
	}
	failed := partition.Key{AccountID: acct, Dataset: "events", Day: civil.MustParse("2026-03-02")}
	dead := partition.Key{AccountID: acct, Dataset: "events", Day: civil.MustParse("2026-03-03")}
	events := func(k partition.Key) []Event {
		t.Helper()
		evs, err := l.Outbox().Events(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}

	c, err := l.Partitions().Claim(ctx, failed, "")
	if err == nil {
		_, err = l.Partitions().Start(ctx, failed, c.Token)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Fail(ctx, failed, "not-the-token", errors.New("boom")); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("fail without the claim: %v", err)
	}
	if evs := events(failed); len(evs) != 0 {
		t.Fatalf("a refused Fail recorded %d events", len(evs))
	}
	row, err := l.Partitions().Fail(ctx, failed, c.Token, errors.New("source unreachable"))
	if err != nil || !row.Stopped || row.LastError != "source unreachable" {
		t.Fatalf("fail on the last attempt: %+v, %v", row, err)
	}
	evs := events(failed)
	if len(evs) != 1 || evs[0].Kind != EventStopped || !evs[0].Pending() || !evs[0].At.Equal(clk.Now()) {
		t.Fatalf("after the stopping Fail: %+v, want one pending stopped event at %s", evs, clk.Now())
	}
	// The hook's record of the same stop (what shared/outbox.Send does).
	ev, _ := testStoppedEvent(partition.Stop{Key: failed, Attempts: 1, Generation: row.Generation, Reason: row.Reason,
		Cause: partition.StopFailed, Error: row.LastError, At: row.UpdatedAt})
	if recorded, err := l.Outbox().RecordEvent(ctx, ev); err != nil || recorded {
		t.Errorf("the hook recorded the stop again: %v, %v", recorded, err)
	}

	// A dead claim on its last attempt, retired by the next claim.
	c, err = l.Partitions().Claim(ctx, dead, "")
	if err == nil {
		_, err = l.Partitions().Start(ctx, dead, c.Token)
	}
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(testLease + time.Minute)
	if _, err := l.Partitions().Claim(ctx, dead, ""); !errors.Is(err, ErrStopped) {
		t.Fatalf("claim of a dead claim on its last attempt: %v, want ErrStopped", err)
	}
	if evs := events(dead); len(evs) != 1 || evs[0].Kind != EventStopped || !evs[0].Pending() {
		t.Errorf("after the retirement: %+v, want one pending stopped event", evs)
	}
}
