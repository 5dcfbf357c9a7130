package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

func TestOpenCountAndLastCompleted(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c)
	acct := testAccount(t, "a")
	to := day1.AddDays(5)
	if _, err := l.Schedule().Materialize(ctx, acct, "events", day1, to); err != nil {
		t.Fatal(err)
	}
	complete := func(k partition.Key) {
		t.Helper()
		cl, err := l.Partitions().Claim(ctx, k, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Partitions().Complete(ctx, k, cl.Token, Result{Rows: 1}); err != nil {
			t.Fatal(err)
		}
	}
	complete(partition.Key{AccountID: acct, Dataset: "events", Day: day1})
	complete(partition.Key{AccountID: acct, Dataset: "events", Day: day1.AddDays(2)})
	if _, err := l.Partitions().Claim(ctx, partition.Key{AccountID: acct, Dataset: "events", Day: day1.AddDays(4)}, ""); err != nil {
		t.Fatal(err)
	}

	open, err := l.Partitions().Open(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	states := map[State]int{}
	for _, r := range open {
		states[r.State]++
	}
	if len(open) != 4 || states[StatePending] != 3 || states[StateRunning] != 1 {
		t.Errorf("open rows %d %v, want 3 pending and 1 running", len(open), states)
	}
	if n, err := l.Partitions().Count(ctx, acct, "events", day1, to); err != nil || n != 6 {
		t.Errorf("Count = %d, %v; want 6", n, err)
	}
	if n, err := l.Partitions().Count(ctx, acct, "events", day1.AddDays(1), day1.AddDays(2)); err != nil || n != 2 {
		t.Errorf("Count of 2 days = %d, %v", n, err)
	}
	tests := []struct {
		to   string
		want string
		ok   bool
	}{
		{to.String(), day1.AddDays(2).String(), true},
		{day1.AddDays(1).String(), day1.String(), true},
		{day1.AddDays(-1).String(), "", false},
	}
	for _, tt := range tests {
		r, ok, err := l.Partitions().LastCompleted(ctx, acct, "events", civil.MustParse(tt.to))
		if err != nil || ok != tt.ok || (ok && r.Day.String() != tt.want) {
			t.Errorf("LastCompleted(to %s) = %s %v %v, want %s %v", tt.to, r.Day, ok, err, tt.want, tt.ok)
		}
	}
}

func TestDeleteAndPurgeAccount(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0)
	l, _ := newTestLedger(t, c)
	acct := testAccount(t, "a")
	other := testAccount(t, "b")
	sum := sha256.Sum256([]byte(acct)) // unique per run, in the account id alphabet
	id, err := account.NewID(bytes.NewReader(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	a := account.Account{ID: id, Name: "p", Enabled: true, StartDate: day1, Datasets: []string{"events"},
		Destination: account.Destination{Bucket: "daybook-exports-purge"}}
	if err := l.Accounts().PutAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.ID, other} {
		if _, err := l.Schedule().Materialize(ctx, id, "events", day1, day1.AddDays(2)); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Schedule().AdvanceWatermark(ctx, id, "events", day1.AddDays(2)); err != nil {
			t.Fatal(err)
		}
	}
	k := partition.Key{AccountID: a.ID, Dataset: "events", Day: day1}
	cl, err := l.Partitions().Claim(ctx, k, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Partitions().Complete(ctx, k, cl.Token, Result{Rows: 1}); err != nil {
		t.Fatal(err)
	}

	if err := l.Accounts().DeleteAccount(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accounts().GetAccount(ctx, a.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted account still there: %v", err)
	}
	if err := l.Accounts().DeleteAccount(ctx, a.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	if n, _ := l.Partitions().Count(ctx, a.ID, "events", day1, day1.AddDays(2)); n != 3 {
		t.Errorf("delete without purge left %d rows, want 3", n)
	}

	res, err := l.Accounts().PurgeAccount(ctx, a.ID, []string{"events", "profiles"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 3 || res.History != 1 || res.Watermarks != 1 {
		t.Errorf("purge %+v, want 3 rows, 1 history item, 1 watermark", res)
	}
	if n, _ := l.Partitions().Count(ctx, a.ID, "events", day1, day1.AddDays(2)); n != 0 {
		t.Errorf("%d rows left after purge", n)
	}
	if h, _ := l.Partitions().History(ctx, k); len(h) != 0 {
		t.Errorf("history left after purge: %v", h)
	}
	if wm, _ := l.Schedule().Watermark(ctx, a.ID, "events"); !wm.IsZero() {
		t.Errorf("watermark left after purge: %s", wm)
	}
	if n, _ := l.Partitions().Count(ctx, other, "events", day1, day1.AddDays(2)); n != 3 {
		t.Errorf("purge touched another account: %d rows left, want 3", n)
	}
}
