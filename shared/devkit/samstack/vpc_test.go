package samstack_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
)

// network is a customer-style private network made in moto's EC2 through
// CloudFormation: a VPC, two private subnets, a route table and the
// security group of the functions that reach the database.
const network = `{
  "Resources": {
    "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.42.0.0/16"}},
    "SubnetA": {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.42.1.0/24", "AvailabilityZone": "us-east-1a"}},
    "SubnetB": {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.42.2.0/24", "AvailabilityZone": "us-east-1b"}},
    "Routes": {"Type": "AWS::EC2::RouteTable", "Properties": {"VpcId": {"Ref": "Vpc"}}},
    "Exporters": {"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": "daybook exporter", "VpcId": {"Ref": "Vpc"}}}
  },
  "Outputs": {
    "Vpc": {"Value": {"Ref": "Vpc"}},
    "Subnets": {"Value": {"Fn::Join": [",", [{"Ref": "SubnetA"}, {"Ref": "SubnetB"}]]}},
    "Routes": {"Value": {"Ref": "Routes"}},
    "Group": {"Value": {"Fn::GetAtt": ["Exporters", "GroupId"]}}
  }
}`

// endpoints are the VPC endpoints CreateVpcEndpoints makes, with the
// service each reaches.
var endpoints = map[string]string{
	"S3Endpoint": "s3", "DynamoDBEndpoint": "dynamodb", "SQSEndpoint": "sqs", "EventBridgeEndpoint": "events",
	"STSEndpoint": "sts", "SSMEndpoint": "ssm", "GlueEndpoint": "glue",
}

// TestDeployInAVpc deploys the template both ways into the emulator: with
// no VPC parameters (today's shape: no function in a VPC, no endpoint) and
// into a private network with the endpoints created, where only the
// exporter (the one function that opens the source) is attached to the
// subnets and security groups.
func TestDeployInAVpc(t *testing.T) {
	ctx := context.Background()
	cfg, err := srv.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cf, lc := cloudformation.NewFromConfig(cfg), lambda.NewFromConfig(cfg)
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("network"), TemplateBody: aws.String(network)}); err != nil {
		t.Fatal(err)
	}
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("network")})
	if err != nil || len(out.Stacks) != 1 || out.Stacks[0].StackStatus != cfntypes.StackStatusCreateComplete {
		t.Fatalf("network stack: %v %+v", err, out)
	}
	net := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		net[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}

	vpcOf := func(t *testing.T, st *samstack.Stack, fn string) (subnets, groups []string) {
		t.Helper()
		c, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(st.Outputs[fn])})
		if err != nil {
			t.Fatal(err)
		}
		if c.VpcConfig == nil {
			return nil, nil
		}
		return c.VpcConfig.SubnetIds, c.VpcConfig.SecurityGroupIds
	}
	roleOf := func(t *testing.T, st *samstack.Stack) string {
		t.Helper()
		c, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(st.Outputs["ExporterFunctionName"])})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(c.Role)
	}

	t.Run("without the VPC parameters nothing is in a VPC and no endpoint is made", func(t *testing.T) {
		st, err := samstack.Deploy(ctx, cfg, "../../../template.yaml", "daybook-novpc", map[string]string{"Stage": "novpc"})
		if err != nil {
			t.Fatal(err)
		}
		for _, fn := range []string{"ExporterFunctionName", "SweeperFunctionName"} {
			if s, g := vpcOf(t, st, fn); len(s)+len(g) > 0 {
				t.Errorf("%s in subnets %v, groups %v", fn, s, g)
			}
		}
		for id := range endpoints {
			if _, ok := st.Resources[id]; ok {
				t.Errorf("endpoint %s made without a VPC", id)
			}
		}
		if got, want := st.Outputs["ExporterRoleArn"], roleOf(t, st); got == "" || got != want {
			t.Errorf("output ExporterRoleArn %q, the exporter's role is %q", got, want)
		}
	})

	t.Run("in private subnets the exporter alone is attached, and the endpoints are made", func(t *testing.T) {
		st, err := samstack.Deploy(ctx, cfg, "../../../template.yaml", "daybook-private", map[string]string{
			"Stage": "private", "VpcSubnetIds": net["Subnets"], "VpcSecurityGroupIds": net["Group"],
			"CreateVpcEndpoints": "true", "VpcId": net["Vpc"], "VpcRouteTableIds": net["Routes"],
		})
		if err != nil {
			t.Fatal(err)
		}
		subnets, groups := vpcOf(t, st, "ExporterFunctionName")
		slices.Sort(subnets)
		want := strings.Split(net["Subnets"], ",")
		slices.Sort(want)
		if !slices.Equal(subnets, want) || !slices.Equal(groups, []string{net["Group"]}) {
			t.Errorf("exporter in subnets %v, groups %v; want %v, [%s]", subnets, groups, want, net["Group"])
		}
		if s, g := vpcOf(t, st, "SweeperFunctionName"); len(s)+len(g) > 0 {
			t.Errorf("the sweeper, which never opens the source, is in subnets %v, groups %v", s, g)
		}
		for id := range endpoints {
			if !strings.HasPrefix(st.Resources[id], "vpce-") {
				t.Errorf("endpoint %s: %q", id, st.Resources[id])
			}
		}
		if !strings.HasPrefix(st.Resources["VpcEndpointSecurityGroup"], "sg-") {
			t.Errorf("endpoint security group: %q", st.Resources["VpcEndpointSecurityGroup"])
		}
		if got, want := st.Outputs["ExporterRoleArn"], roleOf(t, st); got == "" || got != want {
			t.Errorf("output ExporterRoleArn %q, the exporter's role is %q", got, want)
		}
	})
}

// TestVpcTemplateShape: the translated template attaches the exporter to
// the subnets only under HasVpc, gives its role the network interface
// actions Lambda needs for it (AWSLambdaVPCAccessExecutionRole), names the
// endpoints' services in the stack's region, and refuses subnets without
// security groups and endpoints without the VPC and route tables.
func TestVpcTemplateShape(t *testing.T) {
	body, err := samstack.Translate(context.Background(), "../../../template.yaml", motoserver.Region)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Rules     map[string]json.RawMessage
		Resources map[string]struct {
			Type       string
			Condition  string
			Properties map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &tmpl); err != nil {
		t.Fatal(err)
	}
	exp := tmpl.Resources["ExporterFunction"].Properties
	if v := string(exp["VpcConfig"]); !strings.Contains(v, `"Fn::If"`) || !strings.Contains(v, `"HasVpc"`) || !strings.Contains(v, `"AWS::NoValue"`) {
		t.Errorf("exporter VpcConfig: %s", v)
	}
	for _, fn := range []string{"SweeperFunction", "ConsoleFunction"} {
		if v, ok := tmpl.Resources[fn].Properties["VpcConfig"]; ok {
			t.Errorf("%s has a VpcConfig: %s", fn, v)
		}
	}
	if v := string(tmpl.Resources["ExporterFunctionRole"].Properties["ManagedPolicyArns"]); !strings.Contains(v, "service-role/AWSLambdaVPCAccessExecutionRole") {
		t.Errorf("the exporter's role lacks the VPC access policy: %s", v)
	}
	for id, svc := range endpoints {
		r := tmpl.Resources[id]
		if r.Type != "AWS::EC2::VPCEndpoint" || r.Condition != "HasVpcEndpoints" || !strings.Contains(string(r.Properties["ServiceName"]), "com.amazonaws.${AWS::Region}."+svc+`"`) {
			t.Errorf("%s: %s under %q, service %s", id, r.Type, r.Condition, r.Properties["ServiceName"])
		}
	}
	rules, _ := json.Marshal(tmpl.Rules)
	for _, want := range []string{"VpcSecurityGroupIds is required when VpcSubnetIds is set", "CreateVpcEndpoints needs VpcId", "CreateVpcEndpoints needs VpcRouteTableIds"} {
		if !strings.Contains(string(rules), want) {
			t.Errorf("template rules lack %q: %s", want, rules)
		}
	}
}
