package jobs

import (
	"errors"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

// TestParseIsStrict feeds Parse every trick a forged or careless body can
// play on a JSON decoder. Each must be refused as malformed, with an error
// naming the member (or the value) at fault; v1 encoding/json accepted all
// but the last few (duplicate keys: the last won; case variants matched the
// field; requested_by was not checked at all).
func TestParseIsStrict(t *testing.T) {
	t.Parallel()
	const acctB = "acct_qrstuvwxyzabcdef"
	job := func(extra string) string {
		return `{"kind":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-11-27","claim_token":"` + tok + `","attempt":1,"generation":1` + extra + `}`
	}
	manual := func(extra string) string {
		return `{"kind":"manual","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20"` + extra + `}`
	}
	tests := []struct {
		name, body string
		want       string // substring of the error
		field      string // of the *FieldError, when it is one
	}{
		{"duplicate key, the second names another account", job(`,"account_id":"` + acctB + `"`), `field "account_id" is given more than once`, ""},
		{"duplicate kind", `{"kind":"manual","kind":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20"}`, `field "kind" is given more than once`, ""},
		{"duplicate claim token", job(`,"claim_token":"` + strings.Repeat("a", 32) + `"`), `field "claim_token" is given more than once`, ""},
		{"upper-case variant of a field beside it", job(`,"ACCOUNT_ID":"` + acctB + `"`), `unknown field "ACCOUNT_ID"`, ""},
		{"mixed-case field alone", `{"kind":"manual","Account_Id":"` + acctA + `","dataset":"events","day":"2026-11-20"}`, `unknown field "Account_Id"`, ""},
		{"case variant of kind", `{"KIND":"job","account_id":"` + acctA + `","dataset":"events","day":"2026-11-27","claim_token":"` + tok + `","attempt":1,"generation":1}`, `unknown field "KIND"`, ""},
		{"unknown field", manual(`,"priority":"high"`), `unknown field "priority"`, ""},
		{"unknown field in a slice", `{"kind":"slice","account_id":"` + acctA + `","dataset":"events","day":"2026-11-27","claim_token":"` + tok + `","generation":1,"slice":0,"slices":2,"force":true}`, `unknown field "force"`, ""},
		{"nested duplicate inside an unknown member", manual(`,"x":{"a":1,"a":2}`), `field "x/a" is given more than once`, ""},
		{"nested object for a field", manual(`,"requested_by":{"requested_by":"x"}`), "requested_by", ""},
		{"duplicate inside a lifecycle message", `{"kind":"reseed_done","account_id":"` + acctA + `","dataset":"profiles","epoch":1,"epoch":2}`, `field "epoch" is given more than once`, ""},
		{"huge requested_by", manual(`,"requested_by":"` + strings.Repeat("x", 1<<20) + `"`), `requested_by "xxxxxxxx`, "requested_by"},
		{"requested_by one over the limit", manual(`,"requested_by":"` + strings.Repeat("é", MaxRequestedBy+1) + `"`), "is 257 characters long; at most 256", "requested_by"},
		{"requested_by with a newline", manual(`,"requested_by":"ops\nforged log line"`), `requested_by "ops\nforged log line" holds U+000A`, "requested_by"},
		{"requested_by with NUL", manual(`,"requested_by":"ops\u0000"`), "U+0000", "requested_by"},
		{"requested_by with an escape sequence", manual(`,"requested_by":"\u001b[31mops"`), "U+001B", "requested_by"},
		{"requested_by with a bidi override", manual(`,"requested_by":"ops\u202e"`), "U+202E", "requested_by"},
		{"request_id with a space", manual(`,"request_id":"r 1"`), `request_id "r 1" is not a request id`, "request_id"},
		{"request_id one over the limit", manual(`,"request_id":"` + strings.Repeat("r", 65) + `"`), "is not a request id", "request_id"},
		{"reseed requested_by with a control char", `{"kind":"reseed","account_id":"` + acctA + `","dataset":"profiles","request_id":"r1","requested_by":"a\tb"}`, "U+0009", "requested_by"},
		{"array body", `[` + manual("") + `]`, `body is not a JSON object: it starts with '['`, ""},
		{"string body", `"` + acctA + `"`, "body is not a JSON object", ""},
		{"null body", `null`, "body is not a JSON object", ""},
		{"empty body", `  `, "body is not a JSON object: it is empty", ""},
		{"trailing garbage", manual("") + ` x`, "after top-level value", ""},
		{"a second object", manual("") + manual(`,"requested_by":"b"`), "after top-level value", ""},
		{"invalid UTF-8", manual(`,"requested_by":"` + "\xff" + `"`), "invalid UTF-8", ""},
		{"number for a string", `{"kind":"manual","account_id":42,"dataset":"events","day":"2026-11-20"}`, "account_id", ""},
		{"fractional attempt", strings.Replace(job(""), `"attempt":1`, `"attempt":1.5`, 1), "attempt", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(datasettest.Example(t), tt.body)
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", m)
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error = %v, want ErrMalformed containing %q", err, tt.want)
			}
			var fe *FieldError
			if tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field) {
				t.Errorf("error %v: want a *FieldError of %q", err, tt.field)
			}
			if len(err.Error()) > 512 {
				t.Errorf("error is %d bytes long; a huge value must be shortened", len(err.Error()))
			}
		})
	}
}

// TestParseAcceptsRequestedBy: what the CLI and the console send passes.
func TestParseAcceptsRequestedBy(t *testing.T) {
	t.Parallel()
	for _, by := range []string{
		"", "chaos", "cli:ops", "console:jane@example.com", "Zoë Müller",
		"arn:aws:sts::123456789012:assumed-role/" + strings.Repeat("r", 64) + "/" + strings.Repeat("s", 64),
		strings.Repeat("é", MaxRequestedBy),
	} {
		body := `{"kind":"manual","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20","requested_by":"` + by + `"}`
		m, err := Parse(datasettest.Example(t), body)
		if err != nil || m.Manual.RequestedBy != by {
			t.Errorf("requested_by %q: %+v, %v", by, m.Manual, err)
		}
	}
}

// TestParseAcceptsRequestID: a re-export request's id, as ops sends it
// (the ledger's 32 hex digits), or none, as a message written by hand.
func TestParseAcceptsRequestID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", strings.Repeat("0a", 16), "r-1", strings.Repeat("r", 64)} {
		body := `{"kind":"manual","account_id":"` + acctA + `","dataset":"events","day":"2026-11-20","request_id":"` + id + `"}`
		m, err := Parse(datasettest.Example(t), body)
		if err != nil || m.Manual.RequestID != id {
			t.Errorf("request_id %q: %+v, %v", id, m.Manual, err)
		}
	}
}

// TestCheckRequestRequestedBy: the CLI's own check refuses what the
// exporter would dead-letter.
func TestCheckRequestRequestedBy(t *testing.T) {
	t.Parallel()
	m := Manual{AccountID: acctA, Dataset: "events", Day: "2026-11-20", RequestedBy: "ops\r\nx"}
	_, _, err := CheckRequest(datasettest.Example(t), m, nil, Limits{})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "requested_by" || fe.Value != m.RequestedBy || fe.Kind != ErrMalformed {
		t.Fatalf("CheckRequest = %v, want a malformed requested_by", err)
	}
}
