package samstack_test

import (
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
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
)

var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(motoserver.RunTests(m, &srv)) }

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
		if back["SweeperFunction"]["PER_ACCOUNT_CAP"] == "" {
			t.Error("sweeper env lacks PER_ACCOUNT_CAP")
		}
		// The deployment's account rules, in the functions' environment and
		// in the outputs the CLI's --stack reads.
		rules, err := account.RulesFromEnv(func(k string) (string, bool) { v, ok := back["ExporterFunction"][k]; return v, ok })
		want := account.Rules{DeploymentAccountID: motoserver.AccountID, RolePattern: "arn:aws:iam::*:role/daybook-export-*"}
		if err != nil || rules != want {
			t.Errorf("rules from the exporter's env: %+v (%v), want %+v", rules, err, want)
		}
		for out, v := range map[string]string{"DeploymentAccountId": motoserver.AccountID,
			"CustomerRoleArnPattern": "arn:aws:iam::*:role/daybook-export-*", "AllowPrivateEndpoints": "false"} {
			if st.Outputs[out] != v {
				t.Errorf("output %s=%q, want %q", out, st.Outputs[out], v)
			}
		}
	})
}
