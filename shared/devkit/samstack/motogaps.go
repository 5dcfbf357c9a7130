package samstack

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// moto's CloudFormation creates no AWS::Lambda::Url (a function URL, which
// SAM makes from FunctionUrlConfig) and refuses a stack whose outputs read
// one. Outside the template, Deploy takes the URLs out of the translated
// template and creates them after the stack with the Lambda API, which moto
// has, filling in the outputs that named them.

// functionURL is an AWS::Lambda::Url taken out of a template.
type functionURL struct {
	logicalID string
	function  string // logical id of the target function
	authType  string
	invoke    string
	// outputs name the stack outputs that read the URL (Fn::GetAtt
	// <logicalID>.FunctionUrl).
	outputs []string
}

// withoutFunctionURLs removes the AWS::Lambda::Url resources of a translated
// template and the outputs that read them.
func withoutFunctionURLs(body []byte) ([]byte, []functionURL, error) {
	var tmpl map[string]any
	if err := json.Unmarshal(body, &tmpl); err != nil {
		return nil, nil, fmt.Errorf("translated template: %w", err)
	}
	resources, _ := tmpl["Resources"].(map[string]any)
	outputs, _ := tmpl["Outputs"].(map[string]any)
	var urls []functionURL
	for id, r := range resources {
		res, _ := r.(map[string]any)
		if res["Type"] != "AWS::Lambda::Url" {
			continue
		}
		props, _ := res["Properties"].(map[string]any)
		u := functionURL{logicalID: id, authType: str(props["AuthType"]), invoke: str(props["InvokeMode"])}
		if ref, ok := props["TargetFunctionArn"].(map[string]any); ok {
			u.function = str(ref["Ref"])
		}
		if u.function == "" {
			return nil, nil, fmt.Errorf("function URL %s: TargetFunctionArn is not a Ref to a function", id)
		}
		for name, o := range outputs {
			out, _ := o.(map[string]any)
			if v, ok := out["Value"].(map[string]any); ok {
				if ga, ok := v["Fn::GetAtt"].([]any); ok && len(ga) == 2 && ga[0] == id && ga[1] == "FunctionUrl" {
					u.outputs = append(u.outputs, name)
					delete(outputs, name)
				}
			}
		}
		sort.Strings(u.outputs)
		delete(resources, id)
		urls = append(urls, u)
	}
	sort.Slice(urls, func(i, j int) bool { return urls[i].logicalID < urls[j].logicalID })
	if len(urls) == 0 {
		return body, nil, nil
	}
	out, err := json.Marshal(tmpl)
	return out, urls, err
}

func str(v any) string { s, _ := v.(string); return s }

// createFunctionURLs creates the function URLs whose functions the stack
// has (a URL under a false condition has no function either) and sets the
// outputs that read them.
func createFunctionURLs(ctx context.Context, api *lambda.Client, st *Stack, urls []functionURL) error {
	for _, u := range urls {
		fn, ok := st.Resources[u.function]
		if !ok {
			continue
		}
		in := &lambda.CreateFunctionUrlConfigInput{FunctionName: aws.String(fn), AuthType: lambdatypes.FunctionUrlAuthType(u.authType)}
		if u.invoke != "" {
			in.InvokeMode = lambdatypes.InvokeMode(u.invoke)
		}
		out, err := api.CreateFunctionUrlConfig(ctx, in)
		if err != nil {
			return fmt.Errorf("function URL %s of %s: %w", u.logicalID, fn, err)
		}
		st.Resources[u.logicalID] = aws.ToString(out.FunctionArn)
		for _, name := range u.outputs {
			st.Outputs[name] = aws.ToString(out.FunctionUrl)
		}
	}
	return nil
}
