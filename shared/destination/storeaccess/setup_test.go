package storeaccess_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/destination/storeaccess"
)

// docGrant is the deployment docs/stores.md's examples are written for.
var docGrant = storeaccess.StoreGrant{AccountID: "acct_snpy7ipg3xax2iyk",
	ExporterRole: "arn:aws:iam::111122223333:role/daybook-prod-ExporterFunctionRole-AbC123",
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
		if err := a.Validate(rules); err != nil {
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
