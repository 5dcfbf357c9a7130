package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
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
		if err := l.Accounts().PutAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := l.Accounts().PutAccount(ctx, account.Account{ID: "1"}); err == nil {
		t.Error("an invalid account was stored")
	}
	got, err := l.Accounts().GetAccount(ctx, ids[0])
	if err != nil || got.TimeZone != "Asia/Kolkata" || got.StartDate != day1 || got.CreatedAt.IsZero() {
		t.Fatalf("get %+v %v", got, err)
	}
	if _, err := l.Accounts().GetAccount(ctx, "acct_missingmissingmi"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing account: %v", err)
	}
	all, err := l.Accounts().ListAccounts(ctx)
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

// TestPutAccountStartDate: PutAccount applies the start-date rule at its
// clock with its backfill limit to a new backfill (a new account, or an
// earlier start date), and lets an account keep its start date however old
// it has become.
func TestPutAccountStartDate(t *testing.T) {
	ctx := context.Background()
	c := newClock(t0) // 2026-03-10
	l, _ := newTestLedger(t, c, func(cfg *Config) { cfg.MaxBackfillDays = 30 })
	id, err := account.NewID(seededRand(t))
	if err != nil {
		t.Fatal(err)
	}
	a := account.Account{ID: id, Name: "start", Enabled: true, StartDate: civil.MustParse("2026-01-01"),
		Datasets: []string{"events"}, Destination: account.Destination{Bucket: "daybook-exports-test"}}
	refused := func(what string, a account.Account, reason string) {
		t.Helper()
		err := l.Accounts().PutAccount(ctx, a)
		fields := account.Fields(err)
		if len(fields) != 1 || fields[0].Field != "start_date" || fields[0].Value != a.StartDate.String() || !strings.Contains(err.Error(), reason) {
			t.Errorf("%s: PutAccount = %v, want a start_date refusal containing %q", what, err, reason)
		}
	}
	refused("new, beyond the limit", a, "more than 30 days back")
	a.StartDate = civil.MustParse("2026-03-01")
	if err := l.Accounts().PutAccount(ctx, a); err != nil {
		t.Fatalf("new, within the limit: %v", err)
	}
	c.Advance(60 * 24 * time.Hour) // 2026-05-09: the start date is now 69 days back
	a.Enabled = false
	if err := l.Accounts().PutAccount(ctx, a); err != nil {
		t.Errorf("disabling an account that keeps its start date: %v", err)
	}
	later := a
	later.StartDate = civil.MustParse("2026-03-05")
	if err := l.Accounts().PutAccount(ctx, later); err != nil {
		t.Errorf("moving the start date later: %v", err)
	}
	earlier := later
	earlier.StartDate = civil.MustParse("2026-03-04")
	refused("an earlier start date beyond the limit", earlier, "earliest 2026-04-09")
	future := later
	future.StartDate = civil.MustParse("2026-05-10")
	refused("a start date in the future", future, "in the future")
	if got, err := l.Accounts().GetAccount(ctx, id); err != nil || got.StartDate != later.StartDate {
		t.Errorf("stored %+v, %v; want start date %s", got, err, later.StartDate)
	}
}
