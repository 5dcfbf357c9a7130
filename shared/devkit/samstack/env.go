package samstack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// FunctionEnv reads each deployed function's environment back from the
// emulator's Lambda API, so the values are the stack's resolved ones (real
// table and queue names), keyed by logical id as `sam local invoke
// --env-vars` expects. extra is added to every function (endpoint, region,
// test credentials, local source DSN).
func FunctionEnv(ctx context.Context, cfg aws.Config, st *Stack, logicalIDs []string, extra map[string]string) (map[string]map[string]string, error) {
	lc := lambda.NewFromConfig(cfg)
	env := map[string]map[string]string{}
	for _, id := range logicalIDs {
		name, ok := st.Resources[id]
		if !ok {
			return nil, fmt.Errorf("stack %s has no resource %s", st.Name, id)
		}
		out, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
		if err != nil {
			return nil, fmt.Errorf("function %s (%s): %w", id, name, err)
		}
		vars := map[string]string{}
		if out.Environment != nil {
			for k, v := range out.Environment.Variables {
				vars[k] = v
			}
		}
		for k, v := range extra {
			vars[k] = v
		}
		env[id] = vars
	}
	return env, nil
}

// WriteEnvFile writes env in the `sam local invoke --env-vars` format.
func WriteEnvFile(path string, env map[string]map[string]string) error {
	b, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadEnvFile reads a file written by WriteEnvFile.
func ReadEnvFile(path string) (map[string]map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]map[string]string{}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("env file %s: %w", path, err)
	}
	return env, nil
}

// Up deploys the template like Deploy and then disables the SQS triggers of
// the exporter (jobs queue) and the sweeper (sweep queue) (see
// DisableEventSourceMappings): the local stack as `make local-up`, the demo
// and the integration tests use it.
func Up(ctx context.Context, cfg aws.Config, templatePath, stage string, params map[string]string) (*Stack, error) {
	all := map[string]string{"Stage": stage}
	for k, v := range params {
		all[k] = v
	}
	st, err := Deploy(ctx, cfg, templatePath, "daybook-"+stage, all)
	if err != nil {
		return nil, err
	}
	for _, fn := range []string{"ExporterFunctionName", "SweeperFunctionName"} {
		if err := DisableEventSourceMappings(ctx, cfg, st.Outputs[fn]); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// DisableEventSourceMappings turns off the function's SQS triggers in the
// emulator. moto runs a mapping inside SendMessage and takes the messages
// off the queue (it cannot run the function without Docker), so locally
// the driver in package eventsource does the mapping's job instead. moto's
// DeleteEventSourceMapping leaves the trigger attached; Enabled=false works.
func DisableEventSourceMappings(ctx context.Context, cfg aws.Config, functionName string) error {
	lc := lambda.NewFromConfig(cfg)
	out, err := lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(functionName)})
	if err != nil {
		return fmt.Errorf("list event source mappings of %s: %w", functionName, err)
	}
	for _, m := range out.EventSourceMappings {
		if _, err := lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, Enabled: aws.Bool(false)}); err != nil {
			return fmt.Errorf("disable event source mapping %s: %w", aws.ToString(m.UUID), err)
		}
	}
	return nil
}
