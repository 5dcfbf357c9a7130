package azureauth_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/destination/azureauth"
	"github.com/daybook-dev/daybook/shared/destination/storekey"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/devkit/tokenfake"
)

var moto *motoserver.Server

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &moto)) }

const (
	deployment = "111122223333"
	role       = "daybook-dev-ExporterFunctionRole-AbC123"
	roleARN    = "arn:aws:iam::" + deployment + ":role/" + role
	akid       = "ASIAEXAMPLEEXPORTER1"
	secretKey  = "exporter-secret-key"
	session    = "exporter-session-token"
	tenant     = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	client     = "0b7e3c1a-2f4d-4e5b-9c8a-1d2e3f4a5b6c"
)

type fakes struct {
	sts   *tokenfake.AWSSTS
	entra *tokenfake.Entra
	fed   *azureauth.Federation
}

// newFakes starts AWS STS (with the issuer's discovery documents) and
// Entra ID on loopback with TLS, the application trusting the exporter's
// role through one federated credential, as the README's setup makes it.
func newFakes(t *testing.T) *fakes {
	t.Helper()
	f := &fakes{sts: &tokenfake.AWSSTS{
		Keys:             map[string]tokenfake.AWSKey{akid: {Secret: secretKey, SessionToken: session, ARN: "arn:aws:sts::" + deployment + ":assumed-role/" + role + "/daybook-dev-exporter"}},
		AllowedAudiences: []string{azureauth.Audience}, MaxSeconds: 300,
	}}
	stsSrv := httptest.NewTLSServer(f.sts)
	t.Cleanup(stsSrv.Close)
	f.sts.Issuer = stsSrv.URL
	f.entra = &tokenfake.Entra{HTTPClient: stsSrv.Client(), Apps: map[string]tokenfake.EntraApp{client: {Tenant: tenant, Credentials: []tokenfake.FederatedCredential{
		{Name: "daybook", Issuer: stsSrv.URL, Subject: roleARN, Audiences: []string{azureauth.Audience}},
	}}}}
	entraSrv := httptest.NewTLSServer(f.entra)
	t.Cleanup(entraSrv.Close)
	f.entra.Base = entraSrv.URL
	api := sts.New(sts.Options{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider(akid, secretKey, session),
		BaseEndpoint: aws.String(stsSrv.URL), HTTPClient: stsSrv.Client()})
	f.fed = &azureauth.Federation{STS: api, AuthorityHost: entraSrv.URL + "/", Transport: entraSrv.Client()}
	return f
}

var federated = account.AzureAccess{TenantID: tenant, ClientID: client}

var tokenOptions = policy.TokenRequestOptions{Scopes: []string{azureauth.Scope}}

// TestFederatedToken: the exporter's AWS web identity token becomes an
// Azure Storage access token for the customer's application, each exchange
// carrying what the real endpoint checks (the fakes refuse anything else),
// and the access token is reused.
func TestFederatedToken(t *testing.T) {
	f := newFakes(t)
	ctx := context.Background()
	c, err := f.fed.Credentials(ctx, federated)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Token.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{azureauth.Scope}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.Token, "fake-storage-access-") || time.Until(tok.ExpiresOn) < 50*time.Minute {
		t.Errorf("token %q expiring %s", tok.Token, tok.ExpiresOn)
	}
	if _, err := c.Token.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{azureauth.Scope}}); err != nil {
		t.Fatal(err)
	}
	aws, entra := f.sts.Exchanges(), f.entra.Exchanges()
	if len(aws) != 1 || len(entra) != 1 {
		t.Fatalf("exchanges: AWS %+v, Entra %+v; want one each (the second token is cached)", aws, entra)
	}
	for _, e := range append(aws, entra...) {
		t.Logf("%s: %d %v", e.Endpoint, e.Status, e.Fields)
	}
	for k, v := range map[string]string{"audience": azureauth.Audience, "signing_algorithm": "RS256", "duration_seconds": "300",
		"sub": roleARN, "region": "eu-west-1"} {
		if aws[0].Fields[k] != v {
			t.Errorf("GetWebIdentityToken %s = %q, want %q", k, aws[0].Fields[k], v)
		}
	}
	// MSAL adds the OpenID scopes to every request.
	if sc := strings.Fields(entra[0].Fields["scope"]); len(sc) == 0 || sc[0] != azureauth.Scope {
		t.Errorf("Entra token scope %q, want %s first", entra[0].Fields["scope"], azureauth.Scope)
	}
	for k, v := range map[string]string{"grant_type": "client_credentials", "client_id": client, "tenant": tenant,
		"client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", "sub": roleARN, "aud": azureauth.Audience,
		"iss": f.sts.Issuer, "credential": "daybook"} {
		if entra[0].Fields[k] != v {
			t.Errorf("Entra token %s = %q, want %q", k, entra[0].Fields[k], v)
		}
	}
}

// TestFederationRefusals: each way the trust can be wrong is refused by the
// endpoint that checks it, in words that name it.
func TestFederationRefusals(t *testing.T) {
	cases := []struct {
		name string
		set  func(*fakes)
		want string
	}{
		{"federated credential names another role", func(f *fakes) {
			f.entra.Apps[client].Credentials[0].Subject = "arn:aws:iam::" + deployment + ":role/other"
		}, "AADSTS70021"},
		{"federated credential names another issuer", func(f *fakes) {
			f.entra.Apps[client].Credentials[0].Issuer = "https://other.tokens.sts.global.api.aws"
		}, "AADSTS70021"},
		{"federated credential with another audience", func(f *fakes) {
			f.entra.Apps[client].Credentials[0].Audiences = []string{"api://other"}
		}, "AADSTS700212"},
		{"application in another tenant", func(f *fakes) {
			f.entra.Apps[client] = tokenfake.EntraApp{Tenant: "11111111-1111-1111-1111-111111111111"}
		}, "AADSTS700016"},
		{"outbound federation not enabled", func(f *fakes) { f.sts.Disabled = true }, "OutboundWebIdentityFederationDisabledException"},
		{"the role may not mint tokens for Entra ID", func(f *fakes) { f.sts.AllowedAudiences = []string{"https://api.example.com"} }, "not authorized to perform: sts:GetWebIdentityToken"},
		{"assertion expired on arrival", func(f *fakes) {
			f.entra.Now = func() time.Time { return time.Now().Add(10 * time.Minute) }
		}, "AADSTS700024"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakes(t)
			c.set(f)
			cr, err := f.fed.Credentials(context.Background(), federated)
			if err == nil {
				_, err = cr.Token.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{azureauth.Scope}})
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

const secretPattern = "arn:aws:secretsmanager:us-east-1:123456789012:secret:daybook/destinations/*"

// TestSASSecret: credential_mode secret reads a container SAS from Secrets
// Manager; one that cannot serve an export is refused, naming what it
// lacks and never the signature.
func TestSASSecret(t *testing.T) {
	ctx := context.Background()
	cfg, err := moto.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sm := secretsmanager.NewFromConfig(cfg)
	put := func(name, v string) string {
		out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(v)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ARN)
	}
	fed := &azureauth.Federation{Keys: storekey.Reader{API: sm, Pattern: secretPattern}}
	const good = "sv=2022-11-02&sr=c&sp=racwdl&se=2027-06-30T00:00:00Z&spr=https&sig=AbCdEf0123456789%2BgHiJ%3D"
	c, err := fed.Credentials(ctx, account.AzureAccess{CredentialMode: account.CredentialSecret, SecretARN: put("daybook/destinations/acme-sas", "?"+good)})
	if err != nil {
		t.Fatal(err)
	}
	if c.SAS == nil || c.SAS.Query != good || !c.SAS.Expiry.Equal(time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)) || c.Token != nil {
		t.Errorf("credentials %+v", c)
	}
	for name, v := range map[string]string{
		"read only":         "sv=2022-11-02&sr=c&sp=rl&se=2027-06-30T00:00:00Z&sig=Zm9vYmFyc2lnbmF0dXJl",
		"one blob":          "sv=2022-11-02&sr=b&sp=racwdl&se=2027-06-30T00:00:00Z&sig=Zm9vYmFyc2lnbmF0dXJl",
		"no expiry":         "sv=2022-11-02&sr=c&sp=racwdl&sig=Zm9vYmFyc2lnbmF0dXJl",
		"http only":         "sv=2022-11-02&sr=c&sp=racwdl&se=2027-06-30T00:00:00Z&spr=http&sig=Zm9vYmFyc2lnbmF0dXJl",
		"a connection text": "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFyc2lnbmF0dXJl",
	} {
		_, err := fed.Credentials(ctx, account.AzureAccess{CredentialMode: account.CredentialSecret, SecretARN: put("daybook/destinations/bad-"+strings.ReplaceAll(name, " ", "-"), v)})
		if !errors.Is(err, azureauth.ErrSecret) || strings.Contains(err.Error(), "Zm9vYmFyc2lnbmF0dXJl") {
			t.Errorf("%s: %v", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
