package account

import (
	"errors"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/dataset/example"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

// tenantCatalog is the example plus a uuid-keyed and a bigint-keyed
// dataset.
func tenantCatalog(t *testing.T) *dataset.Set {
	t.Helper()
	doc := string(example.YAML()) + `
  - name: invoices
    version: 1
    partition: event_time
    partition_column: created_at
    relation: invoices
    mode: incremental_append
    read: union_all_partitions
    tenant_column: org_id
    tenant_type: uuid
    columns:
      - {name: created_at, type: timestamp}
      - {name: attributes, type: json, nullable: true}
  - name: tickets
    version: 1
    partition: event_time
    partition_column: created_at
    relation: tickets
    mode: incremental_append
    read: union_all_partitions
    tenant_column: org_id
    tenant_type: int64
    columns:
      - {name: created_at, type: timestamp}
      - {name: attributes, type: json, nullable: true}
`
	return datasettest.Catalog(t, []byte(doc))
}

// TestTenantKeyMatchesTheTenantType: an account's tenant_key (else its id)
// must be of every enabled dataset's tenant_type; a refusal names the
// field and the value.
func TestTenantKeyMatchesTheTenantType(t *testing.T) {
	t.Parallel()
	cat := tenantCatalog(t)
	const u = "6f1c2a4e-0d3b-4e5f-8a9b-1c2d3e4f5a6b"
	for _, tc := range []struct {
		name, key string
		datasets  []string
		value     string // the refused value; "" accepted (with reason "")
		reason    string
	}{
		{"string tenant, no key", "", []string{"events"}, "", ""},
		{"string tenant, any key", "org 42/ü", []string{"events"}, "", ""},
		{"uuid tenant, uuid key", u, []string{"invoices"}, "", ""},
		{"uuid tenant, upper case", strings.ToUpper(u), []string{"invoices"}, strings.ToUpper(u), `dataset invoices binds the tenant as uuid, written "` + u + `": write "` + u + `"`},
		{"uuid tenant, upper case, string datasets only", strings.ToUpper(u), []string{"events"}, "", ""},
		{"bigint tenant, leading zeros", "0007", []string{"tickets"}, "0007", `dataset tickets binds the tenant as int64, written "7": write "7"`},
		{"bigint tenant, plus sign", "+7", []string{"events", "tickets"}, "+7", `write "7"`},
		{"bigint tenant, negative", "-7", []string{"tickets"}, "", ""},
		{"leading zeros, string datasets only", "0007", []string{"events"}, "", ""},
		{"uuid tenant, no key", "", []string{"invoices"}, "", `"acct_abcdefghijklmnop" is not a uuid: give the tenant's key`},
		{"uuid tenant, not a uuid", "6f1c2a4e", []string{"events", "invoices"}, "6f1c2a4e", `dataset invoices reads a uuid tenant column org_id: "6f1c2a4e" is not a uuid`},
		{"bigint tenant, integer key", "-42", []string{"tickets"}, "", ""},
		{"bigint tenant, uuid key", u, []string{"tickets"}, u, "is not a 64-bit integer"},
		{"bigint tenant, overflow", "9223372036854775808", []string{"tickets"}, "9223372036854775808", "is not a 64-bit integer"},
		{"two types, one key", u, []string{"invoices", "tickets"}, u, "dataset tickets"},
		{"control character", "org\n1", []string{"events"}, "org\n1", "control character"},
		{"padded", " org", []string{"events"}, " org", "leading or trailing space"},
		{"too long", strings.Repeat("x", TenantKeyMax+1), []string{"events"}, strings.Repeat("x", TenantKeyMax+1), "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := valid()
			a.TenantKey, a.Datasets = tc.key, tc.datasets
			err := a.Validate(cat, testRules)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "tenant_key" || fe.Value != tc.value || !strings.Contains(fe.Reason, tc.reason) {
				t.Fatalf("got %v; want tenant_key %q refused with %q", err, tc.value, tc.reason)
			}
		})
	}
}

// TestTenantKeyIsolation: two accounts that would bind the same tenant key
// export the same tenant's rows: the second is refused, naming tenant_key,
// the key and the other account. Keys are compared by identity: "0007",
// "+7" and "7" bind one integer and an upper-case uuid the lower-case one
// (all were accepted beside "7", and exported that tenant's rows into their
// own prefixes). A key equal to another account's id
// (which that account binds) is the same tenant too, and so is the same key
// on another source shard: a dataset whose source is not sharded reads one
// database for both (it was accepted, and such an account read the other's
// rows of that source).
func TestTenantKeyIsolation(t *testing.T) {
	t.Parallel()
	a, b := acct(idA, "bucket-a", ""), acct(idB, "bucket-b", "")
	a.TenantKey = "org-1"
	for _, tc := range []struct {
		name      string
		key, shrd string
		value     string
	}{
		{"same key", "org-1", "", "org-1"},
		{"the other's id as key", "", "", ""},
		{"same key, another shard", "org-1", "eu", "org-1"},
		{"another key", "org-2", "", ""},
		{"leading zeros", "0007", "", "0007"},
		{"plus sign", "+7", "", "+7"},
		{"same integer", "7", "", "7"},
		{"another integer", "-7", "", ""},
		{"upper-case uuid", "6F1C2A4E-0D3B-4E5F-8A9B-1C2D3E4F5A6B", "", "6F1C2A4E-0D3B-4E5F-8A9B-1C2D3E4F5A6B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := b
			c.TenantKey, c.SourceShard = tc.key, tc.shrd
			other := a
			switch tc.key {
			case "0007", "+7", "7", "-7":
				other.TenantKey = "7"
			case "6F1C2A4E-0D3B-4E5F-8A9B-1C2D3E4F5A6B":
				other.TenantKey = strings.ToLower(tc.key)
			}
			if tc.name == "the other's id as key" {
				other.TenantKey = idB
				c.TenantKey = ""
				tc.value = idB
			}
			err := CheckIsolation(c, []Account{other}, "test")
			if tc.value == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "tenant_key" || fe.Value != tc.value || !strings.Contains(fe.Reason, "account "+idA) {
				t.Fatalf("got %v; want tenant_key %q refused naming %s", err, tc.value, idA)
			}
		})
	}
}

// TestStoredNonCanonicalKeyKeepsWorking: a key stored before keys had to
// be canonical passes ValidateShape, the ledger's own check on every save
// (so the account is still enabled, disabled and exported: its key binds
// its canonical value), while Validate, what `account put` saves, asks for
// the canonical form.
func TestStoredNonCanonicalKeyKeepsWorking(t *testing.T) {
	t.Parallel()
	cat := tenantCatalog(t)
	for _, tc := range []struct{ key, ds, canonical string }{
		{"0007", "tickets", "7"},
		{"+7", "tickets", "7"},
		{"6F1C2A4E-0D3B-4E5F-8A9B-1C2D3E4F5A6B", "invoices", "6f1c2a4e-0d3b-4e5f-8a9b-1c2d3e4f5a6b"},
	} {
		a := valid()
		a.TenantKey, a.Datasets = tc.key, []string{tc.ds}
		if err := a.ValidateShape(cat); err != nil {
			t.Errorf("%q: ValidateShape: %v", tc.key, err)
		}
		if err := a.Validate(cat, testRules); err == nil || !strings.Contains(err.Error(), `write "`+tc.canonical+`"`) {
			t.Errorf("%q: Validate: %v, want the canonical form %q asked for", tc.key, err, tc.canonical)
		}
	}
}
