package samstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
	"github.com/daybook-dev/daybook/shared/envvar"
)

var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

func TestDeployTemplate(t *testing.T) {
	ctx := context.Background()
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := samstack.Deploy(ctx, cfg, "../../../template.yaml", "daybook-deploytest", map[string]string{"Stage": "deploytest"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"LedgerTableName", "JobsQueueUrl", "JobsDLQUrl", "SweeperFunctionName", "ExporterFunctionName"} {
		if st.Outputs[k] == "" {
			t.Errorf("output %s missing: %v", k, st.Outputs)
		}
	}
	if _, ok := st.Resources["ConsoleFunction"]; ok || st.Outputs["ConsoleUrl"] != "" || st.Outputs["ConsoleRoleArn"] != "" {
		t.Errorf("the console is deployed by default: %v", st.Outputs)
	}

	t.Run("queue redrives to the DLQ with a visibility timeout of 6x the exporter timeout", func(t *testing.T) {
		q := sqs.NewFromConfig(cfg)
		attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(st.Outputs["JobsQueueUrl"]), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		dlq, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(st.Outputs["JobsDLQUrl"]), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
		})
		if err != nil {
			t.Fatal(err)
		}
		var redrive struct {
			Target string `json:"deadLetterTargetArn"`
			Max    any    `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(attrs.Attributes["RedrivePolicy"]), &redrive); err != nil {
			t.Fatalf("redrive policy %q: %v", attrs.Attributes["RedrivePolicy"], err)
		}
		if redrive.Target != dlq.Attributes["QueueArn"] {
			t.Errorf("redrive target %q, want the DLQ %q", redrive.Target, dlq.Attributes["QueueArn"])
		}
		lc := lambda.NewFromConfig(cfg)
		fn, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(st.Outputs["ExporterFunctionName"])})
		if err != nil {
			t.Fatal(err)
		}
		vis, _ := strconv.Atoi(attrs.Attributes["VisibilityTimeout"])
		if timeout := int(aws.ToInt32(fn.Timeout)); vis < 6*timeout {
			t.Errorf("visibility timeout %d < 6 x exporter timeout %d", vis, timeout)
		}
		if attrs.Attributes["SqsManagedSseEnabled"] != "true" {
			t.Errorf("jobs queue SSE = %q", attrs.Attributes["SqsManagedSseEnabled"])
		}
	})

	t.Run("exporter consumes the queue with partial batch responses", func(t *testing.T) {
		lc := lambda.NewFromConfig(cfg)
		out, err := lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(st.Outputs["ExporterFunctionName"])})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.EventSourceMappings) != 1 {
			t.Fatalf("event source mappings: %d", len(out.EventSourceMappings))
		}
		m := out.EventSourceMappings[0]
		if !strings.HasSuffix(aws.ToString(m.EventSourceArn), ":daybook-deploytest-jobs") {
			t.Errorf("mapping source %s", aws.ToString(m.EventSourceArn))
		}
		if len(m.FunctionResponseTypes) != 1 || m.FunctionResponseTypes[0] != "ReportBatchItemFailures" {
			t.Errorf("response types %v", m.FunctionResponseTypes)
		}
	})

	t.Run("sweeper runs its fan-out queue with partial batch responses", func(t *testing.T) {
		lc := lambda.NewFromConfig(cfg)
		out, err := lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(st.Outputs["SweeperFunctionName"])})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.EventSourceMappings) != 1 {
			t.Fatalf("event source mappings: %d", len(out.EventSourceMappings))
		}
		m := out.EventSourceMappings[0]
		if !strings.HasSuffix(aws.ToString(m.EventSourceArn), ":daybook-deploytest-sweep") || aws.ToInt32(m.BatchSize) != 1 {
			t.Errorf("mapping source %s, batch size %d", aws.ToString(m.EventSourceArn), aws.ToInt32(m.BatchSize))
		}
		if len(m.FunctionResponseTypes) != 1 || m.FunctionResponseTypes[0] != "ReportBatchItemFailures" {
			t.Errorf("response types %v", m.FunctionResponseTypes)
		}
	})

	t.Run("env file carries the stack's resource names", func(t *testing.T) {
		env, err := samstack.FunctionEnv(ctx, cfg, st, []string{"SweeperFunction", "ExporterFunction"}, map[string]string{"AWS_ENDPOINT_URL": srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "env.json")
		if err := samstack.WriteEnvFile(path, env); err != nil {
			t.Fatal(err)
		}
		back, err := samstack.ReadEnvFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, fn := range []string{"SweeperFunction", "ExporterFunction"} {
			if got := back[fn]["LEDGER_TABLE"]; got != st.Outputs["LedgerTableName"] {
				t.Errorf("%s LEDGER_TABLE=%q, want %q", fn, got, st.Outputs["LedgerTableName"])
			}
			if got := back[fn]["JOBS_QUEUE_URL"]; got != st.Outputs["JobsQueueUrl"] {
				t.Errorf("%s JOBS_QUEUE_URL=%q, want %q", fn, got, st.Outputs["JobsQueueUrl"])
			}
			if back[fn]["AWS_ENDPOINT_URL"] != srv.URL {
				t.Errorf("%s endpoint not set", fn)
			}
		}
		for _, k := range []string{"PER_ACCOUNT_CAP", "EXPORTER_CONCURRENCY", "SWEEP_SCHEDULE", "SWEEP_QUEUE_URL", "MAX_BACKFILL_DAYS"} {
			if back["SweeperFunction"][k] == "" {
				t.Errorf("sweeper env lacks %s", k)
			}
		}
		if back["ExporterFunction"]["MAX_BACKFILL_DAYS"] == "" {
			t.Error("exporter env lacks MAX_BACKFILL_DAYS")
		}
		// The deployment's account rules, in the functions' environment and
		// in the outputs the CLI's --stack reads.
		rules, err := account.RulesFromEnv(func(k string) (string, bool) { v, ok := back["ExporterFunction"][k]; return v, ok })
		secrets := "arn:aws:secretsmanager:" + motoserver.Region + ":" + motoserver.AccountID + ":secret:daybook/destinations/*"
		want := account.Rules{DeploymentAccountID: motoserver.AccountID, RolePattern: "arn:aws:iam::*:role/daybook-export-*",
			MaxBackfillDays: envvar.DefaultMaxBackfillDays, SecretPattern: secrets}
		if err != nil || rules != want {
			t.Errorf("rules from the exporter's env: %+v (%v), want %+v", rules, err, want)
		}
		for out, v := range map[string]string{"DeploymentAccountId": motoserver.AccountID,
			"CustomerRoleArnPattern": "arn:aws:iam::*:role/daybook-export-*", "AllowPrivateEndpoints": "false",
			"MaxBackfillDays": strconv.Itoa(envvar.DefaultMaxBackfillDays), "SweepQueueUrl": back["SweeperFunction"]["SWEEP_QUEUE_URL"],
			"DestinationSecretPattern": secrets} {
			if st.Outputs[out] != v {
				t.Errorf("output %s=%q, want %q", out, st.Outputs[out], v)
			}
		}
	})
}

// TestDeployConsole: with DeployConsole the console function is deployed
// behind an IAM function URL (created by samstack, since moto's
// CloudFormation does not), with actions only when ConsoleActions says so,
// and its role is the output ConsoleRoleArn.
func TestDeployConsole(t *testing.T) {
	ctx := context.Background()
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lc := lambda.NewFromConfig(cfg)
	for _, actions := range []string{"false", "true"} {
		t.Run("ConsoleActions="+actions, func(t *testing.T) {
			stage := "console" + map[string]string{"true": "rw", "false": "ro"}[actions]
			st, err := samstack.Deploy(ctx, cfg, "../../../template.yaml", "daybook-"+stage,
				map[string]string{"Stage": stage, "DeployConsole": "true", "ConsoleActions": actions})
			if err != nil {
				t.Fatal(err)
			}
			fn, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(st.Outputs["ConsoleFunctionName"])})
			if err != nil {
				t.Fatal(err)
			}
			env := fn.Environment.Variables
			if env["CONSOLE_ACTIONS"] != actions || env["LEDGER_TABLE"] != st.Outputs["LedgerTableName"] || env["JOBS_QUEUE_URL"] != st.Outputs["JobsQueueUrl"] {
				t.Errorf("console environment %v", env)
			}
			u, err := lc.GetFunctionUrlConfig(ctx, &lambda.GetFunctionUrlConfigInput{FunctionName: fn.FunctionName})
			if err != nil {
				t.Fatal(err)
			}
			if u.AuthType != "AWS_IAM" || aws.ToString(u.FunctionUrl) == "" || st.Outputs["ConsoleUrl"] != aws.ToString(u.FunctionUrl) {
				t.Errorf("function URL %s (auth %s), output %q", aws.ToString(u.FunctionUrl), u.AuthType, st.Outputs["ConsoleUrl"])
			}
			// The role customers' GCS and Azure trust names beside the
			// exporter's: the console reads their buckets as itself.
			if role := aws.ToString(fn.Role); role == "" || st.Outputs["ConsoleRoleArn"] != role || role == st.Outputs["ExporterRoleArn"] {
				t.Errorf("output ConsoleRoleArn %q, the console's role is %q (the exporter's %q)", st.Outputs["ConsoleRoleArn"], role, st.Outputs["ExporterRoleArn"])
			}
		})
	}
}

// TestConsoleRoleWritesOnlyWithActions: the console's role reads the ledger
// and the manifests; writing the ledger and sending re-exports is a policy
// of its own, only under ConsoleActions.
func TestConsoleRoleWritesOnlyWithActions(t *testing.T) {
	body, err := samstack.Translate(context.Background(), "../../../template.yaml", motoserver.Region)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Condition  string
			Properties json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &tmpl); err != nil {
		t.Fatal(err)
	}
	role, actions := tmpl.Resources["ConsoleFunctionRole"], tmpl.Resources["ConsoleActionsPolicy"]
	if role.Condition != "HasConsole" || actions.Condition != "HasConsoleActions" {
		t.Fatalf("conditions: role %q, actions policy %q", role.Condition, actions.Condition)
	}
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, write := range []string{"dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:DeleteItem", "sqs:SendMessage", "s3:PutObject", "s3:DeleteObject"} {
		if strings.Contains(compact(role.Properties), write) {
			t.Errorf("the console's role may always %s", write)
		}
	}
	for _, read := range []string{"dynamodb:GetItem", "dynamodb:Query", "sts:AssumeRole", "s3:GetObject"} {
		if !strings.Contains(compact(role.Properties), read) {
			t.Errorf("the console's role may not %s", read)
		}
	}
	p := compact(actions.Properties)
	if !strings.Contains(p, `"Roles":[{"Ref":"ConsoleFunctionRole"}]`) || !strings.Contains(p, "dynamodb:UpdateItem") ||
		!strings.Contains(p, "sqs:SendMessage") || strings.Contains(p, "DeleteItem") {
		t.Errorf("the actions' policy: %s", p)
	}
}
