package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/destination/storeaccess"
	"github.com/daybook-dev/daybook/shared/devkit/azurite"
	"github.com/daybook-dev/daybook/shared/devkit/buckettest"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc/servertest"
)

// TestAccountOnGCSAndAzure: account put of a GCS or Azure destination
// (bucket names outside the S3 pattern of daybook's own role) prints the
// commands the customer runs in their cloud, exactly storeaccess's
// CustomerSetup for this deployment's exporter role and, since the stack
// deploys the console, its console role (federated, the customer trusts
// both; read from the env file or the stack's outputs with --stack, and
// without CONSOLE_ROLE_ARN the exporter's alone); account test runs the
// store's connection test through its own API on each store (here
// fake-gcs-server and Azurite, reached without credentials), every step
// passing and naming the store's permission, and says so when the
// container does not exist.
func TestAccountOnGCSAndAzure(t *testing.T) {
	s := deployed(t)
	exporter, console := s.outputs["ExporterRoleArn"], s.outputs["ConsoleRoleArn"]
	if console == "" || console == exporter {
		t.Fatalf("the stack's ConsoleRoleArn output %q (ExporterRoleArn %q)", console, exporter)
	}
	// The same deployment as an env file that names no console role (a
	// stack without the console).
	env := map[string]map[string]string{}
	if b, err := os.ReadFile(s.envFile); err != nil || json.Unmarshal(b, &env) != nil {
		t.Fatalf("env file %s: %v", s.envFile, err)
	}
	delete(env["ExporterFunction"], "CONSOLE_ROLE_ARN")
	noConsole := filepath.Join(t.TempDir(), "env.json")
	if b, _ := json.Marshal(env); os.WriteFile(noConsole, b, 0o644) != nil {
		t.Fatal("write", noConsole)
	}
	for i, dest := range []map[string]any{
		{"store": "gcs", "bucket": "acme-gcs-exports", "gcs": map[string]any{
			"workload_identity_provider": "projects/987654321098/locations/global/workloadIdentityPools/daybook/providers/daybook-aws",
			"service_account":            "daybook-writer@acme-data.iam.gserviceaccount.com"}},
		{"store": "gcs", "bucket": "acme-gcs-exports", "gcs": map[string]any{"credential_mode": "secret",
			"secret_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:daybook/destinations/acme-gcs-AbCdEf"}},
		{"store": "azure", "bucket": "exports", "storage_account": "acmedata", "azure": map[string]any{
			"tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47", "client_id": "0b7e3c1a-2f4d-4e5b-9c8a-1d2e3f4a5b6c"}},
		{"store": "azure", "bucket": "exports", "storage_account": "acmedata", "azure": map[string]any{"credential_mode": "secret",
			"secret_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:daybook/destinations/acme-sas-AbCdEf"}},
	} {
		for _, dep := range []struct {
			name    string
			args    []string // where account put points
			console string   // the console role its setup names
		}{
			{"with the console", []string{"--env-file", s.envFile}, console},
			{"without the console", []string{"--env-file", noConsole}, ""},
			{"with the console, from the stack's outputs", []string{"--stack", "daybook-clitest"}, console},
		} {
			t.Run(fmt.Sprintf("put %d %s", i, dep.name), func(t *testing.T) {
				// Saved disabled (the customer has not granted anything yet), so
				// put tests nothing: the setup is what the customer runs first.
				a, _, _ := testApp(t)
				if dep.args[0] == "--stack" {
					// The SDK reads --stack's endpoint and credentials from
					// the process environment, as on a laptop.
					for k, v := range motoEnv(srv.URL) {
						t.Setenv(k, v)
					}
					a.getenv = os.Getenv
				}
				r := execute(t, a, append([]string{"account", "put", "--file", writeAccount(t, t.TempDir(), map[string]any{"destination": dest, "enabled": false})}, dep.args...)...)
				if r.code != 0 {
					t.Fatalf("put: exit %d\n%s", r.code, r.stderr)
				}
				var acct account.Account
				if err := json.Unmarshal([]byte(r.stdout), &acct); err != nil {
					t.Fatalf("put printed %q: %v", r.stdout, err)
				}
				want, err := storeaccess.CustomerSetup(acct.Destination, storeaccess.StoreGrant{AccountID: acct.ID, ExporterRole: exporter, ConsoleRole: dep.console})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(r.stderr, "For the customer: what lets daybook write "+acct.Destination.URI("")) || !strings.Contains(r.stderr, want.String()) {
					t.Errorf("account put's stderr lacks the customer's setup\n%s\n---\n%s", want, r.stderr)
				}
				// Federated, the customer trusts the console's role too (its
				// name is in the principal set and the federated credential's
				// subject); with a key, or without the console, nothing names it.
				named := strings.Contains(r.stderr, console[strings.LastIndex(console, "/")+1:])
				if federated := !strings.Contains(fmt.Sprint(dest), "secret"); named != (federated && dep.console != "") {
					t.Errorf("the console's role %s named: %v\n%s", console, named, r.stderr)
				}
				if strings.Contains(r.stderr, "Trust policy") {
					t.Errorf("a %s destination got an S3 role's policies:\n%s", dest["store"], r.stderr)
				}
			})
		}
	}

	fgcs := servertest.ForTest(t, gcsserver.Start)
	azr := servertest.ForTest(t, azurite.Start)
	name := fmt.Sprintf("acct-test-%d", nameSeq.Add(1))
	if err := buckettest.GCSCreateBucket(t.Context(), fgcs, name); err != nil {
		t.Fatal(err)
	}
	c, err := buckettest.AzuriteClient(azr, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		store string
		dest  map[string]any
		perm  string // the write step's permission
	}{
		{"gcs", map[string]any{"store": "gcs", "bucket": name, "endpoint": fgcs.URL}, "storage.objects.create"},
		{"azure", map[string]any{"store": "azure", "bucket": name, "storage_account": azurite.Account, "endpoint": azr.URL},
			"Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write"},
	} {
		t.Run("test "+tc.store, func(t *testing.T) {
			acct := s.newAccount(t, map[string]any{"destination": tc.dest})
			a, _, _ := testApp(t)
			r := s.run(t, a, "account", "test", acct.ID, "-o", "json")
			var doc struct {
				OK     bool                `json:"ok"`
				Checks []destination.Check `json:"checks"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || !doc.OK {
				t.Fatalf("account test: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
			}
			steps := []string{}
			for _, c := range doc.Checks {
				steps = append(steps, c.Step)
				if !c.OK || c.Permission == "" {
					t.Errorf("step %+v", c)
				}
			}
			if len(doc.Checks) != 6 || doc.Checks[0].Permission != tc.perm || doc.Checks[2].Step != "start and abandon an upload" ||
				doc.Checks[3].Step != "a create-if-absent write of an existing object is refused" {
				t.Errorf("checks %q, the write's permission %q", steps, doc.Checks[0].Permission)
			}
		})
	}
	t.Run("a container that does not exist", func(t *testing.T) {
		dest := map[string]any{"store": "azure", "bucket": name + "-none", "storage_account": azurite.Account, "endpoint": azr.URL}
		a, _, _ := testApp(t)
		r := s.run(t, a, "account", "put", "--file", writeAccount(t, t.TempDir(), map[string]any{"destination": dest}))
		if r.code == 0 || !strings.Contains(r.stderr, "bucket does not exist: abfss://"+name+"-none@") {
			t.Errorf("account put: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		acct := s.newAccount(t, map[string]any{"destination": dest, "enabled": false})
		r = s.run(t, a, "account", "test", acct.ID)
		if r.code == 0 || !strings.Contains(r.stderr, "bucket does not exist") {
			t.Errorf("account test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}
