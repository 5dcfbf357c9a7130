package ledger

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

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
	outer, err := l.Accounts().CreateAccount(ctx, newAcct("g/ID"), "alice")
	if err != nil || outer.Version != 1 {
		t.Fatalf("create: %v (version %d)", err, outer.Version)
	}
	inner := newAcct("g/" + outer.ID + "/ID")
	_, err = l.Accounts().CreateAccount(ctx, inner, "bob")
	refused(err, "destination.prefix", "is inside account "+outer.ID)
	// An account whose prefix contains another's: a second "outer" at a
	// prefix one level up is refused too.
	above := newAcct("ID")
	above.Destination.Prefix = "g"
	if err := above.ValidateShape(datasettest.Example(t)); err == nil {
		t.Fatal("a prefix without the account id is valid")
	}
	sibling, err := l.Accounts().CreateAccount(ctx, newAcct("g/ID"), "bob")
	if err != nil {
		t.Fatalf("a sibling prefix was refused: %v", err)
	}
	if _, err := l.Accounts().CreateAccount(ctx, sibling, "bob"); !errors.Is(err, ErrExists) {
		t.Errorf("creating an existing id: %v, want ErrExists", err)
	}

	// An update at the version read; a second one from the same read is
	// refused and changes nothing.
	moved := outer
	moved.Destination.Prefix = "h/{{.AccountID}}"
	if moved, err = l.Accounts().UpdateAccount(ctx, moved, "carol"); err != nil || moved.Version != 2 {
		t.Fatalf("update: %v (version %d)", err, moved.Version)
	}
	stale := outer
	stale.Enabled = false
	if _, err := l.Accounts().UpdateAccount(ctx, stale, "dave"); !errors.Is(err, ErrChanged) {
		t.Errorf("update read at version 1 after version 2: %v, want ErrChanged", err)
	}
	if got, _ := l.Accounts().GetAccount(ctx, outer.ID); got.Destination.Prefix != "h/{{.AccountID}}" || !got.Enabled {
		t.Errorf("after a refused stale update: %+v", got.Destination)
	}
	// The move released g/<outer>: the inner account fits there now, and
	// h/<outer> is held.
	if _, err := l.Accounts().CreateAccount(ctx, inner, "bob"); err != nil {
		t.Errorf("inside the released prefix: %v", err)
	}
	_, err = l.Accounts().CreateAccount(ctx, newAcct("h/"+outer.ID+"/ID"), "bob")
	refused(err, "destination.prefix", "is inside account "+outer.ID)

	// One role and external id, once.
	withRole := func(a account.Account) account.Account {
		a.Destination.RoleARN, a.Destination.ExternalID = "arn:aws:iam::123456789012:role/daybook-export-Acme", "ext-1"
		return a
	}
	if _, err := l.Accounts().CreateAccount(ctx, withRole(newAcct("r/ID")), "bob"); err != nil {
		t.Fatal(err)
	}
	second := withRole(newAcct("r/ID"))
	second.Destination.RoleARN = strings.ToLower(second.Destination.RoleARN)
	_, err = l.Accounts().CreateAccount(ctx, second, "bob")
	refused(err, "destination.external_id", "already uses role")

	// A delete releases the prefix; the history tells it all.
	if err := l.Accounts().DeleteAccount(ctx, outer.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accounts().CreateAccount(ctx, newAcct("h/"+outer.ID+"/ID"), "bob"); err != nil {
		t.Errorf("inside a deleted account's prefix: %v", err)
	}
	evs, err := l.Accounts().AccountHistory(ctx, outer.ID)
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

// TestTenantKeyGuard: the table refuses, by itself, a second account of one
// tenant, compared by the key's identity: of five accounts created at once
// with "7", "07", "0007", "+7" and "+0007" (each a valid key for a string
// tenant column, all the integer 7 for an integer one) exactly one is
// stored, each other refused naming tenant_key and the holder; an upper-case
// uuid is the lower-case one's tenant; a key given up by an update or a
// delete is free again. On the old code all five were created (tenant keys
// had no guard: only `account put` compared them, as raw strings).
func TestTenantKeyGuard(t *testing.T) {
	ctx := context.Background()
	l, _ := newTestLedger(t, newClock(t0))
	r := seededRand(t)
	newAcct := func(key string) account.Account {
		id, err := account.NewID(r)
		if err != nil {
			t.Fatal(err)
		}
		return account.Account{ID: id, Name: id, Enabled: true, StartDate: day1, Datasets: []string{"events"}, TenantKey: key,
			Destination: account.Destination{Bucket: "daybook-exports-test", Prefix: "tenants/{{.AccountID}}"}}
	}
	refused := func(err error, key, holder string) {
		t.Helper()
		fes := account.Fields(err)
		if !errors.Is(err, ErrIsolation) || len(fes) != 1 || fes[0].Field != "tenant_key" || fes[0].Value != key ||
			!strings.Contains(fes[0].Reason, "is account "+holder+"'s tenant key") {
			t.Errorf("key %q: got %v, want ErrIsolation on tenant_key %q naming %s", key, err, key, holder)
		}
	}

	keys := []string{"7", "07", "0007", "+7", "+0007"}
	errs := make([]error, len(keys))
	accts := make([]account.Account, len(keys))
	for i, k := range keys {
		accts[i] = newAcct(k)
	}
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { _, errs[i] = l.Accounts().CreateAccount(ctx, accts[i], "ops") })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Errorf("keys %q and %q were both stored", keys[winner], keys[i])
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no account of the five was stored: %v", errs)
	}
	for i, err := range errs {
		if i != winner {
			refused(err, keys[i], accts[winner].ID)
		}
	}
	stored := 0
	all, err := l.Accounts().ListAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		for _, b := range accts {
			if a.ID == b.ID {
				stored++
			}
		}
	}
	if stored != 1 {
		t.Errorf("%d of the five accounts stored, want 1", stored)
	}

	// Another tenant is free; the winner's update that keeps its key does
	// not conflict with itself, and one that moves it frees the old one.
	if _, err := l.Accounts().CreateAccount(ctx, newAcct("8"), "ops"); err != nil {
		t.Errorf("another tenant: %v", err)
	}
	w, err := l.Accounts().GetAccount(ctx, accts[winner].ID)
	if err != nil {
		t.Fatal(err)
	}
	w.Enabled = false
	if w, err = l.Accounts().UpdateAccount(ctx, w, "ops"); err != nil {
		t.Fatalf("update keeping the key: %v", err)
	}
	nine, err := l.Accounts().CreateAccount(ctx, newAcct("9"), "ops")
	if err != nil {
		t.Fatal(err)
	}
	w.TenantKey = "009"
	_, err = l.Accounts().UpdateAccount(ctx, w, "ops")
	refused(err, "009", nine.ID)
	w.TenantKey = "10"
	if _, err := l.Accounts().UpdateAccount(ctx, w, "ops"); err != nil {
		t.Fatalf("moving the key: %v", err)
	}
	if _, err := l.Accounts().CreateAccount(ctx, newAcct("0007"), "ops"); err != nil {
		t.Errorf("the key given up by an update: %v", err)
	}

	const u = "6f1c2a4e-0d3b-4e5f-8a9b-1c2d3e4f5a6b"
	lower, err := l.Accounts().CreateAccount(ctx, newAcct(u), "ops")
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Accounts().CreateAccount(ctx, newAcct(strings.ToUpper(u)), "ops")
	refused(err, strings.ToUpper(u), lower.ID)
	if err := l.Accounts().DeleteAccount(ctx, lower.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Accounts().CreateAccount(ctx, newAcct(strings.ToUpper(u)), "ops"); err != nil {
		t.Errorf("the key given up by a delete: %v", err)
	}
}
