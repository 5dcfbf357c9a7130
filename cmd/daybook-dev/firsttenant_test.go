package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
)

// checklistStep is one numbered step of docs/first-tenant.md: its title,
// and its fenced blocks by language.
type checklistStep struct {
	title        string
	shLines      []string
	accountLines string
}

// firstTenantSteps reads docs/first-tenant.md's numbered steps.
func firstTenantSteps(t *testing.T) []checklistStep {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "first-tenant.md"))
	if err != nil {
		t.Fatal(err)
	}
	parts := regexp.MustCompile(`(?m)^## (\d+)\. (.*)$`).FindAllStringSubmatchIndex(string(b), -1)
	var steps []checklistStep
	for i, p := range parts {
		end := len(b)
		if i+1 < len(parts) {
			end = parts[i+1][0]
		}
		if n := string(b[p[2]:p[3]]); n != fmt.Sprint(i+1) {
			t.Fatalf("step %s is numbered out of order", n)
		}
		st := checklistStep{title: string(b[p[4]:p[5]])}
		for _, m := range regexp.MustCompile("(?s)```(sh|json)\n(.*?)```").FindAllStringSubmatch(string(b[p[1]:end]), -1) {
			if m[1] == "json" {
				st.accountLines = m[2]
				continue
			}
			for _, l := range strings.Split(strings.ReplaceAll(m[2], "\\\n", " "), "\n") {
				if l = strings.TrimSpace(l); l != "" {
					st.shLines = append(st.shLines, l)
				}
			}
		}
		steps = append(steps, st)
	}
	return steps
}

// TestFirstTenantChecklist runs docs/first-tenant.md's steps as written,
// on the local stack deployed as daybook-prod, with the CLI pointed at it
// by --stack (the emulator's endpoint in the environment, as AWS's would
// be): step 1's sam deploy is `local up --stage prod` (the same template
// through the SAM translator); step 2 puts the DSN into the emulator's SSM,
// and the exporter reads it from there (the local stack's SOURCE_DSN is
// taken out of its environment); step 3 checks the example catalog against
// a real PostgreSQL holding the tenant's rows; steps 4 to 6 register the
// tenant, the customer (the test) creates the bucket and the role from the
// documents printed in step 5, and the account is tested and enabled; in
// step 7 the scheduler (local drain --sweep, as the schedule would) has
// run and the first day is delivered and verified. The account file's
// start date and the ACCOUNT the put wrote are filled in.
func TestFirstTenantChecklist(t *testing.T) {
	t.Parallel()
	steps := firstTenantSteps(t)
	if len(steps) != 7 {
		t.Fatalf("docs/first-tenant.md has %d numbered steps, want 7", len(steps))
	}
	work := t.TempDir()
	buildBinaries(t, filepath.Join(work, ".local", "bin"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pg := pgserver.New(t)
	db, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ddl, err := os.ReadFile(filepath.Join(repoRoot, "shared", "dataset", "schema", "postgres.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, string(ddl)); err != nil {
		t.Fatal(err)
	}
	day := civil.Of(time.Now().UTC()).AddDays(-2) // closed whatever the hour
	at := day.Start(time.UTC).Add(9 * time.Hour)
	for i, tenant := range []string{"acme-corp", "acme-corp", "acme-corp", "someone-else"} {
		if _, err := db.ExecContext(ctx, `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at) VALUES ($1, $2, 'page_view', $3, $3)`,
			tenant, fmt.Sprintf("ev-%d", i), at.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}

	// Step 1: deployed as daybook-prod.
	if !strings.HasPrefix(steps[0].shLines[0], "sam build && sam deploy") || !strings.Contains(steps[0].shLines[0], "--stack-name daybook-prod") {
		t.Fatalf("step 1: %q", steps[0].shLines)
	}
	dir := filepath.Join(work, ".local")
	t.Cleanup(func() {
		_ = newApp(io.Discard, io.Discard).execute(context.Background(), []string{"local", "down", "--dir", dir})
	})
	var upOut, upErr bytes.Buffer
	if code := newApp(&upOut, &upErr).execute(ctx, []string{"local", "up", "--dir", dir, "--template", filepath.Join(repoRoot, "template.yaml"),
		"--stage", "prod", "--no-demo", "--source-driver", "pgx", "--source-dsn", pg.DSN}); code != 0 {
		t.Fatalf("local up: %s%s", upOut.String(), upErr.String())
	}
	envFile := filepath.Join(dir, "env.json")
	env, err := samstack.ReadEnvFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	delete(env["ExporterFunction"], "SOURCE_DSN") // the exporter reads step 2's parameter
	if err := samstack.WriteEnvFile(envFile, env); err != nil {
		t.Fatal(err)
	}
	cfg, err := motoserver.ConfigFor(ctx, env["ExporterFunction"]["AWS_ENDPOINT_URL"])
	if err != nil {
		t.Fatal(err)
	}
	sh := &checklistShell{t: t, ctx: ctx, dir: work, cfg: cfg, env: map[string]string{
		"SOURCE_DSN": pg.DSN, "AWS_ENDPOINT_URL": env["ExporterFunction"]["AWS_ENDPOINT_URL"], "AWS_REGION": motoserver.Region,
		"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "LEDGER_TABLE": "",
	}}

	// Step 2: the DSN into SSM.
	sh.runAll(steps[1].shLines)
	// Step 3: the catalog against the database.
	if out := sh.runAll(steps[2].shLines); !strings.Contains(out, "0 error(s)") {
		t.Fatalf("step 3:\n%s", out)
	}
	// Step 4: the tenant, its start date the closed day.
	acct := strings.Replace(steps[3].accountLines, `"start_date": "2026-12-01"`, `"start_date": "`+day.String()+`"`, 1)
	if !strings.Contains(acct, day.String()) {
		t.Fatalf("step 4's account file changed: %s", steps[3].accountLines)
	}
	if err := os.WriteFile(filepath.Join(work, "tenant.json"), []byte(acct), 0o600); err != nil {
		t.Fatal(err)
	}
	var put struct {
		ID          string `json:"id"`
		Enabled     bool   `json:"enabled"`
		Destination struct {
			Bucket     string `json:"bucket"`
			RoleARN    string `json:"role_arn"`
			ExternalID string `json:"external_id"`
		} `json:"destination"`
	}
	put4 := steps[3].shLines
	if len(put4) != 2 || !strings.HasPrefix(put4[1], "export ACCOUNT=") {
		t.Fatalf("step 4: %q", put4)
	}
	out := sh.run(put4[0])
	if err := json.Unmarshal([]byte(out), &put); err != nil || put.Enabled || put.Destination.ExternalID == "" {
		t.Fatalf("step 4's put: %v\n%s%s", err, out, sh.stderr)
	}
	if !strings.Contains(sh.stderr, "saving the account disabled (--save-disabled)") || !strings.Contains(sh.stderr, "Trust policy of the role") {
		t.Errorf("step 4's put said:\n%s", sh.stderr)
	}
	sh.run("export ACCOUNT=" + put.ID)

	// Step 5: the customer's part, printed again (the test fails until the
	// customer has made the bucket and the role); the customer pastes it.
	sh.mayFail = true
	out = sh.runAll(steps[4].shLines)
	if !strings.Contains(sh.stderr, "bucket does not exist") {
		t.Errorf("step 5 before the customer's part:\n%s", sh.stderr)
	}
	var policies struct {
		Trust       destination.PolicyDocument `json:"trust_policy"`
		Permissions destination.PolicyDocument `json:"permissions_policy"`
	}
	if err := json.Unmarshal([]byte(sh.run(`daybook account test "$ACCOUNT" --stack daybook-prod -o json`)), &policies); err != nil {
		t.Fatal(err)
	}
	sh.mayFail = false
	if !strings.Contains(out, policies.Trust.JSON()) || !strings.Contains(out, policies.Permissions.JSON()) || !strings.Contains(out, put.Destination.ExternalID) {
		t.Fatalf("step 5 does not print the role's documents:\n%s", out)
	}
	customerCreates(t, ctx, cfg, put.Destination.Bucket, put.Destination.RoleARN, policies.Trust, policies.Permissions)

	// Step 6: tested, then enabled.
	if out := sh.runAll(steps[5].shLines); !strings.Contains(out, "enabled") || strings.Contains(out, "FAIL") {
		t.Fatalf("step 6:\n%s%s", out, sh.stderr)
	}
	// The schedule runs a sweep, and the exporter the jobs.
	var drain, drainErr bytes.Buffer
	if code := newApp(&drain, &drainErr).execute(ctx, []string{"local", "drain", "--sweep", "--dir", dir}); code != 0 {
		t.Fatalf("the schedule: %s%s", drain.String(), drainErr.String())
	}
	// Step 7: the first day landed, and verifies.
	step7 := make([]string, len(steps[6].shLines))
	for i, l := range steps[6].shLines {
		step7[i] = strings.ReplaceAll(l, "2026-12-01", day.String())
	}
	out = sh.runAll(step7)
	if !strings.Contains(out, "completed") || !strings.Contains(out, "1 partitions: 1 OK") && !strings.Contains(out, "OK, generation 1, 1 files, 3 rows match the manifest") {
		t.Errorf("step 7:\n%s%s", out, sh.stderr)
	}
}

// customerCreates is the customer's side of step 5 in the emulator: the
// bucket, and the role with the documents daybook printed, pasted into a
// CloudFormation role (IAM checks their syntax).
func customerCreates(t *testing.T, ctx context.Context, cfg aws.Config, bucket, roleARN string, trust, perms destination.PolicyDocument) {
	t.Helper()
	if _, err := awsclient.NewS3(cfg).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	name := roleARN[strings.LastIndex(roleARN, "/")+1:]
	tmpl, err := json.Marshal(map[string]any{"Resources": map[string]any{"Role": map[string]any{
		"Type": "AWS::IAM::Role",
		"Properties": map[string]any{"RoleName": name, "AssumeRolePolicyDocument": trust,
			"Policies": []any{map[string]any{"PolicyName": "daybook", "PolicyDocument": perms}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	cf := cloudformation.NewFromConfig(cfg)
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("customer-" + name), TemplateBody: aws.String(string(tmpl)),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityNamedIam}}); err != nil {
		t.Fatal(err)
	}
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("customer-" + name)})
	if err != nil || out.Stacks[0].StackStatus != cfntypes.StackStatusCreateComplete {
		t.Fatalf("the customer's role: %v %+v", err, out)
	}
}

// checklistShell runs the checklist's command lines: daybook (the built
// operator CLI) with the shell's environment, aws ssm put-parameter (the
// SDK, on the emulator), export K=V; "$VAR" expands from env.
type checklistShell struct {
	t      *testing.T
	ctx    context.Context
	dir    string
	cfg    aws.Config
	env    map[string]string
	stderr string
	// mayFail: a daybook command's exit status 1 is expected (its stderr
	// says why).
	mayFail bool
}

func (s *checklistShell) runAll(lines []string) string {
	s.t.Helper()
	var out strings.Builder
	for _, l := range lines {
		out.WriteString(s.run(l))
	}
	return out.String()
}

func (s *checklistShell) run(line string) string {
	s.t.Helper()
	args := shellWords(s.t, line, s.env)
	switch {
	case args[0] == "export" && len(args) == 2 && strings.Contains(args[1], "="):
		k, v, _ := strings.Cut(args[1], "=")
		s.env[k] = v
		return ""
	case len(args) > 3 && args[0] == "aws" && args[1] == "ssm" && args[2] == "put-parameter":
		in := &ssm.PutParameterInput{}
		for i := 3; i+1 < len(args); i += 2 {
			switch args[i] {
			case "--name":
				in.Name = aws.String(args[i+1])
			case "--type":
				in.Type = ssmtypes.ParameterType(args[i+1])
			case "--value":
				in.Value = aws.String(args[i+1])
			default:
				s.t.Fatalf("%s: flag %s", line, args[i])
			}
		}
		if _, err := ssm.NewFromConfig(s.cfg).PutParameter(s.ctx, in); err != nil {
			s.t.Fatalf("%s: %v", line, err)
		}
		return ""
	case args[0] == "daybook":
		var out, errw bytes.Buffer
		cmd := exec.CommandContext(s.ctx, filepath.Join(s.dir, ".local", "bin", operatorName), args[1:]...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = s.dir, &out, &errw
		cmd.Env = os.Environ()
		for k, v := range s.env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		err := cmd.Run()
		s.stderr = errw.String()
		if err != nil && !(s.mayFail && cmd.ProcessState.ExitCode() == 1) {
			s.t.Fatalf("%s: %v\n%s%s", line, err, out.String(), errw.String())
		}
		return out.String()
	}
	s.t.Fatalf("checklist command %q: not one this test runs", line)
	return ""
}
