package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// srv is the package's moto_server; the command tests share one deployed
// stack (stage clitest). TestConsoleInABrowser starts its own with
// daybook-dev local up, as a user would.
var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

// stack is the deployed template as the command tests see it.
type stack struct {
	cfg     aws.Config
	outputs map[string]string
	envFile string // the env.json `make local-up` would write for it
	// catalog, if set, is the deployment's catalog the test's commands
	// and ledgers read (the shipped example otherwise).
	catalog *dataset.Set
}

var (
	stackOnce sync.Once
	theStack  stack
	nameSeq   atomic.Int64
)

func deployed(t *testing.T) stack {
	t.Helper()
	// With the web console, as a deployment that has one: its role
	// (ConsoleRoleArn) is in what --stack and the env file read.
	cfg, outs := samstacktest.StackWith(t, srv, "clitest", map[string]string{"DeployConsole": "true"})
	stackOnce.Do(func() {
		dir, err := os.MkdirTemp("", "daybook-clitest-")
		if err != nil {
			panic(err)
		}
		vars := motoEnv(srv.URL)
		vars["DAYBOOK_STAGE"] = "clitest"
		for out, v := range stackOutputVars {
			if outs[out] != "" {
				vars[v] = outs[out]
			}
		}
		b, _ := json.Marshal(map[string]map[string]string{"ExporterFunction": vars})
		envFile := filepath.Join(dir, "env.json")
		if err := os.WriteFile(envFile, b, 0o644); err != nil {
			panic(err)
		}
		theStack = stack{cfg: cfg, outputs: outs, envFile: envFile}
	})
	// account put tests an enabled account's destination: the accounts
	// writeAccount makes write into this bucket.
	theStack.createBucket(t, "daybook-exports-clitest")
	return theStack
}

// motoEnv is what daybook-dev gives a local function besides the stack's
// values: moto's endpoint and region, and test credentials.
func motoEnv(url string) map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL": url, "AWS_REGION": motoserver.Region, "AWS_DEFAULT_REGION": motoserver.Region,
		"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
	}
}

// ledgerAt is a ledger on the test stack with a fixed clock.
func (s stack) ledgerAt(t *testing.T, now time.Time, maxAttempts int) *ledger.Ledger {
	t.Helper()
	cat := s.catalog
	if cat == nil {
		cat = datasettest.Example(t)
	}
	l, err := ledger.New(dynamodb.NewFromConfig(s.cfg), ledger.Config{Catalog: cat,
		Table: s.outputs["LedgerTableName"], Lease: 20 * time.Minute, MaxAttempts: maxAttempts, Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// run runs a command against the test stack.
func (s stack) run(t *testing.T, a *app, args ...string) result {
	t.Helper()
	if s.catalog != nil {
		a.catalog = s.catalog
	}
	return execute(t, a, append(args, "--env-file", s.envFile)...)
}

// uniqueName is an account name no other test (or earlier run on this
// server) uses.
func uniqueName(t *testing.T) string {
	return fmt.Sprintf("%s #%d", t.Name(), nameSeq.Add(1))
}

// writeAccount writes an account file for `account put`.
func writeAccount(t *testing.T, dir string, fields map[string]any) string {
	t.Helper()
	doc := map[string]any{
		"name": uniqueName(t), "enabled": true, "start_date": "2026-11-01", "datasets": []string{"events"},
		"destination": map[string]any{"bucket": "daybook-exports-clitest"},
	}
	for k, v := range fields {
		doc[k] = v
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	p := filepath.Join(dir, fmt.Sprintf("account-%d.json", nameSeq.Add(1)))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// newAccount registers an account through the CLI and returns it.
func (s stack) newAccount(t *testing.T, fields map[string]any) account.Account {
	t.Helper()
	a, _, _ := testApp(t)
	r := s.run(t, a, "account", "put", "--file", writeAccount(t, t.TempDir(), fields))
	if r.code != 0 {
		t.Fatalf("account put: exit %d\n%s", r.code, r.stderr)
	}
	var acct account.Account
	if err := json.Unmarshal([]byte(r.stdout), &acct); err != nil {
		t.Fatal(err)
	}
	return acct
}

func (s stack) createBucket(t *testing.T, name string) {
	t.Helper()
	if _, err := awsclient.NewS3(s.cfg).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil && !strings.Contains(err.Error(), "BucketAlready") {
		t.Fatal(err)
	}
}

// purge empties a queue.
func (s stack) purge(t *testing.T, url string) {
	t.Helper()
	if _, err := sqs.NewFromConfig(s.cfg).PurgeQueue(context.Background(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
}

// accountsNamed counts the stored accounts with a name.
func (s stack) accountsNamed(t *testing.T, name string) int {
	t.Helper()
	all, err := s.ledgerAt(t, testNow, 6).Accounts().ListAccounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range all {
		if a.Name == name {
			n++
		}
	}
	return n
}

func ledgerClient(s stack) *dynamodb.Client { return dynamodb.NewFromConfig(s.cfg) }
