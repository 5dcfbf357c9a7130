package ledger

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// putTestAccount stores an enabled account (one dataset, started day1) with
// an id unique to the test and run.
func putTestAccount(t *testing.T, l *Ledger, suffix string, mut ...func(*account.Account)) account.Account {
	t.Helper()
	id, err := account.NewID(rand.NewChaCha8(sha256.Sum256([]byte(fmt.Sprint(t.Name(), "/", suffix, "/", runs.Add(1))))))
	if err != nil {
		t.Fatal(err)
	}
	a := account.Account{ID: id, Name: suffix, Enabled: true, StartDate: day1, Datasets: []string{"events"},
		Destination: account.Destination{Bucket: "daybook-exports-test"}}
	for _, f := range mut {
		f(&a)
	}
	if err := l.Accounts().PutAccount(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

// wakeOf reads an account's wake time; ok is false when it is not in the
// wake index.
func wakeOf(t *testing.T, l *Ledger, id string) (time.Time, bool) {
	t.Helper()
	item, err := l.getItem(context.Background(), tableKey(pkAccounts, id))
	if err != nil {
		t.Fatal(err)
	}
	if _, in := item[AttrFleetShard]; !in {
		return time.Time{}, false
	}
	at, err := parseTime(avString(item[AttrFleetKey]))
	if err != nil {
		t.Fatal(err)
	}
	return at, true
}

// woken returns the account as the wake index shows it at now, if woken.
func woken(t *testing.T, l *Ledger, id string, now time.Time) (Woken, bool) {
	t.Helper()
	ws, _, err := l.Schedule().WokenAccounts(context.Background(), Shard(id), now, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.ID == id {
			return w, true
		}
	}
	return Woken{}, false
}

// TestWakeIndexFollowsTheAccount: an enabled account is put into the wake
// index woken now, a disabled one leaves it, Wake only ever lowers the time
// and never puts a disabled account back.
func TestWakeIndexFollowsTheAccount(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	a := putTestAccount(t, l, "a")
	now := clk.Now()
	w, ok := woken(t, l, a.ID, now)
	if !ok || !w.WakeAt.Equal(now) || w.Account.ID != a.ID || w.Seq < 1 || w.Err != nil {
		t.Fatalf("new account: %+v %v, want woken now", w, ok)
	}
	if _, ok := woken(t, l, a.ID, now.Add(-time.Second)); ok {
		t.Error("woken before its wake time")
	}
	later := now.Add(6 * time.Hour)
	if _, err := l.Schedule().SetNextWake(ctx, w, later, civil.Date{}, now); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		wake, want time.Time
	}{
		{now.Add(7 * time.Hour), later},                  // never raised
		{now.Add(2 * time.Hour), now.Add(2 * time.Hour)}, // lowered
		{now.Add(3 * time.Hour), now.Add(2 * time.Hour)},
	} {
		if err := l.Schedule().Wake(ctx, a.ID, tc.wake); err != nil {
			t.Fatal(err)
		}
		if got, _ := wakeOf(t, l, a.ID); !got.Equal(tc.want) {
			t.Errorf("Wake(%s): wake time %s, want %s", tc.wake, got, tc.want)
		}
	}
	a.Enabled = false
	if err := l.Accounts().PutAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := l.Schedule().Wake(ctx, a.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, in := wakeOf(t, l, a.ID); in {
		t.Error("a disabled account is in the wake index")
	}
	if err := l.Schedule().Wake(ctx, "acct_nosuchaccountxx", now); err != nil {
		t.Errorf("Wake of an unknown account: %v", err)
	}
	if _, err := l.Accounts().GetAccount(ctx, "acct_nosuchaccountxx"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Wake created an account record: %v", err)
	}
	clk.Advance(time.Minute)
	a.Enabled = true
	if err := l.Accounts().PutAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got, in := wakeOf(t, l, a.ID); !in || !got.Equal(clk.Now()) {
		t.Errorf("re-enabled: wake %s %v, want now", got, in)
	}
}

// TestNoLostWakeUp: a sweep that read an account, then sets its next wake
// time, never raises it past work a waker made due meanwhile, whether the
// waker lowered the wake time or found it already early enough; without a
// waker it sets it; of two sweeps the earlier time wins.
func TestNoLostWakeUp(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// between runs after the sweep read the account and its rows, at
		// the sweep's read time + 2 minutes; it returns the time the
		// account must wake at the latest.
		between func(f *fixture, w Woken) time.Time
		applied bool
	}{
		{"no waker", func(f *fixture, w Woken) time.Time { return f.clk.Now().Add(24 * time.Hour) }, true},
		{"a requeue", func(f *fixture, w Woken) time.Time {
			_, err := f.l.Partitions().Requeue(f.ctx, RequeueRange{AccountID: f.key.AccountID, Dataset: "events", From: f.key.Day, To: f.key.Day, Reason: partition.ReasonManual})
			f.must(err)
			return f.clk.Now()
		}, false},
		{"a failure due after the current wake time", func(f *fixture, w Woken) time.Time {
			f.started()
			row, err := f.l.Partitions().Fail(f.ctx, f.key, f.token, errors.New("boom"))
			f.must(err)
			if !row.NextAttemptAt.After(w.WakeAt) {
				f.t.Fatalf("next attempt %s is not after the wake time %s", row.NextAttemptAt, w.WakeAt)
			}
			return row.NextAttemptAt
		}, false},
		{"a manual claim that may die", func(f *fixture, w Woken) time.Time {
			c, err := f.l.Partitions().ClaimManual(f.ctx, f.key, ManualRequest{})
			f.must(err)
			return c.LeaseUntil
		}, false},
		{"another sweep set an earlier time", func(f *fixture, w Woken) time.Time {
			_, err := f.l.Schedule().SetNextWake(f.ctx, w, f.clk.Now().Add(time.Hour), civil.Date{}, f.clk.Now())
			f.must(err)
			return f.clk.Now().Add(time.Hour)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock(t0)
			l, _ := newTestLedger(t, clk)
			a := putTestAccount(t, l, "a")
			f := &fixture{t: t, ctx: ctx, l: l, clk: clk, key: partition.Key{AccountID: a.ID, Dataset: "events", Day: day1}}
			readAt := clk.Now()
			w, ok := woken(t, l, a.ID, readAt)
			if !ok {
				t.Fatal("not woken")
			}
			clk.Advance(2 * time.Minute)
			latest := tc.between(f, w)
			next := readAt.Add(24 * time.Hour) // what the sweep saw: nothing before tomorrow
			applied, err := l.Schedule().SetNextWake(ctx, w, next, day1, readAt)
			if err != nil || applied != tc.applied {
				t.Fatalf("SetNextWake = %v %v, want applied %v", applied, err, tc.applied)
			}
			got, _ := wakeOf(t, l, a.ID)
			if got.After(latest) {
				t.Errorf("wake time %s is after %s: a wake-up was lost", got, latest)
			}
			if tc.applied && !got.Equal(next) {
				t.Errorf("wake time %s, want the sweep's %s", got, next)
			}
			if _, ok := woken(t, l, a.ID, latest); !ok {
				t.Errorf("not woken at %s", latest)
			}
		})
	}
}

// TestWakeJustBeforeTheReadKeepsTheAccountWoken: a waker that wrote less
// than a minute before the sweep read the account's rows may not be in the
// due index yet (it is eventually consistent): the sweep keeps the account's
// earlier wake time although wake_seq is the one it read.
func TestWakeJustBeforeTheReadKeepsTheAccountWoken(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, _ := newTestLedger(t, clk)
	a := putTestAccount(t, l, "a")
	w0, _ := woken(t, l, a.ID, clk.Now())
	if applied, err := l.Schedule().SetNextWake(ctx, w0, clk.Now().Add(time.Hour), civil.Date{}, clk.Now()); err != nil || !applied {
		t.Fatalf("first SetNextWake = %v %v", applied, err)
	}
	clk.Advance(2 * time.Hour)
	if _, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: a.ID, Dataset: "events", From: day1, To: day1, Reason: partition.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(20 * time.Second)
	w, ok := woken(t, l, a.ID, clk.Now()) // wake_seq includes the requeue
	if !ok {
		t.Fatal("not woken")
	}
	applied, err := l.Schedule().SetNextWake(ctx, w, clk.Now().Add(24*time.Hour), civil.Date{}, clk.Now())
	if err != nil || applied {
		t.Fatalf("SetNextWake = %v %v, want not applied", applied, err)
	}
	if _, ok := woken(t, l, a.ID, clk.Now()); !ok {
		t.Error("the requeued account is no longer woken")
	}
}

// TestMalformedAccountDoesNotHideTheOthers: a record that cannot be read is
// returned with its error by WokenAccounts and named by ListAccounts, and
// the accounts around it are returned all the same.
func TestMalformedAccountDoesNotHideTheOthers(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	l, db := newTestLedger(t, clk)
	good := putTestAccount(t, l, "good")
	// Another id in the same shard neighbourhood: the good id with its last
	// character changed (never to itself).
	last := "z"
	if strings.HasSuffix(good.ID, last) {
		last = "y"
	}
	bad := putTestAccount(t, l, "bad", func(a *account.Account) { a.ID = good.ID[:len(good.ID)-1] + last })
	if bad.ID == good.ID {
		t.Fatal("setup: the malformed account is the good one")
	}
	if Shard(bad.ID) != Shard(good.ID) {
		// Same shard or not, both must come back; the check below covers both.
		t.Logf("shards %d and %d", Shard(good.ID), Shard(bad.ID))
	}
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(l.cfg.Table), Key: tableKey(pkAccounts, bad.ID),
		UpdateExpression:          aws.String("SET #d = :v"),
		ExpressionAttributeNames:  map[string]string{"#d": attrDoc},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": s(`{"id":`)},
	}); err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	if w, ok := woken(t, l, good.ID, now); !ok || w.Err != nil {
		t.Errorf("good account: %+v %v", w, ok)
	}
	w, ok := woken(t, l, bad.ID, now)
	if !ok || w.Err == nil || !errors.Is(w.Err, ErrMalformed) || w.ID != bad.ID {
		t.Errorf("malformed account: %+v %v, want it with its error", w, ok)
	}
	all, err := l.Accounts().ListAccounts(ctx)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), bad.ID) {
		t.Errorf("ListAccounts error %v, want one naming %s", err, bad.ID)
	}
	found := false
	for _, a := range all {
		found = found || a.ID == good.ID
	}
	if !found {
		t.Error("ListAccounts dropped the good account")
	}
}

// failingWake fails every UpdateItem on account records: the wake time
// cannot be lowered, every row write goes through.
type failingWake struct{ DynamoAPI }

func (f failingWake) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if pk, _ := in.Key[AttrPK].(*types.AttributeValueMemberS); pk != nil && pk.Value == pkAccounts {
		return nil, errors.New("throttled")
	}
	return f.DynamoAPI.UpdateItem(ctx, in, opts...)
}

// failingWakeLedger is a test ledger (base) and the same ledger whose
// wake updates fail (failingWake), reporting to rep.
func failingWakeLedger(t *testing.T, clk *clock) (base, l *Ledger, rep *reported) {
	t.Helper()
	base, _ = newTestLedger(t, clk)
	rep = &reported{}
	cfg := base.Config()
	cfg.Report = rep.reporter()
	l, err := New(failingWake{base.db}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return base, l, rep
}

// wokenLater is a new account named name whose wake time is set a day
// ahead (later), so a transition that leaves work due should lower it.
func wokenLater(t *testing.T, l *Ledger, clk *clock, name string) (account.Account, time.Time) {
	t.Helper()
	a := putTestAccount(t, l, name)
	w, ok := woken(t, l, a.ID, clk.Now())
	if !ok {
		t.Fatal("setup: a new account is not woken")
	}
	later := clk.Now().Add(24 * time.Hour)
	if applied, err := l.Schedule().SetNextWake(context.Background(), w, later, civil.Date{}, clk.Now().Add(-time.Hour)); err != nil || !applied {
		t.Fatalf("setup: SetNextWake = %v %v", applied, err)
	}
	return a, later
}

// TestWakeFailureAfterARecordedTransition: when the row was written but the
// account's wake time could not be lowered after it, the transition returns
// nil (it happened), the failure is logged once with the account and the
// cause and counted once (WakeFailures), and the wake time is left as it
// was.
func TestWakeFailureAfterARecordedTransition(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	base, l, rep := failingWakeLedger(t, clk)
	claimed := func(t *testing.T, key partition.Key) Claim {
		t.Helper()
		if _, err := l.Schedule().Materialize(ctx, key.AccountID, key.Dataset, key.Day, key.Day); err != nil {
			t.Fatal(err)
		}
		c, err := l.Partitions().Claim(ctx, key, "")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name       string
		transition func(t *testing.T, key partition.Key) (State, error)
	}{
		{"requeue", func(t *testing.T, key partition.Key) (State, error) {
			_, err := l.Partitions().Requeue(ctx, RequeueRange{AccountID: key.AccountID, Dataset: key.Dataset, From: key.Day, To: key.Day, Reason: partition.ReasonManual})
			return StateQueued, err
		}},
		{"fail with attempts left", func(t *testing.T, key partition.Key) (State, error) {
			c := claimed(t, key)
			if _, err := l.Partitions().Start(ctx, key, c.Token); err != nil {
				t.Fatal(err)
			}
			_, err := l.Partitions().Fail(ctx, key, c.Token, errors.New("boom"))
			return StateFailed, err
		}},
		{"release", func(t *testing.T, key partition.Key) (State, error) {
			return StatePending, l.Partitions().Release(ctx, claimed(t, key))
		}},
		{"requeue restatement", func(t *testing.T, key partition.Key) (State, error) {
			c := claimed(t, key)
			if _, err := l.Partitions().Start(ctx, key, c.Token); err != nil {
				t.Fatal(err)
			}
			done, err := l.Partitions().Complete(ctx, key, c.Token, Result{Rows: 1, Fingerprint: Fingerprint{Value: "h1", At: clk.Now()}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.Restates().RequeueRestatement(ctx, key, done.Generation, "h1")
			return StateQueued, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep.logs.Reset()
			rep.emf.Reset()
			a, later := wokenLater(t, base, clk, tc.name)
			key := partition.Key{AccountID: a.ID, Dataset: "events", Day: day1}
			want, err := tc.transition(t, key)
			if err != nil {
				t.Fatalf("the transition returned %v, want nil: it was recorded", err)
			}
			if r, err := base.Partitions().Get(ctx, key); err != nil || r.State != want {
				t.Fatalf("row %s %v, want %s", r.State, err, want)
			}
			if w := rep.warnings(t); len(w) != 1 || w[0]["account"] != a.ID || !strings.Contains(fmt.Sprint(w[0]["cause"]), "throttled") {
				t.Errorf("warnings %v, want one for %s with the cause", w, a.ID)
			}
			if n := rep.counted(t, "WakeFailures"); n != 1 {
				t.Errorf("WakeFailures counted %v, want 1", n)
			}
			if at, _ := wakeOf(t, base, a.ID); !at.Equal(later) {
				t.Errorf("wake time %s, want it left at %s", at, later)
			}
		})
	}
}

// TestManualClaimWakeFailureIsDropped: a manual claim runs at once, and
// its wake (at the claim's lease end) only lets a sweep take over a run
// that dies; when that wake cannot be written the claim still holds and
// is returned, and the failure is dropped: neither logged nor counted
// (WakeFailures), the wake time left as it was.
func TestManualClaimWakeFailureIsDropped(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	base, l, rep := failingWakeLedger(t, clk)
	a, later := wokenLater(t, base, clk, "manual wake")
	key := partition.Key{AccountID: a.ID, Dataset: "events", Day: day1}
	c, err := l.Partitions().ClaimManual(ctx, key, ManualRequest{By: "cli:ops"})
	if err != nil {
		t.Fatalf("ClaimManual = %v, want the claim: the wake is not the claim's", err)
	}
	if r, err := base.Partitions().Get(ctx, key); err != nil || r.State != StateRunning || r.ClaimToken != c.Token {
		t.Fatalf("row %s (token %q) %v, want running under the claim's token", r.State, r.ClaimToken, err)
	}
	if w := rep.warnings(t); len(w) != 0 {
		t.Errorf("warnings %v, want none", w)
	}
	if n := rep.counted(t, "WakeFailures"); n != 0 {
		t.Errorf("WakeFailures counted %v, want 0", n)
	}
	if at, _ := wakeOf(t, base, a.ID); !at.Equal(later) {
		t.Errorf("wake time %s, want it left at %s", at, later)
	}
}
