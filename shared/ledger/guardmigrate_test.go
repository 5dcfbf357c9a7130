package ledger

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/daybook-dev/daybook/shared/account"
)

// TestEnsureGuards: an account stored before guard items existed (its
// record and guard items removed here, as such an account has none) leaves
// its prefix open to another account until EnsureGuards writes its guards,
// as a save would: then a prefix inside it is refused, the account's record
// says what it holds, its history has the write by who ran it, and a second
// call writes nothing. An account whose prefix another took meanwhile gets
// ErrIsolation naming the other, and is left as it was.
func TestEnsureGuards(t *testing.T) {
	ctx := context.Background()
	l, db := newTestLedger(t, newClock(t0))
	r := seededRand(t)
	newAcct := func(prefix string) account.Account {
		id, err := account.NewID(r)
		if err != nil {
			t.Fatal(err)
		}
		return account.Account{ID: id, Name: id, Enabled: true, StartDate: day1, Datasets: []string{"events"},
			Destination: account.Destination{Bucket: "daybook-exports-guards", Prefix: strings.ReplaceAll(prefix, "ID", "{{.AccountID}}")}}
	}
	// unguard makes a stored account one saved before guards existed.
	unguard := func(a account.Account) {
		t.Helper()
		gs, err := a.Guards(l.cfg.Stage)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(l.cfg.Table), Key: tableKey(pkGuards, g.Key)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(l.cfg.Table), Key: tableKey(pkAccounts, a.ID),
			UpdateExpression: aws.String("REMOVE " + attrGuards)}); err != nil {
			t.Fatal(err)
		}
	}
	old, err := l.Accounts().CreateAccount(ctx, newAcct("old/ID"), "alice")
	if err != nil {
		t.Fatal(err)
	}
	unguard(old)
	inside := newAcct("old/" + old.ID + "/ID")
	if err := inside.ValidateShape(datasettest.Example(t)); err != nil {
		t.Fatal(err)
	}

	wrote, err := l.Accounts().EnsureGuards(ctx, old.ID, "fleet-rebuild-operator")
	if err != nil || !wrote {
		t.Fatalf("EnsureGuards = %v, %v; want the guards written", wrote, err)
	}
	if _, err := l.Accounts().CreateAccount(ctx, inside, "bob"); !errors.Is(err, ErrIsolation) || !strings.Contains(err.Error(), "is inside account "+old.ID) {
		t.Errorf("a prefix inside the guarded account: %v, want ErrIsolation", err)
	}
	stored, held, err := l.readAccount(ctx, old.ID)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := old.Guards(l.cfg.Stage)
	if !holdsExactly(held, want) || stored.Version != 2 || !reflect.DeepEqual(stored.Destination, old.Destination) {
		t.Errorf("after EnsureGuards: version %d, holds %v, want %v", stored.Version, held, want)
	}
	evs, err := l.Accounts().AccountHistory(ctx, old.ID)
	if err != nil || len(evs) != 2 || evs[1].By != "fleet-rebuild-operator" || len(evs[1].Changes) != 0 {
		t.Errorf("history %+v (%v)", evs, err)
	}
	if wrote, err := l.Accounts().EnsureGuards(ctx, old.ID, "again"); err != nil || wrote {
		t.Errorf("a second EnsureGuards = %v, %v; want nothing written", wrote, err)
	}
	if again, _, _ := l.readAccount(ctx, old.ID); again.Version != 2 {
		t.Errorf("a second EnsureGuards moved the version to %d", again.Version)
	}

	// Taken meanwhile: the unguarded account's prefix got an account
	// inside it; its guards cannot be written, and the error says whose.
	open, err := l.Accounts().CreateAccount(ctx, newAcct("open/ID"), "alice")
	if err != nil {
		t.Fatal(err)
	}
	unguard(open)
	taker, err := l.Accounts().CreateAccount(ctx, newAcct("open/"+open.ID+"/ID"), "mallory")
	if err != nil {
		t.Fatalf("inside an unguarded account: %v (the gap EnsureGuards closes)", err)
	}
	wrote, err = l.Accounts().EnsureGuards(ctx, open.ID, "op")
	if wrote || !errors.Is(err, ErrIsolation) || !strings.Contains(err.Error(), taker.ID) {
		t.Errorf("EnsureGuards of a prefix another account is inside: %v, %v; want ErrIsolation naming %s", wrote, err, taker.ID)
	}
	if got, held, _ := l.readAccount(ctx, open.ID); got.Version != 1 || len(held) != 0 {
		t.Errorf("the refused account changed: version %d, holds %v", got.Version, held)
	}
}
