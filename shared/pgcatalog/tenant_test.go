package pgcatalog

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// TestTenantType: text-like tenant columns hold strings, uuid a uuid,
// integers an int64; anything else is refused naming the type.
func TestTenantType(t *testing.T) {
	text := SourceType{Display: "text", Name: "text"}
	for _, tc := range []struct {
		t       SourceType
		want    string
		refused string
	}{
		{text, dataset.TenantString, ""},
		{SourceType{Display: "character varying(64)", Name: "varchar"}, dataset.TenantString, ""},
		{SourceType{Display: "character(8)", Name: "bpchar"}, dataset.TenantString, ""},
		{SourceType{Display: "uuid", Name: "uuid"}, dataset.TenantUUID, ""},
		{SourceType{Display: "bigint", Name: "int8"}, dataset.TenantInt64, ""},
		{SourceType{Display: "integer", Name: "int4"}, dataset.TenantInt64, ""},
		{SourceType{Display: "numeric(20,0)", Name: "numeric"}, "", "numeric(20,0): a tenant column must be"},
		{SourceType{Display: "text[]", Name: "_text", Elem: &text}, "", "text[]: an array cannot"},
	} {
		got, err := TenantType(tc.t)
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%s: %q, %v; want refused with %q", tc.t.Display, got, err, tc.refused)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.t.Display, got, err, tc.want)
		}
	}
}
