package dataset

import (
	"strings"
	"testing"
	"time"
)

// TestTenantValue: a key is checked against the tenant type and bound as
// it, canonical (an int64 as an integer, a uuid in lower case: an
// upper-case one was bound as it was, and a source holding uuids as text
// had no row for it); CanonicalTenantKey is that value's text; an unknown
// tenant_type is refused at load, naming the dataset and the value.
func TestTenantValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ, key  string
		want      any
		canonical string
		refused   string
	}{
		{"", "acct_abcdefghijklmnop", "acct_abcdefghijklmnop", "acct_abcdefghijklmnop", ""},
		{"", "0007", "0007", "0007", ""},
		{TenantUUID, "6F1C2A4E-0D3B-4E5F-8A9B-1C2D3E4F5A6B", "6f1c2a4e-0d3b-4e5f-8a9b-1c2d3e4f5a6b", "6f1c2a4e-0d3b-4e5f-8a9b-1c2d3e4f5a6b", ""},
		{TenantUUID, "6f1c2a4e0d3b4e5f8a9b1c2d3e4f5a6b", nil, "", "is not a uuid"},
		{TenantInt64, "-9223372036854775808", int64(-9223372036854775808), "-9223372036854775808", ""},
		{TenantInt64, "0007", int64(7), "7", ""},
		{TenantInt64, "+7", int64(7), "7", ""},
		{TenantInt64, "-007", int64(-7), "-7", ""},
		{TenantInt64, "1e3", nil, "", "is not a 64-bit integer"},
		{TenantInt64, " 7", nil, "", "is not a 64-bit integer"},
	} {
		d := Dataset{Name: "orders", TenantColumn: "org_id", TenantType: tc.typ}
		got, err := d.TenantValue(tc.key)
		canon, cerr := d.CanonicalTenantKey(tc.key)
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), "tenant column org_id") || cerr == nil {
				t.Errorf("%s %q: %v, %v; want refused with %q", tc.typ, tc.key, got, err, tc.refused)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %q: %#v, %v; want %#v", tc.typ, tc.key, got, err, tc.want)
		}
		if cerr != nil || canon != tc.canonical {
			t.Errorf("%s %q: canonical %q, %v; want %q", tc.typ, tc.key, canon, cerr, tc.canonical)
		}
	}
	doc := `datasets:
  - name: orders
    version: 1
    partition: event_time
    partition_column: created_at
    relation: orders
    mode: incremental_append
    read: union_all_partitions
    tenant_column: org_id
    tenant_type: guid
    columns:
      - {name: created_at, type: timestamp}
      - {name: attributes, type: json, nullable: true}
`
	if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), `tenant_type "guid"`) || !strings.Contains(err.Error(), "orders") {
		t.Errorf("tenant_type guid: %v; want refused naming the dataset and the value", err)
	}
}

// TestTenantIdentity: keys that bind one integer or one uuid have one
// identity, whatever the catalog; other keys are themselves.
func TestTenantIdentity(t *testing.T) {
	t.Parallel()
	for _, group := range [][]string{
		{"7", "07", "0007", "+7", "+0007"},
		{"-7", "-007"},
		{"0", "-0", "+0", "000"},
		{"6f1c2a4e-0d3b-4e5f-8a9b-1c2d3e4f5a6b", "6F1C2A4E-0D3B-4E5F-8A9B-1C2D3E4F5A6B", "6f1c2a4e-0D3B-4e5f-8a9b-1c2d3e4f5a6b"},
		{"org-7"},
		{"Org-7"},
		{"9223372036854775808"}, // not a 64-bit integer: itself
		{"09223372036854775808"},
	} {
		for _, k := range group {
			if got := TenantIdentity(k); got != TenantIdentity(group[0]) {
				t.Errorf("TenantIdentity(%q) = %q, TenantIdentity(%q) = %q: want one identity", k, got, group[0], TenantIdentity(group[0]))
			}
		}
	}
	for _, pair := range [][2]string{{"7", "-7"}, {"org-7", "Org-7"}, {"9223372036854775808", "09223372036854775808"}, {"7", "7.0"}} {
		if TenantIdentity(pair[0]) == TenantIdentity(pair[1]) {
			t.Errorf("%q and %q have one identity %q", pair[0], pair[1], TenantIdentity(pair[0]))
		}
	}
}

// TestParamText: each value Query.Params binds has the text PostgreSQL
// parses as the parameter's type; anything else is refused, naming its type.
func TestParamText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"org-7", "org-7"},
		{int64(-9223372036854775808), "-9223372036854775808"},
		{time.Date(2026, 11, 28, 1, 2, 3, 4000, time.FixedZone("x", 3600)), "2026-11-28T00:02:03.000004Z"},
	} {
		if got, err := ParamText(tc.v); err != nil || string(got) != tc.want {
			t.Errorf("ParamText(%#v) = %q, %v; want %q", tc.v, got, err, tc.want)
		}
	}
	if _, err := ParamText(7); err == nil || !strings.Contains(err.Error(), "type int") {
		t.Errorf("ParamText(int): %v", err)
	}
}
