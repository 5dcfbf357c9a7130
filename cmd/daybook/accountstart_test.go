package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// TestAccountPutEarlierStartDateBackfills: moving start_date earlier
// creates the ledger rows of the new days at once, due as backfill, and
// says so; moving it later deletes nothing and says what stays.
func TestAccountPutEarlierStartDateBackfills(t *testing.T) {
	s := deployed(t)
	ctx := context.Background()
	s.createBucket(t, "daybook-exports-clitest")
	dir := t.TempDir()
	file := writeAccount(t, dir, map[string]any{"start_date": "2026-11-24", "datasets": []string{"events", "daily_stats"}})
	a, _, _ := testApp(t) // 2026-11-30
	if r := s.run(t, a, "account", "put", "--file", file); r.code != 0 {
		t.Fatalf("put: exit %d\n%s", r.code, r.stderr)
	}
	var acct account.Account
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &acct); err != nil {
		t.Fatal(err)
	}
	l := s.ledgerAt(t, testNow, 6)
	count := func(ds, from, to string) int {
		n, err := l.Partitions().Count(ctx, acct.ID, ds, civil.MustParse(from), civil.MustParse(to))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	os.WriteFile(file, []byte(strings.Replace(string(b), `"2026-11-24"`, `"2026-11-15"`, 1)), 0o644)
	r := s.run(t, a, "account", "put", "--file", file, "--update")
	if r.code != 0 || !strings.Contains(r.stderr, "start_date moved earlier (2026-11-24 -> 2026-11-15): 18 new ledger rows for 2026-11-15..2026-11-23 (9 days of each dataset), due as backfill") {
		t.Errorf("earlier start date: exit %d\n%s", r.code, r.stderr)
	}
	for _, ds := range []string{"events", "daily_stats"} {
		if n := count(ds, "2026-11-15", "2026-11-23"); n != 9 {
			t.Errorf("%s: %d rows for the 9 new days", ds, n)
		}
		row, err := l.Partitions().Get(ctx, partition.Key{AccountID: acct.ID, Dataset: ds, Day: civil.MustParse("2026-11-15")})
		if err != nil || row.State != ledger.StatePending || row.Reason != "backfill" {
			t.Errorf("%s 2026-11-15: %+v, %v", ds, row, err)
		}
	}

	b, _ = os.ReadFile(file)
	os.WriteFile(file, []byte(strings.Replace(string(b), `"2026-11-15"`, `"2026-11-20"`, 1)), 0o644)
	r = s.run(t, a, "account", "put", "--file", file, "--update")
	if r.code != 0 || !strings.Contains(r.stderr, "start_date moved later (2026-11-15 -> 2026-11-20)") || !strings.Contains(r.stderr, "the 10 ledger rows of 2026-11-15..2026-11-19 stay as they are, and days already delivered stay in the bucket") {
		t.Errorf("later start date: exit %d\n%s", r.code, r.stderr)
	}
	if n := count("events", "2026-11-15", "2026-11-19"); n != 5 {
		t.Errorf("a later start date removed rows: %d left of 5", n)
	}
}
