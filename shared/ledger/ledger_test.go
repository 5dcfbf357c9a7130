package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
)

const t0 = "2026-03-10T12:00:00Z"

var day1 = civil.MustParse("2026-03-01")

func TestDeployedTableMatchesLayout(t *testing.T) {
	cfg, table := deployed(t)
	out, err := dynamodb.NewFromConfig(cfg).DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	keys := func(ks []types.KeySchemaElement) map[types.KeyType]string {
		m := map[types.KeyType]string{}
		for _, k := range ks {
			m[k.KeyType] = aws.ToString(k.AttributeName)
		}
		return m
	}
	if got := keys(out.Table.KeySchema); got[types.KeyTypeHash] != AttrPK || got[types.KeyTypeRange] != AttrSK {
		t.Errorf("table keys %v, want %s/%s", got, AttrPK, AttrSK)
	}
	var found bool
	for _, g := range out.Table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) != IndexDue {
			continue
		}
		found = true
		if got := keys(g.KeySchema); got[types.KeyTypeHash] != AttrDueAccount || got[types.KeyTypeRange] != AttrDueKey {
			t.Errorf("index %s keys %v, want %s/%s", IndexDue, got, AttrDueAccount, AttrDueKey)
		}
		// Due reads state, attempts and the claim fields from the index.
		for _, a := range []string{attrAccountID, attrDataset, attrDay, attrState, attrAttempts, attrClaimToken} {
			if g.Projection.ProjectionType != types.ProjectionTypeAll && !slices.Contains(g.Projection.NonKeyAttributes, a) {
				t.Errorf("index %s does not project %s (%v)", IndexDue, a, g.Projection.NonKeyAttributes)
			}
		}
	}
	if !found {
		t.Errorf("table has no %s index", IndexDue)
	}
}

func TestDayAndLease(t *testing.T) {
	if _, err := civil.Parse("2026-13-01"); err == nil || !strings.Contains(err.Error(), "2026-13-01") {
		t.Errorf("ParseDay error %v does not name the value", err)
	}
	if got := LeaseFrom(900*time.Second, 300*time.Second); got != 20*time.Minute {
		t.Errorf("LeaseFrom = %s", got)
	}
}

func TestBackoffIsCappedFullJitter(t *testing.T) {
	l, _ := newTestLedger(t, newClock(t0), func(c *Config) { c.BackoffBase = time.Minute; c.BackoffCap = 10 * time.Minute })
	for attempt := 1; attempt <= 8; attempt++ {
		ceil := min(time.Minute<<(attempt-1), 10*time.Minute)
		var maxSeen time.Duration
		for range 200 {
			d, err := l.Backoff(attempt)
			if err != nil {
				t.Fatal(err)
			}
			if d < time.Second || d > ceil {
				t.Fatalf("attempt %d: backoff %s outside [1s, %s]", attempt, d, ceil)
			}
			maxSeen = max(maxSeen, d)
		}
		if maxSeen < ceil/2 {
			t.Errorf("attempt %d: max of 200 draws %s, jitter does not span [0, %s]", attempt, maxSeen, ceil)
		}
	}
}

// fixture builds a row in a given state for the transition table.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	l     *Ledger
	clk   *clock
	key   Key
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
	_, err := f.l.Materialize(f.ctx, f.key.AccountID, f.key.Dataset, f.key.Day, f.key.Day)
	f.must(err)
}

func (f *fixture) running() {
	f.t.Helper()
	f.pending()
	c, err := f.l.Claim(f.ctx, f.key, "")
	f.must(err)
	f.token = c.Token
}

// started is a claimed job whose exporter called Start.
func (f *fixture) started() {
	f.t.Helper()
	f.running()
	_, err := f.l.Start(f.ctx, f.key, f.token)
	f.must(err)
}

func (f *fixture) completed() {
	f.t.Helper()
	f.running()
	_, err := f.l.Complete(f.ctx, f.key, f.token, Result{Rows: 10, Bytes: 100, Files: 1, ManifestKey: "m"})
	f.must(err)
}

func (f *fixture) failed() {
	f.t.Helper()
	f.running()
	_, err := f.l.Fail(f.ctx, f.key, f.token, errors.New("boom"))
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
		c, err := f.l.Claim(f.ctx, f.key, ReasonRetry)
		f.must(err)
		_, err = f.l.Start(f.ctx, f.key, c.Token)
		f.must(err)
		_, err = f.l.Fail(f.ctx, f.key, c.Token, errors.New("boom"))
		f.must(err)
		f.clk.Advance(2 * time.Hour)
	}
}

func (f *fixture) exhausted() {
	f.t.Helper()
	f.pending()
	f.runs(f.l.cfg.MaxAttempts)
}

func (f *fixture) queued() {
	f.t.Helper()
	_, err := f.l.Requeue(f.ctx, f.key.AccountID, f.key.Dataset, f.key.Day, f.key.Day, ReasonManual)
	f.must(err)
}

func (f *fixture) get() Row {
	f.t.Helper()
	r, err := f.l.Get(f.ctx, f.key)
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
	exhaustedKey := func(f *fixture, r Row) {
		if want := "9#" + f.key.Day.String() + "#" + f.key.Dataset; r.DueKey != want || !r.Exhausted {
			f.t.Errorf("due_key %q exhausted %v, want %q and exhausted", r.DueKey, r.Exhausted, want)
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
			c, err := f.l.Claim(f.ctx, f.key, "")
			if err == nil && (c.Attempt != 1 || c.Generation != 1 || c.Reason != ReasonScheduled || len(c.Token) != 32) {
				f.t.Errorf("claim %+v", c)
			}
			return err
		}, nil, StateRunning, []check{inIndex("3#"), attempts(0)}}, // a claim uses no attempt: Start does
		{"claim queued", (*fixture).queued, func(f *fixture) error {
			c, err := f.l.Claim(f.ctx, f.key, "")
			if err == nil && c.Reason != ReasonManual {
				f.t.Errorf("reason %s, want the queued row's manual", c.Reason)
			}
			return err
		}, nil, StateRunning, nil},
		{"claim completed is refused", (*fixture).completed, func(f *fixture) error {
			_, err := f.l.Claim(f.ctx, f.key, "")
			return err
		}, ErrConflict, StateCompleted, []check{notInIndex}},
		{"claim live running is refused", (*fixture).running, func(f *fixture) error {
			_, err := f.l.Claim(f.ctx, f.key, "")
			return err
		}, ErrConflict, StateRunning, nil},
		{"claim failed before its next attempt is refused", (*fixture).failed, func(f *fixture) error {
			_, err := f.l.Claim(f.ctx, f.key, ReasonRetry)
			return err
		}, ErrConflict, StateFailed, []check{inIndex("2#")}},
		{"claim failed and due", (*fixture).failedDue, func(f *fixture) error {
			c, err := f.l.Claim(f.ctx, f.key, ReasonRetry)
			if err == nil && (c.Attempt != 2 || c.Reason != ReasonRetry) {
				f.t.Errorf("claim %+v", c)
			}
			return err
		}, nil, StateRunning, nil},
		{"claim exhausted is refused", (*fixture).exhausted, func(f *fixture) error {
			_, err := f.l.Claim(f.ctx, f.key, ReasonRetry)
			return err
		}, ErrConflict, StateFailed, []check{exhaustedKey, attempts(3)}},
		{"claim absent", func(f *fixture) {}, func(f *fixture) error {
			_, err := f.l.Claim(f.ctx, f.key, "")
			return err
		}, ErrNotFound, "", nil},
		{"start a claimed job", (*fixture).running, func(f *fixture) error {
			f.clk.Advance(5 * time.Minute) // the job waited in the queue
			c, err := f.l.Start(f.ctx, f.key, f.token)
			if err == nil && (c.Attempt != 1 || c.Generation != 1 || c.Reason != ReasonScheduled || !c.LeaseUntil.Equal(f.clk.Now().Add(testLease))) {
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
			c, err := f.l.Claim(f.ctx, f.key, ReasonRetry)
			f.must(err)
			if c.Attempt != 1 {
				f.t.Errorf("reclaim of a claim that never started: attempt %d, want 1", c.Attempt)
			}
			if _, err := f.l.Start(f.ctx, f.key, f.token); !errors.Is(err, ErrClaimLost) {
				f.t.Errorf("old message started: %v", err)
			}
			_, err = f.l.Start(f.ctx, f.key, c.Token)
			return err
		}, nil, StateRunning, []check{attempts(1)}},
		{"second delivery of a started job", (*fixture).running, func(f *fixture) error {
			_, err := f.l.Start(f.ctx, f.key, f.token)
			f.must(err)
			_, err = f.l.Start(f.ctx, f.key, f.token)
			return err
		}, ErrClaimLost, StateRunning, nil},
		{"start with a stale token", (*fixture).running, func(f *fixture) error {
			_, err := f.l.Start(f.ctx, f.key, "stale")
			return err
		}, ErrClaimLost, StateRunning, nil},
		{"start a completed job", (*fixture).completed, func(f *fixture) error {
			_, err := f.l.Start(f.ctx, f.key, f.token)
			return err
		}, ErrClaimLost, StateCompleted, nil},
		{"start after a manual claim is refused", (*fixture).pending, func(f *fixture) error {
			c, err := f.l.ClaimManual(f.ctx, f.key)
			f.must(err)
			_, err = f.l.Start(f.ctx, f.key, c.Token)
			return err
		}, ErrClaimLost, StateRunning, nil},
		{"complete with a wrong token", (*fixture).running, func(f *fixture) error {
			_, err := f.l.Complete(f.ctx, f.key, "not-the-token", Result{})
			return err
		}, ErrClaimLost, StateRunning, nil},
		{"complete", (*fixture).running, func(f *fixture) error {
			r, err := f.l.Complete(f.ctx, f.key, f.token, Result{Rows: 5, Bytes: 50, Files: 1, ManifestKey: "k", Duration: 1500 * time.Millisecond})
			if err == nil && (r.Generation != 1 || r.Rows != 5 || r.DurationMS != 1500 || r.ClaimToken != "") {
				f.t.Errorf("row %+v", r)
			}
			return err
		}, nil, StateCompleted, []check{notInIndex}},
		{"complete twice", (*fixture).completed, func(f *fixture) error {
			_, err := f.l.Complete(f.ctx, f.key, f.token, Result{})
			return err
		}, ErrClaimLost, StateCompleted, nil},
		{"fail", (*fixture).running, func(f *fixture) error {
			r, err := f.l.Fail(f.ctx, f.key, f.token, errors.New("bucket gone"))
			if err == nil && (r.LastError != "bucket gone" || !r.NextAttemptAt.After(f.clk.Now()) || r.Attempts != 1) {
				f.t.Errorf("row %+v", r)
			}
			return err
		}, nil, StateFailed, []check{inIndex("2#")}},
		{"fail a started claim", (*fixture).started, func(f *fixture) error {
			_, err := f.l.Fail(f.ctx, f.key, f.token, errors.New("x"))
			return err
		}, nil, StateFailed, []check{inIndex("2#"), attempts(1)}}, // counted once, at Start
		{"fail twice", (*fixture).failed, func(f *fixture) error {
			_, err := f.l.Fail(f.ctx, f.key, f.token, errors.New("again"))
			return err
		}, ErrClaimLost, StateFailed, nil},
		{"fail with a wrong token", (*fixture).running, func(f *fixture) error {
			_, err := f.l.Fail(f.ctx, f.key, "nope", errors.New("x"))
			return err
		}, ErrClaimLost, StateRunning, nil},
		{"last attempt fails: exhausted", func(f *fixture) {
			f.pending()
			f.runs(f.l.cfg.MaxAttempts - 1)
			c, err := f.l.Claim(f.ctx, f.key, ReasonRetry)
			f.must(err)
			_, err = f.l.Start(f.ctx, f.key, c.Token)
			f.must(err)
			f.token = c.Token
		}, func(f *fixture) error {
			r, err := f.l.Fail(f.ctx, f.key, f.token, errors.New("boom"))
			if err == nil && (!r.Exhausted || r.Attempts != f.l.cfg.MaxAttempts) {
				f.t.Errorf("row %+v", r)
			}
			return err
		}, nil, StateFailed, []check{exhaustedKey}},
		{"requeue a live running row records a rerun", (*fixture).running, func(f *fixture) error {
			res, err := f.l.Requeue(f.ctx, f.key.AccountID, f.key.Dataset, f.key.Day, f.key.Day, ReasonManual)
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
			_, err := f.l.Requeue(f.ctx, f.key.AccountID, f.key.Dataset, f.key.Day, f.key.Day, ReasonBackfill)
			return err
		}, nil, StateQueued, []check{inIndex("0#"), func(f *fixture, r Row) {
			if r.Generation != 1 || r.Attempts != 0 || r.Reason != ReasonBackfill {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"requeue exhausted", (*fixture).exhausted, func(f *fixture) error {
			_, err := f.l.Requeue(f.ctx, f.key.AccountID, f.key.Dataset, f.key.Day, f.key.Day, ReasonManual)
			return err
		}, nil, StateQueued, []check{inIndex("0#"), func(f *fixture, r Row) {
			if r.Exhausted || r.Attempts != 0 {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"requeue absent creates", func(f *fixture) {}, func(f *fixture) error {
			res, err := f.l.Requeue(f.ctx, f.key.AccountID, f.key.Dataset, f.key.Day, f.key.Day, ReasonManual)
			if err == nil && (res.Created != 1 || res.Queued != 1) {
				f.t.Errorf("requeue %+v", res)
			}
			return err
		}, nil, StateQueued, nil},
		{"release returns to pending", (*fixture).pending, func(f *fixture) error {
			c, err := f.l.Claim(f.ctx, f.key, "")
			f.must(err)
			return f.l.Release(f.ctx, c)
		}, nil, StatePending, []check{inIndex("1#"), func(f *fixture, r Row) {
			if r.Attempts != 0 || r.ClaimToken != "" {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"release a started claim is refused", (*fixture).started, func(f *fixture) error {
			// The send reported an error, but the message got through and an
			// exporter started it: releasing it would let a second one run it.
			c := Claim{Key: f.key, Token: f.token, Attempt: 1, Prev: Row{Key: f.key, State: StatePending}}
			return f.l.Release(f.ctx, c)
		}, ErrClaimLost, StateRunning, []check{inIndex("3#"), attempts(1), func(f *fixture, r Row) {
			if r.ClaimToken != f.token || r.StartedAt.IsZero() {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"release a reclaimed dead claim keeps the attempts", func(f *fixture) {
			f.pending()
			f.runs(1)
			f.running()
			_, err := f.l.Start(f.ctx, f.key, f.token)
			f.must(err)
			f.clk.Advance(testLease + time.Minute)
		}, func(f *fixture) error {
			c, err := f.l.Claim(f.ctx, f.key, ReasonRetry)
			f.must(err)
			if c.Attempt != 3 {
				f.t.Errorf("claim %+v, want attempt 3", c)
			}
			return f.l.Release(f.ctx, c)
		}, nil, StateFailed, []check{inIndex("2#"), attempts(2)}},
		{"release after a lost claim", (*fixture).pending, func(f *fixture) error {
			c, err := f.l.Claim(f.ctx, f.key, "")
			f.must(err)
			c.Token = "stale"
			return f.l.Release(f.ctx, c)
		}, ErrClaimLost, StateRunning, nil},
		{"manual claim of a completed row", (*fixture).completed, func(f *fixture) error {
			c, err := f.l.ClaimManual(f.ctx, f.key)
			if err == nil && (c.Generation != 2 || c.Reason != ReasonManual || c.Attempt != 1) {
				f.t.Errorf("claim %+v", c)
			}
			return err
		}, nil, StateRunning, nil},
		{"manual claim of an absent row creates it", func(f *fixture) {}, func(f *fixture) error {
			c, err := f.l.ClaimManual(f.ctx, f.key)
			if err == nil && c.Generation != 1 {
				f.t.Errorf("claim %+v", c)
			}
			return err
		}, nil, StateRunning, nil},
		{"manual claim of an exhausted row", (*fixture).exhausted, func(f *fixture) error {
			_, err := f.l.ClaimManual(f.ctx, f.key)
			return err
		}, nil, StateRunning, []check{inIndex("3#"), func(f *fixture, r Row) {
			if r.Exhausted || r.Attempts != 1 {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"manual claim while running is busy and recorded", (*fixture).running, func(f *fixture) error {
			_, err := f.l.ClaimManual(f.ctx, f.key)
			return err
		}, ErrBusy, StateRunning, []check{func(f *fixture, r Row) {
			if !r.RerunRequested || r.ClaimToken != f.token {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"dead claim that started on the last attempt is retired as exhausted", func(f *fixture) {
			f.pending()
			f.runs(f.l.cfg.MaxAttempts - 1)
			c, err := f.l.Claim(f.ctx, f.key, ReasonRetry)
			f.must(err)
			_, err = f.l.Start(f.ctx, f.key, c.Token)
			f.must(err)
			f.clk.Advance(testLease + time.Minute)
		}, func(f *fixture) error {
			_, err := f.l.Claim(f.ctx, f.key, ReasonRetry)
			return err
		}, ErrExhausted, StateFailed, []check{exhaustedKey, attempts(3), func(f *fixture, r Row) {
			if !r.Exhausted || !strings.Contains(r.LastError, "lease expired") {
				f.t.Errorf("row %+v", r)
			}
		}}},
		{"dead claims that never started use no attempt", func(f *fixture) {
			// A backlog longer than the lease: each claim's job waits in the
			// queue until the claim is dead, MaxAttempts+1 times over.
			f.pending()
			for range f.l.cfg.MaxAttempts + 1 {
				_, err := f.l.Claim(f.ctx, f.key, ReasonRetry)
				f.must(err)
				f.clk.Advance(testLease + time.Minute)
			}
		}, func(f *fixture) error {
			c, err := f.l.Claim(f.ctx, f.key, ReasonRetry)
			if err == nil && c.Attempt != 1 {
				f.t.Errorf("claim %+v, want attempt 1", c)
			}
			return err
		}, nil, StateRunning, []check{attempts(0), func(f *fixture, r Row) {
			if r.Exhausted {
				f.t.Errorf("row %+v exhausted without having run", r)
			}
		}}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock(t0)
			l, _ := newTestLedger(t, clk)
			f := &fixture{t: t, ctx: context.Background(), l: l, clk: clk,
				key: Key{AccountID: testAccount(t, fmt.Sprint(i)), Dataset: "events", Day: day1}}
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

func TestManualWhileRunningRunsAgainAfterComplete(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	key := Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	if _, err := l.Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	c, err := l.Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.ClaimManual(ctx, key); !errors.Is(err, ErrBusy) {
		t.Fatalf("manual claim while running: %v, want ErrBusy", err)
	}
	r, err := l.Complete(ctx, key, c.Token, Result{Rows: 7, Bytes: 70, Files: 1, ManifestKey: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != StateQueued || r.Generation != 1 || r.Rows != 7 || r.Reason != ReasonManual || r.RerunRequested {
		t.Fatalf("after complete: %+v, want queued, generation 1, stats kept, reason manual", r)
	}
	due, _, err := l.Due(ctx, key.AccountID, 10)
	if err != nil || len(due) != 1 || due[0].State != StateQueued {
		t.Fatalf("due after complete: %+v %v", due, err)
	}
	c2, err := l.Claim(ctx, key, "")
	if err != nil || c2.Generation != 2 || c2.Reason != ReasonManual {
		t.Fatalf("second run claim %+v %v", c2, err)
	}
	if r, err = l.Complete(ctx, key, c2.Token, Result{Rows: 8}); err != nil || r.State != StateCompleted || r.Generation != 2 {
		t.Fatalf("second complete %+v %v", r, err)
	}
}

func TestLeaseExpiry(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	key := Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	if _, err := l.Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	old, err := l.Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(ctx, key, old.Token); err != nil { // it runs, then its exporter dies
		t.Fatal(err)
	}
	if want := clk.Now().Add(testLease); !old.LeaseUntil.Equal(want) {
		t.Errorf("lease until %s, want %s", old.LeaseUntil, want)
	}

	clk.Advance(testLease - time.Second) // inside the lease
	if _, err := l.Claim(ctx, key, ReasonRetry); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim inside the lease: %v, want ErrConflict", err)
	}
	if due, _, _ := l.Due(ctx, key.AccountID, 10); len(due) != 0 {
		t.Fatalf("a live claim is due: %+v", due)
	}

	clk.Advance(2 * time.Second) // past the lease: the claim is dead
	due, _, err := l.Due(ctx, key.AccountID, 10)
	if err != nil || len(due) != 1 || due[0].State != StateRunning {
		t.Fatalf("dead claim not due: %+v %v", due, err)
	}
	fresh, err := l.Claim(ctx, key, ReasonRetry)
	if err != nil {
		t.Fatalf("reclaim after the lease: %v", err)
	}
	if fresh.Attempt != 2 || fresh.Token == old.Token || fresh.Generation != 1 {
		t.Errorf("reclaim %+v", fresh)
	}

	if _, err := l.Complete(ctx, key, old.Token, Result{Rows: 1}); !errors.Is(err, ErrClaimLost) {
		t.Errorf("complete with the stale token: %v, want ErrClaimLost", err)
	}
	if _, err := l.Fail(ctx, key, old.Token, errors.New("zombie")); !errors.Is(err, ErrClaimLost) {
		t.Errorf("fail with the stale token: %v, want ErrClaimLost", err)
	}
	if r, err := l.Complete(ctx, key, fresh.Token, Result{Rows: 2}); err != nil || r.Generation != 1 || r.Rows != 2 {
		t.Errorf("complete with the live token: %+v %v", r, err)
	}
}

func dueDays(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, string(r.State)+":"+r.Day.String())
	}
	return out
}

func TestDueOrder(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	acct := testAccount(t, "a")
	from, to := civil.MustParse("2026-03-01"), civil.MustParse("2026-03-05")
	if n, err := l.Materialize(ctx, acct, "events", from, to); err != nil || n != 5 {
		t.Fatalf("materialize %d %v", n, err)
	}
	// 03-04 is queued by hand: it goes first although it is not the oldest.
	if _, err := l.Requeue(ctx, acct, "events", civil.MustParse("2026-03-04"), civil.MustParse("2026-03-04"), ReasonManual); err != nil {
		t.Fatal(err)
	}
	// 03-01 fails once: it waits for its next attempt.
	k1 := Key{acct, "events", from}
	c, err := l.Claim(ctx, k1, "")
	if err != nil {
		t.Fatal(err)
	}
	failed, err := l.Fail(ctx, k1, c.Token, errors.New("boom"))
	if err != nil {
		t.Fatal(err)
	}
	due, _, err := l.Due(ctx, acct, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(dueDays(due), " "), "queued:2026-03-04 pending:2026-03-02 pending:2026-03-03 pending:2026-03-05"; got != want {
		t.Fatalf("due before the next attempt:\n got %s\nwant %s", got, want)
	}
	clk.Set(failed.NextAttemptAt)
	due, _, _ = l.Due(ctx, acct, 10)
	if got, want := strings.Join(dueDays(due), " "), "queued:2026-03-04 failed:2026-03-01 pending:2026-03-02 pending:2026-03-03 pending:2026-03-05"; got != want {
		t.Fatalf("due at the next attempt:\n got %s\nwant %s", got, want)
	}
	// The cap keeps the head of the order.
	due, _, _ = l.Due(ctx, acct, 2)
	if got, want := strings.Join(dueDays(due), " "), "queued:2026-03-04 failed:2026-03-01"; got != want {
		t.Fatalf("due capped at 2: got %s want %s", got, want)
	}

	// Exhaust 03-01: it leaves the due work until a requeue brings it back.
	for {
		c, err := l.Claim(ctx, k1, ReasonRetry)
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Fail(ctx, k1, c.Token, errors.New("boom"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Exhausted {
			break
		}
		clk.Set(r.NextAttemptAt)
	}
	clk.Advance(48 * time.Hour)
	due, _, _ = l.Due(ctx, acct, 10)
	if got, want := strings.Join(dueDays(due), " "), "queued:2026-03-04 pending:2026-03-02 pending:2026-03-03 pending:2026-03-05"; got != want {
		t.Fatalf("due with 03-01 exhausted:\n got %s\nwant %s", got, want)
	}
	if _, err := l.Requeue(ctx, acct, "events", from, from, ReasonManual); err != nil {
		t.Fatal(err)
	}
	due, _, _ = l.Due(ctx, acct, 10)
	if got, want := strings.Join(dueDays(due), " "), "queued:2026-03-01 queued:2026-03-04 pending:2026-03-02 pending:2026-03-03 pending:2026-03-05"; got != want {
		t.Fatalf("due after requeue:\n got %s\nwant %s", got, want)
	}
}

func TestMaterializeConcurrentlyCreatesOnce(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	acct := testAccount(t, "a")
	from, to := civil.MustParse("2026-01-01"), civil.MustParse("2026-02-09") // 40 days
	var wg sync.WaitGroup
	counts := make([]int, 3)
	for i := range counts {
		wg.Go(func() {
			n, err := l.Materialize(ctx, acct, "events", from, to)
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		})
	}
	wg.Wait()
	if total := counts[0] + counts[1] + counts[2]; total != 40 {
		t.Errorf("created %v = %d rows, want 40", counts, total)
	}
	rows, err := l.List(ctx, acct, "events", from, to)
	if err != nil || len(rows) != 40 {
		t.Fatalf("list %d %v", len(rows), err)
	}
	if rows[0].Reason != ReasonBackfill || rows[39].Reason != ReasonScheduled || rows[0].Day != from {
		t.Errorf("reasons/order: first %+v last %+v", rows[0], rows[39])
	}
}

func TestWatermarkOnlyMovesForward(t *testing.T) {
	ctx := context.Background()
	l, _ := newTestLedger(t, newClock(t0))
	acct := testAccount(t, "a")
	if d, err := l.Watermark(ctx, acct, "events"); err != nil || !d.IsZero() {
		t.Fatalf("initial watermark %v %v", d, err)
	}
	steps := []struct {
		to    string
		moved bool
		want  string
	}{{"2026-03-05", true, "2026-03-05"}, {"2026-03-04", false, "2026-03-05"}, {"2026-03-05", false, "2026-03-05"}, {"2026-03-06", true, "2026-03-06"}}
	for _, s := range steps {
		moved, err := l.AdvanceWatermark(ctx, acct, "events", civil.MustParse(s.to))
		if err != nil || moved != s.moved {
			t.Errorf("advance to %s: moved %v err %v, want %v", s.to, moved, err, s.moved)
		}
		if d, _ := l.Watermark(ctx, acct, "events"); d.String() != s.want {
			t.Errorf("after %s watermark %s, want %s", s.to, d, s.want)
		}
	}
}

func TestAccounts(t *testing.T) {
	ctx := context.Background()
	l, _ := newTestLedger(t, newClock(t0))
	r := seededRand(t)
	var ids []string
	for i := range 3 {
		id, err := account.NewID(r)
		if err != nil {
			t.Fatal(err)
		}
		a := account.Account{ID: id, Name: fmt.Sprint("acct ", i), Enabled: i != 1, StartDate: day1, TimeZone: "Asia/Kolkata",
			Datasets: []string{"events"}, Destination: account.Destination{Bucket: "daybook-exports-test"}}
		if err := l.PutAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := l.PutAccount(ctx, account.Account{ID: "1"}); err == nil {
		t.Error("an invalid account was stored")
	}
	got, err := l.GetAccount(ctx, ids[0])
	if err != nil || got.TimeZone != "Asia/Kolkata" || got.StartDate != day1 || got.CreatedAt.IsZero() {
		t.Fatalf("get %+v %v", got, err)
	}
	if _, err := l.GetAccount(ctx, "acct_missingmissingmi"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing account: %v", err)
	}
	all, err := l.ListAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range all {
		seen[a.ID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("ListAccounts lacks %s", id)
		}
	}
}

// TestConcurrentClaimsWinOnce races four claimers over the same 50 rows in
// different orders: each row has exactly one winner (L2).
func TestConcurrentClaimsWinOnce(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	acct := testAccount(t, "a")
	from := civil.MustParse("2026-01-01")
	days := civil.Range(from, from.AddDays(49))
	if _, err := l.Materialize(ctx, acct, "events", days[0], days[len(days)-1]); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	winners := map[civil.Date][]string{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			order := append([]civil.Date(nil), days...)
			if w%2 == 1 {
				for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
					order[i], order[j] = order[j], order[i]
				}
			}
			if w >= 2 { // start in the middle
				order = append(order[25:], order[:25]...)
			}
			for _, d := range order {
				c, err := l.Claim(ctx, Key{acct, "events", d}, "")
				switch {
				case err == nil:
					mu.Lock()
					winners[d] = append(winners[d], c.Token)
					mu.Unlock()
				case !errors.Is(err, ErrConflict):
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, d := range days {
		if len(winners[d]) != 1 {
			t.Errorf("%s claimed %d times", d, len(winners[d]))
			continue
		}
		if r, err := l.Get(ctx, Key{acct, "events", d}); err != nil || r.ClaimToken != winners[d][0] {
			t.Errorf("%s holds %q, winner %q (%v)", d, r.ClaimToken, winners[d][0], err)
		}
	}
}

// TestCompleteGeneration: a generation only ever increases and never repeats.
// The exporter may commit a generation above the claim's (it found a newer
// one in an old _SUCCESS); Complete stores it, and refuses one that is not
// above the stored generation.
func TestCompleteGeneration(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	key := Key{AccountID: testAccount(t, "a"), Dataset: "events", Day: day1}
	if _, err := l.Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	run := func() Claim {
		t.Helper()
		c, err := l.Claim(ctx, key, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Start(ctx, key, c.Token); err != nil {
			t.Fatal(err)
		}
		return c
	}
	requeue := func() {
		t.Helper()
		if _, err := l.Requeue(ctx, key.AccountID, key.Dataset, key.Day, key.Day, ReasonManual); err != nil {
			t.Fatal(err)
		}
	}

	// A crash after _SUCCESS (generation 1) but before Complete: the next run
	// is claimed as generation 1 again and commits 2.
	c := run()
	if c.Generation != 1 {
		t.Fatalf("claim generation %d, want 1", c.Generation)
	}
	r, err := l.Complete(ctx, key, c.Token, Result{Rows: 1, Generation: 2})
	if err != nil || r.Generation != 2 || r.State != StateCompleted {
		t.Fatalf("complete at generation 2: %+v %v", r, err)
	}

	// Generation 0 keeps the stored + 1 behaviour.
	requeue()
	c = run()
	if c.Generation != 3 {
		t.Fatalf("claim generation %d, want 3", c.Generation)
	}
	if r, err = l.Complete(ctx, key, c.Token, Result{Rows: 2}); err != nil || r.Generation != 3 {
		t.Fatalf("complete without a generation: %+v %v", r, err)
	}

	// Lower than or equal to the stored one: refused, the claim still holds.
	requeue()
	c = run()
	for _, g := range []int64{2, 3} {
		if _, err := l.Complete(ctx, key, c.Token, Result{Generation: g}); !errors.Is(err, ErrConflict) {
			t.Errorf("complete at generation %d over stored 3: %v, want ErrConflict", g, err)
		}
	}
	if _, err := l.Complete(ctx, key, "stale", Result{Generation: 9}); !errors.Is(err, ErrClaimLost) {
		t.Errorf("complete with a stale token: %v, want ErrClaimLost", err)
	}
	if r, err := l.Get(ctx, key); err != nil || r.State != StateRunning || r.ClaimToken != c.Token || r.Generation != 3 {
		t.Fatalf("after refused completes: %+v %v", r, err)
	}

	// A re-run requested meanwhile: the row is queued with the generation stored.
	if _, err := l.ClaimManual(ctx, key); !errors.Is(err, ErrBusy) {
		t.Fatalf("manual claim while running: %v", err)
	}
	if r, err = l.Complete(ctx, key, c.Token, Result{Generation: 7}); err != nil || r.State != StateQueued || r.Generation != 7 {
		t.Fatalf("complete with a re-run requested: %+v %v", r, err)
	}
	if c = run(); c.Generation != 8 {
		t.Errorf("next claim generation %d, want 8", c.Generation)
	}
}

// getCounter counts GetItem calls.
type getCounter struct {
	DynamoAPI
	gets atomic.Int64
}

func (g *getCounter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	g.gets.Add(1)
	return g.DynamoAPI.GetItem(ctx, in, opts...)
}

// TestRefusedClaimReadsNothingMore: a refused claim explains itself from the
// item the failed conditional write returns (ReturnValuesOnConditionCheckFailure
// ALL_OLD; moto 5.2.1 returns it too), without a second read.
func TestRefusedClaimReadsNothingMore(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	base, _ := newTestLedger(t, clk)
	db := &getCounter{DynamoAPI: base.db}
	l, err := New(db, base.cfg)
	if err != nil {
		t.Fatal(err)
	}
	acct := testAccount(t, "a")
	live, done, dead := Key{acct, "events", day1}, Key{acct, "events", day1.AddDays(1)}, Key{acct, "events", day1.AddDays(2)}
	if _, err := l.Materialize(ctx, acct, "events", live.Day, dead.Day); err != nil {
		t.Fatal(err)
	}
	c, err := l.Claim(ctx, done, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Complete(ctx, done, c.Token, Result{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Claim(ctx, live, ""); err != nil {
		t.Fatal(err)
	}
	l.cfg.MaxAttempts = 1
	if c, err = l.Claim(ctx, dead, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(ctx, dead, c.Token); err != nil {
		t.Fatal(err)
	}
	db.gets.Store(0)

	if _, err := l.Claim(ctx, live, ""); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "live claim") {
		t.Errorf("claim of a live claim: %v", err)
	}
	if _, err := l.Claim(ctx, done, ""); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "completed") {
		t.Errorf("claim of a completed row: %v", err)
	}
	if _, err := l.Claim(ctx, Key{acct, "events", day1.AddDays(9)}, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("claim of an absent row: %v", err)
	}
	clk.Advance(testLease + time.Minute)
	if _, err := l.Claim(ctx, dead, ReasonRetry); !errors.Is(err, ErrExhausted) {
		t.Errorf("claim of a dead claim on its last attempt: %v", err)
	}
	if n := db.gets.Load(); n != 0 {
		t.Errorf("refused claims read %d items with GetItem, want 0", n)
	}
}

// TestCountExhausted: rows that stopped retrying are a level that can be
// read from the index at any time (L1, O3), and leave it on requeue or a
// manual claim.
func TestCountExhausted(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	acct, other := testAccount(t, "a"), testAccount(t, "b")
	key := func(a string, i int) Key { return Key{a, "events", day1.AddDays(i)} }
	for _, a := range []string{acct, other} {
		if _, err := l.Materialize(ctx, a, "events", day1, day1.AddDays(3)); err != nil {
			t.Fatal(err)
		}
	}
	count := func(a string, want int) {
		t.Helper()
		n, st, err := l.CountExhausted(ctx, a)
		if err != nil || n != want || st.Items != want || st.Queries != 1 {
			t.Errorf("CountExhausted(%s) = %d %+v %v, want %d reading %d items in 1 query", a, n, st, err, want, want)
		}
	}
	count(acct, 0)

	// Day 0 fails MaxAttempts times; day 1 dies after starting its last attempt.
	f0 := &fixture{t: t, ctx: ctx, l: l, clk: clk, key: key(acct, 0)}
	f0.runs(l.cfg.MaxAttempts)
	f1 := &fixture{t: t, ctx: ctx, l: l, clk: clk, key: key(acct, 1)}
	f1.runs(l.cfg.MaxAttempts - 1)
	f1.running()
	if _, err := l.Start(ctx, f1.key, f1.token); err != nil {
		t.Fatal(err)
	}
	clk.Advance(testLease + time.Minute)
	if _, err := l.Claim(ctx, f1.key, ReasonRetry); !errors.Is(err, ErrExhausted) {
		t.Fatalf("dead last attempt: %v", err)
	}
	// Day 2 completes, day 3 stays pending.
	c, err := l.Claim(ctx, key(acct, 2), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Complete(ctx, key(acct, 2), c.Token, Result{}); err != nil {
		t.Fatal(err)
	}
	count(acct, 2)
	count(other, 0)
	due, _, err := l.Due(ctx, acct, 10)
	if got := strings.Join(dueDays(due), " "); err != nil || got != "pending:2026-03-04" {
		t.Errorf("due with two exhausted rows: %s %v", got, err)
	}

	if _, err := l.Requeue(ctx, acct, "events", f0.key.Day, f0.key.Day, ReasonManual); err != nil {
		t.Fatal(err)
	}
	count(acct, 1)
	if _, err := l.ClaimManual(ctx, f1.key); err != nil {
		t.Fatal(err)
	}
	count(acct, 0)
}

// Run A commits generation 1 and dies before Complete; run B finds A's
// _SUCCESS, notes generation 1, and fails after removing it: the next claim
// is still numbered 2, never 1 again. A failed run that found nothing new
// leaves no gap.
func TestNoteCommittedGeneration(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk, func(c *Config) { c.MaxAttempts = 5 })
	key := Key{AccountID: testAccount(t, "r"), Dataset: "events", Day: day1}
	if _, err := l.Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	claimStart := func() Claim {
		t.Helper()
		c, err := l.Claim(ctx, key, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Start(ctx, key, c.Token); err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := claimStart() // commits 1 in the bucket, dies
	if a.Generation != 1 {
		t.Fatalf("first claim generation %d", a.Generation)
	}
	clk.Advance(testLease + time.Second)
	b := claimStart()
	if b.Generation != 1 {
		t.Fatalf("second claim generation %d, want 1 (the ledger never heard of A's commit)", b.Generation)
	}
	if err := l.NoteCommitted(ctx, key, "not-the-token", 1); !errors.Is(err, ErrClaimLost) {
		t.Fatalf("note with a stale token: %v", err)
	}
	if err := l.NoteCommitted(ctx, key, b.Token, 1); err != nil { // B found A's _SUCCESS
		t.Fatal(err)
	}
	if _, err := l.Fail(ctx, key, b.Token, errors.New("source down")); err != nil { // ...and failed after removing it
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	c := claimStart()
	if c.Generation != 2 {
		t.Fatalf("claim after a noted 1: generation %d, want 2", c.Generation)
	}
	if err := l.NoteCommitted(ctx, key, c.Token, 1); !errors.Is(err, ErrConflict) {
		t.Fatalf("noting a generation not above the noted one: %v", err)
	}
	if _, err := l.Fail(ctx, key, c.Token, errors.New("bucket down")); err != nil { // found nothing new, failed
		t.Fatal(err)
	}
	clk.Advance(4 * time.Hour)
	d := claimStart()
	if d.Generation != 2 {
		t.Fatalf("a failed run that noted nothing must leave no gap: generation %d, want 2", d.Generation)
	}
	if r, err := l.Complete(ctx, key, d.Token, Result{Generation: 2}); err != nil || r.Generation != 2 {
		t.Fatalf("complete: %+v %v", r, err)
	}
}

// A manual re-run recorded while a claim ran is honoured even when that
// claim dies on its last attempt: the row is queued, not retired.
func TestRerunSurvivesExhaustedDeadClaim(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk, func(c *Config) { c.MaxAttempts = 1 })
	key := Key{AccountID: testAccount(t, "x"), Dataset: "events", Day: day1}
	if _, err := l.Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
		t.Fatal(err)
	}
	c, err := l.Claim(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(ctx, key, c.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ClaimManual(ctx, key); !errors.Is(err, ErrBusy) {
		t.Fatalf("manual while running: %v", err)
	}
	clk.Advance(testLease + time.Second)
	if _, err := l.Claim(ctx, key, ReasonRetry); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim of the dead last attempt: %v", err)
	}
	r, err := l.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != StateQueued || r.Exhausted || r.Attempts != 0 || !strings.HasPrefix(r.DueKey, "0#") {
		t.Fatalf("row %+v, want queued with attempts reset", r)
	}
	if _, err := l.Claim(ctx, key, ""); err != nil {
		t.Fatalf("the queued re-run is claimable: %v", err)
	}
}
