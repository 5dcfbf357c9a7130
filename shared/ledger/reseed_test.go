package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

func TestReseedRequestValidate(t *testing.T) {
	ok := ReseedRequest{AccountID: "acct_x", Dataset: "profiles", From: day1, Through: day1.AddDays(2), RequestID: "r1"}
	tests := []struct {
		name string
		mut  func(*ReseedRequest)
		want string
	}{
		{"valid", func(*ReseedRequest) {}, ""},
		{"no account", func(r *ReseedRequest) { r.AccountID = "" }, `account id ""`},
		{"dataset with #", func(r *ReseedRequest) { r.Dataset = "a#b" }, `dataset "a#b"`},
		{"no from", func(r *ReseedRequest) { r.From = civil.Date{} }, "day is empty"},
		{"no through", func(r *ReseedRequest) { r.Through = civil.Date{} }, `through ""`},
		{"through before from", func(r *ReseedRequest) { r.Through = day1.AddDays(-1) }, "through 2026-02-28 is before from 2026-03-01"},
		{"too long", func(r *ReseedRequest) { r.Through = day1.AddDays(MaxSeedDays) }, "at most 3660"},
		{"no request id", func(r *ReseedRequest) { r.RequestID = " " }, `request id " "`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.mut(&r)
			err := r.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestReseedLifecycle: an epoch starts once per request and refuses a
// second request while it runs; days count once each, only for the running
// epoch and inside its range; it finishes once every day is rebuilt, and a
// new request then starts the next epoch with nothing done.
func TestReseedLifecycle(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	acct := testAccount(t, "a")
	req := ReseedRequest{AccountID: acct, Dataset: "profiles", From: day1, Through: day1.AddDays(2), RequestID: "req-1", RequestedBy: "ops"}

	if _, err := l.Seeds().Seed(ctx, acct, "profiles"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("seed before any reseed: %v", err)
	}
	seed, started, err := l.Seeds().StartReseed(ctx, req)
	if err != nil || !started {
		t.Fatalf("start: %v %v", started, err)
	}
	if seed.Epoch != 1 || !seed.Running() || seed.Days != 3 || len(seed.Done) != 0 || seed.From != day1 || seed.Through != day1.AddDays(2) ||
		seed.RequestedBy != "ops" || !seed.StartedAt.Equal(clk.Now()) {
		t.Fatalf("started seed %+v", seed)
	}
	// The same request again (a redelivered message) finds its epoch.
	clk.Advance(time.Minute)
	again, started, err := l.Seeds().StartReseed(ctx, req)
	if err != nil || started || again.Epoch != 1 || !again.StartedAt.Equal(seed.StartedAt) {
		t.Fatalf("same request again: %+v %v %v", again, started, err)
	}
	other := req
	other.RequestID = "req-2"
	if _, _, err := l.Seeds().StartReseed(ctx, other); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "epoch 1") {
		t.Fatalf("another request while running: %v", err)
	}

	if !seed.Counts(day1, clk.Now()) || seed.Counts(day1, seed.StartedAt.Add(-time.Second)) || seed.Counts(day1.AddDays(3), clk.Now()) {
		t.Fatal("Counts: a run after the start, inside the range, counts; others do not")
	}
	key := func(i int) partition.Key {
		return partition.Key{AccountID: acct, Dataset: "profiles", Day: day1.AddDays(i)}
	}
	for _, i := range []int{0, 0, 1} { // day 0 twice counts once
		if seed, err = l.Seeds().SeedDayDone(ctx, key(i), 1); err != nil {
			t.Fatal(err)
		}
	}
	if len(seed.Done) != 2 || seed.Complete() {
		t.Fatalf("after days 0, 0, 1: %+v", seed.Done)
	}
	if _, err := l.Seeds().SeedDayDone(ctx, key(3), 1); !errors.Is(err, ErrConflict) {
		t.Fatalf("a day outside the range: %v", err)
	}
	if _, err := l.Seeds().SeedDayDone(ctx, key(2), 2); !errors.Is(err, ErrConflict) {
		t.Fatalf("another epoch: %v", err)
	}
	if _, _, err := l.Seeds().FinishReseed(ctx, acct, "profiles", 1); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "2 of 3 days") {
		t.Fatalf("finish with a day left: %v", err)
	}
	if seed, err = l.Seeds().SeedDayDone(ctx, key(2), 1); err != nil || !seed.Complete() {
		t.Fatalf("last day: %+v %v", seed, err)
	}
	done, finished, err := l.Seeds().FinishReseed(ctx, acct, "profiles", 1)
	if err != nil || !finished || done.State != SeedCompleted || done.CompletedAt.IsZero() || done.Covers(day1) {
		t.Fatalf("finish: %+v %v %v", done, finished, err)
	}
	if _, finished, err := l.Seeds().FinishReseed(ctx, acct, "profiles", 1); err != nil || finished {
		t.Fatalf("finish again: %v %v", finished, err)
	}
	if _, err := l.Seeds().SeedDayDone(ctx, key(0), 1); !errors.Is(err, ErrConflict) {
		t.Fatalf("a day of a finished epoch: %v", err)
	}
	// The same request after completion changes nothing; a new one starts epoch 2.
	if s, started, err := l.Seeds().StartReseed(ctx, req); err != nil || started || s.Epoch != 1 || s.State != SeedCompleted {
		t.Fatalf("finished request again: %+v %v %v", s, started, err)
	}
	next, started, err := l.Seeds().StartReseed(ctx, other)
	if err != nil || !started || next.Epoch != 2 || len(next.Done) != 0 || !next.Running() || !next.CompletedAt.IsZero() {
		t.Fatalf("next epoch: %+v %v %v", next, started, err)
	}
	if _, _, err := l.Seeds().FinishReseed(ctx, acct, "profiles", 1); !errors.Is(err, ErrConflict) {
		t.Fatalf("finish of a replaced epoch: %v", err)
	}
	if _, _, err := l.Seeds().StartReseed(ctx, ReseedRequest{AccountID: acct, Dataset: "profiles"}); err == nil || errors.Is(err, ErrConflict) {
		t.Fatalf("an invalid request: %v", err)
	}
	if got, err := l.Seeds().Seed(ctx, acct, "profiles"); err != nil || got.Epoch != 2 || got.RequestID != "req-2" {
		t.Fatalf("seed after the invalid request: %+v %v", got, err)
	}
}

// TestCompleteRecordsSeedEpoch: the generation's seed epoch is stored on the
// row and survives a later generation outside a reseed.
func TestCompleteRecordsSeedEpoch(t *testing.T) {
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	key := partition.Key{AccountID: testAccount(t, "a"), Dataset: "profiles", Day: day1}
	if r := complete(t, l, key, Result{Rows: 1, SeedEpoch: 3}); r.SeedEpoch != 3 {
		t.Fatalf("seed epoch %d", r.SeedEpoch)
	}
	if r := complete(t, l, key, Result{Rows: 1}); r.SeedEpoch != 3 || r.Generation != 2 {
		t.Fatalf("after a generation outside a reseed: epoch %d, generation %d", r.SeedEpoch, r.Generation)
	}
	if !partition.ReasonReseed.Valid() || !partition.ReasonRestatement.Valid() {
		t.Fatal("reseed and restatement are reasons")
	}
}

// TestPurgeRemovesSeed: purging an account removes its reseed state too.
func TestPurgeRemovesSeed(t *testing.T) {
	ctx := context.Background()
	l, _ := newTestLedger(t, newClock(t0))
	acct := testAccount(t, "a")
	if _, _, err := l.Seeds().StartReseed(ctx, ReseedRequest{AccountID: acct, Dataset: "profiles", From: day1, Through: day1, RequestID: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accounts().PurgeAccount(ctx, acct, []string{"events", "profiles"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Seeds().Seed(ctx, acct, "profiles"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("seed after the purge: %v", err)
	}
}
