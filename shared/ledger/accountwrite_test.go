package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/account"
)

// TestAccountWritesAreGuarded: the table refuses, by itself, a prefix equal
// to, inside or containing another account's (whatever list a caller
// checked), and one role and external id twice; a move or a delete releases
// what the account held; an update read at an old version is ErrChanged;
// every write is in the account's history with who.
func TestAccountWritesAreGuarded(t *testing.T) {
	ctx := context.Background()
	l, _ := newTestLedger(t, newClock(t0))
	r := seededRand(t)
	newAcct := func(prefix string) account.Account {
		id, err := account.NewID(r)
		if err != nil {
			t.Fatal(err)
		}
		return account.Account{ID: id, Name: id, Enabled: true, StartDate: day1, Datasets: []string{"events"},
			Destination: account.Destination{Bucket: "daybook-exports-test", Prefix: strings.ReplaceAll(prefix, "ID", "{{.AccountID}}")}}
	}
	refused := func(err error, field, reason string) {
		t.Helper()
		fes := account.Fields(err)
		if !errors.Is(err, ErrIsolation) || len(fes) == 0 || fes[0].Field != field || !strings.Contains(fes[0].Reason, reason) {
			t.Errorf("got %v, want ErrIsolation on %s: %s", err, field, reason)
		}
	}
	outer, err := l.CreateAccount(ctx, newAcct("g/ID"), "alice")
	if err != nil || outer.Version != 1 {
		t.Fatalf("create: %v (version %d)", err, outer.Version)
	}
	inner := newAcct("g/" + outer.ID + "/ID")
	_, err = l.CreateAccount(ctx, inner, "bob")
	refused(err, "destination.prefix", "is inside account "+outer.ID)
	// An account whose prefix contains another's: a second "outer" at a
	// prefix one level up is refused too.
	above := newAcct("ID")
	above.Destination.Prefix = "g"
	if err := above.ValidateShape(); err == nil {
		t.Fatal("a prefix without the account id is valid")
	}
	sibling, err := l.CreateAccount(ctx, newAcct("g/ID"), "bob")
	if err != nil {
		t.Fatalf("a sibling prefix was refused: %v", err)
	}
	if _, err := l.CreateAccount(ctx, sibling, "bob"); !errors.Is(err, ErrExists) {
		t.Errorf("creating an existing id: %v, want ErrExists", err)
	}

	// An update at the version read; a second one from the same read is
	// refused and changes nothing.
	moved := outer
	moved.Destination.Prefix = "h/{{.AccountID}}"
	if moved, err = l.UpdateAccount(ctx, moved, "carol"); err != nil || moved.Version != 2 {
		t.Fatalf("update: %v (version %d)", err, moved.Version)
	}
	stale := outer
	stale.Enabled = false
	if _, err := l.UpdateAccount(ctx, stale, "dave"); !errors.Is(err, ErrChanged) {
		t.Errorf("update read at version 1 after version 2: %v, want ErrChanged", err)
	}
	if got, _ := l.GetAccount(ctx, outer.ID); got.Destination.Prefix != "h/{{.AccountID}}" || !got.Enabled {
		t.Errorf("after a refused stale update: %+v", got.Destination)
	}
	// The move released g/<outer>: the inner account fits there now, and
	// h/<outer> is held.
	if _, err := l.CreateAccount(ctx, inner, "bob"); err != nil {
		t.Errorf("inside the released prefix: %v", err)
	}
	_, err = l.CreateAccount(ctx, newAcct("h/"+outer.ID+"/ID"), "bob")
	refused(err, "destination.prefix", "is inside account "+outer.ID)

	// One role and external id, once.
	withRole := func(a account.Account) account.Account {
		a.Destination.RoleARN, a.Destination.ExternalID = "arn:aws:iam::123456789012:role/daybook-export-Acme", "ext-1"
		return a
	}
	if _, err := l.CreateAccount(ctx, withRole(newAcct("r/ID")), "bob"); err != nil {
		t.Fatal(err)
	}
	second := withRole(newAcct("r/ID"))
	second.Destination.RoleARN = strings.ToLower(second.Destination.RoleARN)
	_, err = l.CreateAccount(ctx, second, "bob")
	refused(err, "destination.external_id", "already uses role")

	// A delete releases the prefix; the history tells it all.
	if err := l.DeleteAccount(ctx, outer.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateAccount(ctx, newAcct("h/"+outer.ID+"/ID"), "bob"); err != nil {
		t.Errorf("inside a deleted account's prefix: %v", err)
	}
	evs, err := l.AccountHistory(ctx, outer.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		s := ev.Action + " by " + ev.By
		for _, c := range ev.Changes {
			s += " " + c.Field + ":" + c.Old + "->" + c.New
		}
		got = append(got, s)
	}
	want := []string{"create by alice", `update by carol destination.prefix:"g/{{.AccountID}}"->"h/{{.AccountID}}"`, "delete by "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("history:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
