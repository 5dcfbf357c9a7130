package account

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// TestDocumentedAccountFiles: the account files README.md ("Register
// accounts") and docs/accounts.md show decode with no unknown field and
// pass the deployment's rules for the role pattern the template sets
// (daybook-export-*), so a renamed or removed field fails here.
func TestDocumentedAccountFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, after string }{
		{"../../README.md", "\n## Register accounts\n"},
		{"../../docs/accounts.md", "# Accounts\n"},
	} {
		b, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(b), tc.after)
		_, block, ok2 := strings.Cut(rest, "```json\n")
		block, _, ok3 := strings.Cut(block, "```")
		if !ok || !ok2 || !ok3 {
			t.Fatalf("%s: no account file after %q", tc.file, tc.after)
		}
		var a Account
		dec := json.NewDecoder(strings.NewReader(block))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("%s: %v\n%s", tc.file, err, block)
		}
		a.ID = "acct_docexampleaaaaaa"
		if a.Destination.RoleARN != "" && a.Destination.ExternalID == "" {
			a.Destination.ExternalID = "daybook-docexample" // account put writes one into the file
		}
		rules := Rules{RolePattern: "arn:aws:iam::*:role/daybook-export-*", DeploymentAccountID: "123456789012"}
		cat, err := dataset.Example()
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Validate(cat, rules); err != nil {
			t.Errorf("%s: the account file is refused: %v\n%s", tc.file, err, block)
		}
	}
}
