package jobs

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, body string
		kind       string // "job", "manual" or "" for an error
		wantErr    string // substring naming the field and value
	}{
		{"claimed job", `{"kind":"job","account_id":"acct_a","dataset":"events","day":"2026-11-27","claim_token":"t","attempt":1,"generation":1,"reason":"scheduled"}`, KindJob, ""},
		{"job without kind but with a token", `{"account_id":"acct_a","dataset":"events","day":"2026-11-27","claim_token":"t","attempt":2}`, KindJob, ""},
		{"manual day", `{"kind":"manual","account_id":"acct_a","dataset":"events","day":"2026-11-20"}`, KindManual, ""},
		{"manual without kind", `{"account_id":"acct_a","dataset":"events","day":"2026-11-20"}`, KindManual, ""},
		{"manual range", `{"account_id":"acct_a","dataset":"events","from":"2026-11-01","to":"2026-11-14"}`, KindManual, ""},
		{"not JSON", `export yesterday please`, "", "not a JSON object"},
		{"unknown kind", `{"kind":"backfill"}`, "", `kind "backfill"`},
		{"unknown field", `{"kind":"manual","account_id":"a","dataset":"events","day":"2026-11-20","dya":"x"}`, "", `unknown field "dya"`},
		{"invalid day", `{"kind":"job","account_id":"a","dataset":"events","day":"2026-13-45","claim_token":"x","attempt":1}`, "", `day "2026-13-45"`},
		{"job without token", `{"kind":"job","account_id":"a","dataset":"events","day":"2026-11-20","attempt":1}`, "", "claim_token is required"},
		{"job attempt 0", `{"kind":"job","account_id":"a","dataset":"events","day":"2026-11-20","claim_token":"x"}`, "", "attempt 0"},
		{"manual without account", `{"kind":"manual","dataset":"events","day":"2026-11-20"}`, "", "account_id is required"},
		{"manual without dataset", `{"kind":"manual","account_id":"a","day":"2026-11-20"}`, "", "dataset is required"},
		{"manual without day", `{"kind":"manual","account_id":"a","dataset":"events"}`, "", "day (or from and to) is required"},
		{"manual day and range", `{"kind":"manual","account_id":"a","dataset":"events","day":"2026-11-20","from":"2026-11-01","to":"2026-11-02"}`, "", "not both"},
		{"manual backwards range", `{"kind":"manual","account_id":"a","dataset":"events","from":"2026-11-14","to":"2026-11-01"}`, "", `to "2026-11-01" is before from "2026-11-14"`},
		{"manual bad from", `{"kind":"manual","account_id":"a","dataset":"events","from":"yesterday","to":"2026-11-01"}`, "", `from "yesterday"`},
		{"manual range too long", `{"kind":"manual","account_id":"a","dataset":"events","from":"2024-01-01","to":"2026-11-01"}`, "", "at most 366"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(tt.body)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse error = %v, want ErrMalformed containing %q", err, tt.wantErr)
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
	m := Manual{AccountID: "a", Dataset: "events", From: "2026-11-01", To: "2026-11-14"}
	from, to, err := m.Days()
	if err != nil || from.String() != "2026-11-01" || to.String() != "2026-11-14" {
		t.Fatalf("Days = %s, %s, %v", from, to, err)
	}
	one := Manual{AccountID: "a", Dataset: "events", Day: "2026-11-20"}
	from, to, err = one.Days()
	if err != nil || from != to || from.String() != "2026-11-20" {
		t.Fatalf("Days = %s, %s, %v", from, to, err)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	j := Job{Kind: KindJob, AccountID: "acct_a", Dataset: "events", Day: "2026-11-27", ClaimToken: "tok", Attempt: 3, Generation: 4, Reason: "retry"}
	body, err := Encode(j)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	if *m.Job != j {
		t.Fatalf("round trip %+v != %+v", *m.Job, j)
	}
}
