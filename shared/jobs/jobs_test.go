package jobs

import (
	"errors"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

const (
	acctA = "acct_abcdefghijklmnop"
	tok   = "9d6f0c2b7e4a1358c0ffee42deadbeef"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body   string
		kind         string // "job", "manual" or "" for an error
		field, value string // of the *FieldError; field "" with wantErr: not a field error
		wantErr      string // substring of the message
	}{
		{"claimed job", `{"kind":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-11-27","claim_token":"` + tok + `","attempt":1,"generation":1,"reason":"scheduled"}`, KindJob, "", "", ""},
		{"job without kind but with a token", `{"account_id":"` + acctA + `","dataset":"events","day":"2026-11-27","claim_token":"` + tok + `","attempt":2,"generation":3}`, KindJob, "", "", ""},
		{"manual day", `{"kind":"manual","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20"}`, KindManual, "", "", ""},
		{"manual without kind", `{"account_id":"` + acctA + `","dataset":"events","day":"2026-11-20"}`, KindManual, "", "", ""},
		{"manual range", `{"account_id":"` + acctA + `","dataset":"events","from":"2026-11-01","to":"2026-11-14"}`, KindManual, "", "", ""},
		{"manual for a dataset not in the catalog (CheckRequest's)", `{"account_id":"` + acctA + `","dataset":"visitors","day":"2026-11-20"}`, KindManual, "", "", ""},

		{"not JSON", `export yesterday please`, "", "", "", "not a JSON object"},
		{"unknown kind", `{"kind":"backfill"}`, "", "", "", `kind "backfill"`},
		{"unknown field", `{"kind":"manual","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20","dya":"x"}`, "", "", "", `unknown field "dya"`},

		// A claimed job, field by field.
		{"job account id format", `{"kind":"job","account_id":"acct_1","dataset":"events","day":"2026-11-20","claim_token":"` + tok + `","attempt":1,"generation":1}`, "",
			"account_id", "acct_1", `account_id "acct_1" is not an account id`},
		{"job without account", `{"kind":"job","dataset":"events","day":"2026-11-20","claim_token":"` + tok + `","attempt":1,"generation":1}`, "",
			"account_id", "", "account_id is required"},
		{"job unknown dataset", `{"kind":"job","account_id":"` + acctA + `","dataset":"visitors","day":"2026-11-20","claim_token":"` + tok + `","attempt":1,"generation":1}`, "",
			"dataset", "visitors", `dataset "visitors" is not a dataset (unknown dataset; known: events, profiles, daily_stats)`},
		{"job dataset name", `{"kind":"job","account_id":"` + acctA + `","dataset":"Events","day":"2026-11-20","claim_token":"` + tok + `","attempt":1,"generation":1}`, "",
			"dataset", "Events", "not a dataset name"},
		{"job invalid day", `{"kind":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-13-45","claim_token":"` + tok + `","attempt":1,"generation":1}`, "",
			"day", "2026-13-45", `day "2026-13-45" is not a date (YYYY-MM-DD)`},
		{"job without token", `{"kind":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20","attempt":1,"generation":1}`, "",
			"claim_token", "", "claim_token is required"},
		{"job token format", `{"kind":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20","claim_token":"x","attempt":1,"generation":1}`, "",
			"claim_token", "x", `claim_token "x" is not a claim token`},
		{"job token upper case", `{"kind":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20","claim_token":"` + strings.ToUpper(tok) + `","attempt":1,"generation":1}`, "",
			"claim_token", strings.ToUpper(tok), "32 lowercase hex digits"},
		{"job attempt 0", `{"kind":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20","claim_token":"` + tok + `","generation":1}`, "",
			"attempt", "0", `attempt "0" is not a run's attempt number`},
		{"job attempt beyond any run", `{"kind":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20","claim_token":"` + tok + `","attempt":1001,"generation":1}`, "",
			"attempt", "1001", `attempt "1001" is above 1000`},
		{"job unknown reason", `{"kind":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20","claim_token":"` + tok + `","attempt":1,"generation":1,"reason":"because"}`, "",
			"reason", "because", `reason "because" is not a reason (scheduled, backfill, retry, manual, restatement, reseed)`},
		{"job generation 0", `{"kind":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20","claim_token":"` + tok + `","attempt":1}`, "",
			"generation", "0", `generation "0"`},

		// A manual request's form.
		{"manual without account", `{"kind":"manual","dataset":"events","day":"2026-11-20"}`, "", "account_id", "", "account_id is required"},
		{"manual account id format", `{"kind":"manual","account_id":"42","dataset":"events","day":"2026-11-20"}`, "", "account_id", "42", `account_id "42" is not an account id`},
		{"manual without dataset", `{"kind":"manual","account_id":"` + acctA + `","day":"2026-11-20"}`, "", "dataset", "", "dataset is required"},
		{"manual without day", `{"kind":"manual","account_id":"` + acctA + `","dataset":"events"}`, "", "day", "", "day is required (or from and to)"},
		{"manual from without to", `{"kind":"manual","account_id":"` + acctA + `","dataset":"events","from":"2026-11-01"}`, "", "to", "", "to is required with from"},
		{"manual day and range", `{"kind":"manual","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20","from":"2026-11-01","to":"2026-11-02"}`, "",
			"day", "2026-11-20", "not both"},
		{"manual backwards range", `{"kind":"manual","account_id":"` + acctA + `","dataset":"events","from":"2026-11-14","to":"2026-11-01"}`, "",
			"to", "2026-11-01", `to "2026-11-01" is before from "2026-11-14"`},
		{"manual bad from", `{"kind":"manual","account_id":"` + acctA + `","dataset":"events","from":"yesterday","to":"2026-11-01"}`, "", "from", "yesterday", `from "yesterday"`},
		{"manual range too long", `{"kind":"manual","account_id":"` + acctA + `","dataset":"events","from":"2024-01-01","to":"2026-11-01"}`, "",
			"to", "2026-11-01", "1036 days; at most 366 per request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(datasettest.Example(t), tt.body)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse error = %v, want ErrMalformed containing %q", err, tt.wantErr)
				}
				var fe *FieldError
				if tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field || fe.Value != tt.value || fe.Kind != ErrMalformed) {
					t.Errorf("FieldError %+v, want field %q value %q", fe, tt.field, tt.value)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.kind == KindJob && (m.Job == nil || m.Manual != nil || m.Job.Kind != KindJob):
				t.Fatalf("want a job, got %+v", m)
			case tt.kind == KindManual && (m.Manual == nil || m.Job != nil || m.Manual.Kind != KindManual):
				t.Fatalf("want a manual request, got %+v", m)
			}
		})
	}
}

func TestManualDays(t *testing.T) {
	t.Parallel()
	m := Manual{AccountID: acctA, Dataset: "events", From: "2026-11-01", To: "2026-11-14"}
	from, to, err := m.Days()
	if err != nil || from.String() != "2026-11-01" || to.String() != "2026-11-14" {
		t.Fatalf("Days = %s, %s, %v", from, to, err)
	}
	one := Manual{AccountID: acctA, Dataset: "events", Day: "2026-11-20"}
	from, to, err = one.Days()
	if err != nil || from != to || from.String() != "2026-11-20" {
		t.Fatalf("Days = %s, %s, %v", from, to, err)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	t.Parallel()
	j := Job{Kind: KindJob, AccountID: acctA, Dataset: "events", Day: "2026-11-27", ClaimToken: tok, Attempt: 3, Generation: 4, Reason: "retry"}
	body, err := Encode(j)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(datasettest.Example(t), body)
	if err != nil {
		t.Fatal(err)
	}
	if *m.Job != j {
		t.Fatalf("round trip %+v != %+v", *m.Job, j)
	}
}
