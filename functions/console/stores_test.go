package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/destination/gcpauth"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc/servertest"
	"github.com/daybook-dev/daybook/shared/devkit/tokenfake"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/netguard"
)

// The customer's side of the GCS federation: a workload identity pool
// trusting the deployment's account, and a service account bound to the
// console's role.
const (
	consoleProvider = "projects/987654321098/locations/global/workloadIdentityPools/daybook/providers/daybook-aws"
	consoleSA       = "daybook-reader@acme-data.iam.gserviceaccount.com"
	consoleRole     = "daybook-consoleact-ConsoleFunctionRole-XyZ789"
)

// TestDeployedConsoleReadsGCSWithFederation: the console as main builds it
// (build, the deployed function's environment, every AWS call checked
// against its role's policy) opens a GCS destination with workload
// identity federation, as the exporter does: its own AWS identity signed
// into Google's STS exchange (a fake that checks what Google checks), the
// customer's service account impersonated with the read-only scope, and
// the partition page reads the partition's _SUCCESS, _manifest.json and
// the day's delivery manifest from the bucket (fake-gcs-server, behind a
// gate that refuses any request without a token the fake issued for that
// service account). Before the console set store credentials, the page
// said it could not read the bucket (no credentials for the store).
func TestDeployedConsoleReadsGCSWithFederation(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	fgcs := servertest.ForTest(t, gcsserver.Start)

	session := "arn:aws:sts::" + motoserver.AccountID + ":assumed-role/" + consoleRole + "/console"
	google := &tokenfake.Google{
		Providers: map[string]string{"//iam.googleapis.com/" + consoleProvider: motoserver.AccountID},
		AWSKeys:   map[string]tokenfake.AWSKey{iamcheck.DefaultKey: {Secret: "testing", ARN: session}},
		Bindings:  map[string][]string{consoleSA: {gcpauth.PrincipalSet(consoleProvider, "arn:aws:iam::"+motoserver.AccountID+":role/"+consoleRole)}},
	}
	g := httptest.NewServer(google)
	t.Cleanup(g.Close)
	tokens := destination.TokenEndpoints{
		Google:       gcpauth.Endpoints{STS: g.URL + tokenfake.GoogleSTSPath, IAMCredentials: g.URL + tokenfake.GoogleIAMPath, OAuth2: g.URL + tokenfake.GoogleOAuthPath},
		GoogleClient: g.Client(),
	}
	c, cfg, outs := deployedConsoleWith(t, now, tokens)

	const name = "gcs-consoleact"
	if err := buckettest.GCSCreateBucket(ctx, fgcs, name); err != nil {
		t.Fatal(err)
	}
	gate := &tokenfake.Gate{Issued: google.Issued}
	acct := account.Account{ID: "acct_consolegcsfedera", Name: "GCS Co", Enabled: true, StartDate: civil.MustParse("2026-11-10"),
		Datasets: []string{"events"}, Destination: account.Destination{StoreKind: account.StoreGCS, Bucket: name, Endpoint: gate.Serve(t, fgcs.URL),
			GCS: &account.GCSAccess{WorkloadIdentityProvider: consoleProvider, ServiceAccount: consoleSA}}}
	led, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Config{Table: outs["LedgerTableName"], Lease: time.Hour, Stage: actionsStage})
	if err != nil {
		t.Fatal(err)
	}
	if err := led.PutAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}

	// The partition as the exporter commits it, written straight to the
	// emulator (no gate).
	day := civil.MustParse("2026-11-15")
	prefix, err := acct.Prefix(actionsStage)
	if err != nil {
		t.Fatal(err)
	}
	direct := &destination.Clients{Endpoints: netguard.Policy{AllowLoopback: true}}
	b, err := direct.Open(ctx, acct.ID, account.Destination{StoreKind: account.StoreGCS, Bucket: name, Endpoint: fgcs.URL}, bucket.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const runID = "run-gcs-console-1"
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
			Read: "union_all_partitions", Rows: 4321, Files: 1, Manifest: mkey, CommittedAt: now.Add(-time.Hour)}},
		DatasetsMissing: []manifest.MissingDataset{}, UpdatedAt: now.Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for key, body := range map[string][]byte{
		mkey:                                     mb,
		layout.SuccessKey(prefix, "events", day): manifest.NewSuccess(1, runID, mkey, mb, now.Add(-time.Hour)).Encode(),
		layout.DeliveryManifestKey(prefix, day):  dm,
	} {
		if err := b.Put(ctx, key, body, "application/json"); err != nil {
			t.Fatal(err)
		}
	}

	res := c.do("GET", "/accounts/"+acct.ID+"/partitions/events/"+day.String(), "", "")
	if res.StatusCode != 200 {
		t.Fatalf("partition page: %d\n%s", res.StatusCode, res.Body)
	}
	for _, want := range []string{runID, "gs://" + name + "/" + mkey, "4,321"} {
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

	seen := gate.Requests()
	if len(seen) == 0 {
		t.Fatal("the console sent no request to the bucket")
	}
	for _, r := range seen {
		if r.Who != consoleSA {
			t.Errorf("%s %s carried token %q (issued for %q), want one of %s", r.Method, r.Path, r.Token, r.Who, consoleSA)
		}
	}
	ex := google.Exchanges()
	if len(ex) != 2 {
		t.Fatalf("Google exchanges %+v: want the STS exchange and one impersonation (the token is reused)", ex)
	}
	for k, v := range map[string]string{"audience": "//iam.googleapis.com/" + consoleProvider, "subject": session} {
		if ex[0].Fields[k] != v {
			t.Errorf("STS exchange %s = %q, want %q", k, ex[0].Fields[k], v)
		}
	}
	if ex[1].Fields["service_account"] != consoleSA || ex[1].Fields["scope"] != gcpauth.ReadOnlyScope || ex[1].Status != 200 {
		t.Errorf("impersonation %+v: want %s with scope %s", ex[1], consoleSA, gcpauth.ReadOnlyScope)
	}
	t.Logf("%d requests to the bucket, each with a read-only token of %s", len(seen), consoleSA)
}
