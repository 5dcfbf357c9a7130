package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/partition"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// TestAccountPutCreatesAndUpdatesOnlyWhenAsked: a file naming an existing
// account is refused without --update (on the old upsert it replaced the
// account); with --update the changes are shown and recorded, with who.
func TestAccountPutCreatesAndUpdatesOnlyWhenAsked(t *testing.T) {
	s := deployed(t)
	a, _, _ := testApp(t)
	dir := t.TempDir()
	name := uniqueName(t)
	file := writeAccount(t, dir, map[string]any{"name": name})
	orig, _ := os.ReadFile(file)

	r := s.run(t, a, "account", "put", "--file", file)
	if r.code != 0 {
		t.Fatalf("first put: exit %d\n%s", r.code, r.stderr)
	}
	var created account.Account
	if err := json.Unmarshal([]byte(r.stdout), &created); err != nil || !account.ValidID(created.ID) {
		t.Fatalf("put printed %q (%v)", r.stdout, err)
	}
	after, _ := os.ReadFile(file)
	if want := "{\n  \"id\": \"" + created.ID + "\",\n" + string(orig[2:]); string(after) != want {
		t.Errorf("the id was not written back as the first field:\n%s", after)
	}
	if !strings.Contains(r.stderr, "created account "+created.ID) || !strings.Contains(r.stderr, "daybook account put --file "+file+" --update") {
		t.Errorf("stderr: %s", r.stderr)
	}
	if strings.Count(r.stderr, "daybook: using ") != 1 {
		t.Errorf("the deployment line should appear once:\n%s", r.stderr)
	}

	// The same command again is refused: the file names an existing
	// account, and creating would replace it.
	withID, _ := os.ReadFile(file)
	r = s.run(t, a, "account", "put", "--file", file)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "names account "+created.ID) || !strings.Contains(r.stderr, "--update") {
		t.Fatalf("second put without --update: exit %d\n%s", r.code, r.stderr)
	}
	if n := s.accountsNamed(t, name); n != 1 {
		t.Fatalf("%d accounts named %q after two puts, want 1", n, name)
	}
	// A destination change with --update is shown, then recorded with who.
	changed := strings.Replace(string(withID), `"bucket": "daybook-exports-clitest"`, `"bucket": "daybook-exports-clitest",`+"\n    "+`"prefix": "moved/{{.AccountID}}"`, 1)
	os.WriteFile(file, []byte(changed), 0o644)
	r = s.run(t, a, "account", "put", "--file", file)
	if r.code != cli.ExitError {
		t.Fatalf("a changed file without --update: exit %d\n%s", r.code, r.stderr)
	}
	if got, _ := s.ledgerAt(t, testNow, 6).Accounts().GetAccount(context.Background(), created.ID); got.Destination.Prefix != "" {
		t.Fatalf("a refused put moved the destination to %q", got.Destination.Prefix)
	}
	r = s.run(t, a, "account", "put", "--file", file, "--update", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stderr, `destination.prefix: (none) -> "moved/{{.AccountID}}"`) || !strings.Contains(r.stderr, "nothing written") {
		t.Fatalf("--dry-run: exit %d\n%s", r.code, r.stderr)
	}
	r = s.run(t, a, "account", "put", "--file", file, "--update")
	if r.code != 0 || !strings.Contains(r.stderr, `destination.prefix: (none) -> "moved/{{.AccountID}}"`) || !strings.Contains(r.stderr, "updated account "+created.ID) {
		t.Fatalf("put --update: exit %d\n%s", r.code, r.stderr)
	}
	r = s.run(t, a, "account", "history", created.ID, "-o", "json")
	var events []ledger.AccountEvent
	if err := json.Unmarshal([]byte(r.stdout), &events); err != nil || len(events) != 2 {
		t.Fatalf("history: %v\n%s%s", err, r.stdout, r.stderr)
	}
	if ev := events[1]; ev.Action != ledger.ActionUpdated || ev.By != motoCaller || len(ev.Changes) != 1 ||
		ev.Changes[0] != (account.Change{Field: "destination.prefix", Old: "", New: `"moved/{{.AccountID}}"`}) {
		t.Errorf("the update was recorded as %+v, want by %s, destination.prefix changed", ev, motoCaller)
	}
	r = s.run(t, a, "account", "get", created.ID)
	if !strings.Contains(r.stdout, "destination.prefix") || !strings.Contains(r.stdout, motoCaller) || !strings.Contains(r.stdout, "created") {
		t.Errorf("account get does not show the history:\n%s", r.stdout)
	}
	os.WriteFile(file, withID, 0o644)
	if r = s.run(t, a, "account", "put", created.ID, "--file", file); r.code != 0 || !strings.Contains(r.stderr, `destination.prefix: "moved/{{.AccountID}}" -> (none)`) {
		t.Fatalf("put ID (moving it back): exit %d\n%s", r.code, r.stderr)
	}

	// A copy of the original file (no id) is refused: same name.
	dup := filepath.Join(dir, "copy.json")
	os.WriteFile(dup, orig, 0o644)
	r = s.run(t, a, "account", "put", "--file", dup)
	if r.code != cli.ExitError {
		t.Fatalf("duplicate name: exit %d, want 1\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"already exists", created.ID, "--id " + created.ID, "--allow-duplicate-name"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("refusal lacks %q:\n%s", want, r.stderr)
		}
	}
	if b, _ := os.ReadFile(dup); string(b) != string(orig) {
		t.Errorf("a refused put changed the file:\n%s", b)
	}
	if n := s.accountsNamed(t, name); n != 1 {
		t.Errorf("a refused put created an account: %d named %q", n, name)
	}

	// --id updates the named account from a file without an id.
	r = s.run(t, a, "account", "put", "--file", dup, "--id", created.ID)
	if r.code != 0 || !strings.Contains(r.stderr, "changes nothing") || !strings.Contains(r.stderr, "left unchanged account "+created.ID) {
		t.Errorf("put --id: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(dup); string(b) != string(orig) {
		t.Errorf("put --id rewrote the file:\n%s", b)
	}
	// ... but not one that names another.
	r = s.run(t, a, "account", "put", "--file", file, "--id", "acct_aaaaaaaaaaaaaaaa")
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "differs from the id in") {
		t.Errorf("conflicting --id: exit %d\n%s", r.code, r.stderr)
	}

	// --allow-duplicate-name creates a second one.
	r = s.run(t, a, "account", "put", "--file", dup, "--allow-duplicate-name")
	if r.code != 0 || s.accountsNamed(t, name) != 2 {
		t.Errorf("--allow-duplicate-name: exit %d, %d accounts\n%s", r.code, s.accountsNamed(t, name), r.stderr)
	}
}

// TestAccountPutShowsInTheFleetViewAtOnce: a created account, and then a
// renamed one, is found by its name in the fleet view without a sweep (before,
// the fleet view showed an account's name only after a sweep refreshed it).
func TestAccountPutShowsInTheFleetViewAtOnce(t *testing.T) {
	s := deployed(t)
	a, _, _ := testApp(t)
	dir := t.TempDir()
	name := uniqueName(t)
	file := writeAccount(t, dir, map[string]any{"name": name})
	search := func(text string) []fleetLine {
		t.Helper()
		r := s.run(t, a, "status", "--search", text, "-o", "json")
		var page fleetPage
		if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
			t.Fatalf("status --search %q: %v\n%s%s", text, err, r.stdout, r.stderr)
		}
		return page.Accounts
	}
	r := s.run(t, a, "account", "put", "--file", file)
	var created account.Account
	if err := json.Unmarshal([]byte(r.stdout), &created); r.code != 0 || err != nil {
		t.Fatalf("put: exit %d, %v\n%s", r.code, err, r.stderr)
	}
	if got := search(name); len(got) != 1 || got[0].Account != created.ID || got[0].Name != name {
		t.Fatalf("the fleet view after the put, searched by %q: %+v", name, got)
	}
	withID, _ := os.ReadFile(file)
	renamed := "Renamed " + name
	os.WriteFile(file, []byte(strings.Replace(string(withID), `"name": "`+name+`"`, `"name": "`+renamed+`"`, 1)), 0o644)
	if r = s.run(t, a, "account", "put", "--file", file, "--update"); r.code != 0 {
		t.Fatalf("rename: exit %d\n%s", r.code, r.stderr)
	}
	if got := search(renamed); len(got) != 1 || got[0].Account != created.ID || got[0].Name != renamed {
		t.Errorf("the fleet view after the rename, searched by the new name: %+v", got)
	}
	if got := search(name); len(got) != 0 {
		t.Errorf("the old name still finds %+v", got)
	}
}

func TestAccountPutFromStdinPrintsTheFlag(t *testing.T) {
	s := deployed(t)
	a, _, _ := testApp(t)
	root := a.rootCommand()
	b, _ := os.ReadFile(writeAccount(t, t.TempDir(), nil))
	root.SetIn(strings.NewReader(string(b)))
	root.SetArgs([]string{"account", "put", "--file", "-", "--env-file", s.envFile})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var acct account.Account
	json.Unmarshal(a.stdout.(interface{ Bytes() []byte }).Bytes(), &acct)
	if want := "daybook account put --file - --id " + acct.ID; !strings.Contains(a.stderr.(interface{ String() string }).String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, a.stderr)
	}
}

func TestAccountPutRefusesBadFilesAndChangesNothing(t *testing.T) {
	s := deployed(t)
	// Accounts a new one may not collide with.
	neighbour := s.newAccount(t, nil)
	const sharedRole = "arn:aws:iam::123456789012:role/daybook-export-shared"
	s.createBucket(t, "acme-shared-exports")
	roleHolder := s.newAccount(t, map[string]any{"destination": map[string]any{"bucket": "acme-shared-exports",
		"role_arn": sharedRole, "external_id": "shared-ext-1"}})
	// An existing account, updated from a file with a refused change.
	existing := s.newAccount(t, nil)
	// An account on a local S3-compatible store, disabled: no store answers
	// there, and account put tests an enabled account's destination.
	onMinio := s.newAccount(t, map[string]any{"enabled": false, "destination": map[string]any{"bucket": "tenants-minio",
		"endpoint": "http://127.0.0.1:9000", "prefix": "t/{{.AccountID}}",
		"role_arn": "arn:aws:iam::123456789012:role/daybook-export-minio", "external_id": "minio-1"}})
	tests := []struct {
		name   string
		file   func(dir string) string
		code   int
		stderr string
		extra  []string
	}{
		{"syntax error", func(dir string) string {
			p := filepath.Join(dir, "a.json")
			os.WriteFile(p, []byte("{\n  \"name\": \"x\",\n  \"enabled\": true,\n}\n"), 0o644)
			return p
		}, cli.ExitError, "a.json:4:1: invalid character '}'", nil},
		{"unknown field", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"time_zone": "UTC", "timezone": "UTC"})
		}, cli.ExitError, `timezone: unknown field; valid fields here: created_at, datasets, destination,`, nil},
		{"invalid values", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"time_zone": "Mars/Olympus", "datasets": []string{}})
		}, cli.ExitError, `time_zone "Mars/Olympus": not an IANA time zone`, nil},
		{"bucket outside the deployment's pattern", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"destination": map[string]any{"bucket": "acme-exports"}})
		}, cli.ExitError, `destination.bucket "acme-exports"`, nil},
		{"role outside the deployment's pattern", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"destination": map[string]any{"bucket": "acme-exports",
				"role_arn": "arn:aws:iam::123456789012:role/admin", "external_id": "acme-7f3c"}})
		}, cli.ExitError, `destination.role_arn "arn:aws:iam::123456789012:role/admin": outside the roles this deployment may assume (arn:aws:iam::*:role/daybook-export-*)`, nil},
		{"own role on another account's bucket", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"destination": map[string]any{"bucket": "daybook-exports-clitest",
				"expected_bucket_owner": "111111111111"}})
		}, cli.ExitError, `destination.expected_bucket_owner "111111111111": daybook's own role writes only to buckets of the deployment's account ` + motoserver.AccountID, nil},
		{"private endpoint", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"destination": map[string]any{"bucket": "daybook-exports-clitest",
				"endpoint": "https://10.1.2.3:9000"}})
		}, cli.ExitError, `destination.endpoint "https://10.1.2.3:9000"`, nil},
		{"prefix inside another account's", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"destination": map[string]any{"bucket": "daybook-exports-clitest",
				"prefix": "daybook/" + neighbour.ID + "/{{.AccountID}}"}})
		}, cli.ExitError, `is inside account ` + neighbour.ID + `'s prefix "daybook/` + neighbour.ID + `" in bucket daybook-exports-clitest`, nil},
		{"another account's role and external id", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"destination": map[string]any{"bucket": "acme-other-exports",
				"role_arn": sharedRole, "external_id": "shared-ext-1"}})
		}, cli.ExitError, `destination.external_id "shared-ext-1": account ` + roleHolder.ID + ` already uses role ` + sharedRole, nil},
		{"an update with a refused change", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"id": existing.ID, "name": existing.Name, "destination": map[string]any{
				"bucket": "daybook-exports-clitest", "role_arn": "arn:aws:iam::123456789012:role/admin"}})
		}, cli.ExitError, `destination.role_arn "arn:aws:iam::123456789012:role/admin"`, []string{"--update"}},
		{"a file naming an existing account, without --update", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"id": existing.ID, "destination": map[string]any{"bucket": "daybook-exports-clitest", "prefix": "elsewhere/{{.AccountID}}"}})
		}, cli.ExitError, "names account " + existing.ID, nil},
		{"--update of an account that is not stored", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"id": "acct_zzzzzzzzzzzzzzzz"})
		}, cli.ExitError, "account acct_zzzzzzzzzzzzzzzz, which", []string{"--update"}},
		{"a name with a terminal escape", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"name": "evil\x1b[2J\nacct_forged"})
		}, cli.ExitError, `name "evil\x1b[2J\nacct_forged": character U+001B at byte 4 is a control or format character`, nil},
		{"a name too long", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"name": strings.Repeat("n", 129)})
		}, cli.ExitError, `characters, more than 128`, nil},
		{"a role path that climbs out of the pattern", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"destination": map[string]any{"bucket": "acme-exports",
				"role_arn": "arn:aws:iam::123456789012:role/daybook-export-x/../admin", "external_id": "acme-7f3c"}})
		}, cli.ExitError, `destination.role_arn "arn:aws:iam::123456789012:role/daybook-export-x/../admin": segment 2 of the role path "daybook-export-x/../admin" is ".."`, nil},
		{"the same store spelled another way", func(dir string) string {
			return writeAccount(t, dir, map[string]any{"destination": map[string]any{"bucket": "tenants-minio",
				"endpoint": "http://localhost.:9000/", "prefix": "t/" + onMinio.ID + "/{{.AccountID}}",
				"role_arn": "arn:aws:iam::123456789012:role/daybook-export-minio", "external_id": "minio-2"}})
		}, cli.ExitError, `is inside account ` + onMinio.ID + `'s prefix "t/` + onMinio.ID + `" in bucket tenants-minio`, nil},
		{"missing file", func(dir string) string { return filepath.Join(dir, "nope.json") }, cli.ExitError, "no such file", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _, _ := testApp(t)
			before := s.accounts(t)
			file := tt.file(t.TempDir())
			orig, _ := os.ReadFile(file)
			r := s.run(t, a, append([]string{"account", "put", "--file", file}, tt.extra...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d, want %d; stderr lacks %q:\n%s", r.code, tt.code, tt.stderr, r.stderr)
			}
			if after := s.accounts(t); !reflect.DeepEqual(after, before) {
				t.Errorf("a refused put changed the stored accounts:\nbefore %+v\nafter  %+v", before, after)
			}
			if b, _ := os.ReadFile(file); string(b) != string(orig) {
				t.Errorf("the file changed:\n%s", b)
			}
			if strings.Contains(r.stderr, "id \"\"") || strings.Contains(r.stderr, "external_id \"\"") {
				t.Errorf("a generated id or external id is never the problem:\n%s", r.stderr)
			}
			if strings.Contains(r.stderr, "generated external id") {
				t.Errorf("a refused put announced an external id:\n%s", r.stderr)
			}
		})
	}
}

// TestAccountPutGeneratesTheExternalID: a role without an external id gets
// a new one, printed once and written into the file after role_arn; the
// same file again changes nothing, and a file that lost it keeps the
// stored one.
func TestAccountPutGeneratesTheExternalID(t *testing.T) {
	s := deployed(t)
	a, _, _ := testApp(t)
	dir := t.TempDir()
	role := "arn:aws:iam::123456789012:role/daybook-export-" + strings.ToLower(strings.ReplaceAll(uniqueName(t), " #", "-"))
	s.createBucket(t, "acme-role-exports")
	file := writeAccount(t, dir, map[string]any{"destination": map[string]any{"bucket": "acme-role-exports", "role_arn": role}})
	orig, _ := os.ReadFile(file)

	r := s.run(t, a, "account", "put", "--file", file)
	if r.code != 0 {
		t.Fatalf("put: exit %d\n%s", r.code, r.stderr)
	}
	var acct account.Account
	if err := json.Unmarshal([]byte(r.stdout), &acct); err != nil {
		t.Fatal(err)
	}
	ext := acct.Destination.ExternalID
	if !strings.HasPrefix(ext, account.ExternalIDPrefix) || !account.ValidExternalID(ext) {
		t.Fatalf("external id %q", ext)
	}
	// Announced once, then in the customer's documents (the trust policy's
	// condition, and the line naming the role).
	if strings.Count(r.stderr, "generated external id") != 1 || !strings.Contains(r.stderr, "generated external id "+ext+" for role "+role) ||
		!strings.Contains(r.stderr, `"sts:ExternalId": "`+ext+`"`) || strings.Count(r.stderr, ext) != 3 {
		t.Errorf("the external id should be announced once on stderr, then in the role's trust policy:\n%s", r.stderr)
	}
	stored, err := s.ledgerAt(t, testNow, 6).Accounts().GetAccount(context.Background(), acct.ID)
	if err != nil || stored.Destination.ExternalID != ext {
		t.Fatalf("stored external id %q (%v), want %q", stored.Destination.ExternalID, err, ext)
	}
	after, _ := os.ReadFile(file)
	want := strings.Replace(string(orig), `"role_arn": "`+role+`"`, `"role_arn": "`+role+`",`+"\n    "+`"external_id": "`+ext+`"`, 1)
	want = "{\n  \"id\": \"" + acct.ID + "\",\n" + want[2:]
	if string(after) != want {
		t.Errorf("file after put:\n%s\nwant:\n%s", after, want)
	}

	// The same file again: the same external id, nothing announced.
	r = s.run(t, a, "account", "put", "--file", file, "--update")
	if r.code != 0 || strings.Contains(r.stderr, "generated external id") || !strings.Contains(r.stdout, ext) {
		t.Errorf("second put: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A file without it (--id, from a copy of the original) keeps the stored one.
	copyFile := filepath.Join(dir, "copy.json")
	os.WriteFile(copyFile, orig, 0o644)
	r = s.run(t, a, "account", "put", "--file", copyFile, "--id", acct.ID)
	if r.code != 0 || strings.Contains(r.stderr, "generated external id") {
		t.Errorf("put without the external id: exit %d\n%s", r.code, r.stderr)
	}
	if got, _ := s.ledgerAt(t, testNow, 6).Accounts().GetAccount(context.Background(), acct.ID); got.Destination.ExternalID != ext {
		t.Errorf("the stored external id changed to %q", got.Destination.ExternalID)
	}
}

// TestAccountPutRefusesAMalformedDeploymentRule: a deployment variable the
// rules come from that does not parse is named, and nothing is saved.
func TestAccountPutRefusesAMalformedDeploymentRule(t *testing.T) {
	s := deployed(t)
	env := map[string]map[string]string{}
	b, _ := os.ReadFile(s.envFile)
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	env["ExporterFunction"][account.EnvAllowPrivateEndpoints] = "sometimes"
	envFile := filepath.Join(t.TempDir(), "env.json")
	b, _ = json.Marshal(env)
	os.WriteFile(envFile, b, 0o644)
	a, _, _ := testApp(t)
	before := len(s.accounts(t))
	r := execute(t, a, "account", "put", "--file", writeAccount(t, t.TempDir(), nil), "--env-file", envFile)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, `environment variable ALLOW_PRIVATE_ENDPOINTS="sometimes": want true or false`) {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
	if after := len(s.accounts(t)); after != before {
		t.Errorf("%d accounts before, %d after", before, after)
	}
}

func (s stack) accounts(t *testing.T) []account.Account {
	t.Helper()
	all, err := s.ledgerAt(t, testNow, 6).Accounts().ListAccounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func TestAccountGetListDisableEnable(t *testing.T) {
	s := deployed(t)
	acct := s.newAccount(t, nil)
	a, _, _ := testApp(t)
	if r := s.run(t, a, "account", "get", acct.ID); r.code != 0 || !strings.Contains(r.stdout, "s3://daybook-exports-clitest/daybook/"+acct.ID+"/") {
		t.Errorf("get: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := s.run(t, a, "account", "list", "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, `"id": "`+acct.ID+`"`) {
		t.Errorf("list -o json: exit %d\n%s", r.code, r.stdout)
	}
	if r := s.run(t, a, "account", "get", "acct_nosuchaccount234"); r.code != cli.ExitError || !strings.Contains(r.stderr, "no such account") {
		t.Errorf("get of a missing account: exit %d\n%s", r.code, r.stderr)
	}
	steps := []struct {
		args    []string
		stdout  string
		enabled bool
	}{
		{[]string{"account", "disable", acct.ID}, "disabled", false},
		{[]string{"account", "disable", acct.ID}, "already disabled; nothing changed", false},
		{[]string{"account", "enable", acct.ID}, "enabled", true},
	}
	for _, st := range steps {
		r := s.run(t, a, st.args...)
		if r.code != 0 || !strings.Contains(r.stdout, st.stdout) {
			t.Errorf("%v: exit %d\n%s%s", st.args, r.code, r.stdout, r.stderr)
		}
		got, err := s.ledgerAt(t, testNow, 6).Accounts().GetAccount(context.Background(), acct.ID)
		if err != nil || got.Enabled != st.enabled {
			t.Errorf("%v: enabled %v (%v), want %v", st.args, got.Enabled, err, st.enabled)
		}
	}
}

func TestAccountDelete(t *testing.T) {
	s := deployed(t)
	ctx := context.Background()
	acct := s.newAccount(t, nil)
	l := s.ledgerAt(t, testNow, 6)
	from, to := civil.MustParse("2026-11-27"), civil.MustParse("2026-11-29")
	if _, err := l.Schedule().Materialize(ctx, acct.ID, "events", from, to); err != nil {
		t.Fatal(err)
	}
	claim, err := l.Partitions().Claim(ctx, partition.Key{AccountID: acct.ID, Dataset: "events", Day: to}, "")
	if err != nil {
		t.Fatal(err)
	}
	s.createBucket(t, "daybook-exports-clitest")
	delivered := "daybook/" + acct.ID + "/v1/events/dt=2026-11-27/_SUCCESS"
	if _, err := awsclient.NewS3(s.cfg).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("daybook-exports-clitest"), Key: aws.String(delivered), Body: strings.NewReader("1")}); err != nil {
		t.Fatal(err)
	}
	a, _, _ := testApp(t)
	unchanged := func(step string) {
		t.Helper()
		if _, err := l.Accounts().GetAccount(ctx, acct.ID); err != nil {
			t.Errorf("%s: the account is gone: %v", step, err)
		}
		if n, _ := l.Partitions().Count(ctx, acct.ID, "events", from, to); n != 3 {
			t.Errorf("%s: %d rows, want 3", step, n)
		}
	}
	if r := s.run(t, a, "account", "delete", acct.ID); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "pass --yes") {
		t.Errorf("delete without --yes: exit %d\n%s", r.code, r.stderr)
	}
	unchanged("without --yes")
	r := s.run(t, a, "account", "delete", acct.ID, "--yes", "--purge")
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "partitions are running") || !strings.Contains(r.stderr, "events 2026-11-29") {
		t.Errorf("delete while a claim is live: exit %d\n%s", r.code, r.stderr)
	}
	unchanged("while running")

	if _, err := l.Partitions().Complete(ctx, claim.Key, claim.Token, ledger.Result{Rows: 1}); err != nil {
		t.Fatal(err)
	}
	r = s.run(t, a, "account", "delete", acct.ID, "--yes")
	if r.code != 0 || !strings.Contains(r.stdout, "its 3 ledger rows are kept") {
		t.Errorf("delete: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := l.Accounts().GetAccount(ctx, acct.ID); err == nil {
		t.Error("the account is still there")
	}
	if n, _ := l.Partitions().Count(ctx, acct.ID, "events", from, to); n != 3 {
		t.Errorf("delete without --purge left %d rows, want 3", n)
	}
	r = s.run(t, a, "account", "delete", acct.ID, "--yes", "--purge")
	if r.code != 0 || !strings.Contains(r.stdout, "purged 3 ledger rows, 1 history items") {
		t.Errorf("purge of a deleted account: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n, _ := l.Partitions().Count(ctx, acct.ID, "events", from, to); n != 0 {
		t.Errorf("%d rows left after --purge", n)
	}
	if keys := s.objects(t, "daybook-exports-clitest"); !slices.Contains(keys, delivered) {
		t.Errorf("deleting the account touched its delivered files: %v", keys)
	}
	if r := s.run(t, a, "account", "delete", acct.ID, "--yes"); r.code != cli.ExitError || !strings.Contains(r.stderr, "no such account") {
		t.Errorf("delete of a missing account: exit %d\n%s", r.code, r.stderr)
	}
}

func TestAccountTestSaysTheBucketIsMissing(t *testing.T) {
	s := deployed(t)
	bucket := "daybook-exports-test-" + strings.ToLower(time.Now().Format("150405")) + "x"
	a, _, _ := testApp(t)
	// account put runs the same test and refuses a bucket that does not
	// exist; --save-disabled saves the account disabled instead.
	before := len(s.accounts(t))
	file := writeAccount(t, t.TempDir(), map[string]any{"destination": map[string]any{"bucket": bucket}})
	r := s.run(t, a, "account", "put", "--file", file)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, `the destination test failed for destination.bucket "`+bucket+`": bucket does not exist`) || !strings.Contains(r.stderr, "--save-disabled") {
		t.Errorf("put of a missing bucket: exit %d\n%s", r.code, r.stderr)
	}
	if n := len(s.accounts(t)); n != before {
		t.Errorf("a refused put saved an account: %d accounts, %d before", n, before)
	}
	r = s.run(t, a, "account", "put", "--file", file, "--save-disabled")
	var acct account.Account
	if err := json.Unmarshal([]byte(r.stdout), &acct); err != nil || r.code != 0 || acct.Enabled || !strings.Contains(r.stderr, "saving the account disabled (--save-disabled)") {
		t.Fatalf("put --save-disabled: exit %d, enabled %v, %v\n%s", r.code, acct.Enabled, err, r.stderr)
	}
	r = s.run(t, a, "account", "test", acct.ID)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "bucket does not exist: s3://"+bucket) || strings.Contains(r.stderr, "missing s3:") {
		t.Errorf("missing bucket: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Enabling it tests the destination first: it stays disabled (on the
	// old code account enable enabled it untested).
	r = s.run(t, a, "account", "enable", acct.ID)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "bucket does not exist: s3://"+bucket) || !strings.Contains(r.stderr, "stays disabled") {
		t.Errorf("enable with a missing bucket: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, _ := s.ledgerAt(t, testNow, 6).Accounts().GetAccount(context.Background(), acct.ID); got.Enabled {
		t.Errorf("account enable enabled an untested destination")
	}
	s.createBucket(t, bucket)
	if r = s.run(t, a, "account", "enable", acct.ID); r.code != 0 || !strings.Contains(r.stderr, "tested: 6 steps ok") || !strings.Contains(r.stdout, "enabled") {
		t.Errorf("enable with the bucket: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = s.run(t, a, "account", "test", acct.ID)
	if r.code != 0 || strings.Count(r.stdout, "\tok")+strings.Count(r.stdout, " ok") < 6 {
		t.Errorf("existing bucket: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if keys := s.objects(t, bucket); len(keys) != 0 {
		t.Errorf("account test left objects behind: %v", keys)
	}
	r = s.run(t, a, "account", "test", acct.ID, "-o", "json")
	var res struct {
		OK     bool `json:"ok"`
		Checks []any
	}
	if json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || !res.OK || len(res.Checks) != 6 {
		t.Errorf("-o json: exit %d %+v\n%s", r.code, res, r.stdout)
	}
}

// objects lists a bucket's keys.
func (s stack) objects(t *testing.T, bucket string) []string {
	t.Helper()
	out, err := awsclient.NewS3(s.cfg).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// TestAccountPutAppliesTheBackfillLimit: `account put` refuses a start date
// in the future, or further back than the deployment's MAX_BACKFILL_DAYS
// for a new account; an account that keeps its start date is updated (and
// disabled) however old it has become.
func TestAccountPutAppliesTheBackfillLimit(t *testing.T) {
	s := deployed(t)
	a, _, _ := testApp(t) // 2026-11-30
	for _, tc := range []struct{ start, reason string }{
		{"2026-12-01", `start_date "2026-12-01": in the future (today is 2026-11-30 in UTC)`},
		{"2025-10-25", `start_date "2025-10-25": more than 400 days back, the deployment's backfill limit (earliest 2025-10-26)`},
	} {
		before := len(s.accounts(t))
		r := s.run(t, a, "account", "put", "--file", writeAccount(t, t.TempDir(), map[string]any{"start_date": tc.start}))
		if r.code != cli.ExitError || !strings.Contains(r.stderr, tc.reason) {
			t.Errorf("start %s: exit %d\n%s", tc.start, r.code, r.stderr)
		}
		if after := len(s.accounts(t)); after != before {
			t.Errorf("start %s: %d accounts before, %d after", tc.start, before, after)
		}
	}
	file := writeAccount(t, t.TempDir(), nil) // start 2026-11-01
	if r := s.run(t, a, "account", "put", "--file", file); r.code != 0 {
		t.Fatalf("put: exit %d\n%s", r.code, r.stderr)
	}
	later, _, _ := testApp(t)
	later.now = func() time.Time { return testNow.AddDate(0, 0, 500) }
	// A change that keeps the start date.
	b0, _ := os.ReadFile(file)
	os.WriteFile(file, []byte(strings.Replace(string(b0), `"name":`, `"time_zone": "UTC", "name":`, 1)), 0o644)
	if r := s.run(t, later, "account", "put", "--file", file, "--update"); r.code != 0 || !strings.Contains(r.stderr, "updated account") {
		t.Errorf("500 days later, the same start date: exit %d\n%s", r.code, r.stderr)
	}
	var acct account.Account
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &acct); err != nil {
		t.Fatal(err)
	}
	if r := s.run(t, later, "account", "disable", acct.ID); r.code != 0 {
		t.Errorf("500 days later, disable: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := s.run(t, later, "account", "put", "--file", writeAccount(t, t.TempDir(), nil))
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "more than 400 days back") {
		t.Errorf("500 days later, a new account from 2026-11-01: exit %d\n%s", r.code, r.stderr)
	}

	// The limit is the deployment's (MAX_BACKFILL_DAYS in its environment).
	env := map[string]map[string]string{}
	b, _ = os.ReadFile(s.envFile)
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	for _, vars := range env {
		vars["MAX_BACKFILL_DAYS"] = "20"
	}
	envFile := filepath.Join(t.TempDir(), "env.json")
	b, _ = json.Marshal(env)
	os.WriteFile(envFile, b, 0o644)
	r = execute(t, a, "account", "put", "--file", writeAccount(t, t.TempDir(), nil), "--env-file", envFile)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, `start_date "2026-11-01": more than 20 days back`) {
		t.Errorf("MAX_BACKFILL_DAYS=20: exit %d\n%s", r.code, r.stderr)
	}
}

// motoCaller is the ARN moto's GetCallerIdentity reports: who the commands
// run as in these tests.
const motoCaller = "arn:aws:sts::" + motoserver.AccountID + ":user/moto"
