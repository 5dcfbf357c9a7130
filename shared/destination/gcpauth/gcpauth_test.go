package gcpauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/destination/gcpauth"
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
	caller     = "arn:aws:sts::" + deployment + ":assumed-role/" + role + "/daybook-dev-exporter"
	provider   = "projects/987654321098/locations/global/workloadIdentityPools/daybook/providers/daybook-aws"
	audience   = "//iam.googleapis.com/" + provider
	sa         = "daybook-writer@acme-data.iam.gserviceaccount.com"
	akid       = "ASIAEXAMPLEEXPORTER1"
	secretKey  = "exporter-secret-key"
	session    = "exporter-session-token"
)

// roleSet is the principal the customer binds roles/iam.workloadIdentityUser
// to: every session of the exporter's role, through the provider's
// attribute.aws_role.
const roleSet = "principalSet://iam.googleapis.com/projects/987654321098/locations/global/workloadIdentityPools/daybook/attribute.aws_role/arn:aws:sts::" + deployment + ":assumed-role/" + role

func fakeGoogle(t *testing.T) (*tokenfake.Google, *gcpauth.Federation) {
	t.Helper()
	g := &tokenfake.Google{
		Providers: map[string]string{audience: deployment},
		AWSKeys:   map[string]tokenfake.AWSKey{akid: {Secret: secretKey, SessionToken: session, ARN: caller}},
		Bindings:  map[string][]string{sa: {roleSet}},
	}
	s := httptest.NewServer(g)
	t.Cleanup(s.Close)
	return g, &gcpauth.Federation{
		AWS:        credentials.NewStaticCredentialsProvider(akid, secretKey, session),
		Region:     "eu-west-1",
		HTTPClient: s.Client(),
		Endpoints:  gcpauth.Endpoints{STS: s.URL + tokenfake.GoogleSTSPath, IAMCredentials: s.URL + tokenfake.GoogleIAMPath, OAuth2: s.URL + tokenfake.GoogleOAuthPath},
		Lifetime:   30 * time.Minute,
	}
}

var federated = account.GCSAccess{WorkloadIdentityProvider: provider, ServiceAccount: sa}

// TestFederatedToken: daybook's AWS identity becomes a token of the
// customer's service account through the two exchanges, each sending what
// Google checks (the fake refuses anything else), and the token is reused
// until its refresh margin.
func TestFederatedToken(t *testing.T) {
	g, f := fakeGoogle(t)
	start := time.Now()
	ts, err := f.Credentials(context.Background(), federated)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.AccessToken, "fake-gcs-access-") {
		t.Errorf("access token %q is not the impersonated one", tok.AccessToken)
	}
	if life := tok.Expiry.Sub(start); life < 29*time.Minute || life > 31*time.Minute {
		t.Errorf("token lives %s, want the configured 30m", life)
	}
	if _, err := ts.Token(); err != nil {
		t.Fatal(err)
	}
	ex := g.Exchanges()
	if len(ex) != 2 {
		t.Fatalf("%d exchanges, want 2 (the second Token is cached): %+v", len(ex), ex)
	}
	for _, e := range ex {
		t.Logf("%s: %d %v", e.Endpoint, e.Status, e.Fields)
	}
	want := []map[string]string{
		{"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "audience": audience,
			"subject_token_type": gcpauth.SubjectTokenType, "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
			"scope": "https://www.googleapis.com/auth/cloud-platform", "subject": caller, "aws_region": "eu-west-1",
			"attribute.aws_role": "arn:aws:sts::" + deployment + ":assumed-role/" + role, "expires_in": "3600"},
		{"service_account": sa, "scope": gcpauth.Scope, "lifetime": "1800s"},
	}
	for i, w := range want {
		if ex[i].Status != 200 {
			t.Errorf("%s: %d %s", ex[i].Endpoint, ex[i].Status, ex[i].Problem)
		}
		for k, v := range w {
			if ex[i].Fields[k] != v {
				t.Errorf("%s: %s = %q, want %q", ex[i].Endpoint, k, ex[i].Fields[k], v)
			}
		}
	}
}

// TestFederationRefusals: what the customer or the deployment got wrong
// reaches daybook as the endpoint's refusal, which names it.
func TestFederationRefusals(t *testing.T) {
	cases := []struct {
		name  string
		set   func(g *tokenfake.Google, f *gcpauth.Federation)
		want  string
		words string // what gcpauth.Explain says of it
	}{
		{"service account not bound", func(g *tokenfake.Google, _ *gcpauth.Federation) { g.Bindings = nil },
			"iam.serviceAccounts.getAccessToken", "gcloud iam service-accounts add-iam-policy-binding " + sa + " --role=roles/iam.workloadIdentityUser --member=\"" + roleSet + "\""},
		{"provider trusts another AWS account", func(g *tokenfake.Google, _ *gcpauth.Federation) { g.Providers[audience] = "444455556666" },
			"unauthorized_client", "its --account-id must be this deployment's AWS account"},
		{"no such provider", func(g *tokenfake.Google, _ *gcpauth.Federation) { delete(g.Providers, audience) },
			"invalid_target", "the workload identity provider " + provider + " does not exist"},
		{"a signature AWS would refuse", func(_ *tokenfake.Google, f *gcpauth.Federation) {
			f.AWS = credentials.NewStaticCredentialsProvider(akid, "another-secret", session)
		}, "SignatureDoesNotMatch", "Google's STS refused daybook's signed AWS request"},
		{"a lifetime over an hour", func(_ *tokenfake.Google, f *gcpauth.Federation) { f.Lifetime = 2 * time.Hour }, "want 1m to 1h", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, f := fakeGoogle(t)
			c.set(g, f)
			cr, err := f.Credentials(context.Background(), federated)
			if err == nil {
				_, err = cr.Token()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			words := gcpauth.Explain(err, gcpauth.Target{Bucket: "acme-exports", Access: federated, Principal: gcpauth.PrincipalSet(provider, "arn:aws:iam::"+deployment+":role/"+role)})
			if !strings.Contains(words, c.words) {
				t.Errorf("Explain = %q, want it to contain %q", words, c.words)
			}
		})
	}
}

const secretPattern = "arn:aws:secretsmanager:us-east-1:123456789012:secret:daybook/destinations/*"

func putSecret(t *testing.T, name, value string) string {
	t.Helper()
	ctx := context.Background()
	cfg, err := moto.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := secretsmanager.NewFromConfig(cfg).CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.ARN)
}

func keyReader(t *testing.T) storekey.Reader {
	t.Helper()
	cfg, err := moto.Config(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return storekey.Reader{API: secretsmanager.NewFromConfig(cfg), Pattern: secretPattern}
}

// TestSecretKeys: credential_mode secret reads the key from Secrets
// Manager: a service account key is exchanged at the OAuth endpoint (never
// at the token_uri it names); an HMAC key and anything else are refused
// without showing the secret.
func TestSecretKeys(t *testing.T) {
	g, f := fakeGoogle(t)
	f.Keys = keyReader(t)
	pk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(pk)
	if err != nil {
		t.Fatal(err)
	}
	const email = "daybook-key@acme-data.iam.gserviceaccount.com"
	g.ServiceAccountKeys = map[string]*rsa.PublicKey{email: &pk.PublicKey}
	key, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "acme-data", "private_key_id": "k1", "client_email": email,
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"token_uri":   "http://169.254.169.254/steal", // ignored: tokens come from Google's endpoint
	})
	ctx := context.Background()
	ts, err := f.Credentials(ctx, account.GCSAccess{CredentialMode: account.CredentialSecret, SecretARN: putSecret(t, "daybook/destinations/acme-sa", string(key))})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	ex := g.Exchanges()
	if !strings.HasPrefix(tok.AccessToken, "fake-sa-key-access-") || len(ex) != 1 || ex[0].Fields["iss"] != email || ex[0].Fields["scope"] != gcpauth.Scope {
		t.Errorf("token %q, exchanges %+v", tok.AccessToken, ex)
	}
	// A reader (the console) asks for the read-only scope with the same key.
	ro := *f
	ro.Scope = gcpauth.ReadOnlyScope
	ts, err = ro.Credentials(ctx, account.GCSAccess{CredentialMode: account.CredentialSecret, SecretARN: putSecret(t, "daybook/destinations/acme-sa-ro", string(key))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Token(); err != nil {
		t.Fatal(err)
	}
	if ex := g.Exchanges(); len(ex) != 2 || ex[1].Fields["scope"] != gcpauth.ReadOnlyScope || ex[1].Status != 200 {
		t.Errorf("the reader's exchange %+v: want scope %s", ex[len(ex)-1], gcpauth.ReadOnlyScope)
	}

	// An HMAC key signs the XML API only; daybook writes through the JSON
	// API: refused, saying what to give instead, never showing the secret.
	hmac := `{"kind": "storage#hmacKey", "metadata": {"accessId": "GOOG1EABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRSTU", "serviceAccountEmail": "x@acme-data.iam.gserviceaccount.com", "state": "ACTIVE"}, "secret": "bGoa+V7g/yqDXvKRqq+JTFn4uQZbPiQJo4pf9RzJ"}`
	_, err = f.Credentials(ctx, account.GCSAccess{CredentialMode: account.CredentialSecret, SecretARN: putSecret(t, "daybook/destinations/acme-hmac", hmac)})
	if !errors.Is(err, gcpauth.ErrSecret) || !strings.Contains(err.Error(), "HMAC key signs Cloud Storage's XML API only") ||
		!strings.Contains(err.Error(), "service account key") || strings.Contains(err.Error(), "bGoa") {
		t.Errorf("an HMAC key: %v", err)
	}

	external := `{"type": "external_account", "audience": "x", "credential_source": {"file": "/proc/self/environ"}}`
	_, err = f.Credentials(ctx, account.GCSAccess{CredentialMode: account.CredentialSecret, SecretARN: putSecret(t, "daybook/destinations/acme-ext", external)})
	if !errors.Is(err, gcpauth.ErrSecret) || !strings.Contains(err.Error(), `type "external_account"`) || strings.Contains(err.Error(), "environ") {
		t.Errorf("an external_account credential: %v", err)
	}
	_, err = f.Credentials(ctx, account.GCSAccess{CredentialMode: account.CredentialSecret, SecretARN: putSecret(t, "daybook/destinations/acme-text", "GOOG1E secret in plain text")})
	if !errors.Is(err, gcpauth.ErrSecret) || strings.Contains(err.Error(), "plain text") {
		t.Errorf("a plain text secret: %v", err)
	}
	// Outside the deployment's pattern: refused before any call.
	_, err = f.Credentials(ctx, account.GCSAccess{CredentialMode: account.CredentialSecret, SecretARN: putSecret(t, "prod/database", `{"type": "service_account"}`)})
	if !errors.Is(err, storekey.ErrOutside) {
		t.Errorf("a secret outside the pattern: %v", err)
	}
	_, err = f.Credentials(ctx, account.GCSAccess{CredentialMode: account.CredentialSecret, SecretARN: "arn:aws:secretsmanager:us-east-1:123456789012:secret:daybook/destinations/gone-AbCdEf"})
	if !errors.Is(err, storekey.ErrMissing) {
		t.Errorf("a missing secret: %v", err)
	}
}
