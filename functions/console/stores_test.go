package main

import (
	"context"
	"encoding/json"
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

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucket/azure"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/destination/azureauth"
	"github.com/daybook-dev/daybook/shared/destination/gcpauth"
	"github.com/daybook-dev/daybook/shared/devkit/azurite"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc/servertest"
	"github.com/daybook-dev/daybook/shared/devkit/tokenfake"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/netguard"
)

// The customer's side of the federations: a GCS workload identity pool
// trusting the deployment's account and a service account bound to the
// console's role; an Entra ID application whose federated credential
// trusts the console's role's AWS tokens.
const (
	consoleProvider = "projects/987654321098/locations/global/workloadIdentityPools/daybook/providers/daybook-aws"
	consoleSA       = "daybook-reader@acme-data.iam.gserviceaccount.com"
	consoleTenant   = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	consoleClient   = "5c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
	// consoleRole is the role the console's test credentials stand for.
	consoleRole = "daybook-consoleact-ConsoleFunctionRole-XyZ789"
)

// consoleTokens are the token endpoints' fakes of one case: Google's STS,
// IAM Credentials and OAuth; AWS STS's GetWebIdentityToken (every other STS
// call goes on to moto); Entra ID (TLS, as azidentity requires).
type consoleTokens struct {
	google    *tokenfake.Google
	awsFake   *tokenfake.AWSSTS
	entra     *tokenfake.Entra
	awsSTS    string
	endpoints destination.TokenEndpoints
}

func newConsoleTokens(t *testing.T) *consoleTokens {
	t.Helper()
	moto, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	session := "arn:aws:sts::" + motoserver.AccountID + ":assumed-role/" + consoleRole + "/console"
	role := "arn:aws:iam::" + motoserver.AccountID + ":role/" + consoleRole
	keys := map[string]tokenfake.AWSKey{iamcheck.DefaultKey: {Secret: "testing", ARN: session}}
	c := &consoleTokens{
		google: &tokenfake.Google{
			Providers: map[string]string{"//iam.googleapis.com/" + consoleProvider: motoserver.AccountID},
			AWSKeys:   keys,
			Bindings:  map[string][]string{consoleSA: {gcpauth.PrincipalSet(consoleProvider, role)}},
		},
		awsFake: &tokenfake.AWSSTS{Keys: keys, AllowedAudiences: []string{azureauth.Audience}, MaxSeconds: 300,
			Others: httputil.NewSingleHostReverseProxy(moto)},
	}
	g := httptest.NewServer(c.google)
	t.Cleanup(g.Close)
	a := httptest.NewServer(c.awsFake)
	t.Cleanup(a.Close)
	c.awsFake.Issuer, c.awsSTS = a.URL, a.URL
	c.entra = &tokenfake.Entra{HTTPClient: a.Client(), Apps: map[string]tokenfake.EntraApp{consoleClient: {Tenant: consoleTenant, Credentials: []tokenfake.FederatedCredential{
		{Name: "daybook-console", Issuer: a.URL, Subject: role, Audiences: []string{azureauth.Audience}},
	}}}}
	en := httptest.NewTLSServer(c.entra)
	t.Cleanup(en.Close)
	c.entra.Base = en.URL
	c.endpoints = destination.TokenEndpoints{
		Google:         gcpauth.Endpoints{STS: g.URL + tokenfake.GoogleSTSPath, IAMCredentials: g.URL + tokenfake.GoogleIAMPath, OAuth2: g.URL + tokenfake.GoogleOAuthPath},
		GoogleClient:   g.Client(),
		EntraAuthority: en.URL + "/", EntraTransport: en.Client(),
	}
	return c
}

// storeCase is one way the console reads a GCS or Azure destination: the
// statement of its role it needs ("" for none), the destination (its
// bucket created, empty), and what to check after the page was read.
type storeCase struct {
	name, id, needs string
	dest            func(t *testing.T, tok *consoleTokens) (account.Destination, func(t *testing.T))
}

// TestDeployedConsoleReadsGCSAndAzure: the console as main builds it
// (build, the deployed function's environment, every AWS call checked
// against its role's policy in template.yaml) opens GCS and Azure
// destinations with the exporter's kinds of credentials, and the partition
// page reads the partition's _SUCCESS, _manifest.json and the day's
// delivery manifest from the bucket:
//
//   - GCS federated: its own AWS identity signed into Google's STS exchange
//     (a fake that checks what Google checks), the customer's service
//     account impersonated with the read-only scope; every request to the
//     bucket (fake-gcs-server behind a gate) carries that token;
//   - Azure federated: sts:GetWebIdentityToken (the console role's
//     OutboundIdentityTokens statement) as the client assertion of the
//     customer's Entra ID application; every request to the container
//     (Azurite behind a gate) carries the application's token;
//   - Azure with a container SAS from Secrets Manager (DestinationSecrets).
//
// Before the console set store credentials, each page said it could not
// read the bucket (no credentials for the store).
func TestDeployedConsoleReadsGCSAndAzure(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	fgcs := servertest.ForTest(t, gcsserver.Start)
	azr := servertest.ForTest(t, azurite.Start)
	key, err := container.NewSharedKeyCredential(azure.EmulatorAccount, azure.EmulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	const gcsName, fedContainer, sasContainer = "gcs-consoleact", "az-consoleact-fed", "az-consoleact-sas"

	cases := []storeCase{{
		name: "gcs federated", id: "acct_consolegcsfedera",
		dest: func(t *testing.T, tok *consoleTokens) (account.Destination, func(*testing.T)) {
			gate := &tokenfake.Gate{Issued: tok.google.Issued}
			return account.Destination{StoreKind: account.StoreGCS, Bucket: gcsName, Endpoint: gate.Serve(t, fgcs.URL),
					GCS: &account.GCSAccess{WorkloadIdentityProvider: consoleProvider, ServiceAccount: consoleSA}},
				func(t *testing.T) {
					gateSaw(t, gate, consoleSA)
					ex := tok.google.Exchanges()
					if len(ex) != 2 {
						t.Fatalf("Google exchanges %+v: want the STS exchange and one impersonation (the token is reused)", ex)
					}
					if ex[0].Fields["audience"] != "//iam.googleapis.com/"+consoleProvider || !strings.Contains(ex[0].Fields["subject"], consoleRole) {
						t.Errorf("STS exchange %v", ex[0].Fields)
					}
					if ex[1].Fields["service_account"] != consoleSA || ex[1].Fields["scope"] != gcpauth.ReadOnlyScope || ex[1].Status != 200 {
						t.Errorf("impersonation %+v: want %s with scope %s", ex[1], consoleSA, gcpauth.ReadOnlyScope)
					}
				}
		},
	}, {
		name: "azure federated", id: "acct_consoleazurefedr", needs: "OutboundIdentityTokens",
		dest: func(t *testing.T, tok *consoleTokens) (account.Destination, func(*testing.T)) {
			gate := &tokenfake.Gate{Issued: tok.entra.Issued, Admit: emulatorSAS(t, key)}
			return account.Destination{StoreKind: account.StoreAzure, Bucket: fedContainer, StorageAccount: azurite.Account, Endpoint: gate.Serve(t, azr.URL),
					Azure: &account.AzureAccess{TenantID: consoleTenant, ClientID: consoleClient}},
				func(t *testing.T) {
					gateSaw(t, gate, consoleClient)
					if aws, entra := tok.awsFake.Exchanges(), tok.entra.Exchanges(); len(aws) != 1 || len(entra) != 1 ||
						aws[0].Fields["audience"] != azureauth.Audience || entra[0].Fields["client_id"] != consoleClient || entra[0].Status != 200 {
						t.Errorf("exchanges: AWS %+v, Entra %+v; want one each", aws, entra)
					}
				}
		},
	}, {
		name: "azure sas", id: "acct_consoleazuresasx", needs: "DestinationSecrets",
		dest: func(t *testing.T, tok *consoleTokens) (account.Destination, func(*testing.T)) {
			q, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(24 * time.Hour).UTC(), ContainerName: sasContainer,
				// The account's one SAS, as the exporter needs it (azureauth refuses one that cannot write).
				Permissions: (&sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true, Tag: true}).String()}.SignWithSharedKey(key)
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := samstacktest.StackWith(t, srv, actionsStage, actionsParams)
			out, err := secretsmanager.NewFromConfig(cfg).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
				Name: aws.String("daybook/destinations/console-sas"), SecretString: aws.String(q.Encode())})
			if err != nil {
				t.Fatal(err)
			}
			return account.Destination{StoreKind: account.StoreAzure, Bucket: sasContainer, StorageAccount: azurite.Account, Endpoint: azr.URL,
				Azure: &account.AzureAccess{CredentialMode: account.CredentialSecret, SecretARN: aws.ToString(out.ARN)}}, func(*testing.T) {}
		},
	}}
	if err := buckettest.GCSCreateBucket(ctx, fgcs, gcsName); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{fedContainer, sasContainer} {
		if err := azurite.CreateContainer(ctx, azr, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			reached := map[string]bool{}
			tok := newConsoleTokens(t)
			con, cfg, outs := deployedConsoleWith(t, now, storeAccess{tokens: tok.endpoints, sts: tok.awsSTS, allowed: func(_ string, sts []string) {
				mu.Lock()
				defer mu.Unlock()
				for _, s := range sts {
					reached[s] = true
				}
			}})
			d, check := c.dest(t, tok)
			acct := account.Account{ID: c.id, Name: "Store Co", Enabled: true, StartDate: civil.MustParse("2026-11-10"), Datasets: []string{"events"}, Destination: d}
			led, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Config{Catalog: datasettest.Example(t), Table: outs["LedgerTableName"], Lease: time.Hour, Stage: actionsStage})
			if err != nil {
				t.Fatal(err)
			}
			if err := led.Accounts().PutAccount(ctx, acct); err != nil {
				t.Fatal(err)
			}
			day := civil.MustParse("2026-11-15")
			runID := "run-" + strings.ReplaceAll(c.name, " ", "-")
			mkey := writePartition(t, emulatorBucket(t, acct, fgcs, azr), acct, commit{day: day, runID: runID, at: now.Add(-time.Hour)})

			res := con.do("GET", "/accounts/"+acct.ID+"/partitions/events/"+day.String(), "", "")
			if res.StatusCode != 200 {
				t.Fatalf("partition page: %d\n%s", res.StatusCode, res.Body)
			}
			for _, want := range []string{runID, d.URI(mkey), "4,321"} {
				if !strings.Contains(res.Body, want) {
					t.Errorf("the partition page lacks %q", want)
				}
			}
			for _, bad := range []string{"could not read", "no credentials", "denied"} {
				if strings.Contains(res.Body, bad) {
					t.Errorf("the partition page says %q", bad)
				}
			}
			if t.Failed() {
				t.Logf("page:\n%s", res.Body)
			}
			check(t)
			mu.Lock()
			defer mu.Unlock()
			if c.needs != "" && !reached[c.needs] {
				t.Errorf("no call reached the console role's statement %s (reached: %v)", c.needs, slices.Sorted(maps.Keys(reached)))
			}
		})
	}
}

// emulatorBucket is acct's bucket straight on its emulator, without the
// gate or the account's credentials (GCS anonymously, Azurite with its
// development account's key): where the test writes what the exporter
// would have.
func emulatorBucket(t *testing.T, acct account.Account, fgcs, azr *serverproc.Process) *bucket.Bucket {
	t.Helper()
	d := account.Destination{StoreKind: acct.Destination.StoreKind, Bucket: acct.Destination.Bucket, StorageAccount: acct.Destination.StorageAccount, Endpoint: fgcs.URL}
	if d.StoreKind == account.StoreAzure {
		d.Endpoint = azr.URL
	}
	direct := &destination.Clients{Endpoints: netguard.Policy{AllowLoopback: true}}
	b, err := direct.Open(context.Background(), acct.ID, d, bucket.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// commit is a partition's generation 1: its day, run and commit time.
type commit struct {
	day   civil.Date
	runID string
	at    time.Time
}

// writePartition writes a committed partition of events (its
// _manifest.json of one 4,321-row file, _SUCCESS, the day's delivery
// manifest) as the exporter commits it, and returns the manifest's key.
func writePartition(t *testing.T, b *bucket.Bucket, acct account.Account, c commit) string {
	t.Helper()
	day, runID := c.day, c.runID
	ctx := context.Background()
	prefix, err := acct.Prefix(actionsStage)
	if err != nil {
		t.Fatal(err)
	}
	m := &manifest.Manifest{FormatVersion: manifest.FormatVersion, Contract: layout.Version, AccountID: acct.ID, Dataset: "events", SchemaVersion: 1,
		Day: day.String(), Generation: 1, RunID: runID, Reason: "scheduled", Attempt: 1, Format: "parquet", Compression: "snappy",
		Files: []manifest.File{{Key: layout.DataKey(prefix, "events", day, 0, ".parquet"), Rows: 4321, Bytes: 98765, CRC32C: "q1w2e3==", SHA256: "ab"}}}
	m.Sum()
	mb, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	mkey := layout.ManifestKey(prefix, "events", day)
	dm, err := json.Marshal(manifest.Delivery{FormatVersion: manifest.DeliveryFormatVersion, Contract: layout.Version, AccountID: acct.ID, Day: day.String(),
		Complete: true, DatasetsDelivered: []manifest.DeliveredDataset{{Name: "events", SchemaVersion: 1, Generation: 1, Mode: "incremental_append",
			Read: "union_all_partitions", Rows: 4321, Files: 1, Manifest: mkey, CommittedAt: c.at}},
		DatasetsMissing: []manifest.MissingDataset{}, UpdatedAt: c.at})
	if err != nil {
		t.Fatal(err)
	}
	for key, body := range map[string][]byte{
		mkey:                                     mb,
		layout.SuccessKey(prefix, "events", day): manifest.NewSuccess(1, runID, mkey, mb, c.at).Encode(),
		layout.DeliveryManifestKey(prefix, day):  dm,
	} {
		if err := b.Put(ctx, key, body, "application/json"); err != nil {
			t.Fatal(err)
		}
	}
	return mkey
}

// gateSaw checks that the store's gate saw requests, each with a token the
// fake issued for who.
func gateSaw(t *testing.T, g *tokenfake.Gate, who string) {
	t.Helper()
	seen := g.Requests()
	if len(seen) == 0 {
		t.Fatal("the console sent no request to the store")
	}
	for _, r := range seen {
		if r.Who != who {
			t.Errorf("%s %s carried token %q (issued for %q), want one issued for %s", r.Method, r.Path, r.Token, r.Who, who)
		}
	}
	t.Logf("%d requests to the store, each with a token issued for %s", len(seen), who)
}

// emulatorSAS is a Gate's Admit for Azurite: the request gets a SAS of the
// storage emulator's development account, which Azurite checks.
func emulatorSAS(t *testing.T, key *container.SharedKeyCredential) func(*http.Request) {
	q, err := sas.AccountSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(24 * time.Hour).UTC(),
		Permissions:   (&sas.AccountPermissions{Read: true, List: true}).String(),
		ResourceTypes: (&sas.AccountResourceTypes{Service: true, Container: true, Object: true}).String()}.SignWithSharedKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return func(r *http.Request) {
		r.URL.RawQuery = strings.TrimPrefix(r.URL.RawQuery+"&"+q.Encode(), "&")
	}
}
