package account

import (
	"strings"
	"testing"
)

func acct(id, bucket, prefix string) Account {
	a := valid()
	a.ID = id
	a.Destination = Destination{Bucket: bucket, Prefix: prefix}
	return a
}

const (
	idA = "acct_aaaaaaaaaaaaaaaa"
	idB = "acct_bbbbbbbbbbbbbbbb"
)

// TestCheckIsolation: one row per conflict (and per near miss that is not
// one); each refusal names the field, the candidate's value and the other
// account.
func TestCheckIsolation(t *testing.T) {
	withRole := func(a Account, role, ext string) Account {
		a.Destination.RoleARN, a.Destination.ExternalID = role, ext
		return a
	}
	withEndpoint := func(a Account, ep string) Account { a.Destination.Endpoint = ep; return a }
	const role = "arn:aws:iam::123456789012:role/daybook-export-acme"
	cases := []struct {
		name         string
		candidate    Account
		other        Account
		field, value string // empty: no conflict
		reason       string
	}{
		{"candidate inside the other", acct(idB, "shared", "x/"+idA+"/{{.AccountID}}"), acct(idA, "shared", "x/{{.AccountID}}"),
			"destination.prefix", "x/" + idA + "/" + idB, `is inside account ` + idA + `'s prefix "x/` + idA + `" in bucket shared`},
		{"candidate contains the other", acct(idA, "shared", "x/{{.AccountID}}"), acct(idB, "shared", "x/"+idA+"/{{.AccountID}}"),
			"destination.prefix", "x/" + idA, "contains account " + idB},
		{"equal prefixes", acct(idB, "shared", "{{.AccountID}}/"+idA), acct(idA, "shared", idB+"/{{.AccountID}}"),
			"destination.prefix", idB + "/" + idA, "is account " + idA + "'s prefix in bucket shared"},
		{"stage placeholder renders equal", acct(idB, "shared", "prod/"+idA+"/{{.AccountID}}"), acct(idA, "shared", "{{.Stage}}/{{.AccountID}}"),
			"destination.prefix", "prod/" + idA + "/" + idB, "is inside account " + idA},
		{"legacy other account without the id", acct(idB, "shared", "exports/{{.AccountID}}"), acct(idA, "shared", "exports"),
			"destination.prefix", "exports/" + idB, `is inside account ` + idA + `'s prefix "exports"`},
		{"same endpoint spelled two ways", withEndpoint(acct(idB, "shared", "x/"+idA+"/{{.AccountID}}"), "https://minio.example.com:443"),
			withEndpoint(acct(idA, "shared", "x/{{.AccountID}}"), "https://minio.example.com/"), "destination.prefix", "x/" + idA + "/" + idB, "is inside"},
		{"same role and external id", withRole(acct(idB, "b-bucket", ""), role, "ext-1"), withRole(acct(idA, "a-bucket", ""), role, "ext-1"),
			"destination.external_id", "ext-1", "account " + idA + " already uses role " + role},
		{"same role, name in another case", withRole(acct(idB, "b-bucket", ""), strings.ToUpper(role[:30])+role[30:], "ext-1"), withRole(acct(idA, "a-bucket", ""), role, "ext-1"),
			"destination.external_id", "ext-1", "already uses role"},

		// Not conflicts.
		{"sibling prefixes", acct(idB, "shared", "x/{{.AccountID}}"), acct(idA, "shared", "x/{{.AccountID}}"), "", "", ""},
		{"segment-wise, not string-wise", acct(idB, "shared", "x/"+idA+"x/{{.AccountID}}"), acct(idA, "shared", "x/{{.AccountID}}"), "", "", ""},
		{"segment-wise, not string-wise, reversed", acct(idA, "shared", "x/{{.AccountID}}"), acct(idB, "shared", "x/"+idA+"x/{{.AccountID}}"), "", "", ""},
		{"another bucket", acct(idB, "other", "x/"+idA+"/{{.AccountID}}"), acct(idA, "shared", "x/{{.AccountID}}"), "", "", ""},
		{"same bucket name on another endpoint", withEndpoint(acct(idB, "shared", "x/"+idA+"/{{.AccountID}}"), "https://r2.example.com"),
			acct(idA, "shared", "x/{{.AccountID}}"), "", "", ""},
		{"same bucket name on two endpoints", withEndpoint(acct(idB, "shared", "x/"+idA+"/{{.AccountID}}"), "https://r2.example.com"),
			withEndpoint(acct(idA, "shared", "x/{{.AccountID}}"), "https://minio.example.com"), "", "", ""},
		{"same role, other external id", withRole(acct(idB, "b-bucket", ""), role, "ext-2"), withRole(acct(idA, "a-bucket", ""), role, "ext-1"), "", "", ""},
		{"update of itself", acct(idA, "shared", "x/{{.AccountID}}"), acct(idA, "shared", "x/{{.AccountID}}/old"), "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			others := []Account{acct("acct_cccccccccccccccc", "unrelated", ""), c.other}
			err := CheckIsolation(c.candidate, others, "prod")
			if c.field == "" {
				if err != nil {
					t.Fatalf("CheckIsolation = %v, want no conflict", err)
				}
				return
			}
			wantField(t, err, c.field, c.value, c.reason)
		})
	}
}

func TestCheckIsolationNeedsAStage(t *testing.T) {
	err := CheckIsolation(acct(idA, "b", ""), nil, "")
	wantField(t, err, "stage", "", "required")
	bad := acct(idA, "b", "no-id-here")
	wantField(t, CheckIsolation(bad, nil, "prod"), "destination.prefix", "no-id-here", "must contain {{.AccountID}}")
}
