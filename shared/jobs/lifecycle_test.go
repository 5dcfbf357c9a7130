package jobs

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
)

func TestParseLifecycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		check func(Message) bool
		field string // a malformed message names it
	}{
		{"restate check", `{"kind":"restate_check","account_id":"` + acctA + `","dataset":"events","day":"2026-03-09","generation":2}`,
			func(m Message) bool {
				return m.RestateCheck != nil && m.RestateCheck.Generation == 2 && m.RestateCheck.DayValue() == civil.MustParse("2026-03-09")
			}, ""},
		{"reseed", `{"kind":"reseed","account_id":"` + acctA + `","dataset":"profiles","request_id":"r-1","requested_by":"ops"}`,
			func(m Message) bool {
				return m.Reseed != nil && m.Reseed.RequestID == "r-1" && m.Job == nil && m.Manual == nil
			}, ""},
		{"reseed done", `{"kind":"reseed_done","account_id":"` + acctA + `","dataset":"profiles","epoch":3}`,
			func(m Message) bool { return m.ReseedDone != nil && m.ReseedDone.Epoch == 3 }, ""},
		{"check without generation", `{"kind":"restate_check","account_id":"` + acctA + `","dataset":"events","day":"2026-03-09"}`, nil, "generation"},
		{"check of a bad day", `{"kind":"restate_check","account_id":"` + acctA + `","dataset":"events","day":"2026-02-30","generation":1}`, nil, "day"},
		{"check of an unknown dataset", `{"kind":"restate_check","account_id":"` + acctA + `","dataset":"visits","day":"2026-03-09","generation":1}`, nil, "dataset"},
		{"reseed without request id", `{"kind":"reseed","account_id":"` + acctA + `","dataset":"profiles"}`, nil, "request_id"},
		{"reseed with a bad request id", `{"kind":"reseed","account_id":"` + acctA + `","dataset":"profiles","request_id":"a b"}`, nil, "request_id"},
		{"reseed of a bad account", `{"kind":"reseed","account_id":"acct_1","dataset":"profiles","request_id":"r"}`, nil, "account_id"},
		{"reseed done without epoch", `{"kind":"reseed_done","account_id":"` + acctA + `","dataset":"profiles"}`, nil, "epoch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(datasettest.Example(t), tt.body)
			if tt.check != nil {
				if err != nil || !tt.check(m) {
					t.Fatalf("Parse = %+v, %v", m, err)
				}
				return
			}
			var fe *FieldError
			if !errors.Is(err, ErrMalformed) || !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Parse = %v, want a malformed %s", err, tt.field)
			}
		})
	}
	for _, body := range []string{
		`{"kind":"reseed","account_id":"` + acctA + `","dataset":"profiles","request_id":"r","epoch":1}`,
		`{"kind":"restate_check","account_id":"` + acctA + `","dataset":"events","day":"2026-03-09","generation":1,"claim_token":"x"}`,
	} {
		if _, err := Parse(datasettest.Example(t), body); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("unknown field in %s: %v", body, err)
		}
	}
	if _, err := Parse(datasettest.Example(t), `{"kind":"rebuild"}`); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), `"reseed"`) {
		t.Errorf("unknown kind: %v", err)
	}
}

func TestCheckReseed(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 10, 5, 0, 0, 0, time.UTC)
	lim := Limits{Now: now, SettleDelay: 2 * time.Hour}
	stored := account.Account{ID: acctA, Enabled: true, StartDate: civil.MustParse("2026-03-01"), Datasets: []string{"events", "profiles"},
		Destination: account.Destination{Bucket: "acme-exports"}}
	disabled := stored
	disabled.Enabled = false
	noProfiles := stored
	noProfiles.Datasets = []string{"events"}
	young := stored
	young.StartDate = civil.MustParse("2026-03-10")
	req := func(ds string) Reseed { return Reseed{AccountID: acctA, Dataset: ds, RequestID: "r1"} }
	cases := []struct {
		name          string
		r             Reseed
		acct          *account.Account
		kind          error
		field, reason string
	}{
		{"profiles", req("profiles"), &stored, nil, "", ""},
		{"events", req("events"), &stored, ErrRefused, "dataset", "union of immutable days (what a day means: event_time; read: union_all_partitions)"},
		{"daily stats", req("daily_stats"), &stored, ErrRefused, "dataset", "re-export the days that changed instead (daybook reexport)"},
		{"no account", req("profiles"), nil, ErrRefused, "account_id", "no such account"},
		{"disabled", req("profiles"), &disabled, ErrRefused, "account_id", "is disabled"},
		{"not enabled", req("profiles"), &noProfiles, ErrRefused, "dataset", "is not enabled for account"},
		{"nothing closed", req("profiles"), &young, ErrRefused, "account_id", "has no closed day yet"},
		{"malformed", Reseed{AccountID: acctA, Dataset: "profiles"}, &stored, ErrMalformed, "request_id", ""},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			from, through, err := CheckReseed(datasettest.Example(t), tt.r, tt.acct, lim)
			if tt.kind == nil {
				if err != nil || from != civil.MustParse("2026-03-01") || through != civil.MustParse("2026-03-09") {
					t.Fatalf("CheckReseed = %s..%s, %v", from, through, err)
				}
				return
			}
			var fe *FieldError
			if !errors.Is(err, tt.kind) || !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Reason, tt.reason) {
				t.Fatalf("CheckReseed = %v, want %v on %s mentioning %q", err, tt.kind, tt.field, tt.reason)
			}
		})
	}
}
