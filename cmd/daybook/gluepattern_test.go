package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
)

// TestCheckGluePattern: an account written with daybook's own role may
// register its tables only in the Glue databases the exporter's
// DirectGlueTables statement grants (the stack's DirectGlueDatabasePattern):
// another is refused at account put, naming the field and the value. With
// a role, the customer's own catalog decides.
func TestCheckGluePattern(t *testing.T) {
	t.Parallel()
	acct := func(db, role string) account.Account {
		return account.Account{Destination: account.Destination{Bucket: "daybook-exports-x", RoleARN: role,
			TableFormat: account.TableFormatIceberg, Glue: &account.GlueTables{Database: db}}}
	}
	for _, tt := range []struct {
		a    account.Account
		want string
	}{
		{acct("daybook_acme", ""), ""},
		{acct("analytics", ""), `destination.glue.database "analytics"`},
		{acct("analytics", "arn:aws:iam::123456789012:role/daybook-export-acme"), ""},
		{account.Account{Destination: account.Destination{Bucket: "daybook-exports-x"}}, ""},
	} {
		err := checkGluePattern(tt.a, "daybook_*")
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("checkGluePattern(%+v) = %v, want %q", tt.a.Destination, err, tt.want)
		}
	}
	if err := checkGluePattern(acct("analytics", ""), ""); err != nil {
		t.Errorf("an unknown pattern is not checked: %v", err)
	}
}

// TestDirectGlueTablesIsNarrow: the exporter's own role may write Glue
// tables only in the databases of DirectGlueDatabasePattern, the pattern
// the CLI checks (a stack output), never every database of the account.
// Before, it granted database/* and table/*/*: an account written with
// daybook's role could name any database of the deployment's catalog.
func TestDirectGlueTablesIsNarrow(t *testing.T) {
	body, err := samstack.Translate(context.Background(), "../../template.yaml", motoserver.Region)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Type       string
			Properties struct {
				Policies []struct {
					PolicyDocument struct {
						Statement []struct {
							Sid      string
							Resource json.RawMessage
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal(body, &tmpl); err != nil {
		t.Fatal(err)
	}
	found := false
	for id, r := range tmpl.Resources {
		for _, p := range r.Properties.Policies {
			for _, st := range p.PolicyDocument.Statement {
				if st.Sid != "DirectGlueTables" {
					continue
				}
				found = true
				var list []json.RawMessage
				if json.Unmarshal(st.Resource, &list) != nil {
					list = []json.RawMessage{st.Resource}
				}
				for _, res := range list {
					s := string(res)
					if strings.Contains(s, ":database/") || strings.Contains(s, ":table/") {
						if !strings.Contains(s, "${DirectGlueDatabasePattern}") {
							t.Errorf("%s: DirectGlueTables grants %s, not only the databases of DirectGlueDatabasePattern", id, s)
						}
					}
				}
			}
		}
	}
	if !found {
		t.Fatal("no DirectGlueTables statement")
	}
	if stackOutputVars["DirectGlueDatabasePattern"] != "DIRECT_GLUE_DATABASE_PATTERN" {
		t.Fatal("the CLI does not read DirectGlueDatabasePattern from the stack")
	}
}
