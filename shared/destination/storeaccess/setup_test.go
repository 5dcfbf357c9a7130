package storeaccess_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/destination/storeaccess"
)

// docGrant is the deployment docs/stores.md's examples are written for:
// one with the web console (the stack output ConsoleRoleArn).
var docGrant = storeaccess.StoreGrant{AccountID: "acct_snpy7ipg3xax2iyk",
	ExporterRole: "arn:aws:iam::111122223333:role/daybook-prod-ExporterFunctionRole-AbC123",
	ConsoleRole:  "arn:aws:iam::111122223333:role/daybook-prod-ConsoleFunctionRole-XyZ789",
	Issuer:       "https://a1b2c3d4-e5f6-7890-abcd-ef1234567890.tokens.sts.global.api.aws"}

var fenceRE = regexp.MustCompile("(?s)```(json|sh)\n(.*?)```")

// TestStoresDocIsWhatDaybookPrints: every account file of docs/stores.md
// is accepted by account put's checks, and the customer commands the page
// shows are exactly those CustomerSetup prints for it (the page is the
// printout, so it cannot drift from the code).
func TestStoresDocIsWhatDaybookPrints(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/stores.md")
	if err != nil {
		t.Fatal(err)
	}
	var commands []string
	var dests []account.Destination
	for _, m := range fenceRE.FindAllStringSubmatch(string(doc), -1) {
		if m[1] == "sh" {
			commands = append(commands, strings.Split(strings.TrimSpace(m[2]), "\n")...)
			continue
		}
		body := strings.TrimSpace(m[2])
		if strings.HasPrefix(body, `"destination"`) {
			body = "{" + body + "}"
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(body), &raw); err != nil {
			t.Fatalf("%v in\n%s", err, body)
		}
		a := account.Account{ID: docGrant.AccountID, Name: "Acme", Enabled: true, StartDate: civil.MustParse("2026-09-01"), Datasets: []string{"events"}}
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("%v in\n%s", err, body)
		}
		a.ID = docGrant.AccountID
		if a.Destination.Kind() == account.StoreS3 {
			t.Errorf("the page's account file is an S3 destination (no destination.store):\n%s", body)
		}
		rules := account.Rules{DeploymentAccountID: "111122223333", SecretPattern: "arn:aws:secretsmanager:eu-west-1:111122223333:secret:daybook/destinations/*"}
		if err := a.Validate(datasettest.Example(t), rules); err != nil {
			t.Errorf("the page's account file is refused: %v\n%s", err, body)
		}
		dests = append(dests, a.Destination)
	}
	if len(dests) != 4 {
		t.Fatalf("%d account files on the page, want 4 (GCS and Azure, federated and secret)", len(dests))
	}
	shown := map[string]bool{}
	for _, d := range dests {
		s, err := storeaccess.CustomerSetup(d, docGrant)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range s.Steps {
			if !slices.Contains(commands, st.Command) {
				t.Errorf("%s %s: the page does not show %q", s.Store, s.CredentialMode, st.Command)
			}
			shown[st.Command] = true
		}
	}
	for _, c := range commands {
		if !shown[c] && !strings.HasPrefix(c, "aws iam ") {
			t.Errorf("the page shows %q, which daybook never prints", c)
		}
	}
	if !slices.Contains(commands, storeaccess.IssuerCommand) {
		t.Errorf("the page does not show how to read the issuer: %s", storeaccess.IssuerCommand)
	}
	// Without the issuer, the setup says how the platform reads it.
	s, err := storeaccess.CustomerSetup(dests[2], storeaccess.StoreGrant{AccountID: docGrant.AccountID, ExporterRole: docGrant.ExporterRole})
	if err != nil || s.Steps[0].Command != storeaccess.IssuerCommand || !strings.Contains(s.Steps[2].Command, `"issuer":"ISSUER"`) {
		t.Errorf("setup without an issuer: %v\n%s", err, s)
	}
	if _, err := storeaccess.CustomerSetup(account.Destination{Bucket: "x"}, docGrant); err == nil {
		t.Error("an S3 destination got a GCS/Azure setup")
	}
}

// TestSetupTrustsTheConsoleRole: with the console deployed (a console role
// in the grant), a federated GCS destination's provider admits both roles
// and the service account lets each act as it, and a federated Azure
// destination gets a second federated credential with the console role as
// its subject; without a console role the setup is the exporter's alone,
// and keys (credential_mode secret) need nothing more, the console reading
// the secret the exporter reads.
func TestSetupTrustsTheConsoleRole(t *testing.T) {
	const provider = "projects/123456789012/locations/global/workloadIdentityPools/daybook/providers/daybook-aws"
	gcs := account.Destination{StoreKind: account.StoreGCS, Bucket: "acme-daybook",
		GCS: &account.GCSAccess{WorkloadIdentityProvider: provider, ServiceAccount: "daybook-writer@acme-data.iam.gserviceaccount.com"}}
	az := account.Destination{StoreKind: account.StoreAzure, StorageAccount: "acmedata", Bucket: "daybook",
		Azure: &account.AzureAccess{TenantID: "72f988bf-86f1-41af-91ab-2d7cd011db47", ClientID: "0b7e3c1a-2f4d-4e5b-9c8a-1d2e3f4a5b6c"}}
	gcsKey := account.Destination{StoreKind: account.StoreGCS, Bucket: "acme-daybook",
		GCS: &account.GCSAccess{CredentialMode: account.CredentialSecret, SecretARN: "arn:aws:secretsmanager:eu-west-1:111122223333:secret:daybook/destinations/k-AbCdEf"}}
	sas := account.Destination{StoreKind: account.StoreAzure, StorageAccount: "acmedata", Bucket: "daybook",
		Azure: &account.AzureAccess{CredentialMode: account.CredentialSecret, SecretARN: "arn:aws:secretsmanager:eu-west-1:111122223333:secret:daybook/destinations/s-AbCdEf"}}
	exporterOnly := docGrant
	exporterOnly.ConsoleRole = ""
	setup := func(d account.Destination, g storeaccess.StoreGrant) storeaccess.StoreSetup {
		t.Helper()
		s, err := storeaccess.CustomerSetup(d, g)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	commands := func(s storeaccess.StoreSetup) []string {
		var c []string
		for _, st := range s.Steps {
			c = append(c, st.Command)
		}
		return c
	}
	const (
		exporterSession = "arn:aws:sts::111122223333:assumed-role/daybook-prod-ExporterFunctionRole-AbC123"
		consoleSession  = "arn:aws:sts::111122223333:assumed-role/daybook-prod-ConsoleFunctionRole-XyZ789"
		pool            = "principalSet://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/daybook/attribute.aws_role/"
		binding         = "gcloud iam service-accounts add-iam-policy-binding daybook-writer@acme-data.iam.gserviceaccount.com --project=acme-data --role=roles/iam.workloadIdentityUser --member="
	)

	t.Run("gcs federated", func(t *testing.T) {
		with, without := commands(setup(gcs, docGrant)), commands(setup(gcs, exporterOnly))
		for _, want := range []string{
			`--attribute-condition="attribute.aws_role in ['` + exporterSession + `', ` + `'` + consoleSession + `']"`,
			binding + `"` + pool + exporterSession + `"`,
			binding + `"` + pool + consoleSession + `"`,
		} {
			if !slices.ContainsFunc(with, func(c string) bool { return strings.Contains(c, want) }) {
				t.Errorf("with the console, no command has %s:\n%s", want, strings.Join(with, "\n"))
			}
		}
		if s := setup(gcs, docGrant); !strings.Contains(s.Steps[len(s.Steps)-1].What, "devstorage.read_only") {
			t.Errorf("the console's binding does not say it reads with a read-only token: %q", s.Steps[len(s.Steps)-1].What)
		}
		if len(without) != 5 || !strings.Contains(without[1], `--attribute-condition="attribute.aws_role=='`+exporterSession+`'"`) ||
			strings.Contains(strings.Join(without, "\n"), "Console") || len(with) != len(without)+1 {
			t.Errorf("setup without the console:\n%s\nwith it:\n%s", strings.Join(without, "\n"), strings.Join(with, "\n"))
		}
		// Every other command is the same with or without the console.
		for i, c := range without {
			if i != 1 && with[i] != c {
				t.Errorf("step %d: %q with the console, %q without", i+1, with[i], c)
			}
		}
	})

	t.Run("azure federated", func(t *testing.T) {
		with, without := commands(setup(az, docGrant)), commands(setup(az, exporterOnly))
		cred := func(name, subject, description string) string {
			return "az ad app federated-credential create --id 0b7e3c1a-2f4d-4e5b-9c8a-1d2e3f4a5b6c --parameters '" +
				`{"name":"` + name + `","issuer":"` + docGrant.Issuer + `","subject":"` + subject + `","description":"` + description + `","audiences":["api://AzureADTokenExchange"]}'`
		}
		exporterCred := cred("daybook-acct_snpy7ipg3xax2iyk", docGrant.ExporterRole, "daybook exports")
		consoleCred := cred("daybook-acct_snpy7ipg3xax2iyk-console", docGrant.ConsoleRole, "daybook console (reads)")
		if want := slices.Insert(slices.Clone(without), 2, consoleCred); !slices.Equal(with, want) {
			t.Errorf("with the console:\n%s\nwant:\n%s", strings.Join(with, "\n"), strings.Join(want, "\n"))
		}
		if len(without) != 3 || without[1] != exporterCred {
			t.Errorf("without the console:\n%s", strings.Join(without, "\n"))
		}
	})

	t.Run("keys need nothing more", func(t *testing.T) {
		for _, d := range []account.Destination{gcsKey, sas} {
			if with, without := setup(d, docGrant), setup(d, exporterOnly); !slices.Equal(commands(with), commands(without)) {
				t.Errorf("%s secret: with the console\n%s\nwithout\n%s", d.Kind(), with, without)
			}
		}
	})

	t.Run("a console role that is not the stack's", func(t *testing.T) {
		for _, bad := range []string{"daybook-console", "arn:aws:iam::111122223333:user/console", "arn:aws:iam::444455556666:role/daybook-prod-ConsoleFunctionRole-XyZ789"} {
			g := docGrant
			g.ConsoleRole = bad
			if _, err := storeaccess.CustomerSetup(gcs, g); err == nil || !strings.Contains(err.Error(), bad) {
				t.Errorf("console role %q: %v", bad, err)
			}
		}
	})
}
