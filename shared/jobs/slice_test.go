package jobs

import (
	"errors"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

func TestParseSlice(t *testing.T) {
	t.Parallel()
	const tok = "0123456789abcdef0123456789abcdef"
	head := `{"kind":"slice","account_id":"` + acctA + `","dataset":"events","day":"2026-03-09","claim_token":"` + tok + `"`
	tests := []struct {
		name, body string
		field      string // "" for a valid message
	}{
		{"slice", head + `,"generation":2,"slice":1,"slices":3}`, ""},
		{"last slice", head + `,"generation":1,"slice":999,"slices":1000}`, ""},
		{"slice past the plan", head + `,"generation":1,"slice":3,"slices":3}`, "slice"},
		{"negative slice", head + `,"generation":1,"slice":-1,"slices":3}`, "slice"},
		{"one slice", head + `,"generation":1,"slice":0,"slices":1}`, "slices"},
		{"too many slices", head + `,"generation":1,"slice":0,"slices":1001}`, "slices"},
		{"no generation", head + `,"slice":0,"slices":2}`, "generation"},
		{"hostile token", `{"kind":"slice","account_id":"` + acctA + `","dataset":"events","day":"2026-03-09","claim_token":"x' OR 1=1","generation":1,"slice":0,"slices":2}`, "claim_token"},
		{"path in the account id", `{"kind":"slice","account_id":"acct_../b","dataset":"events","day":"2026-03-09","claim_token":"` + tok + `","generation":1,"slice":0,"slices":2}`, "account_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(datasettest.Example(t), tt.body)
			if tt.field == "" {
				if err != nil || m.Slice == nil || m.Job != nil || m.Slice.DayValue().String() != "2026-03-09" {
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
}
