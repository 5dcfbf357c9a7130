package account

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

const (
	testProvider  = "projects/123456789012/locations/global/workloadIdentityPools/daybook-pool/providers/daybook-aws"
	testSA        = "daybook-writer@acme-data.iam.gserviceaccount.com"
	testTenant    = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	testClient    = "0b7e3c1a-2f4d-4e5b-9c8a-1d2e3f4a5b6c"
	testSecretARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:daybook/destinations/acme-AbCdEf"
	secretPattern = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:daybook/destinations/*"
)

func gcsAcct(g GCSAccess) Account {
	a := valid()
	a.Destination.StoreKind = StoreGCS
	a.Destination.GCS = &g
	return a
}

func azureAcct(z AzureAccess) Account {
	a := valid()
	a.Destination.StoreKind, a.Destination.StorageAccount = StoreAzure, "acmedata"
	a.Destination.Azure = &z
	return a
}

// fedGCS and fedAzure are valid federated access blocks.
var (
	fedGCS   = &GCSAccess{WorkloadIdentityProvider: testProvider, ServiceAccount: testSA}
	fedAzure = &AzureAccess{TenantID: testTenant, ClientID: testClient}
)

var credRules = Rules{DeploymentAccountID: "123456789012", SecretPattern: secretPattern}

// TestCredentialsAccepted: the federated and secret forms of each store
// that a customer is told to write are valid, and so is a destination on
// an emulator's endpoint without them (reached without credentials).
func TestCredentialsAccepted(t *testing.T) {
	t.Parallel()
	emulated := func(a Account) Account {
		a.Destination.GCS, a.Destination.Azure, a.Destination.Endpoint = nil, nil, "https://storage.example.com"
		return a
	}
	for name, a := range map[string]Account{
		"gcs on an emulator":       emulated(gcsAcct(GCSAccess{})),
		"azure on an emulator":     emulated(azureAcct(AzureAccess{})),
		"gcs federated":            gcsAcct(GCSAccess{WorkloadIdentityProvider: testProvider, ServiceAccount: testSA}),
		"gcs federated explicitly": gcsAcct(GCSAccess{CredentialMode: CredentialFederated, WorkloadIdentityProvider: testProvider, ServiceAccount: testSA}),
		"gcs default compute sa":   gcsAcct(GCSAccess{WorkloadIdentityProvider: testProvider, ServiceAccount: "123456789012-compute@developer.gserviceaccount.com"}),
		"gcs secret":               gcsAcct(GCSAccess{CredentialMode: CredentialSecret, SecretARN: testSecretARN}),
		"azure federated":          azureAcct(AzureAccess{TenantID: testTenant, ClientID: testClient}),
		"azure secret":             azureAcct(AzureAccess{CredentialMode: CredentialSecret, SecretARN: testSecretARN}),
	} {
		if err := a.Validate(datasettest.Example(t), credRules); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCredentialsRefused: one row per refusal, each naming the field, the
// value and why.
func TestCredentialsRefused(t *testing.T) {
	t.Parallel()
	fed := GCSAccess{WorkloadIdentityProvider: testProvider, ServiceAccount: testSA}
	with := func(f func(*GCSAccess)) Account { g := fed; f(&g); return gcsAcct(g) }
	cases := []struct {
		name                 string
		a                    Account
		rules                Rules
		field, value, reason string
	}{
		{"gcs without provider", with(func(g *GCSAccess) { g.WorkloadIdentityProvider = "" }), credRules,
			"destination.gcs.workload_identity_provider", "", "required"},
		{"gcs provider with the //iam prefix", with(func(g *GCSAccess) { g.WorkloadIdentityProvider = "//iam.googleapis.com/" + testProvider }), credRules,
			"destination.gcs.workload_identity_provider", "//iam.googleapis.com/" + testProvider, "want projects/"},
		{"gcs provider of a workforce pool", with(func(g *GCSAccess) { g.WorkloadIdentityProvider = "locations/global/workforcePools/p/providers/x" }), credRules,
			"destination.gcs.workload_identity_provider", "locations/global/workforcePools/p/providers/x", "want projects/"},
		{"gcs without service account", with(func(g *GCSAccess) { g.ServiceAccount = "" }), credRules,
			"destination.gcs.service_account", "", "required"},
		{"gcs user email for a service account", with(func(g *GCSAccess) { g.ServiceAccount = "alice@acme.com" }), credRules,
			"destination.gcs.service_account", "alice@acme.com", "want a service account email"},
		{"gcs secret arn without the secret mode", with(func(g *GCSAccess) { g.SecretARN = testSecretARN }), credRules,
			"destination.gcs.secret_arn", testSecretARN, "only with credential_mode secret, which must be set explicitly"},
		{"gcs secret mode without an arn", gcsAcct(GCSAccess{CredentialMode: CredentialSecret}), credRules,
			"destination.gcs.secret_arn", "", "required with credential_mode secret"},
		{"gcs secret mode with federation fields", gcsAcct(GCSAccess{CredentialMode: CredentialSecret, SecretARN: testSecretARN, ServiceAccount: testSA}), credRules,
			"destination.gcs.service_account", testSA, "is for credential_mode federated"},
		{"gcs unknown mode", with(func(g *GCSAccess) { g.CredentialMode = "key" }), credRules,
			"destination.gcs.credential_mode", "key", "want federated (the default) or secret"},
		{"gcs secret outside the deployment's prefix", gcsAcct(GCSAccess{CredentialMode: CredentialSecret, SecretARN: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf"}), credRules,
			"destination.gcs.secret_arn", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf", "outside the secrets this deployment may read"},
		{"gcs secret where the deployment reads none", gcsAcct(GCSAccess{CredentialMode: CredentialSecret, SecretARN: testSecretARN}), Rules{DeploymentAccountID: "123456789012"},
			"destination.gcs.secret_arn", testSecretARN, "reads no destination secrets"},
		{"gcs secret arn malformed", gcsAcct(GCSAccess{CredentialMode: CredentialSecret, SecretARN: "daybook/destinations/acme"}), credRules,
			"destination.gcs.secret_arn", "daybook/destinations/acme", "want an AWS Secrets Manager secret ARN"},
		{"gcs with a role", func() Account {
			a := gcsAcct(fed)
			a.Destination.RoleARN, a.Destination.ExternalID = "arn:aws:iam::123456789012:role/daybook-export-acme", "ext-1"
			return a
		}(), credRules, "destination.role_arn", "arn:aws:iam::123456789012:role/daybook-export-acme", "applies to store s3, and the store is gcs"},
		{"azure without tenant", azureAcct(AzureAccess{ClientID: testClient}), credRules,
			"destination.azure.tenant_id", "", "required"},
		{"azure client id not a guid", azureAcct(AzureAccess{TenantID: testTenant, ClientID: "daybook-app"}), credRules,
			"destination.azure.client_id", "daybook-app", "want a GUID"},
		{"azure secret arn without the secret mode", azureAcct(AzureAccess{TenantID: testTenant, ClientID: testClient, SecretARN: testSecretARN}), credRules,
			"destination.azure.secret_arn", testSecretARN, "only with credential_mode secret"},
		{"azure secret mode with a tenant", azureAcct(AzureAccess{CredentialMode: CredentialSecret, SecretARN: testSecretARN, TenantID: testTenant}), credRules,
			"destination.azure.tenant_id", testTenant, "is for credential_mode federated"},
		{"both stores", func() Account {
			a := gcsAcct(fed)
			a.Destination.Azure = &AzureAccess{TenantID: testTenant, ClientID: testClient}
			return a
		}(), credRules,
			"destination.azure", "", "applies to store azure, and the store is gcs"},
		{"a gcs block on an S3 destination", func() Account {
			a := valid()
			a.Destination.GCS = fedGCS
			return a
		}(), credRules, "destination.gcs", "", "applies to store gcs, and the store is s3 (set destination.store: gcs)"},
		{"store gcs without its block", func() Account {
			a := gcsAcct(fed)
			a.Destination.GCS = nil
			return a
		}(), credRules, "destination.gcs", "", "required with store gcs"},
		{"store azure without its block", func() Account {
			a := azureAcct(AzureAccess{})
			a.Destination.Azure = nil
			return a
		}(), credRules, "destination.azure", "", "required with store azure"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantField(t, c.a.Validate(datasettest.Example(t), c.rules), c.field, c.value, c.reason)
		})
	}
}

// TestNoSecretInTheRecord: a key pasted into any field of the record is
// refused, naming the field, and the error never holds the key.
func TestNoSecretInTheRecord(t *testing.T) {
	t.Parallel()
	const (
		pem       = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n"
		saJSON    = `{"type": "service_account", "private_key_id": "abc", "private_key": "x"}`
		sas       = "sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2027-01-01T00:00:00Z&st=2026-01-01T00:00:00Z&spr=https&sig=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789%2BAbCd%3D"
		acctKey   = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
		connStr   = "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=abc;EndpointSuffix=core.windows.net"
		akid      = "AKIAIOSFODNN7EXAMPLE"
		hmacID    = "GOOG1EXAMPLEACCESSIDABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCD"
		hmacKey   = "bGoa+V7g/yqDXvKRqq+JTFn4uQZbPiQJo4pf9RzJ"
		accessTok = "ya29.a0AfH6SMBx3examplexampleexampleexample"
	)
	cases := []struct {
		field string
		set   func(*Account, string)
		v     string
	}{
		{"destination.gcs.service_account", func(a *Account, v string) { a.Destination.GCS.ServiceAccount = v }, saJSON},
		{"destination.gcs.service_account", func(a *Account, v string) { a.Destination.GCS.ServiceAccount = v }, pem},
		{"destination.gcs.workload_identity_provider", func(a *Account, v string) { a.Destination.GCS.WorkloadIdentityProvider = v }, hmacID},
		{"destination.gcs.service_account", func(a *Account, v string) { a.Destination.GCS.ServiceAccount = v }, hmacKey},
		{"destination.gcs.workload_identity_provider", func(a *Account, v string) { a.Destination.GCS.WorkloadIdentityProvider = v }, accessTok},
		{"destination.prefix", func(a *Account, v string) { a.Destination.Prefix = "x/{{.AccountID}}/" + v }, akid},
		{"destination.endpoint", func(a *Account, v string) { a.Destination.Endpoint = "https://acme.blob.core.windows.net/?" + v }, sas},
		{"name", func(a *Account, v string) { a.Name = v }, acctKey},
		{"tenant_key", func(a *Account, v string) { a.TenantKey = v }, connStr},
	}
	for _, c := range cases {
		a := gcsAcct(GCSAccess{WorkloadIdentityProvider: testProvider, ServiceAccount: testSA})
		c.set(&a, c.v)
		err := a.Validate(datasettest.Example(t), credRules)
		var hit bool
		for _, fe := range Fields(err) {
			if fe.Field == c.field && strings.Contains(fe.Reason, "never holds a secret") {
				hit = true
			}
		}
		if !hit {
			t.Errorf("%s = %.20q…: not refused as a secret: %v", c.field, c.v, err)
		}
		if err != nil && strings.Contains(err.Error(), c.v[min(len(c.v), 6):]) {
			t.Errorf("%s: the error shows the secret: %v", c.field, err)
		}
	}
	// Ordinary values of every kind are not secrets.
	for _, v := range []string{"daybook-AbCdEfGhIjKlMnOpQrStUvWxYz234567", "exports/{{.AccountID}}", "Acme Analytics", "org-1234",
		testProvider, testSA, testTenant, "https://acme.blob.core.windows.net", "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8=="} {
		if what := secretShape(v); what != "" {
			t.Errorf("%q looks like %s", v, what)
		}
	}
}
