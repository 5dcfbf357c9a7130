package samstack_test

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/destination/azureauth"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// policies returns the statements of each function role of the
// translated template (its inline policies, the stand-alone policies
// attached to it, the AWS managed ones SAM attaches), by role logical id,
// with the console and its actions deployed.
func policies(t *testing.T) map[string][]iamcheck.Statement {
	t.Helper()
	p, err := iamcheck.Load(context.Background(), "../../../template.yaml", iamcheck.Deployment{Account: motoserver.AccountID, Region: motoserver.Region,
		Params: map[string]string{"Stage": "policytest", "DeployConsole": "true", "ConsoleActions": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]iamcheck.Statement{}
	for _, fn := range p.Functions() {
		sts, err := p.Statements(fn)
		if err != nil {
			t.Fatal(err)
		}
		out[p.Role(fn)] = sts
	}
	return out
}

// request is a DynamoDB request on the ledger table as IAM sees it: the
// condition keys it carries.
type request struct {
	action       string
	leadingKey   string
	attributes   []string
	returnValues string
}

const ledgerARN = "arn:aws:dynamodb:" + motoserver.Region + ":" + motoserver.AccountID + ":table/daybook-policytest-ledger"

// allows evaluates r under sts with iamcheck, the evaluator every test's
// calls go through; an operator it does not know fails the test.
func allows(t *testing.T, sts []iamcheck.Statement, r request) (bool, string) {
	t.Helper()
	ctx := map[string][]string{"dynamodb:LeadingKeys": {r.leadingKey}, "dynamodb:Attributes": r.attributes}
	if r.returnValues != "" {
		ctx["dynamodb:ReturnValues"] = []string{r.returnValues}
	}
	d, err := iamcheck.Evaluate(sts, iamcheck.Request{Action: r.action, Resource: ledgerARN, Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed {
		return false, ""
	}
	return true, strings.Join(d.Allowing, ",")
}

// recordingDB is moto's DynamoDB, remembering every UpdateItem of an
// account record as the request IAM would see.
type recordingDB struct {
	*dynamodb.Client
	mu       sync.Mutex
	requests []request
}

func (db *recordingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if pk, _ := in.Key["pk"].(*types.AttributeValueMemberS); pk != nil && pk.Value == "ACCOUNTS" {
		// The names a request touches: its key, and every name its
		// expressions use (the expression builder names them all).
		attrs := []string{"pk", "sk"}
		for _, n := range in.ExpressionAttributeNames {
			attrs = append(attrs, n)
		}
		sort.Strings(attrs)
		rv := string(in.ReturnValues)
		if rv == "" {
			rv = "NONE"
		}
		db.mu.Lock()
		db.requests = append(db.requests, request{"dynamodb:UpdateItem", "ACCOUNTS", slices.Compact(attrs), rv})
		db.mu.Unlock()
	}
	return db.Client.UpdateItem(ctx, in, opts...)
}

func (db *recordingDB) take() []request {
	db.mu.Lock()
	defer db.mu.Unlock()
	out := db.requests
	db.requests = nil
	return out
}

// TestAccountRecordWrites: the exporter and the sweeper may update only
// the wake attributes of account records, and every update the ledger
// makes of them for those functions (recorded against moto) is allowed;
// rewriting an account's destination (doc) or reading the whole record
// back is not.
func TestAccountRecordWrites(t *testing.T) {
	ctx := context.Background()
	roles := policies(t)
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg)
	tables, err := samstacktest.CreateTables(ctx, client, "../../../template.yaml", motoserver.Region, map[string]string{"Stage": "policytest"})
	if err != nil {
		t.Fatal(err)
	}
	db := &recordingDB{Client: client}
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	led, err := ledger.New(db, ledger.Config{Catalog: datasettest.Example(t), Table: tables["LedgerTable"], Lease: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	acct := account.Account{ID: "acct_policytestpolicy", Name: "policy", TimeZone: "UTC", Datasets: []string{"events"},
		StartDate: civil.Of(now).AddDays(-3), Enabled: true,
		Destination: account.Destination{Bucket: "daybook-policy", Format: "parquet"}}
	if err := led.Accounts().PutAccount(ctx, acct); err != nil { // an operator's write
		t.Fatal(err)
	}
	db.take()

	// What the exporter's transitions do to the record: lower the wake time,
	// or bump wake_seq when it is already due.
	if err := led.Schedule().Wake(ctx, acct.ID, now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := led.Schedule().Wake(ctx, acct.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	exporter := db.take()
	// What the sweeper does: set the next wake time (applied, then refused
	// by a stale wake_seq and lowered instead), and repair the index.
	woken, _, err := led.Schedule().WokenAccounts(ctx, ledger.Shard(acct.ID), now, 0)
	if err != nil || len(woken) != 1 {
		t.Fatalf("woken accounts %+v, %v", woken, err)
	}
	if applied, err := led.Schedule().SetNextWake(ctx, woken[0], now.Add(time.Hour), civil.Of(now).AddDays(-1), now.Add(2*time.Minute)); err != nil || !applied {
		t.Fatalf("next wake applied %v, %v", applied, err)
	}
	if applied, err := led.Schedule().SetNextWake(ctx, woken[0], now.Add(30*time.Minute), civil.Date{}, now.Add(2*time.Minute)); err != nil || applied {
		t.Fatalf("a next wake with a stale wake_seq applied %v, %v", applied, err)
	}
	if _, err := client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tables["LedgerTable"]),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ACCOUNTS"}, "sk": &types.AttributeValueMemberS{Value: acct.ID}},
		UpdateExpression: aws.String("REMOVE fleet_shard, fleet_key")}); err != nil {
		t.Fatal(err)
	}
	if res, _, err := led.Schedule().ReconcileWake(ctx); err != nil || res.Added != 1 {
		t.Fatalf("reconcile %+v, %v", res, err)
	}
	sweeper := db.take()
	if len(exporter) < 2 || len(sweeper) < 3 {
		t.Fatalf("recorded %d exporter and %d sweeper updates of the account record", len(exporter), len(sweeper))
	}

	for role, recorded := range map[string][]request{"ExporterFunctionRole": exporter, "SweeperFunctionRole": sweeper} {
		t.Run(role, func(t *testing.T) {
			sts := roles[role]
			for _, r := range recorded {
				if ok, _ := allows(t, sts, r); !ok {
					t.Errorf("the ledger's update %v of an account record is denied", r)
				}
			}
			for _, r := range []request{
				{"dynamodb:UpdateItem", "ACCOUNTS", []string{"pk", "sk", "doc"}, "NONE"},
				{"dynamodb:UpdateItem", "ACCOUNTS", []string{"pk", "sk", "fleet_key", "wake_seq", "doc"}, "NONE"},
				{"dynamodb:UpdateItem", "ACCOUNTS", []string{"pk", "sk", "account_id"}, "NONE"},
				{"dynamodb:UpdateItem", "ACCOUNTS", []string{"pk", "sk", "fleet_key", "wake_seq"}, "ALL_OLD"},
				{"dynamodb:UpdateItem", "ACCOUNTS", []string{"pk", "sk", "fleet_key", "wake_seq"}, "ALL_NEW"},
				{"dynamodb:PutItem", "ACCOUNTS", []string{"pk", "sk", "doc"}, ""},
			} {
				if ok, sid := allows(t, sts, r); ok {
					t.Errorf("%v is allowed by %s", r, sid)
				}
			}
			// Their own items stay writable.
			for _, r := range []request{
				{"dynamodb:UpdateItem", "P#acct_policytestpolicy#events", []string{"pk", "sk", "state", "doc"}, "ALL_NEW"},
				{"dynamodb:UpdateItem", "STATS", []string{"pk", "sk", "exports"}, "NONE"},
				// the claim budget concurrent sweeps share (ledger.ReserveClaims)
				{"dynamodb:UpdateItem", "STATS", []string{"budget_total", "budget_until", "budget_used", "pk", "sk", "updated_at"}, "ALL_NEW"},
				// The event outbox: an event recorded, then marked published.
				{"dynamodb:PutItem", "OB#acct_policytestpolicy#events#2026-11-19", []string{"pk", "sk", "detail"}, ""},
				{"dynamodb:UpdateItem", "OB#acct_policytestpolicy#events#2026-11-19", []string{"pk", "sk", "published_at", "due_key"}, "NONE"},
				// The fleet view: a stale mark (put by a transition that stops a
				// partition; the sweeper's materialization) and the account's
				// summary, refreshed by the sweeper, which removes the mark.
				{"dynamodb:PutItem", "FS#acct_policytestpolicy", []string{"pk", "sk", "account_id", "fleet_shard", "fleet_key"}, ""},
				{"dynamodb:UpdateItem", "FS#acct_policytestpolicy", []string{"pk", "sk", "fleet_shard", "fleet_key"}, "NONE"},
			} {
				if ok, _ := allows(t, sts, r); !ok {
					t.Errorf("%v is denied", r)
				}
			}
		})
	}
}

// TestConsolePolicies: the console reads its own buckets only in this
// deployment's account, and with ConsoleActions it updates only partition
// rows and account records (requeue, enable/disable), never puts an item.
func TestConsolePolicies(t *testing.T) {
	sts := policies(t)["ConsoleFunctionRole"]
	var reads, actions []iamcheck.Statement
	for _, s := range sts {
		switch s.ID {
		case "ManifestsInDirectBuckets":
			reads = append(reads, s)
		case "LedgerActions", "AccountChangeHistory":
			actions = append(actions, s)
		}
	}
	if len(reads) != 1 || len(actions) != 2 {
		t.Fatalf("statements ManifestsInDirectBuckets %d, LedgerActions and AccountChangeHistory %d: want one and two", len(reads), len(actions))
	}
	if c := reads[0].Conditions; len(c) != 1 || c[0].String() != "StringEquals s3:ResourceAccount ["+motoserver.AccountID+"]" {
		t.Errorf("the console's s3:GetObject is conditional on %v, want s3:ResourceAccount this deployment's account", c)
	}
	for _, tt := range []struct {
		r  request
		ok bool
	}{
		{request{"dynamodb:UpdateItem", "P#acct_x#events", []string{"pk", "sk", "state"}, "ALL_OLD"}, true},
		{request{"dynamodb:UpdateItem", "ACCOUNTS", []string{"pk", "sk", "doc", "enabled"}, "NONE"}, true},
		{request{"dynamodb:UpdateItem", "WM#acct_x", []string{"pk", "sk"}, "NONE"}, false},
		{request{"dynamodb:UpdateItem", "STATS", []string{"pk", "sk"}, "NONE"}, false},
		{request{"dynamodb:UpdateItem", "SEED#acct_x", []string{"pk", "sk"}, "NONE"}, false},
		{request{"dynamodb:PutItem", "ACCOUNTS", []string{"pk", "sk", "doc"}, ""}, false},
		// enable/disable: the account's change history and its isolation guards
		{request{"dynamodb:PutItem", "AE#acct_x", []string{"pk", "sk"}, ""}, true},
		{request{"dynamodb:UpdateItem", "GUARDS", []string{"pk", "sk", "owner"}, "NONE"}, true},
		{request{"dynamodb:PutItem", "P#acct_x#events", []string{"pk", "sk"}, ""}, false},
		{request{"dynamodb:PutItem", "GUARDS", []string{"pk", "sk"}, ""}, false},
		// requeue and enable/disable mark the account's fleet summary stale
		// (ledger.staleMark), which the role did not allow before
		{request{"dynamodb:PutItem", "FS#acct_x", []string{"pk", "sk", "account_id", "fleet_shard", "fleet_key"}, ""}, true},
		{request{"dynamodb:UpdateItem", "FS#acct_x", []string{"pk", "sk", "name"}, "NONE"}, false},
	} {
		if ok, sid := allows(t, sts, tt.r); ok != tt.ok {
			t.Errorf("%v allowed %v (by %s), want %v", tt.r, ok, sid, tt.ok)
		}
	}
}

// TestExporterStoreCredentials: the exporter's statements for GCS and Azure
// credentials allow exactly what azureauth requests and storekey reads:
// web identity tokens for Entra ID's audience of at most the lifetime
// azureauth asks for (the tokenfake.AWSSTS the tests use is configured the
// same), and the secrets under the deployment's prefix that
// DESTINATION_SECRET_PATTERN names; evaluated with iamcheck, the evaluator
// every test's calls go through. The console reads GCS and Azure
// destinations with the same credentials: its role allows exactly the
// same.
func TestExporterStoreCredentials(t *testing.T) {
	for _, role := range []string{"ExporterFunctionRole", "ConsoleFunctionRole"} {
		t.Run(role, func(t *testing.T) { storeCredentials(t, policies(t)[role]) })
	}
}

func storeCredentials(t *testing.T, sts []iamcheck.Statement) {
	lifetime := strconv.Itoa(int(azureauth.DefaultAssertionLifetime / time.Second))
	longer := strconv.Itoa(int(azureauth.DefaultAssertionLifetime/time.Second) + 1)
	secret := "arn:aws:secretsmanager:" + motoserver.Region + ":" + motoserver.AccountID + ":secret:"
	for _, tt := range []struct {
		r  iamcheck.Request
		ok bool
	}{
		{iamcheck.Request{Action: "sts:GetWebIdentityToken", Resource: "*", Context: map[string][]string{
			"sts:IdentityTokenAudience": {azureauth.Audience}, "sts:DurationSeconds": {lifetime}}}, true},
		{iamcheck.Request{Action: "sts:GetWebIdentityToken", Resource: "*", Context: map[string][]string{
			"sts:IdentityTokenAudience": {"https://example.com"}, "sts:DurationSeconds": {lifetime}}}, false},
		{iamcheck.Request{Action: "sts:GetWebIdentityToken", Resource: "*", Context: map[string][]string{
			"sts:IdentityTokenAudience": {azureauth.Audience}, "sts:DurationSeconds": {longer}}}, false},
		{iamcheck.Request{Action: "secretsmanager:GetSecretValue", Resource: secret + "daybook/destinations/acme-gcs-AbCdEf"}, true},
		{iamcheck.Request{Action: "secretsmanager:GetSecretValue", Resource: secret + "prod/database-AbCdEf"}, false},
		{iamcheck.Request{Action: "secretsmanager:GetSecretValue", Resource: "arn:aws:secretsmanager:" + motoserver.Region + ":999999999999:secret:daybook/destinations/x"}, false},
	} {
		d, err := iamcheck.Evaluate(sts, tt.r)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != tt.ok {
			t.Errorf("%s: allowed %v (by %v), want %v", tt.r, d.Allowed, d.Allowing, tt.ok)
		}
	}
}
