package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/partition"
)

// fixture builds a row in a given state for the transition table.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	l     *Ledger
	clk   *clock
	key   partition.Key
	token string // of the live claim, if any
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) pending() {
	f.t.Helper()
	_, err := f.l.Schedule().Materialize(f.ctx, f.key.AccountID, f.key.Dataset, f.key.Day, f.key.Day)
	f.must(err)
}

func (f *fixture) running() {
	f.t.Helper()
	f.pending()
	c, err := f.l.Partitions().Claim(f.ctx, f.key, "")
	f.must(err)
	f.token = c.Token
}

// started is a claimed job whose exporter called Start.
func (f *fixture) started() {
	f.t.Helper()
	f.running()
	_, err := f.l.Partitions().Start(f.ctx, f.key, f.token)
	f.must(err)
}

func (f *fixture) completed() {
	f.t.Helper()
	f.running()
	_, err := f.l.Partitions().Complete(f.ctx, f.key, f.token, Result{Rows: 10, Bytes: 100, Files: 1, ManifestKey: "m"})
	f.must(err)
}

func (f *fixture) failed() {
	f.t.Helper()
	f.running()
	_, err := f.l.Partitions().Fail(f.ctx, f.key, f.token, errors.New("boom"))
	f.must(err)
}

func (f *fixture) failedDue() {
	f.t.Helper()
	f.failed()
	f.clk.Advance(2 * time.Hour)
}

// runs claims, starts and fails the row n times.
func (f *fixture) runs(n int) {
	f.t.Helper()
	for range n {
		c, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
		f.must(err)
		_, err = f.l.Partitions().Start(f.ctx, f.key, c.Token)
		f.must(err)
		_, err = f.l.Partitions().Fail(f.ctx, f.key, c.Token, errors.New("boom"))
		f.must(err)
		f.clk.Advance(2 * time.Hour)
	}
}

func (f *fixture) stopped() {
	f.t.Helper()
	f.pending()
	f.runs(f.l.cfg.MaxAttempts)
}

func (f *fixture) queued() {
	f.t.Helper()
	_, err := f.l.Partitions().Requeue(f.ctx, RequeueRange{AccountID: f.key.AccountID, Dataset: f.key.Dataset, From: f.key.Day, To: f.key.Day, Reason: partition.ReasonManual})
	f.must(err)
}

func (f *fixture) get() Row {
	f.t.Helper()
	r, err := f.l.Partitions().Get(f.ctx, f.key)
	f.must(err)
	return r
}

func TestTransitions(t *testing.T) {
	type check func(f *fixture, r Row)
	inIndex := func(prefix string) check {
		return func(f *fixture, r Row) {
			if !strings.HasPrefix(r.DueKey, prefix) {
				f.t.Errorf("due_key %q, want prefix %q", r.DueKey, prefix)
			}
		}
	}
	notInIndex := func(f *fixture, r Row) {
		if r.DueKey != "" {
			f.t.Errorf("due_key %q, want none", r.DueKey)
		}
	}
	attempts := func(n int) check {
		return func(f *fixture, r Row) {
			if r.Attempts != n {
				f.t.Errorf("attempts %d, want %d (%+v)", r.Attempts, n, r)
			}
		}
	}
	inStoppedClass := func(f *fixture, r Row) {
		if want := "9#" + f.key.Day.String() + "#" + f.key.Dataset; r.DueKey != want || !r.Stopped {
			f.t.Errorf("due_key %q stopped %v, want %q and stopped", r.DueKey, r.Stopped, want)
		}
	}
	cases := []struct {
		name    string
		setup   func(f *fixture)
		act     func(f *fixture) error
		wantErr error
		state   State
		checks  []check
	}{
		{"claim pending", (*fixture).pending, func(f *fixture) error {
			c, err := f.l.Partitions().Claim(f.ctx, f.key, "")
			if err == nil && (c.Attempt != 1 || c.Generation != 1 || c.Reason != partition.ReasonScheduled || len(c.Token) != 32) {
				f.t.Errorf("claim %+v", c)
			}
			return err
		}, nil, StateRunning, []check{inIndex("3#"), attempts(0)}}, // a claim uses no attempt: Start does
		{"claim queued", (*fixture).queued, func(f *fixture) error {
			c, err := f.l.Partitions().Claim(f.ctx, f.key, "")
			if err == nil && c.Reason != partition.ReasonManual {
				f.t.Errorf("reason %s, want the queued row's manual", c.Reason)
			}
			return err
		}, nil, StateRunning, nil},
		{"claim completed is refused", (*fixture).completed, func(f *fixture) error {
			_, err := f.l.Partitions().Claim(f.ctx, f.key, "")
			return err
		}, ErrConflict, StateCompleted, []check{notInIndex}},
		{"claim live running is refused", (*fixture).running, func(f *fixture) error {
			_, err := f.l.Partitions().Claim(f.ctx, f.key, "")
			return err
		}, ErrConflict, StateRunning, nil},
		{"claim failed before its next attempt is refused", (*fixture).failed, func(f *fixture) error {
			_, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
			return err
		}, ErrConflict, StateFailed, []check{inIndex("2#")}},
		{"claim failed and due", (*fixture).failedDue, func(f *fixture) error {
			c, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
			if err == nil && (c.Attempt != 2 || c.Reason != partition.ReasonRetry) {
				f.t.Errorf("claim %+v", c)
			}
			return err
		}, nil, StateRunning, nil},
		{"claim of a stopped row is refused", (*fixture).stopped, func(f *fixture) error {
			_, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
			return err
		}, ErrConflict, StateFailed, []check{inStoppedClass, attempts(3)}},
		{"claim absent", func(f *fixture) {}, func(f *fixture) error {
			_, err := f.l.Partitions().Claim(f.ctx, f.key, "")
			return err
		}, ErrNotFound, "", nil},
		{"start a claimed job", (*fixture).running, func(f *fixture) error {
			f.clk.Advance(5 * time.Minute) // the job waited in the queue
			c, err := f.l.Partitions().Start(f.ctx, f.key, f.token)
			if err == nil && (c.Attempt != 1 || c.Generation != 1 || c.Reason != partition.ReasonScheduled || !c.LeaseUntil.Equal(f.clk.Now().Add(testLease))) {
				f.t.Errorf("start %+v", c)
			}
			return err
		}, nil, StateRunning, []check{inIndex("3#"), attempts(1), func(f *fixture, r Row) {
			if !r.LeaseUntil.Equal(f.clk.Now().Add(testLease)) || !r.StartedAt.Equal(f.clk.Now()) {
				f.t.Errorf("lease not renewed from the start: %s (started %s)", r.LeaseUntil, r.StartedAt)
			}
		}}},
		{"start the old message of a reclaimed dead claim", (*fixture).running, func(f *fixture) error {
			f.clk.Advance(testLease + time.Minute) // the job waited in the queue past its lease
			c, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
			f.must(err)
			if c.Attempt != 1 {
				f.t.Errorf("reclaim of a claim that never started: attempt %d, want 1", c.Attempt)
			}
			if _, err := f.l.Partitions().Start(f.ctx, f.key, f.token); !errors.Is(err, ErrClaimLost) {
				f.t.Errorf("old message started: %v", err)
			}
			_, err = f.l.Partitions().Start(f.ctx, f.key, c.Token)
			return err
		}, nil, StateRunning, []check{attempts(1)}},
		{"second delivery of a started job", (*fixture).running, func(f *fixture) error {
			_, err := f.l.Partitions().Start(f.ctx, f.key, f.token)
			f.must(err)
			_, err = f.l.Partitions().Start(f.ctx, f.key, f.token)
			return err
		}, ErrClaimLost, StateRunning, nil},
		{"start with a stale token", (*fixture).running, func(f *fixture) error {
			_, err := f.l.Partitions().Start(f.ctx, f.key, "stale")
			return err
		}, ErrClaimLost, StateRunning, nil},
		{"start a completed job", (*fixture).completed, func(f *fixture) error {
			_, err := f.l.Partitions().Start(f.ctx, f.key, f.token)
			return err
		}, ErrClaimLost, StateCompleted, nil},
		{"start after a manual claim is refused", (*fixture).pending, func(f *fixture) error {
			c, err := f.l.Partitions().ClaimManual(f.ctx, f.key, ManualRequest{})
			f.must(err)
			_, err = f.l.Partitions().Start(f.ctx, f.key, c.Token)
			return err
		}, ErrClaimLost, StateRunning, nil},
		{"complete with a wrong token", (*fixture).running, func(f *fixture) error {
			_, err := f.l.Partitions().Complete(f.ctx, f.key, "not-the-token", Result{})
			return err
		}, ErrClaimLost, StateRunning, nil},
		{"complete", (*fixture).running, func(f *fixture) error {
			r, err := f.l.Partitions().Complete(f.ctx, f.key, f.token, Result{Rows: 5, Bytes: 50, Files: 1, ManifestKey: "k", Duration: 1500 * time.Millisecond})
			if err == nil && (r.Generation != 1 || r.Rows != 5 || r.DurationMS != 1500 || r.ClaimToken != "") {
				f.t.Errorf("row %+v", r)
			}
			return err
		}, nil, StateCompleted, []check{notInIndex}},
		{"complete twice", (*fixture).completed, func(f *fixture) error {
			_, err := f.l.Partitions().Complete(f.ctx, f.key, f.token, Result{})
			return err
		}, ErrClaimLost, StateCompleted, nil},
		{"fail", (*fixture).running, func(f *fixture) error {
			r, err := f.l.Partitions().Fail(f.ctx, f.key, f.token, errors.New("bucket gone"))
			if err == nil && (r.LastError != "bucket gone" || !r.NextAttemptAt.After(f.clk.Now()) || r.Attempts != 1) {
				f.t.Errorf("row %+v", r)
			}
			return err
		}, nil, StateFailed, []check{inIndex("2#")}},
		{"fail a started claim", (*fixture).started, func(f *fixture) error {
			_, err := f.l.Partitions().Fail(f.ctx, f.key, f.token, errors.New("x"))
			return err
		}, nil, StateFailed, []check{inIndex("2#"), attempts(1)}}, // counted once, at Start
		{"fail twice", (*fixture).failed, func(f *fixture) error {
			_, err := f.l.Partitions().Fail(f.ctx, f.key, f.token, errors.New("again"))
			return err
		}, ErrClaimLost, StateFailed, nil},
		{"fail with a wrong token", (*fixture).running, func(f *fixture) error {
			_, err := f.l.Partitions().Fail(f.ctx, f.key, "nope", errors.New("x"))
			return err
		}, ErrClaimLost, StateRunning, nil},
		{"last attempt fails: stopped", func(f *fixture) {
			f.pending()
			f.runs(f.l.cfg.MaxAttempts - 1)
			c, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
			f.must(err)
			_, err = f.l.Partitions().Start(f.ctx, f.key, c.Token)
			f.must(err)
			f.token = c.Token
		}, func(f *fixture) error {
			r, err := f.l.Partitions().Fail(f.ctx, f.key, f.token, errors.New("boom"))
			if err == nil && (!r.Stopped || r.Attempts != f.l.cfg.MaxAttempts) {
				f.t.Errorf("row %+v", r)
			}
			return err
		}, nil, StateFailed, []check{inStoppedClass}},
		{"requeue a live running row records a rerun", (*fixture).running, func(f *fixture) error {
			res, err := f.l.Partitions().Requeue(f.ctx, RequeueRange{AccountID: f.key.AccountID, Dataset: f.key.Dataset, From: f.key.Day, To: f.key.Day, Reason: partition.ReasonManual})
			if err == nil && res.RerunRequested != 1 {
				f.t.Errorf("requeue %+v", res)
			}
			return err
		}, nil, StateRunning, []check{func(f *fixture, r Row) {
			if !r.RerunRequested || r.ClaimToken != f.token {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"requeue completed", (*fixture).completed, func(f *fixture) error {
			_, err := f.l.Partitions().Requeue(f.ctx, RequeueRange{AccountID: f.key.AccountID, Dataset: f.key.Dataset, From: f.key.Day, To: f.key.Day, Reason: partition.ReasonBackfill})
			return err
		}, nil, StateQueued, []check{inIndex("0#"), func(f *fixture, r Row) {
			if r.Generation != 1 || r.Attempts != 0 || r.Reason != partition.ReasonBackfill {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"requeue stopped", (*fixture).stopped, func(f *fixture) error {
			_, err := f.l.Partitions().Requeue(f.ctx, RequeueRange{AccountID: f.key.AccountID, Dataset: f.key.Dataset, From: f.key.Day, To: f.key.Day, Reason: partition.ReasonManual})
			return err
		}, nil, StateQueued, []check{inIndex("0#"), func(f *fixture, r Row) {
			if r.Stopped || r.Attempts != 0 {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"requeue absent creates", func(f *fixture) {}, func(f *fixture) error {
			res, err := f.l.Partitions().Requeue(f.ctx, RequeueRange{AccountID: f.key.AccountID, Dataset: f.key.Dataset, From: f.key.Day, To: f.key.Day, Reason: partition.ReasonManual})
			if err == nil && (res.Created != 1 || res.Queued != 1) {
				f.t.Errorf("requeue %+v", res)
			}
			return err
		}, nil, StateQueued, nil},
		{"release returns to pending", (*fixture).pending, func(f *fixture) error {
			c, err := f.l.Partitions().Claim(f.ctx, f.key, "")
			f.must(err)
			return f.l.Partitions().Release(f.ctx, c)
		}, nil, StatePending, []check{inIndex("1#"), func(f *fixture, r Row) {
			if r.Attempts != 0 || r.ClaimToken != "" {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"release a started claim is refused", (*fixture).started, func(f *fixture) error {
			// The send reported an error, but the message got through and an
			// exporter started it: releasing it would let a second one run it.
			c := Claim{Key: f.key, Token: f.token, Attempt: 1, Prev: Row{Key: f.key, State: StatePending}}
			return f.l.Partitions().Release(f.ctx, c)
		}, ErrClaimLost, StateRunning, []check{inIndex("3#"), attempts(1), func(f *fixture, r Row) {
			if r.ClaimToken != f.token || r.StartedAt.IsZero() {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"release a reclaimed dead claim keeps the attempts", func(f *fixture) {
			f.pending()
			f.runs(1)
			f.running()
			_, err := f.l.Partitions().Start(f.ctx, f.key, f.token)
			f.must(err)
			f.clk.Advance(testLease + time.Minute)
		}, func(f *fixture) error {
			c, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
			f.must(err)
			if c.Attempt != 3 {
				f.t.Errorf("claim %+v, want attempt 3", c)
			}
			return f.l.Partitions().Release(f.ctx, c)
		}, nil, StateFailed, []check{inIndex("2#"), attempts(2)}},
		{"release after a lost claim", (*fixture).pending, func(f *fixture) error {
			c, err := f.l.Partitions().Claim(f.ctx, f.key, "")
			f.must(err)
			c.Token = "stale"
			return f.l.Partitions().Release(f.ctx, c)
		}, ErrClaimLost, StateRunning, nil},
		{"manual claim of a completed row", (*fixture).completed, func(f *fixture) error {
			c, err := f.l.Partitions().ClaimManual(f.ctx, f.key, ManualRequest{})
			if err == nil && (c.Generation != 2 || c.Reason != partition.ReasonManual || c.Attempt != 1) {
				f.t.Errorf("claim %+v", c)
			}
			return err
		}, nil, StateRunning, nil},
		{"manual claim of an absent row creates it", func(f *fixture) {}, func(f *fixture) error {
			c, err := f.l.Partitions().ClaimManual(f.ctx, f.key, ManualRequest{})
			if err == nil && c.Generation != 1 {
				f.t.Errorf("claim %+v", c)
			}
			return err
		}, nil, StateRunning, nil},
		{"manual claim of a stopped row", (*fixture).stopped, func(f *fixture) error {
			_, err := f.l.Partitions().ClaimManual(f.ctx, f.key, ManualRequest{})
			return err
		}, nil, StateRunning, []check{inIndex("3#"), func(f *fixture, r Row) {
			if r.Stopped || r.Attempts != 1 {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"manual claim while running is busy and recorded", (*fixture).running, func(f *fixture) error {
			_, err := f.l.Partitions().ClaimManual(f.ctx, f.key, ManualRequest{})
			return err
		}, ErrBusy, StateRunning, []check{func(f *fixture, r Row) {
			if !r.RerunRequested || r.ClaimToken != f.token {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"dead claim that started on the last attempt is retired as stopped", func(f *fixture) {
			f.pending()
			f.runs(f.l.cfg.MaxAttempts - 1)
			c, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
			f.must(err)
			_, err = f.l.Partitions().Start(f.ctx, f.key, c.Token)
			f.must(err)
			f.clk.Advance(testLease + time.Minute)
		}, func(f *fixture) error {
			_, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
			return err
		}, ErrStopped, StateFailed, []check{inStoppedClass, attempts(3), func(f *fixture, r Row) {
			if !r.Stopped || !strings.Contains(r.LastError, "lease expired") {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"dead claims that never started use no attempt", func(f *fixture) {
			// A backlog longer than the lease: each claim's job waits in the
			// queue until the claim is dead, MaxAttempts+1 times over.
			f.pending()
			for range f.l.cfg.MaxAttempts + 1 {
				_, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
				f.must(err)
				f.clk.Advance(testLease + time.Minute)
			}
		}, func(f *fixture) error {
			c, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
			if err == nil && c.Attempt != 1 {
				f.t.Errorf("claim %+v, want attempt 1", c)
			}
			return err
		}, nil, StateRunning, []check{attempts(0), func(f *fixture, r Row) {
			if r.Stopped {
				f.t.Errorf("row %+v stopped without having run", r)
			}
		}}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock(t0)
			l, _ := newTestLedger(t, clk)
			f := &fixture{t: t, ctx: context.Background(), l: l, clk: clk,
				key: partition.Key{AccountID: testAccount(t, fmt.Sprint(i)), Dataset: "events", Day: day1}}
			tc.setup(f)
			err := tc.act(f)
			if tc.wantErr == nil && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if tc.state == "" {
				return
			}
			r := f.get()
			if r.State != tc.state {
				t.Errorf("state %s, want %s (%+v)", r.State, tc.state, r)
			}
			for _, c := range tc.checks {
				c(f, r)
			}
		})
	}
}
