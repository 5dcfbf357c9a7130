package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
	"github.com/daybook-dev/daybook/shared/ops"
)

// TestLocalDevCommands runs docs/development.md's local loop through both CLIs, the
// commands the Makefile targets run: make local-up (daybook-dev local up:
// moto, template.yaml, the demo source and the local account registered with
// the operator CLI beside the bootstraps), then daybook account put,
// retry, make invoke-sweeper (the sweeper's bootstrap under the runtime
// emulator), status, make local-drain (local drain), make invoke-exporter
// (the sample local up wrote: a manual re-export of the local account's
// newest closed day), history, verify, make invoke-exporter on the sample
// job of events/ (refused to the dead-letter queue), make local-down.
func TestLocalDevCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	iamcheck.Recorded(t) // the local moto records the functions' calls
	l, out := startLocal(t, ctx, "clitest")
	dir, env, dev, cli := l.dir, l.env, l.dev, l.daybook
	pid, err := readPid(localDir(dir))
	if err != nil {
		t.Fatalf("no pid file after local up: %v\n%s", err, out)
	}
	for _, want := range []string{"deployed", "demo source", "account " + LocalAccountID + " registered"} {
		if !strings.Contains(out, want) {
			t.Errorf("local up lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "account.json")); err != nil || !strings.Contains(string(b), LocalAccountID) {
		t.Errorf("account file: %v\n%s", err, b)
	}
	samEnvAsREADMESays(t, dir)

	closed := time.Now().UTC().AddDate(0, 0, -3).Format("2006-01-02") // closed whatever the hour
	acctFile := filepath.Join(dir, "account.json.test")
	if err := os.WriteFile(acctFile, []byte(`{"name":"cli test","enabled":true,"start_date":"`+closed+`",
		"datasets":["events"],"destination":{"bucket":"daybook-exports-local"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var acct struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(cli("account", "put", "--file", acctFile, "--env-file", env)), &acct); err != nil || !strings.HasPrefix(acct.ID, "acct_") {
		t.Fatalf("account put: id %q, %v", acct.ID, err)
	}
	if out := cli("account", "list", "--env-file", env); !strings.Contains(out, acct.ID) || !strings.Contains(out, LocalAccountID) {
		t.Errorf("account list lacks %s or %s:\n%s", acct.ID, LocalAccountID, out)
	}
	var rq struct {
		Queued int `json:"queued"`
	}
	if err := json.Unmarshal([]byte(cli("retry", "--account", acct.ID, "--dataset", "events", "--from", closed, "--to", closed, "--env-file", env, "-o", "json")), &rq); err != nil || rq.Queued != 1 {
		t.Fatalf("retry: %+v %v", rq, err)
	}

	// make invoke-sweeper
	var sum struct {
		Accounts int `json:"accounts"`
		Claimed  int `json:"claimed"`
		Enqueued int `json:"enqueued"`
	}
	out = dev("local", "invoke", "SweeperFunction", "--dir", dir, "--event", "../../events/sweeper-schedule.json")
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("sweeper response %q: %v", out, err)
	}
	if sum.Accounts != 2 || sum.Claimed < 2 || sum.Enqueued != sum.Claimed {
		t.Errorf("sweep summary %+v: want both accounts, claims enqueued", sum)
	}
	// The claimed day waits in the queue: status says so, not "running".
	if out := cli("status", "--account", acct.ID, "--env-file", env); !strings.Contains(out, "events  ") || !strings.Contains(out, "its job waits in the queue") || strings.Contains(out, "running attempt") {
		t.Errorf("status after the sweep:\n%s", out)
	}

	// make local-drain: the enqueued jobs go to the exporter; a message that
	// can never succeed goes to the dead-letter queue and is not counted done.
	vars, err := samstack.ReadEnvFile(localDir(dir).envFile())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := motoserver.ConfigFor(ctx, vars["ExporterFunction"]["AWS_ENDPOINT_URL"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqs.NewFromConfig(cfg).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(vars["ExporterFunction"]["JOBS_QUEUE_URL"]),
		MessageBody: aws.String(`{"kind":"no such kind"}`)}); err != nil {
		t.Fatal(err)
	}
	out = dev("local", "drain", "--dir", dir)
	if !strings.Contains(out, "0 failed, 1 moved to the dead-letter queue): "+fmt.Sprint(sum.Claimed)+" partitions exported, 0 failed") || !strings.Contains(out, "daybook dlq list") {
		t.Errorf("local drain: %s", out)
	}
	if out := cli("status", "--account", acct.ID, "--env-file", env, "-o", "json"); !strings.Contains(out, `"state": "completed"`) ||
		strings.Contains(out, `"state": "in-queue"`) || strings.Contains(out, `"state": "due"`) {
		t.Errorf("status after the drain:\n%s", out)
	}

	// make invoke-exporter: the sample local up wrote re-exports the local
	// account's newest closed day, whatever today's date is.
	b, err := os.ReadFile(filepath.Join(dir, "events", "day"))
	if err != nil {
		t.Fatal(err)
	}
	day := strings.TrimSpace(string(b))
	out = dev("local", "invoke", "ExporterFunction", "--dir", dir, "--event", filepath.Join(dir, "events", "exporter-manual.json"))
	var resp struct {
		Failures []any `json:"batchItemFailures"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp.Failures) != 0 {
		t.Errorf("manual re-export response %q (%v)", out, err)
	}
	out = cli("history", "--account", LocalAccountID, "--dataset", "events", "--day", day, "--env-file", env, "-o", "json")
	var h ops.PartitionHistory
	if err := json.Unmarshal([]byte(out), &h); err != nil || len(h.Attempts) != 1 || h.Attempts[0].Outcome != "completed" || h.Attempts[0].Reason != "manual" || h.Attempts[0].RequestedBy != "cli:ops" {
		t.Errorf("history of the re-exported day: %v\n%s", err, out)
	}
	if out := cli("verify", "--account", LocalAccountID, "--dataset", "events", "--day", day, "--env-file", env); !strings.Contains(out, "OK, generation 1") {
		t.Errorf("verify: %s", out)
	}

	// make invoke-exporter EVENT=events/exporter-job.json: the sample job's
	// claim token was never issued, so the exporter refuses it to the
	// dead-letter queue with the reason (the day has no row, or a row
	// whose claims never had that token), and reports the message done.
	out = dev("local", "invoke", "ExporterFunction", "--dir", dir, "--event", filepath.Join("..", "..", "events", "exporter-job.json"))
	if err := json.Unmarshal([]byte(out), &resp); err != nil || len(resp.Failures) != 0 {
		t.Errorf("sample job response %q (%v)", out, err)
	}
	dlq, err := sqs.NewFromConfig(cfg).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(vars["ExporterFunction"]["JOBS_DLQ_URL"]),
		MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	refused := regexp.MustCompile(`^request rejected: job for ` + LocalAccountID + `/events/2026-11-27: (the ledger has no row for this partition|claim_token "9d6f0c2b7e4a1358c0ffee42deadbeef" was never issued)`)
	var reasons []string
	for _, m := range dlq.Messages {
		if a, ok := m.MessageAttributes["daybook_error"]; ok && strings.Contains(aws.ToString(m.Body), "9d6f0c2b7e4a1358c0ffee42deadbeef") {
			reasons = append(reasons, aws.ToString(a.StringValue))
		}
	}
	if len(reasons) != 1 || !refused.MatchString(reasons[0]) {
		t.Errorf("the sample job in the dead-letter queue: reasons %q, want one matching %s", reasons, refused)
	}

	// A drain whose exports fail says so and exits 1. The exporter records
	// a failed export in the ledger and reports its message handled, so the
	// queue alone counted it done: on the old code an account whose every
	// export failed (here its bucket holds a delivered schema the catalog
	// breaks, so each day fails as schema_mismatch) drained as "N done, 0
	// failed", exit 0. A schema document binds a dataset only once a
	// generation of it was committed for the account, so the account's
	// day is delivered first, then its document is changed and the day
	// re-exported.
	broken := filepath.Join(dir, "account.json.broken")
	if err := os.WriteFile(broken, []byte(`{"name":"broken contract","enabled":true,"start_date":"`+closed+`",
		"datasets":["events"],"destination":{"bucket":"daybook-exports-local"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var b2 struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(cli("account", "put", "--file", broken, "--env-file", env)), &b2); err != nil {
		t.Fatal(err)
	}
	if out := dev("local", "drain", "--sweep", "--dir", dir); !strings.Contains(out, "partitions exported, 0 failed") {
		t.Errorf("the broken contract account's first drain: %s", out)
	}
	s3c := awsclient.NewS3(cfg)
	doc, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("daybook-exports-local"), Key: aws.String("daybook/" + acct.ID + "/v1/_schemas/events.json")})
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	err = json.NewDecoder(doc.Body).Decode(&schema)
	doc.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	cols := schema["columns"].([]any)
	extra := map[string]any{}
	for k, v := range cols[len(cols)-1].(map[string]any) {
		extra[k] = v
	}
	extra["name"] = "a_column_the_catalog_dropped"
	schema["columns"] = append(cols, extra)
	body, _ := json.Marshal(schema)
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("daybook-exports-local"), Key: aws.String("daybook/" + b2.ID + "/v1/_schemas/events.json"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	cli("reexport", "--account", b2.ID, "--dataset", "events", "--day", closed, "--env-file", env)
	var drainOut, drainErr bytes.Buffer
	code := newApp(&drainOut, &drainErr).execute(ctx, []string{"local", "drain", "--dir", dir})
	if code != 1 || !regexp.MustCompile(`\(\d+ handled, 0 failed, 0 moved to the dead-letter queue\): \d+ partitions exported, [1-9]\d* failed`).MatchString(drainOut.String()) ||
		!strings.Contains(drainErr.String(), "partitions failed: daybook status --state failed says why") {
		t.Errorf("a drain whose exports failed: exit %d\n%s%s", code, drainOut.String(), drainErr.String())
	}
	// Every call the bootstraps made (local invoke, local drain) is one
	// their policies in the template allow.
	motoURL, err := os.ReadFile(localDir(dir).urlFile())
	if err != nil {
		t.Fatal(err)
	}
	iamcheck.CheckRecorded(t, iamcheck.ForStage(t, "clitest", nil), strings.TrimSpace(string(motoURL)))

	dev("local", "down", "--dir", dir)
	if alive(pid) {
		t.Errorf("moto_server pid %d still running after local down", pid)
	}
	msg, err := exec.CommandContext(ctx, l.operator(), "status", "--env-file", env).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(msg), "the local stack is not running: make local-up") {
		t.Errorf("status after local down: %v, %s", err, msg)
	}
}

// localRun is a local stack a test started as a user would (`local up` in
// a directory of its own, with the host builds in <dir>/bin), stopped when
// the test ends.
type localRun struct {
	t        *testing.T
	ctx      context.Context
	dir, env string
}

// startLocal builds the bootstraps and the operator CLI and runs `local up`
// with stage; it returns the stack and what local up printed.
func startLocal(t *testing.T, ctx context.Context, stage string) (*localRun, string) {
	t.Helper()
	dir := t.TempDir()
	buildBinaries(t, localDir(dir).binDir())
	l := &localRun{t: t, ctx: ctx, dir: dir, env: filepath.Join(dir, "env.json")}
	t.Cleanup(func() {
		_ = newApp(io.Discard, io.Discard).execute(context.Background(), []string{"local", "down", "--dir", dir})
	})
	out := l.dev("local", "up", "--dir", dir, "--template", "../../template.yaml", "--stage", stage)
	return l, out
}

// dev runs a daybook-dev command line in-process and returns its stdout; a
// non-zero exit fails the test.
func (l *localRun) dev(args ...string) string {
	l.t.Helper()
	var out, errw bytes.Buffer
	if code := newApp(&out, &errw).execute(l.ctx, args); code != 0 {
		l.t.Fatalf("daybook-dev %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errw.String())
	}
	return out.String()
}

func (l *localRun) operator() string { return filepath.Join(localDir(l.dir).binDir(), operatorName) }

// daybook runs the operator CLI local up used and returns its stdout; a
// non-zero exit fails the test.
func (l *localRun) daybook(args ...string) string {
	l.t.Helper()
	var out, errw bytes.Buffer
	cmd := exec.CommandContext(l.ctx, l.operator(), args...)
	cmd.Stdout, cmd.Stderr = &out, &errw
	if err := cmd.Run(); err != nil {
		l.t.Fatalf("daybook %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errw.String())
	}
	return out.String()
}

// samEnvAsREADMESays: local up writes sam-env.json for sam local invoke's
// containers (the exporter's SOURCE_DSN at /var/task/demo.db, where the
// Makefile copies the demo source; everything else env.json's), and the
// Makefile's sam lines are docs/development.md's (the container needs Docker, which
// these tests cannot run: before, the env file SAM got pointed at a host
// path no container sees).
func samEnvAsREADMESays(t *testing.T, dir string) {
	t.Helper()
	env, err := samstack.ReadEnvFile(filepath.Join(dir, "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	sam, err := samstack.ReadEnvFile(filepath.Join(dir, "sam-env.json"))
	if err != nil {
		t.Fatal(err)
	}
	for fn, vars := range env {
		for k, v := range vars {
			want := v
			if k == "SOURCE_DSN" {
				want = "file:/var/task/demo.db?mode=ro"
			}
			if sam[fn][k] != want {
				t.Errorf("sam-env.json %s %s=%q, want %q", fn, k, sam[fn][k], want)
			}
		}
	}
	if _, ok := env["ExporterFunction"]["SOURCE_DSN"]; !ok {
		t.Error("env.json names no SOURCE_DSN")
	}
	dry, err := exec.Command("make", "-n", "-C", "../..", "_invoke", "FN=ExporterFunction", "EVENT=.local/events/exporter-manual.json").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../docs/development.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"sam build ExporterFunction && cp .local/demo.db .aws-sam/build/ExporterFunction/demo.db",
		"sam local invoke ExporterFunction --event .local/events/exporter-manual.json --env-vars .local/sam-env.json --docker-network host",
	} {
		if !strings.Contains(string(readme), line) {
			t.Errorf("docs/development.md lacks %q", line)
		}
		if !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(string(dry), ">/dev/null", "")), " "), line) {
			t.Errorf("make invoke-exporter's sam path is not %q:\n%s", line, dry)
		}
	}
}

// TestCLIVarsNameTheConsoleRole: the env file names the console's role
// (CONSOLE_ROLE_ARN, which daybook account put and account test print a GCS
// or Azure customer's trust of) when the stack has the output
// ConsoleRoleArn, as it names the exporter's, and nothing when the stack
// deploys no console (the local stack and the demo).
func TestCLIVarsNameTheConsoleRole(t *testing.T) {
	t.Parallel()
	const exporter, console = "arn:aws:iam::123456789012:role/daybook-local-ExporterFunctionRole-A", "arn:aws:iam::123456789012:role/daybook-local-ConsoleFunctionRole-B"
	with := cliVars(&samstack.Stack{Outputs: map[string]string{"ExporterRoleArn": exporter, "ConsoleRoleArn": console}}, map[string]string{})
	if with["EXPORTER_ROLE_ARN"] != exporter || with["CONSOLE_ROLE_ARN"] != console {
		t.Errorf("a stack with the console: %v", with)
	}
	without := cliVars(&samstack.Stack{Outputs: map[string]string{"ExporterRoleArn": exporter}}, map[string]string{})
	if _, ok := without["CONSOLE_ROLE_ARN"]; ok || without["EXPORTER_ROLE_ARN"] != exporter {
		t.Errorf("a stack without the console: %v", without)
	}
}
