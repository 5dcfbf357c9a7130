package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
)

func TestWhereItPoints(t *testing.T) {
	s := deployed(t)
	table, queue := s.outputs["LedgerTableName"], lastSegment(s.outputs["JobsQueueUrl"])
	// The SDK reads the endpoint and credentials of --stack and of the
	// environment from the process environment, as it would on a laptop.
	for k, v := range motoEnv(srv.URL) {
		t.Setenv(k, v)
	}
	t.Setenv("LEDGER_TABLE", "")
	dead := deadEndpoint(t)
	deadEnv := filepath.Join(t.TempDir(), "env.json")
	b, _ := json.Marshal(map[string]map[string]string{"ExporterFunction": {"LEDGER_TABLE": table, "AWS_ENDPOINT_URL": dead, "AWS_REGION": "us-east-1"}})
	os.WriteFile(deadEnv, b, 0o644)
	localDir := t.TempDir()
	os.WriteFile(filepath.Join(localDir, "env.json"), b, 0o644)
	// The kept demo's env file, after its moto_server stopped (local down):
	// daybook-dev wrote the command that starts it again.
	demoEnv := filepath.Join(t.TempDir(), "env.json")
	b, _ = json.Marshal(map[string]map[string]string{"ExporterFunction": {"LEDGER_TABLE": table, "AWS_ENDPOINT_URL": dead, "AWS_REGION": "us-east-1",
		"DAYBOOK_LOCAL_START": ".local/bin/daybook-dev demo --dir .demo --bin .local/bin --keep"}})
	os.WriteFile(demoEnv, b, 0o644)

	tests := []struct {
		name   string
		env    map[string]string
		local  bool // .local/env.json exists (pointing at a dead endpoint)
		args   []string
		code   int
		stderr string
	}{
		{"env file", nil, false, []string{"--env-file", s.envFile}, 0,
			"daybook: using the local stack in " + s.envFile + " (endpoint " + srv.URL + "): table " + table + ", queue " + queue + "\n"},
		{"stack", nil, false, []string{"--stack", "daybook-clitest"}, 0,
			"daybook: using stack daybook-clitest (region us-east-1): table " + table + ", queue " + queue + "\n"},
		{"stack and region", nil, false, []string{"--stack", "daybook-clitest", "--region", "us-east-1"}, 0, "using stack daybook-clitest (region us-east-1)"},
		{"no such stack", nil, false, []string{"--stack", "daybook-nope"}, 1, "no such CloudFormation stack: daybook-nope (region us-east-1) (check --stack, --region and --profile)"},
		{"environment", map[string]string{"LEDGER_TABLE": table, "JOBS_QUEUE_URL": s.outputs["JobsQueueUrl"]}, false, nil, 0,
			"daybook: using the deployment in the environment variables (region us-east-1): table " + table},
		{"stack wins over .local/env.json", nil, true, []string{"--stack", "daybook-clitest"}, 0, "using stack daybook-clitest"},
		{".local/env.json when LEDGER_TABLE is unset", nil, true, nil, 1, "the local stack is not running: make local-up (nothing answers at " + dead + ")"},
		{"LEDGER_TABLE wins over .local/env.json", map[string]string{"LEDGER_TABLE": table}, true, nil, 0, "the deployment in the environment variables"},
		{"dead local endpoint", nil, false, []string{"--env-file", deadEnv}, 1, "daybook: the local stack is not running: make local-up"},
		{"dead endpoint in the environment", map[string]string{"LEDGER_TABLE": table, "AWS_ENDPOINT_URL": dead}, false, nil, 1, "the local stack is not running: make local-up"},
		{"the stopped demo's env file names the demo", nil, false, []string{"--env-file", demoEnv}, 1,
			"daybook: the local stack in " + demoEnv + " is not running: start it with .local/bin/daybook-dev demo --dir .demo --bin .local/bin --keep (the local stack is not running"},
		{"no deployment, but a demo ran here", map[string]string{"DEMO": "yes"}, false, nil, 1,
			"the demo's stack is described by " + filepath.Dir(demoEnv) + "/env.json: run it with daybook-dev demo --keep, then pass --env-file " + filepath.Dir(demoEnv) + "/env.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _, _ := testApp(t)
			a.getenv = func(k string) string {
				if v, ok := tt.env[k]; ok {
					return v
				}
				if k == "LEDGER_TABLE" || k == "JOBS_QUEUE_URL" {
					return ""
				}
				return os.Getenv(k)
			}
			if tt.local {
				a.localDir = localDir
			}
			if tt.env["DEMO"] != "" {
				a.demoDir = filepath.Dir(demoEnv)
			}
			r := execute(t, a, append([]string{"account", "list"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d (want %d), stderr lacks %q:\n%s", r.code, tt.code, tt.stderr, r.stderr)
			}
			if tt.code == 0 && (strings.Count(r.stderr, "daybook: using") != 1 || !strings.HasPrefix(r.stdout, "ID\tNAME") && !strings.HasPrefix(r.stdout, "ID ")) {
				t.Errorf("stdout %q, stderr %q", r.stdout[:min(40, len(r.stdout))], r.stderr)
			}
		})
	}
}

// deadEndpoint is a loopback URL nothing listens on.
func deadEndpoint(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestStackOutputs: --stack needs nothing but the stack name; every
// setting it reads is an output of template.yaml.
func TestStackOutputs(t *testing.T) {
	s := deployed(t)
	for out := range stackOutputVars {
		if s.outputs[out] == "" {
			t.Errorf("template.yaml has no output %s (for %s)", out, stackOutputVars[out])
		}
	}
	if s.outputs["Stage"] != "clitest" || s.outputs["MaxAttempts"] != "6" || s.outputs["DashboardName"] != "daybook-clitest" {
		t.Errorf("outputs %v", s.outputs)
	}
}

func TestNoCredentialsIsSaidAtOnce(t *testing.T) {
	a, _, _ := testApp(t)
	a.awsConfig = func(context.Context, string, string) (aws.Config, error) { return aws.Config{Region: "eu-west-1"}, nil }
	r := execute(t, a, "status", "--stack", "daybook-prod")
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "no AWS credentials: pass --profile") || !strings.Contains(r.stderr, "for stack daybook-prod (region eu-west-1)") {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
}

// TestAccountRulesOfADeployment: the rules come from the deployment's
// variables; a local stack that names no account is in moto's; a stack
// without the DeploymentAccountId output is in the account of its own ARN.
func TestAccountRulesOfADeployment(t *testing.T) {
	vars := map[string]string{account.EnvCustomerRolePattern: "arn:aws:iam::*:role/daybook-export-*", account.EnvAllowPrivateEndpoints: "true"}
	for _, tt := range []struct {
		name     string
		endpoint string
		vars     map[string]string
		want     string
	}{
		{"local, unnamed", "http://127.0.0.1:5000", vars, motoserver.AccountID},
		{"local, named", "http://localhost:5000", map[string]string{account.EnvDeploymentAccountID: "210987654321"}, "210987654321"},
		{"remote, unnamed", "", vars, ""},
		{"remote endpoint, unnamed", "https://s3.example.com", vars, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := readRules(&deployment{vars: tt.vars, endpoint: tt.endpoint})
			if err != nil || r.DeploymentAccountID != tt.want {
				t.Errorf("DeploymentAccountID %q (%v), want %q", r.DeploymentAccountID, err, tt.want)
			}
		})
	}
	r, err := readRules(&deployment{vars: vars})
	if err != nil || r.RolePattern != vars[account.EnvCustomerRolePattern] || !r.AllowPrivateEndpoints {
		t.Errorf("rules %+v (%v)", r, err)
	}
	if _, err := readRules(&deployment{vars: map[string]string{account.EnvCustomerRolePattern: "daybook-export-*"}}); err == nil ||
		!strings.Contains(err.Error(), "CUSTOMER_ROLE_PATTERN") {
		t.Errorf("a role name where an ARN pattern belongs: %v", err)
	}

	outs, err := stackOutputs(context.Background(), fakeStacks{}, "old")
	if err != nil || outs["DeploymentAccountId"] != "210987654321" {
		t.Errorf("account of a stack without the output: %v (%v)", outs, err)
	}
}

type fakeStacks struct{}

func (fakeStacks) DescribeStacks(context.Context, *cloudformation.DescribeStacksInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	return &cloudformation.DescribeStacksOutput{Stacks: []cftypes.Stack{{
		StackId: aws.String("arn:aws:cloudformation:eu-west-1:210987654321:stack/old/5e4a1f80-0000-11ee-0000-000000000000"),
		Outputs: []cftypes.Output{{OutputKey: aws.String("LedgerTableName"), OutputValue: aws.String("daybook-old-ledger")}},
	}}}, nil
}
