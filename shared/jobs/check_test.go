package jobs

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset/example"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

// TestCheckRequest: one row per refusal of a manual re-export or requeue;
// each is a *FieldError naming the field and the value, of the right kind.
func TestCheckRequest(t *testing.T) {
	t.Parallel()
	// 2026-03-10 02:00 in Sao Paulo (UTC-3): with the 2h deployment settle
	// delay, 2026-03-09 closed at 02:00, so it is the last closed day.
	now := time.Date(2026, 3, 10, 5, 0, 0, 0, time.UTC)
	lim := Limits{Now: now, SettleDelay: 2 * time.Hour}
	stored := account.Account{ID: acctA, Enabled: true, StartDate: civil.MustParse("2026-01-15"), TimeZone: "America/Sao_Paulo",
		Datasets: []string{"events", "daily_stats"}, Destination: account.Destination{Bucket: "acme-exports"}}
	disabled := stored
	disabled.Enabled = false
	slow := stored // a 6h settle delay: 2026-03-09 is not closed at 02:00
	six := account.Duration(6 * time.Hour)
	slow.SettleDelay = &six

	day := func(d string) Manual { return Manual{AccountID: acctA, Dataset: "events", Day: d} }
	rng := func(f, t string) Manual { return Manual{AccountID: acctA, Dataset: "events", From: f, To: t} }
	with := func(m Manual, f func(*Manual)) Manual { f(&m); return m }

	cases := []struct {
		name         string
		m            Manual
		acct         *account.Account
		lim          Limits
		kind         error // nil: accepted
		field, value string
		reason       string
		from, to     string // the days returned: accepted, or refused after they were read ("": zero)
	}{
		{"one closed day", day("2026-03-09"), &stored, lim, nil, "", "", "", "2026-03-09", "2026-03-09"},
		{"the start date", day("2026-01-15"), &stored, lim, nil, "", "", "", "2026-01-15", "2026-01-15"},
		{"a range", rng("2026-02-01", "2026-03-09"), &stored, lim, nil, "", "", "", "2026-02-01", "2026-03-09"},
		{"a long range with a requeue's bound", rng("2026-01-15", "2026-03-09"), &stored, Limits{Now: now, SettleDelay: 2 * time.Hour, MaxDays: 3650}, nil, "", "", "", "2026-01-15", "2026-03-09"},

		{"account id format", with(day("2026-03-01"), func(m *Manual) { m.AccountID = "acct_1" }), &stored, lim, ErrMalformed, "account_id", "acct_1", "not an account id", "", ""},
		{"account id missing", with(day("2026-03-01"), func(m *Manual) { m.AccountID = "" }), nil, lim, ErrMalformed, "account_id", "", "is required", "", ""},
		{"unknown account", day("2026-03-01"), nil, lim, ErrRefused, "account_id", acctA, "no such account", "2026-03-01", "2026-03-01"},
		{"disabled account", day("2026-03-01"), &disabled, lim, ErrRefused, "account_id", acctA, "is disabled", "2026-03-01", "2026-03-01"},
		{"dataset not in the catalog", with(day("2026-03-01"), func(m *Manual) { m.Dataset = "visitors" }), &stored, lim, ErrMalformed, "dataset", "visitors",
			"unknown dataset; known: events, profiles, daily_stats", "", ""},
		{"dataset not declared by the account", with(day("2026-03-01"), func(m *Manual) { m.Dataset = "profiles" }), &stored, lim, ErrRefused, "dataset", "profiles",
			"is not enabled for account " + acctA + " (enabled: events, daily_stats)", "2026-03-01", "2026-03-01"},
		{"day format", day("2026-02-30"), &stored, lim, ErrMalformed, "day", "2026-02-30", "is not a date", "", ""},
		{"day before the start date", day("2026-01-14"), &stored, lim, ErrRefused, "day", "2026-01-14", "is before account " + acctA + "'s start date 2026-01-15", "2026-01-14", "2026-01-14"},
		{"range before the start date", rng("2026-01-01", "2026-01-20"), &stored, lim, ErrRefused, "from", "2026-01-01", "start date 2026-01-15", "2026-01-01", "2026-01-20"},
		{"today", day("2026-03-10"), &stored, lim, ErrRefused, "day", "2026-03-10", "is not closed yet for account " + acctA + " (time zone America/Sao_Paulo, settle delay 2h0m0s): the last closed day is 2026-03-09", "2026-03-10", "2026-03-10"},
		{"not settled", day("2026-03-09"), &slow, lim, ErrRefused, "day", "2026-03-09", "settle delay 6h0m0s): the last closed day is 2026-03-08", "2026-03-09", "2026-03-09"},
		{"future day", day("2027-01-01"), &stored, lim, ErrRefused, "day", "2027-01-01", "is not closed yet", "2027-01-01", "2027-01-01"},
		{"range ending today", rng("2026-03-08", "2026-03-10"), &stored, lim, ErrRefused, "to", "2026-03-10", "is not closed yet", "2026-03-08", "2026-03-10"},
		{"from after to", rng("2026-03-08", "2026-03-01"), &stored, lim, ErrMalformed, "to", "2026-03-01", `is before from "2026-03-08"`, "2026-03-08", "2026-03-01"},
		{"range longer than the bound", rng("2026-01-15", "2026-03-09"), &stored, Limits{Now: now, MaxDays: 30}, ErrMalformed, "to", "2026-03-09", "54 days; at most 30", "2026-01-15", "2026-03-09"},
		{"range longer than the default bound", rng("2024-01-01", "2026-03-09"), &stored, lim, ErrMalformed, "to", "2026-03-09", "at most 366", "2024-01-01", "2026-03-09"},
		{"day and range", with(day("2026-03-01"), func(m *Manual) { m.From = "2026-03-01" }), &stored, lim, ErrMalformed, "day", "2026-03-01", "not both", "", ""},
		{"no day", with(day(""), func(*Manual) {}), &stored, lim, ErrMalformed, "day", "", "is required", "", ""},
		{"from without to", rng("2026-03-01", ""), &stored, lim, ErrMalformed, "to", "", "is required with from", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before account.Account
			if c.acct != nil {
				before = *c.acct
			}
			from, to, err := CheckRequest(datasettest.Example(t), c.m, c.acct, c.lim)
			if c.acct != nil && (c.acct.SettleDelay != before.SettleDelay || c.acct.TimeZone != before.TimeZone) {
				t.Error("CheckRequest changed the account")
			}
			if c.kind == nil {
				if err != nil || from.String() != c.from || to.String() != c.to {
					t.Fatalf("CheckRequest = %s, %s, %v; want %s..%s", from, to, err, c.from, c.to)
				}
				return
			}
			str := func(d civil.Date) string {
				if d.IsZero() {
					return ""
				}
				return d.String()
			}
			if str(from) != c.from || str(to) != c.to {
				t.Errorf("with the refusal CheckRequest returned %q..%q, want %q..%q", str(from), str(to), c.from, c.to)
			}
			var fe *FieldError
			if !errors.Is(err, c.kind) || !errors.As(err, &fe) || fe.Field != c.field || fe.Value != c.value {
				t.Fatalf("CheckRequest = %v; want %v naming %s %q", err, c.kind, c.field, c.value)
			}
			if !strings.Contains(err.Error(), c.reason) || c.value != "" && !strings.Contains(err.Error(), `"`+c.value+`"`) {
				t.Errorf("error %q, want it to name %q and say %q", err, c.value, c.reason)
			}
		})
	}
}

// TestCheckRequestSnapshotDataset: a snapshot dataset's day holds a copy
// of the whole table taken when it was exported, so only the last closed
// day can be taken again; an older day (alone or in a range) is refused
// naming the day, where it used to take today's table under the older
// day's label. An incremental dataset's older day is still accepted.
func TestCheckRequestSnapshotDataset(t *testing.T) {
	t.Parallel()
	cat := datasettest.Catalog(t, append(example.YAML(), `
  - name: members
    version: 1
    description: "Members, a complete copy per day."
    partition: snapshot
    relation: members
    mode: full_refresh
    read: latest_snapshot
    tenant_column: account_id
    order_by: [member_id]
    columns:
      - {name: member_id, type: string}
      - {name: attributes, type: json, nullable: true}
`...))

	lim := Limits{Now: time.Date(2026, 3, 10, 5, 0, 0, 0, time.UTC), SettleDelay: 2 * time.Hour} // 2026-03-09 is the last closed day
	acct := account.Account{ID: acctA, Enabled: true, StartDate: civil.MustParse("2026-01-15"), TimeZone: "UTC",
		Datasets: []string{"events", "members"}, Destination: account.Destination{Bucket: "acme-exports"}}
	for _, c := range []struct {
		name         string
		m            Manual
		field, value string // "": accepted
	}{
		{"the last closed day", Manual{AccountID: acctA, Dataset: "members", Day: "2026-03-09"}, "", ""},
		{"an older day", Manual{AccountID: acctA, Dataset: "members", Day: "2026-03-01"}, "day", "2026-03-01"},
		{"a range to the last closed day", Manual{AccountID: acctA, Dataset: "members", From: "2026-03-08", To: "2026-03-09"}, "from", "2026-03-08"},
		{"an incremental dataset's older day", Manual{AccountID: acctA, Dataset: "events", Day: "2026-03-01"}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := CheckRequest(cat, c.m, &acct, lim)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.Is(err, ErrRefused) || !errors.As(err, &fe) || fe.Field != c.field || fe.Value != c.value ||
				!strings.Contains(err.Error(), "snapshot dataset") || !strings.Contains(err.Error(), "2026-03-09") {
				t.Fatalf("CheckRequest = %v; want a refusal naming %s %q, the snapshot and the last closed day", err, c.field, c.value)
			}
		})
	}
}
