package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket/azure"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/destination/azureauth"
	"github.com/daybook-dev/daybook/shared/destination/gcpauth"
	"github.com/daybook-dev/daybook/shared/devkit/azurite"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc/servertest"
	"github.com/daybook-dev/daybook/shared/devkit/tokenfake"
)

// The customer's side of the federations in these tests: a GCS workload
// identity pool trusting the deployment's account, its service account
// bound to the exporter's role, and an Entra ID application whose
// federated credential trusts the exporter's role's AWS tokens.
const (
	fedProvider = "projects/987654321098/locations/global/workloadIdentityPools/daybook/providers/daybook-aws"
	fedSA       = "daybook-writer@acme-data.iam.gserviceaccount.com"
	fedTenant   = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	fedClient   = "0b7e3c1a-2f4d-4e5b-9c8a-1d2e3f4a5b6c"
	// fedRole is the role the exporter's test credentials stand for.
	fedRole = "daybook-exporttest-ExporterFunctionRole-AbC123"
)

// storeTokens are the token endpoints' fakes of one test: Google's STS,
// IAM Credentials and OAuth (plain HTTP), AWS STS's GetWebIdentityToken
// (every other STS call goes on to moto), Entra ID (TLS, as azidentity
// requires).
type storeTokens struct {
	google    *tokenfake.Google
	awsFake   *tokenfake.AWSSTS
	entra     *tokenfake.Entra
	awsSTS    string // the AWS STS fake's URL, the function's STS endpoint
	endpoints destination.TokenEndpoints
}

func newStoreTokens(t *testing.T) *storeTokens {
	t.Helper()
	cfg, _ := deployed(t)
	moto, err := url.Parse(*cfg.BaseEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	// The exporter's own AWS credentials, as the fakes of AWS know them: a
	// session of its role.
	session := "arn:aws:sts::" + motoserver.AccountID + ":assumed-role/" + fedRole + "/exporter"
	keys := map[string]tokenfake.AWSKey{iamcheck.DefaultKey: {Secret: "testing", ARN: session}}
	s := &storeTokens{
		google: &tokenfake.Google{
			Providers: map[string]string{"//iam.googleapis.com/" + fedProvider: motoserver.AccountID},
			AWSKeys:   keys,
			Bindings:  map[string][]string{fedSA: {gcpauth.PrincipalSet(fedProvider, "arn:aws:iam::"+motoserver.AccountID+":role/"+fedRole)}},
		},
		awsFake: &tokenfake.AWSSTS{Keys: keys, AllowedAudiences: []string{azureauth.Audience}, MaxSeconds: 300,
			Others: httputil.NewSingleHostReverseProxy(moto)},
	}
	g := httptest.NewServer(s.google)
	t.Cleanup(g.Close)
	a := httptest.NewServer(s.awsFake)
	t.Cleanup(a.Close)
	s.awsFake.Issuer, s.awsSTS = a.URL, a.URL
	s.entra = &tokenfake.Entra{HTTPClient: a.Client(), Apps: map[string]tokenfake.EntraApp{fedClient: {Tenant: fedTenant, Credentials: []tokenfake.FederatedCredential{
		{Name: "daybook-exporttest", Issuer: a.URL, Subject: "arn:aws:iam::" + motoserver.AccountID + ":role/" + fedRole, Audiences: []string{azureauth.Audience}},
	}}}}
	en := httptest.NewTLSServer(s.entra)
	t.Cleanup(en.Close)
	s.entra.Base = en.URL
	s.endpoints = destination.TokenEndpoints{
		Google:         gcpauth.Endpoints{STS: g.URL + tokenfake.GoogleSTSPath, IAMCredentials: g.URL + tokenfake.GoogleIAMPath, OAuth2: g.URL + tokenfake.GoogleOAuthPath},
		GoogleClient:   g.Client(),
		EntraAuthority: en.URL + "/", EntraTransport: en.Client(),
	}
	return s
}

// putDestinationSecret stores value in Secrets Manager under the
// deployment's destination prefix (DestinationSecretPrefix) and returns
// its ARN.
func putDestinationSecret(e *env, name, value string) string {
	e.t.Helper()
	cfg, _ := deployed(e.t)
	out, err := secretsmanager.NewFromConfig(cfg).CreateSecret(e.ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String("daybook/destinations/" + name), SecretString: aws.String(value)})
	if err != nil {
		e.t.Fatal(err)
	}
	return aws.ToString(out.ARN)
}

// exportWith saves d as the env's destination and exports a day of
// events into it through the exporter as main builds it.
func exportWith(e *env, d account.Destination) {
	e.t.Helper()
	e.acct.Destination = d
	if err := e.led.PutAccount(e.ctx, e.acct); err != nil {
		e.t.Fatal(err)
	}
	e.insert("events", genRows("events", testDay, 40)...)
	if r := e.export("events", testDay); r.State != "completed" {
		e.t.Fatalf("export: %s (%s)", r.State, r.LastError)
	}
}

// gateSaw checks that every request the store's gate saw carried a token
// the fake issued for who, and that there were some.
func gateSaw(t *testing.T, g *tokenfake.Gate, who string) {
	t.Helper()
	seen := g.Requests()
	if len(seen) == 0 {
		t.Fatal("the store saw no request")
	}
	for _, r := range seen {
		if r.Who != who {
			t.Errorf("%s %s carried token %q (issued for %q), want one issued for %s", r.Method, r.Path, r.Token, r.Who, who)
		}
	}
	t.Logf("%d requests to the store, each with a token issued for %s", len(seen), who)
}

// TestExportWithStoreCredentials: the exporter, as main wires it, gets the
// tokens of GCS and Azure destinations from the token endpoints (their
// fakes here, which check what the real ones check) and writes with them:
//
//   - GCS federated: its own AWS credentials signed into Google's STS
//     exchange, then the customer's service account impersonated; every
//     request to the bucket carries that service account's token (a gate
//     in front of fake-gcs-server, which checks no token, refuses any
//     other);
//   - GCS with a service account key from Secrets Manager;
//   - Azure federated: sts:GetWebIdentityToken (through the IAM check:
//     the template's OutboundIdentityTokens statement) as the client
//     assertion of the customer's Entra ID application; every request to
//     the container carries the application's token (Azurite takes OAuth
//     only over HTTPS with tokens of its own making, so a gate checks the
//     token and hands Azurite a SAS of its development account instead);
//   - Azure with a container SAS from Secrets Manager (through the IAM
//     check: DestinationSecrets), sent as the request's query.
func TestExportWithStoreCredentials(t *testing.T) {
	fgcs := servertest.ForTest(t, gcsserver.Start)
	azr := servertest.ForTest(t, azurite.Start)
	key, err := container.NewSharedKeyCredential(azure.EmulatorAccount, azure.EmulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	gcsBucket := func(e *env) string {
		name := strings.Replace(e.acct.Destination.Bucket, "daybook-exports-", "gcs-", 1)
		if err := buckettest.GCSCreateBucket(e.ctx, fgcs, name); err != nil {
			t.Fatal(err)
		}
		return name
	}
	azContainer := func(e *env) string {
		name := strings.Replace(e.acct.Destination.Bucket, "daybook-exports-", "az-", 1)
		c, err := buckettest.AzuriteClient(azr, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(e.ctx, nil); err != nil {
			t.Fatal(err)
		}
		return name
	}

	t.Run("gcs federated", func(t *testing.T) {
		tok := newStoreTokens(t)
		e := newEnv(t, envOpts{tokens: tok})
		gate := &tokenfake.Gate{Issued: tok.google.Issued}
		exportWith(e, account.Destination{StoreKind: account.StoreGCS, Bucket: gcsBucket(e), Endpoint: gate.Serve(t, fgcs.URL),
			GCS: &account.GCSAccess{WorkloadIdentityProvider: fedProvider, ServiceAccount: fedSA}})
		gateSaw(t, gate, fedSA)
		ex := tok.google.Exchanges()
		if len(ex) != 2 {
			t.Fatalf("Google exchanges %+v: want the STS exchange and one impersonation (the token is reused)", ex)
		}
		for k, v := range map[string]string{"audience": "//iam.googleapis.com/" + fedProvider, "subject_token_type": gcpauth.SubjectTokenType,
			"subject": "arn:aws:sts::" + motoserver.AccountID + ":assumed-role/" + fedRole + "/exporter"} {
			if ex[0].Fields[k] != v {
				t.Errorf("STS exchange %s = %q, want %q", k, ex[0].Fields[k], v)
			}
		}
		if ex[1].Fields["service_account"] != fedSA || ex[1].Fields["scope"] != gcpauth.Scope || ex[1].Fields["lifetime"] != "3600s" {
			t.Errorf("impersonation %v", ex[1].Fields)
		}
	})

	t.Run("gcs service account key", func(t *testing.T) {
		tok := newStoreTokens(t)
		e := newEnv(t, envOpts{tokens: tok})
		const email = "daybook-key@acme-data.iam.gserviceaccount.com"
		keyJSON, pub := serviceAccountKey(t, email)
		tok.google.ServiceAccountKeys = map[string]*rsa.PublicKey{email: pub}
		arn := putDestinationSecret(e, e.acct.ID+"-gcs", keyJSON)
		gate := &tokenfake.Gate{Issued: tok.google.Issued}
		exportWith(e, account.Destination{StoreKind: account.StoreGCS, Bucket: gcsBucket(e), Endpoint: gate.Serve(t, fgcs.URL),
			GCS: &account.GCSAccess{CredentialMode: account.CredentialSecret, SecretARN: arn}})
		gateSaw(t, gate, email)
	})

	t.Run("azure federated", func(t *testing.T) {
		tok := newStoreTokens(t)
		e := newEnv(t, envOpts{tokens: tok})
		gate := &tokenfake.Gate{Issued: tok.entra.Issued, Admit: emulatorSAS(t, key)}
		exportWith(e, account.Destination{StoreKind: account.StoreAzure, Bucket: azContainer(e), StorageAccount: azurite.Account, Endpoint: gate.Serve(t, azr.URL),
			Azure: &account.AzureAccess{TenantID: fedTenant, ClientID: fedClient}})
		gateSaw(t, gate, fedClient)
		aws, entra := tok.awsFake.Exchanges(), tok.entra.Exchanges()
		if len(aws) != 1 || len(entra) != 1 {
			t.Fatalf("exchanges: AWS %+v, Entra %+v; want one each (the token is reused)", aws, entra)
		}
		for k, v := range map[string]string{"audience": azureauth.Audience, "duration_seconds": "300", "signing_algorithm": "RS256",
			"sub": "arn:aws:iam::" + motoserver.AccountID + ":role/" + fedRole} {
			if aws[0].Fields[k] != v {
				t.Errorf("GetWebIdentityToken %s = %q, want %q", k, aws[0].Fields[k], v)
			}
		}
		if entra[0].Fields["client_id"] != fedClient || entra[0].Fields["credential"] != "daybook-exporttest" || entra[0].Status != 200 {
			t.Errorf("Entra exchange %+v", entra[0])
		}
	})

	t.Run("azure sas", func(t *testing.T) {
		tok := newStoreTokens(t)
		e := newEnv(t, envOpts{tokens: tok})
		name := azContainer(e)
		q, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(24 * time.Hour).UTC(), ContainerName: name,
			Permissions: (&sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true, Tag: true}).String()}.SignWithSharedKey(key)
		if err != nil {
			t.Fatal(err)
		}
		arn := putDestinationSecret(e, e.acct.ID+"-sas", q.Encode())
		proxy, sent := buckettest.RecordingProxy(t, azr.URL)
		exportWith(e, account.Destination{StoreKind: account.StoreAzure, Bucket: name, StorageAccount: azurite.Account, Endpoint: proxy.URL,
			Azure: &account.AzureAccess{CredentialMode: account.CredentialSecret, SecretARN: arn}})
		all := sent.Matching(func(buckettest.Request) bool { return true })
		if len(all) == 0 {
			t.Fatal("no request to the container")
		}
		for _, r := range all {
			if r.URL.Query().Get("sig") != q.Signature() || r.Header.Get("Authorization") != "" {
				t.Errorf("%s %s: not authenticated by the secret's SAS alone", r.Method, r.URL.Path)
			}
		}
	})
}

// emulatorSAS is a Gate's Admit for Azurite: the request gets a SAS of the
// storage emulator's development account, which Azurite checks.
func emulatorSAS(t *testing.T, key *container.SharedKeyCredential) func(*http.Request) {
	q, err := sas.AccountSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(24 * time.Hour).UTC(),
		Permissions:   (&sas.AccountPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true, Tag: true}).String(),
		ResourceTypes: (&sas.AccountResourceTypes{Service: true, Container: true, Object: true}).String()}.SignWithSharedKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return func(r *http.Request) {
		r.URL.RawQuery = strings.TrimPrefix(r.URL.RawQuery+"&"+q.Encode(), "&")
	}
}

// serviceAccountKey is a new service account key of email, as `gcloud iam
// service-accounts keys create` writes it, and its public key.
func serviceAccountKey(t *testing.T, email string) (string, *rsa.PublicKey) {
	t.Helper()
	pk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(pk)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "acme-data", "private_key_id": "k1", "client_email": email,
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "token_uri": "https://oauth2.googleapis.com/token",
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b), &pk.PublicKey
}
