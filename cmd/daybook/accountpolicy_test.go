package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/destination"
)

// TestAccountPrintsTheCustomersPolicies: account put and account test
// print, for a role account, the role's trust policy (the stack's exporter
// role with the account's external id) and its permissions policy on the
// bucket and prefix, with the KMS key's statement only when a key is
// named; an account written with daybook's own role prints none.
func TestAccountPrintsTheCustomersPolicies(t *testing.T) {
	s := deployed(t)
	exporter := s.outputs["ExporterRoleArn"]
	if !strings.HasPrefix(exporter, "arn:aws:iam::") {
		t.Fatalf("the stack's ExporterRoleArn output: %q", exporter)
	}
	s.createBucket(t, "acme-policy-bucket")
	a, _, _ := testApp(t)
	file := writeAccount(t, t.TempDir(), map[string]any{"destination": map[string]any{
		"bucket": "acme-policy-bucket", "role_arn": "arn:aws:iam::123456789012:role/daybook-export-policytest"}})
	r := s.run(t, a, "account", "put", "--file", file)
	if r.code != 0 {
		t.Fatalf("put: exit %d\n%s", r.code, r.stderr)
	}
	var acct account.Account
	if err := json.Unmarshal([]byte(r.stdout), &acct); err != nil {
		t.Fatalf("put printed %q: %v", r.stdout, err)
	}
	prefix, _ := acct.Prefix("clitest")
	want, err := destination.PolicyFor(acct.Destination, destination.CustomerGrant{ExporterRole: exporter, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	trust := want.Trust.JSON()
	for _, frag := range []string{`"AWS": "` + exporter + `"`, `"sts:ExternalId": "` + acct.Destination.ExternalID + `"`} {
		if !strings.Contains(trust, frag) {
			t.Fatalf("trust policy lacks %s:\n%s", frag, trust)
		}
	}
	for _, doc := range []string{"Trust policy of the role", trust, "Permissions policy of the role, for s3://acme-policy-bucket", want.Permissions.JSON(), "--kms-key KEY_ARN"} {
		if !strings.Contains(r.stderr, doc) {
			t.Errorf("account put's stderr lacks\n%s\n---\n%s", doc, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "kms:") {
		t.Errorf("a bucket without a key got a KMS statement:\n%s", r.stderr)
	}

	t.Run("account test prints them too, with the key's statement when named", func(t *testing.T) {
		r := s.run(t, a, "account", "test", acct.ID)
		if r.code != 0 || !strings.Contains(r.stdout, trust) || !strings.Contains(r.stdout, want.Permissions.JSON()) {
			t.Fatalf("account test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		key := "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
		r = s.run(t, a, "account", "test", acct.ID, "--kms-key", key, "-o", "json")
		var doc struct {
			OK          bool                       `json:"ok"`
			Trust       destination.PolicyDocument `json:"trust_policy"`
			Permissions destination.PolicyDocument `json:"permissions_policy"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || !doc.OK {
			t.Fatalf("account test -o json: %v\n%s%s", err, r.stdout, r.stderr)
		}
		last := doc.Permissions.Statement[len(doc.Permissions.Statement)-1]
		if doc.Trust.JSON() != trust || last.Sid != "DaybookBucketKey" || strings.Join(last.Resource, ",") != key ||
			strings.Join(last.Action, ",") != "kms:GenerateDataKey,kms:Decrypt" {
			t.Errorf("the policies with --kms-key:\n%s\n%s", doc.Trust.JSON(), doc.Permissions.JSON())
		}
		if r := s.run(t, a, "account", "test", acct.ID, "--kms-key", "alias/mine"); r.code == 0 || !strings.Contains(r.stderr, `KMS key "alias/mine"`) {
			t.Errorf("a key that is no ARN: exit %d\n%s", r.code, r.stderr)
		}
	})

	t.Run("an account written with daybook's own role has no customer role to print", func(t *testing.T) {
		r := s.run(t, a, "account", "put", "--file", writeAccount(t, t.TempDir(), nil))
		if r.code != 0 || strings.Contains(r.stderr, "Trust policy") {
			t.Errorf("own-role put: exit %d\n%s", r.code, r.stderr)
		}
	})
}
