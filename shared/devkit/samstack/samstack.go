// Package samstack deploys template.yaml into a local AWS emulator the way
// `sam deploy` does — SAM translator, then a CloudFormation stack — so local
// resources are never defined a second time by hand. It also writes the
// `sam local invoke --env-vars` file from the stack's real resource names.
package samstack

import (
	"archive/zip"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/awsclient"
)

//go:embed translate.py
var translatePy []byte

// ArtifactBucket holds the placeholder code objects the translated template
// points at; the local functions run from the host binaries, not from these.
const ArtifactBucket = "daybook-local-artifacts"

// Translate runs the SAM translator on the template at path and returns the
// CloudFormation JSON.
func Translate(ctx context.Context, path, region string) ([]byte, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil, errors.New("python3 not found: the SAM translator needs it (`apt-get install python3`)")
	}
	cmd := exec.CommandContext(ctx, py, "-c", string(translatePy), path, ArtifactBucket)
	cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION="+region, "AWS_REGION="+region)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "No module named 'samtranslator'") {
			msg = "the SAM translator is missing: install it with `python3 -m pip install aws-sam-translator cfn-lint` (or `make tools`)"
		}
		return nil, fmt.Errorf("translate %s: %w: %s", path, err, msg)
	}
	return out, nil
}

// Stack is a deployed stack's identity and outputs.
type Stack struct {
	Name    string
	Outputs map[string]string
	// Resources maps logical id to physical id.
	Resources map[string]string
}

// Deploy translates the template and creates (or replaces) stackName in the
// emulator cfg points at. params are CloudFormation parameter overrides.
// Function URLs, which moto's CloudFormation does not create, are created
// with the Lambda API after the stack (motogaps.go).
func Deploy(ctx context.Context, cfg aws.Config, templatePath, stackName string, params map[string]string) (*Stack, error) {
	body, err := Translate(ctx, templatePath, cfg.Region)
	if err != nil {
		return nil, err
	}
	body, urls, err := withoutFunctionURLs(body)
	if err != nil {
		return nil, err
	}
	var tmpl struct {
		Resources map[string]struct {
			Type string `json:"Type"`
		} `json:"Resources"`
	}
	if err := json.Unmarshal(body, &tmpl); err != nil {
		return nil, fmt.Errorf("translated template: %w", err)
	}
	if err := putPlaceholders(ctx, cfg, tmpl.Resources); err != nil {
		return nil, err
	}
	cf := cloudformation.NewFromConfig(cfg)
	if _, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stackName)}); err == nil {
		if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(stackName)}); err != nil {
			return nil, fmt.Errorf("delete old stack %s: %w", stackName, err)
		}
	}
	in := &cloudformation.CreateStackInput{
		StackName:    aws.String(stackName),
		TemplateBody: aws.String(string(body)),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam, cfntypes.CapabilityCapabilityAutoExpand},
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		in.Parameters = append(in.Parameters, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(params[k])})
	}
	if _, err := cf.CreateStack(ctx, in); err != nil {
		return nil, fmt.Errorf("create stack %s: %w", stackName, err)
	}
	st, err := waitStack(ctx, cf, stackName)
	if err != nil {
		return nil, err
	}
	if err := createFunctionURLs(ctx, lambda.NewFromConfig(cfg), st, urls); err != nil {
		return nil, err
	}
	return st, nil
}

func putPlaceholders(ctx context.Context, cfg aws.Config, resources map[string]struct {
	Type string `json:"Type"`
}) error {
	api := awsclient.NewS3(cfg)
	if _, err := api.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(ArtifactBucket)}); err != nil && !strings.Contains(err.Error(), "BucketAlready") {
		return fmt.Errorf("create artifact bucket: %w", err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("bootstrap")
	_, _ = w.Write([]byte("placeholder: local functions run from the host binary under the runtime emulator\n"))
	if err := zw.Close(); err != nil {
		return err
	}
	for name, r := range resources {
		if r.Type != "AWS::Lambda::Function" {
			continue
		}
		if _, err := api.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(ArtifactBucket), Key: aws.String(name + ".zip"), Body: bytes.NewReader(buf.Bytes()),
		}); err != nil {
			return fmt.Errorf("put placeholder code for %s: %w", name, err)
		}
	}
	return nil
}

func waitStack(ctx context.Context, cf *cloudformation.Client, name string) (*Stack, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
		if err != nil {
			return nil, fmt.Errorf("describe stack %s: %w", name, err)
		}
		st := out.Stacks[0]
		switch st.StackStatus {
		case cfntypes.StackStatusCreateComplete:
			s := &Stack{Name: name, Outputs: map[string]string{}, Resources: map[string]string{}}
			for _, o := range st.Outputs {
				s.Outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
			}
			res, err := cf.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(name)})
			if err != nil {
				return nil, fmt.Errorf("stack resources: %w", err)
			}
			for _, r := range res.StackResources {
				s.Resources[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
			}
			return s, nil
		case cfntypes.StackStatusCreateInProgress:
		default:
			return nil, fmt.Errorf("stack %s: %s: %s", name, st.StackStatus, aws.ToString(st.StackStatusReason))
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stack %s still %s after 2m", name, st.StackStatus)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
