package ledger

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/daybook-dev/daybook/shared/account"
)

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
