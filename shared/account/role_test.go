package account

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/envvar"
)

func TestMatchWildcard(t *testing.T) {
	t.Parallel()
	const pat = "arn:aws:iam::*:role/daybook-export-*"
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{pat, "arn:aws:iam::123456789012:role/daybook-export-acme", true},
		{pat, "arn:aws:iam::123456789012:role/daybook-export-", true},
		{pat, "arn:aws:iam::123456789012:role/daybook-export-a/b", true}, // IAM's * crosses /
		{pat, "arn:aws:iam::123456789012:role/daybook-exporter", false},
		{pat, "arn:aws:iam::123456789012:role/x/daybook-export-acme", false}, // a path before the name
		{pat, "arn:aws:iam::123456789012:role/Daybook-Export-acme", false},   // case-sensitive, as IAM
		{pat, "arn:aws-cn:iam::123456789012:role/daybook-export-acme", false},
		{pat, "xarn:aws:iam::123456789012:role/daybook-export-acme", false}, // anchored at the start
		{"arn:aws:iam::*:role/daybook-export-?", "arn:aws:iam::1:role/daybook-export-a", true},
		{"arn:aws:iam::*:role/daybook-export-?", "arn:aws:iam::1:role/daybook-export-ab", false}, // anchored at the end
		{"arn:aws:iam::*:role/daybook-export-?", "arn:aws:iam::1:role/daybook-export-", false},
		{"arn:aws:iam::123456789012:role/*", "arn:aws:iam::123456789012:role/anything", true},
		{"arn:aws:iam::123456789012:role/*", "arn:aws:iam::210987654321:role/anything", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"*", "", true},
		{"", "", true},
		{"", "a", false},
		{"**a", "ba", true},
		{"a*", "b", false},
	}
	for _, c := range cases {
		if got := MatchWildcard(c.pattern, c.s); got != c.want {
			t.Errorf("MatchWildcard(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
	// No exponential backtracking.
	if MatchWildcard(strings.Repeat("*a", 40)+"b", strings.Repeat("a", 5000)) {
		t.Error("matched")
	}
}

func TestNewExternalID(t *testing.T) {
	t.Parallel()
	r := rand.NewChaCha8([32]byte{7})
	seen := map[string]bool{}
	for range 1000 {
		id, err := NewExternalID(r)
		if err != nil {
			t.Fatal(err)
		}
		if !ValidExternalID(id) || !strings.HasPrefix(id, ExternalIDPrefix) || len(id) != len(ExternalIDPrefix)+32 || seen[id] {
			t.Fatalf("external id %q invalid or repeated", id)
		}
		seen[id] = true
	}
	// Deterministic from the injected source.
	a, _ := NewExternalID(rand.NewChaCha8([32]byte{9}))
	b, _ := NewExternalID(rand.NewChaCha8([32]byte{9}))
	if a != b {
		t.Errorf("same seed, %q and %q", a, b)
	}
	if _, err := NewExternalID(bytes.NewReader(make([]byte, 19))); err == nil {
		t.Error("NewExternalID from a short reader")
	}
	// A generated id passes Validate with a role.
	acct := valid()
	acct.Destination = roleDest()
	acct.Destination.ExternalID = a
	if err := acct.Validate(datasettest.Example(t), testRules); err != nil {
		t.Error(err)
	}
}

func TestBucketOwner(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		d          Destination
		deployment string
		want       string
		wantErr    string
	}{
		{"explicit", Destination{ExpectedBucketOwner: "444455556666", RoleARN: "arn:aws:iam::123456789012:role/r"}, deployment, "444455556666", ""},
		{"from the role", Destination{RoleARN: "arn:aws:iam::123456789012:role/daybook-export-x"}, deployment, "123456789012", ""},
		{"from the role, gov partition", Destination{RoleARN: "arn:aws-us-gov:iam::123456789012:role/x"}, "", "123456789012", ""},
		{"own role: the deployment", Destination{}, deployment, deployment, ""},
		{"own role, deployment unknown", Destination{}, "", "", "destination.expected_bucket_owner is empty"},
		{"own role, deployment malformed", Destination{}, "12", "", "destination.expected_bucket_owner is empty"},
		{"malformed role", Destination{RoleARN: "arn:aws:iam::12:role/x"}, deployment, "", `destination.role_arn "arn:aws:iam::12:role/x"`},
		{"own role on a custom endpoint", Destination{Endpoint: "https://minio.example.com"}, deployment, "", ""},
		{"role on a custom endpoint", Destination{Endpoint: "https://minio.example.com", RoleARN: "arn:aws:iam::123456789012:role/r"}, deployment, "123456789012", ""},
	}
	for _, c := range cases {
		got, err := c.d.BucketOwner(c.deployment)
		if got != c.want || (err != nil) != (c.wantErr != "") || err != nil && (!strings.Contains(err.Error(), c.wantErr) || !errors.Is(err, ErrNoBucketOwner)) {
			t.Errorf("%s: BucketOwner = %q, %v; want %q, %q", c.name, got, err, c.want, c.wantErr)
		}
	}
}

func TestRulesFromEnv(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	r, err := RulesFromEnv(env(map[string]string{
		EnvDeploymentAccountID:      deployment,
		EnvCustomerRolePattern:      "arn:aws:iam::*:role/daybook-export-*",
		EnvAllowPrivateEndpoints:    "true",
		"MAX_BACKFILL_DAYS":         "90",
		EnvDestinationSecretPattern: "arn:aws:secretsmanager:eu-west-1:" + deployment + ":secret:daybook/destinations/*",
	}))
	if err != nil || r.DeploymentAccountID != deployment || r.RolePattern != "arn:aws:iam::*:role/daybook-export-*" || !r.AllowPrivateEndpoints ||
		r.MaxBackfillDays != 90 || r.SecretPattern != "arn:aws:secretsmanager:eu-west-1:"+deployment+":secret:daybook/destinations/*" {
		t.Fatalf("RulesFromEnv = %+v, %v", r, err)
	}
	// Unset: the zero rules, but the deployment default backfill limit, as
	// the ledger reads it.
	if r, err := RulesFromEnv(env(nil)); err != nil || r != (Rules{MaxBackfillDays: envvar.DefaultMaxBackfillDays}) {
		t.Errorf("unset: %+v, %v", r, err)
	}
	_, err = RulesFromEnv(env(map[string]string{
		EnvDeploymentAccountID:      "12345",
		EnvCustomerRolePattern:      "daybook-export-*",
		EnvAllowPrivateEndpoints:    "maybe",
		"MAX_BACKFILL_DAYS":         "a year",
		EnvDestinationSecretPattern: "daybook/destinations/*",
	}))
	for _, want := range []string{`DEPLOYMENT_ACCOUNT_ID="12345"`, `CUSTOMER_ROLE_PATTERN="daybook-export-*"`, `ALLOW_PRIVATE_ENDPOINTS="maybe"`,
		`MAX_BACKFILL_DAYS="a year"`, `DESTINATION_SECRET_PATTERN="daybook/destinations/*"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one naming %s", err, want)
		}
	}
}
