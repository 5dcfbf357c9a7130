package dataset

import (
	"strings"
	"testing"
)

// TestTenantValue: a key is checked against the tenant type and bound as
// it (an int64 as an integer); an unknown tenant_type is refused at load,
// naming the dataset and the value.
func TestTenantValue(t *testing.T) {
	for _, tc := range []struct {
		typ, key string
		want     any
		refused  string
	}{
		{"", "acct_abcdefghijklmnop", "acct_abcdefghijklmnop", ""},
		{TenantUUID, "6F1C2A4E-0D3B-4E5F-8A9B-1C2D3E4F5A6B", "6F1C2A4E-0D3B-4E5F-8A9B-1C2D3E4F5A6B", ""},
		{TenantUUID, "6f1c2a4e0d3b4e5f8a9b1c2d3e4f5a6b", nil, "is not a uuid"},
		{TenantInt64, "-9223372036854775808", int64(-9223372036854775808), ""},
		{TenantInt64, "1e3", nil, "is not a 64-bit integer"},
	} {
		d := Dataset{Name: "orders", TenantColumn: "org_id", TenantType: tc.typ}
		got, err := d.TenantValue(tc.key)
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), "tenant column org_id") {
				t.Errorf("%s %q: %v, %v; want refused with %q", tc.typ, tc.key, got, err, tc.refused)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %q: %#v, %v; want %#v", tc.typ, tc.key, got, err, tc.want)
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
