package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
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
	"github.com/daybook-dev/daybook/shared/ledger"
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
// events into it through the exporter as main builds it, returning the
// partition's row.
func exportWith(e *env, d account.Destination) ledger.Row {
	e.t.Helper()
	e.acct.Destination = d
	if err := e.led.Accounts().PutAccount(e.ctx, e.acct); err != nil {
		e.t.Fatal(err)
	}
	e.insert("events", genRows("events", testDay, 40)...)
	c := e.claim("events", testDay, "")
	_ = e.process(jobBody(e.t, c)) // a failed export fails the row; the caller looks
	return e.row("events", testDay)
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

// credCase is one way the exporter authenticates to a GCS or Azure
// destination: the statement of the exporter's role it needs ("" for
// none), the destination, and what to check after the export.
type credCase struct {
	name  string
	needs string
	dest  func(t *testing.T, e *env, tok *storeTokens) (account.Destination, func(t *testing.T))
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
//   - GCS with a service account key from Secrets Manager (through the
//     IAM check: the template's DestinationSecrets statement);
//   - Azure federated: sts:GetWebIdentityToken (through the IAM check:
//     OutboundIdentityTokens, its audience and lifetime conditions) as the
//     client assertion of the customer's Entra ID application; every
//     request to the container carries the application's token (Azurite
//     takes OAuth only over HTTPS with tokens of its own making, so a gate
//     checks the token and hands Azurite a SAS of its development account
//     instead);
//   - Azure with a container SAS from Secrets Manager (DestinationSecrets),
//     sent as the request's query.
//
// Each case's calls reach the statement it needs, and the same export
// with the template's policy lacking that statement fails, denied.
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

	cases := []credCase{{
		name: "gcs federated",
		dest: func(t *testing.T, e *env, tok *storeTokens) (account.Destination, func(*testing.T)) {
			gate := &tokenfake.Gate{Issued: tok.google.Issued}
			name, at := gcsBucket(e), gate.Serve(t, fgcs.URL)
			return account.Destination{StoreKind: account.StoreGCS, Bucket: name, Endpoint: at,
					GCS: &account.GCSAccess{WorkloadIdentityProvider: fedProvider, ServiceAccount: fedSA}},
				func(t *testing.T) {
					gateSaw(t, gate, fedSA)
					gateRefuses(t, at, fgcs.URL, "/storage/v1/b/"+name+"/o")
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
				}
		},
	}, {
		name: "gcs service account key", needs: "DestinationSecrets",
		dest: func(t *testing.T, e *env, tok *storeTokens) (account.Destination, func(*testing.T)) {
			const email = "daybook-key@acme-data.iam.gserviceaccount.com"
			keyJSON, pub := serviceAccountKey(t, email)
			tok.google.ServiceAccountKeys = map[string]*rsa.PublicKey{email: pub}
			arn := putDestinationSecret(e, e.acct.ID+"-gcs", keyJSON)
			gate := &tokenfake.Gate{Issued: tok.google.Issued}
			return account.Destination{StoreKind: account.StoreGCS, Bucket: gcsBucket(e), Endpoint: gate.Serve(t, fgcs.URL),
					GCS: &account.GCSAccess{CredentialMode: account.CredentialSecret, SecretARN: arn}},
				func(t *testing.T) { gateSaw(t, gate, email) }
		},
	}, {
		name: "azure federated", needs: "OutboundIdentityTokens",
		dest: func(t *testing.T, e *env, tok *storeTokens) (account.Destination, func(*testing.T)) {
			gate := &tokenfake.Gate{Issued: tok.entra.Issued, Admit: emulatorSAS(t, key)}
			name, at := azContainer(e), gate.Serve(t, azr.URL)
			return account.Destination{StoreKind: account.StoreAzure, Bucket: name, StorageAccount: azurite.Account, Endpoint: at,
					Azure: &account.AzureAccess{TenantID: fedTenant, ClientID: fedClient}},
				func(t *testing.T) {
					gateSaw(t, gate, fedClient)
					gateRefuses(t, at, azr.URL+"", "/"+azurite.Account+"/"+name+"?restype=container&comp=list&"+emulatorSASQuery(t, key))
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
				}
		},
	}, {
		name: "azure sas", needs: "DestinationSecrets",
		dest: func(t *testing.T, e *env, tok *storeTokens) (account.Destination, func(*testing.T)) {
			name := azContainer(e)
			q, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(24 * time.Hour).UTC(), ContainerName: name,
				Permissions: (&sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true, Tag: true}).String()}.SignWithSharedKey(key)
			if err != nil {
				t.Fatal(err)
			}
			arn := putDestinationSecret(e, e.acct.ID+"-sas", q.Encode())
			proxy, sent := buckettest.RecordingProxy(t, azr.URL)
			return account.Destination{StoreKind: account.StoreAzure, Bucket: name, StorageAccount: azurite.Account, Endpoint: proxy.URL,
					Azure: &account.AzureAccess{CredentialMode: account.CredentialSecret, SecretARN: arn}},
				func(t *testing.T) {
					all := sent.Matching(func(buckettest.Request) bool { return true })
					if len(all) == 0 {
						t.Fatal("no request to the container")
					}
					for _, r := range all {
						if r.URL.Query().Get("sig") != q.Signature() || r.Header.Get("Authorization") != "" {
							t.Errorf("%s %s: not authenticated by the secret's SAS alone", r.Method, r.URL.Path)
						}
					}
				}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			reached := map[string]bool{}
			tok := newStoreTokens(t)
			e := newEnv(t, envOpts{tokens: tok, allowed: func(action string, sts []string) {
				mu.Lock()
				defer mu.Unlock()
				for _, s := range sts {
					reached[s] = true
				}
			}})
			d, check := c.dest(t, e, tok)
			if r := exportWith(e, d); r.State != ledger.StateCompleted {
				t.Fatalf("export: %s (%s)", r.State, r.LastError)
			}
			check(t)
			mu.Lock()
			defer mu.Unlock()
			if c.needs != "" && !reached[c.needs] {
				t.Errorf("no call reached the exporter role's statement %s (reached: %v)", c.needs, slices.Sorted(maps.Keys(reached)))
			}
		})
		if c.needs == "" {
			continue
		}
		t.Run(c.name+" without "+c.needs, func(t *testing.T) {
			var mu sync.Mutex
			var denied []string
			tok := newStoreTokens(t)
			e := newEnv(t, envOpts{tokens: tok, without: c.needs, denied: func(msg string) {
				mu.Lock()
				defer mu.Unlock()
				denied = append(denied, msg)
			}})
			d, _ := c.dest(t, e, tok)
			if r := exportWith(e, d); r.State == ledger.StateCompleted {
				t.Fatalf("the export completed with a policy lacking %s", c.needs)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(denied) == 0 {
				t.Fatalf("the export failed, but no call was denied")
			}
			t.Logf("denied: %s", denied[0])
		})
	}
}

// gateRefuses checks that the gate at gate answers path 401 without a
// token and with a token the fakes never issued, where the emulator
// behind it (target) answers the same request 200.
func gateRefuses(t *testing.T, gate, target, path string) {
	t.Helper()
	get := func(base, token string) int {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(target, ""); got != http.StatusOK {
		t.Fatalf("the emulator answers GET %s %d, want 200", path, got)
	}
	for _, token := range []string{"", "fake-gcs-access-999", "made-up"} {
		if got := get(gate, token); got != http.StatusUnauthorized {
			t.Errorf("the gate answers GET %s with token %q %d, want 401", path, token, got)
		}
	}
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

// emulatorSASQuery is an account SAS of the storage emulator's
// development account, as a query.
func emulatorSASQuery(t *testing.T, key *container.SharedKeyCredential) string {
	r := &http.Request{URL: &url.URL{}}
	emulatorSAS(t, key)(r)
	return r.URL.RawQuery
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
