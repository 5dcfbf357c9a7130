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
	t.Parallel()
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
	t.Parallel()
	err := CheckIsolation(acct(idA, "b", ""), nil, "")
	wantField(t, err, "stage", "", "required")
	bad := acct(idA, "b", "no-id-here")
	wantField(t, CheckIsolation(bad, nil, "prod"), "destination.prefix", "no-id-here", "must contain {{.AccountID}}")
}

// TestIsolationAcrossStores: the overlap rule compares places (a store's
// bucket namespace and the bucket: destination.store with the store's
// identity fields), with the same guard items. On the code before places,
// which compared (endpoint store, bucket) only, an S3 bucket and a GCS
// bucket of one name were one bucket, and two Azure storage accounts'
// containers of one name were one container.
func TestIsolationAcrossStores(t *testing.T) {
	t.Parallel()
	gcs := func(a Account, endpoint string) Account {
		a.Destination.StoreKind, a.Destination.Endpoint = StoreGCS, endpoint
		a.Destination.GCS = &GCSAccess{WorkloadIdentityProvider: testProvider, ServiceAccount: testSA}
		return a
	}
	azure := func(a Account, storageAccount, endpoint string) Account {
		a.Destination.StoreKind, a.Destination.StorageAccount, a.Destination.Endpoint = StoreAzure, storageAccount, endpoint
		a.Destination.Azure = &AzureAccess{TenantID: testTenant, ClientID: testClient}
		return a
	}
	inner, outer := acct(idB, "shared", "x/"+idA+"/{{.AccountID}}"), acct(idA, "shared", "x/{{.AccountID}}")
	cases := []struct {
		name             string
		candidate, other Account
		reason           string // empty: no conflict
	}{
		{"an S3 bucket named like a GCS bucket", inner, gcs(outer, ""), ""},
		{"a GCS bucket named like an S3 bucket", gcs(inner, ""), outer, ""},
		{"two accounts in one GCS bucket", gcs(inner, ""), gcs(outer, ""), "is inside account " + idA + `'s prefix "x/` + idA + `" in GCS bucket shared`},
		{"one GCS bucket through Google's own endpoint", gcs(inner, "https://storage.googleapis.com"), gcs(outer, ""), "in GCS bucket shared"},
		{"one GCS bucket name on an emulator", gcs(inner, "http://127.0.0.1:4443"), gcs(outer, ""), ""},
		{"one container name in two storage accounts", azure(inner, "acme", ""), azure(outer, "other", ""), ""},
		{"one container of one storage account", azure(inner, "acme", ""), azure(outer, "acme", ""), "in container shared of storage account acme"},
		{"an emulator's account spelled two ways", azure(inner, "devstoreaccount1", "http://127.0.0.1:10000"), azure(outer, "devstoreaccount1", "http://localhost:10000/"),
			"in container shared of storage account loopback:10000/devstoreaccount1"},
		{"two emulator accounts", azure(inner, "devstoreaccount1", "http://127.0.0.1:10000"), azure(outer, "otheraccount", "http://127.0.0.1:10000"), ""},
		{"an emulator's account and Azure's", azure(inner, "devstoreaccount1", "http://127.0.0.1:10000"), azure(outer, "devstoreaccount1", ""), ""},
		{"an Azure container named like a GCS bucket", azure(inner, "acme", ""), gcs(outer, ""), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckIsolation(c.candidate, []Account{c.other}, "prod")
			if c.reason == "" {
				if err != nil {
					t.Fatalf("CheckIsolation = %v, want no conflict", err)
				}
			} else {
				wantField(t, err, "destination.prefix", "x/"+idA+"/"+idB, c.reason)
			}
			// The guards agree: a conflict is a shared item, no conflict none.
			mine, err1 := c.candidate.Guards("prod")
			theirs, err2 := c.other.Guards("prod")
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			shared := false
			for _, g := range mine {
				for _, o := range theirs {
					shared = shared || g.Key == o.Key
				}
			}
			if shared != (c.reason != "") {
				t.Errorf("guards shared %v, conflict %v", shared, c.reason != "")
			}
		})
	}
}

// TestS3GuardKeysUnchanged: an S3 account's guard items keep the keys
// they were stored under before other stores existed (store, bucket,
// prefix segment), or the ledger would stop seeing stored accounts'
// guards.
func TestS3GuardKeysUnchanged(t *testing.T) {
	t.Parallel()
	for _, d := range []Destination{{Bucket: "shared"}, {Bucket: "shared", Endpoint: "http://localhost:9000"}, {Bucket: "shared", Region: "cn-north-1"}} {
		a := acct(idA, d.Bucket, "x/{{.AccountID}}")
		a.Destination = d
		a.Destination.Prefix = "x/{{.AccountID}}"
		gs, err := a.Guards("prod")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{"p#" + digest(d.Store(), "shared", "x"): true, "p#" + digest(d.Store(), "shared", "x/"+idA): true}
		for _, g := range gs {
			if strings.HasPrefix(g.Key, "t#") {
				continue // the tenant's guard: keyed by the tenant, not by the store
			}
			if !want[g.Key] {
				t.Errorf("%+v: guard %s (%s) is not the old key", d, g.Key, g.Desc)
			}
			delete(want, g.Key)
		}
		for k := range want {
			t.Errorf("%+v: no guard %s", d, k)
		}
	}
}
