package iamcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/daybook-dev/daybook/shared/devkit/samstack"
)

// Deployment is what a template's policies are resolved for: the
// parameters given (the others keep their defaults), the account and the
// region.
type Deployment struct {
	Params    map[string]string
	Account   string
	Region    string
	Partition string // default "aws"
}

// Policies are the IAM policies of a template's functions, resolved for
// one Deployment.
type Policies struct {
	dep Deployment
	// removed names the statement Without took out ("" for the template's
	// own policies): calls checked against such policies show a check
	// failing and are left out of the run's tally.
	removed string
	// functions maps a function's logical id to its role's.
	functions map[string]string
	// roles maps a role's logical id to its statements: its inline
	// policies', the stand-alone policies' attached to it and the AWS
	// managed policies' it names.
	roles map[string][]Statement
	// tables are the template's DynamoDB tables by physical name: their
	// hash key and their indexes' hash keys (dynamodb:LeadingKeys).
	tables map[string]table
	// all lists the statements of every role's own policies, by role, for
	// Summarize: the function's Policies and the stand-alone policies
	// attached to its role, not the AWS managed policies nor the ones SAM
	// generates for an event source's or destination's service.
	all map[string][]string
}

type table struct {
	hashKey string
	indexes map[string]string // index name -> its hash key
}

// Functions lists the template's functions under the deployment's
// conditions, by logical id.
func (p *Policies) Functions() []string {
	return slices.Sorted(maps.Keys(p.functions))
}

// Statements returns the statements that apply to fn's role.
func (p *Policies) Statements(fn string) ([]Statement, error) {
	role, ok := p.functions[fn]
	if !ok {
		return nil, fmt.Errorf("iamcheck: the template has no function %s under parameters %v (functions: %v)", fn, p.dep.Params, p.Functions())
	}
	return p.roles[role], nil
}

// Without returns a copy of p in which fn's role lacks its statement sid:
// a test that shows a call needs that statement. It fails when the role
// has no such statement.
func (p *Policies) Without(fn, sid string) (*Policies, error) {
	sts, err := p.Statements(fn)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(sts, func(s Statement) bool { return s.ID == sid })
	if i < 0 {
		return nil, fmt.Errorf("iamcheck: the role of %s has no statement %s", fn, sid)
	}
	out := *p
	out.roles = maps.Clone(p.roles)
	out.roles[p.functions[fn]] = slices.Delete(slices.Clone(sts), i, i+1)
	out.removed = fn + "/" + sid
	return &out, nil
}

// Role returns fn's role's logical id.
func (p *Policies) Role(fn string) string { return p.functions[fn] }

// Deployment is what the policies were resolved for.
func (p *Policies) Deployment() Deployment { return p.dep }

var (
	translated sync.Map // path and region -> *once: the SAM translator's output
	resolved   sync.Map // path and deployment -> *once: its policies
)

type once struct {
	once sync.Once
	v    any
	err  error
}

func cached(m *sync.Map, key string, f func() (any, error)) (any, error) {
	v, _ := m.LoadOrStore(key, &once{})
	o := v.(*once)
	o.once.Do(func() { o.v, o.err = f() })
	return o.v, o.err
}

// Load translates the template at path with the SAM translator (as
// samstack deploys it) and resolves its functions' policies for dep. Both
// are kept for the process: the translation per path and region, the
// policies per deployment.
func Load(ctx context.Context, path string, dep Deployment) (*Policies, error) {
	if dep.Partition == "" {
		dep.Partition = "aws"
	}
	b, _ := json.Marshal(dep)
	p, err := cached(&resolved, path+"\x00"+string(b), func() (any, error) {
		body, err := cached(&translated, path+"\x00"+dep.Region, func() (any, error) { return samstack.Translate(ctx, path, dep.Region) })
		if err != nil {
			return nil, err
		}
		return parse(body.([]byte), dep)
	})
	if err != nil {
		return nil, err
	}
	return p.(*Policies), nil
}

// cfnTemplate is the part of a translated template the policies come from.
type cfnTemplate struct {
	Parameters map[string]struct {
		Default any
	}
	Conditions map[string]any
	Resources  map[string]struct {
		Type       string
		Condition  string
		Properties map[string]any
	}
}

// parse resolves a translated template's policies for dep.
func parse(body []byte, dep Deployment) (*Policies, error) {
	var t cfnTemplate
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("iamcheck: translated template: %w", err)
	}
	r := &resolver{t: &t, dep: dep, params: map[string]string{}, conds: map[string]bool{}}
	for name, p := range t.Parameters {
		if p.Default != nil {
			r.params[name] = fmt.Sprint(p.Default)
		}
	}
	for k, v := range dep.Params {
		if _, ok := t.Parameters[k]; !ok {
			return nil, fmt.Errorf("iamcheck: parameter %s is not one of the template's", k)
		}
		r.params[k] = v
	}
	out := &Policies{dep: dep, functions: map[string]string{}, roles: map[string][]Statement{}, tables: map[string]table{}, all: map[string][]string{}}
	ids := slices.Sorted(maps.Keys(t.Resources))
	for _, id := range ids {
		res := t.Resources[id]
		if on, err := r.condition(res.Condition); err != nil || !on {
			if err != nil {
				return nil, fmt.Errorf("iamcheck: resource %s: %w", id, err)
			}
			continue
		}
		switch res.Type {
		case "AWS::Lambda::Function":
			role, ok := getAtt(res.Properties["Role"])
			if !ok || role[1] != "Arn" {
				return nil, fmt.Errorf("iamcheck: function %s: Role %v is not a role's Arn", id, res.Properties["Role"])
			}
			out.functions[id] = role[0]
		case "AWS::IAM::Role":
			pols, _ := res.Properties["Policies"].([]any)
			for _, p := range pols {
				pm, _ := p.(map[string]any)
				name := fmt.Sprint(pm["PolicyName"])
				sts, err := r.document(name, pm["PolicyDocument"])
				if err != nil {
					return nil, fmt.Errorf("iamcheck: role %s: %w", id, err)
				}
				// The function's own Policies (SAM names them <role>Policy<n>);
				// the policies SAM generates for an event's or destination's
				// service (the on-failure queue) serve Lambda, not the code.
				out.add(id, sts, samPolicy.MatchString(strings.TrimPrefix(name, id)))
			}
			arns, _ := res.Properties["ManagedPolicyArns"].([]any)
			for _, a := range arns {
				v, err := r.value(a)
				if err != nil {
					return nil, fmt.Errorf("iamcheck: role %s: %w", id, err)
				}
				sts, err := managed(fmt.Sprint(v))
				if err != nil {
					return nil, fmt.Errorf("iamcheck: role %s: %w", id, err)
				}
				out.add(id, sts, false)
			}
		case "AWS::IAM::Policy":
			sts, err := r.document(fmt.Sprint(res.Properties["PolicyName"]), res.Properties["PolicyDocument"])
			if err != nil {
				return nil, fmt.Errorf("iamcheck: policy %s: %w", id, err)
			}
			roles, _ := res.Properties["Roles"].([]any)
			for _, role := range roles {
				rm, _ := role.(map[string]any)
				name, ok := rm["Ref"].(string)
				if !ok {
					return nil, fmt.Errorf("iamcheck: policy %s: role %v is not a Ref", id, role)
				}
				out.add(name, sts, true)
			}
		case "AWS::DynamoDB::Table":
			name, err := r.physicalName(id)
			if err != nil {
				return nil, err
			}
			tb := table{hashKey: hashKey(res.Properties["KeySchema"]), indexes: map[string]string{}}
			gsis, _ := res.Properties["GlobalSecondaryIndexes"].([]any)
			for _, g := range gsis {
				gm, _ := g.(map[string]any)
				tb.indexes[fmt.Sprint(gm["IndexName"])] = hashKey(gm["KeySchema"])
			}
			out.tables[name] = tb
		}
	}
	for fn, role := range out.functions {
		if _, ok := out.roles[role]; !ok {
			return nil, fmt.Errorf("iamcheck: function %s: role %s has no policies in the template", fn, role)
		}
	}
	return out, nil
}

func (p *Policies) add(role string, sts []Statement, own bool) {
	p.roles[role] = append(p.roles[role], sts...)
	if own {
		for _, s := range sts {
			p.all[role] = append(p.all[role], s.ID)
		}
	}
}

func hashKey(ks any) string {
	list, _ := ks.([]any)
	for _, k := range list {
		km, _ := k.(map[string]any)
		if km["KeyType"] == "HASH" {
			return fmt.Sprint(km["AttributeName"])
		}
	}
	return ""
}

func getAtt(v any) ([2]string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return [2]string{}, false
	}
	switch a := m["Fn::GetAtt"].(type) {
	case []any:
		if len(a) == 2 {
			return [2]string{fmt.Sprint(a[0]), fmt.Sprint(a[1])}, true
		}
	case string:
		if res, attr, ok := strings.Cut(a, "."); ok {
			return [2]string{res, attr}, true
		}
	}
	return [2]string{}, false
}

// resolver evaluates the intrinsic functions of a template for one
// deployment.
type resolver struct {
	t      *cfnTemplate
	dep    Deployment
	params map[string]string
	conds  map[string]bool
}

// noValue is what AWS::NoValue resolves to: the property is dropped.
type noValue struct{}

// document resolves a policy document into statements named after policy.
func (r *resolver) document(policy string, doc any) ([]Statement, error) {
	d, _ := doc.(map[string]any)
	raw, err := r.value(d["Statement"])
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", policy, err)
	}
	list, ok := raw.([]any)
	if !ok {
		list = []any{raw}
	}
	var out []Statement
	for i, s := range list {
		sm, _ := s.(map[string]any)
		st := Statement{Effect: fmt.Sprint(sm["Effect"])}
		st.ID, _ = sm["Sid"].(string)
		if st.ID == "" {
			st.ID = fmt.Sprintf("%s[%d]", policy, i)
		}
		if a, ok := sm["NotAction"]; ok {
			st.Actions, st.NotAction = strs(a), true
		} else {
			st.Actions = strs(sm["Action"])
		}
		if a, ok := sm["NotResource"]; ok {
			st.Resources, st.NotResource = strs(a), true
		} else {
			st.Resources = strs(sm["Resource"])
		}
		conds, _ := sm["Condition"].(map[string]any)
		for _, op := range slices.Sorted(maps.Keys(conds)) {
			keys, _ := conds[op].(map[string]any)
			for _, k := range slices.Sorted(maps.Keys(keys)) {
				st.Conditions = append(st.Conditions, Condition{Operator: op, Key: k, Values: strs(keys[k])})
			}
		}
		if len(st.Actions) == 0 || len(st.Resources) == 0 {
			return nil, fmt.Errorf("policy %s: statement %s names no action or no resource", policy, st.ID)
		}
		out = append(out, st)
	}
	return out, nil
}

// strs is a resolved policy value as strings (a string or a list of them).
func strs(v any) []string {
	switch v := v.(type) {
	case nil, noValue:
		return nil
	case string:
		return []string{v}
	case bool:
		return []string{fmt.Sprint(v)}
	case float64:
		return []string{fmt.Sprint(v)}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, strs(e)...)
		}
		return out
	}
	b, _ := json.Marshal(v)
	return []string{string(b)}
}

// value resolves every intrinsic function in v.
func (r *resolver) value(v any) (any, error) {
	switch v := v.(type) {
	case []any:
		var out []any
		for _, e := range v {
			x, err := r.value(e)
			if err != nil {
				return nil, err
			}
			if _, drop := x.(noValue); !drop {
				out = append(out, x)
			}
		}
		return out, nil
	case map[string]any:
		if len(v) == 1 {
			for fn, arg := range v {
				if strings.HasPrefix(fn, "Fn::") || fn == "Ref" || fn == "Condition" {
					return r.intrinsic(fn, arg)
				}
			}
		}
		out := map[string]any{}
		for k, e := range v {
			x, err := r.value(e)
			if err != nil {
				return nil, err
			}
			if _, drop := x.(noValue); !drop {
				out[k] = x
			}
		}
		return out, nil
	}
	return v, nil
}

func (r *resolver) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		return r.ref(name)
	case "Fn::GetAtt":
		ga, ok := getAtt(map[string]any{fn: arg})
		if !ok {
			return nil, fmt.Errorf("Fn::GetAtt %v", arg)
		}
		return r.attribute(ga[0], ga[1])
	case "Fn::Sub":
		return r.sub(arg)
	case "Fn::Join":
		a, _ := arg.([]any)
		if len(a) != 2 {
			return nil, fmt.Errorf("Fn::Join %v", arg)
		}
		parts, err := r.value(a[1])
		if err != nil {
			return nil, err
		}
		return strings.Join(strs(parts), fmt.Sprint(a[0])), nil
	case "Fn::If":
		a, _ := arg.([]any)
		if len(a) != 3 {
			return nil, fmt.Errorf("Fn::If %v", arg)
		}
		on, err := r.condition(fmt.Sprint(a[0]))
		if err != nil {
			return nil, err
		}
		if on {
			return r.value(a[1])
		}
		return r.value(a[2])
	}
	return nil, fmt.Errorf("intrinsic %s is not resolved by iamcheck", fn)
}

func (r *resolver) ref(name string) (any, error) {
	switch name {
	case "AWS::AccountId":
		return r.dep.Account, nil
	case "AWS::Region":
		return r.dep.Region, nil
	case "AWS::Partition":
		return r.dep.Partition, nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::NoValue":
		return noValue{}, nil
	}
	if v, ok := r.params[name]; ok {
		return v, nil
	}
	if _, ok := r.t.Parameters[name]; ok {
		return nil, fmt.Errorf("parameter %s has no value and no default", name)
	}
	res, ok := r.t.Resources[name]
	if !ok {
		return nil, fmt.Errorf("Ref %s: no such parameter or resource", name)
	}
	switch res.Type {
	case "AWS::DynamoDB::Table", "AWS::Events::EventBus", "AWS::Lambda::Function":
		return r.physicalName(name)
	}
	return nil, fmt.Errorf("Ref %s (%s) is not resolved by iamcheck", name, res.Type)
}

// physicalName is a resource's name as its own name property gives it.
func (r *resolver) physicalName(id string) (string, error) {
	res := r.t.Resources[id]
	prop := map[string]string{"AWS::DynamoDB::Table": "TableName", "AWS::SQS::Queue": "QueueName",
		"AWS::Events::EventBus": "Name", "AWS::Lambda::Function": "FunctionName"}[res.Type]
	if prop == "" || res.Properties[prop] == nil {
		return "", fmt.Errorf("resource %s (%s) has no name property iamcheck can resolve", id, res.Type)
	}
	v, err := r.value(res.Properties[prop])
	if err != nil {
		return "", fmt.Errorf("resource %s: %s: %w", id, prop, err)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("resource %s: %s resolves to %v", id, prop, v)
	}
	return s, nil
}

func (r *resolver) attribute(id, attr string) (any, error) {
	res, ok := r.t.Resources[id]
	if !ok {
		return nil, fmt.Errorf("Fn::GetAtt %s.%s: no such resource", id, attr)
	}
	name, err := r.physicalName(id)
	if err != nil {
		return nil, err
	}
	d := r.dep
	switch res.Type + "." + attr {
	case "AWS::DynamoDB::Table.Arn":
		return fmt.Sprintf("arn:%s:dynamodb:%s:%s:table/%s", d.Partition, d.Region, d.Account, name), nil
	case "AWS::SQS::Queue.Arn":
		return fmt.Sprintf("arn:%s:sqs:%s:%s:%s", d.Partition, d.Region, d.Account, name), nil
	case "AWS::SQS::Queue.QueueName", "AWS::Events::EventBus.Name":
		return name, nil
	case "AWS::Events::EventBus.Arn":
		return fmt.Sprintf("arn:%s:events:%s:%s:event-bus/%s", d.Partition, d.Region, d.Account, name), nil
	case "AWS::Lambda::Function.Arn":
		return fmt.Sprintf("arn:%s:lambda:%s:%s:function:%s", d.Partition, d.Region, d.Account, name), nil
	}
	return nil, fmt.Errorf("Fn::GetAtt %s.%s (%s) is not resolved by iamcheck", id, attr, res.Type)
}

var samPolicy = regexp.MustCompile(`^Policy[0-9]+$`)

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

func (r *resolver) sub(arg any) (any, error) {
	text, vars := "", map[string]any{}
	switch a := arg.(type) {
	case string:
		text = a
	case []any:
		if len(a) != 2 {
			return nil, fmt.Errorf("Fn::Sub %v", arg)
		}
		text, _ = a[0].(string)
		m, _ := a[1].(map[string]any)
		for k, v := range m {
			x, err := r.value(v)
			if err != nil {
				return nil, err
			}
			vars[k] = x
		}
	default:
		return nil, fmt.Errorf("Fn::Sub %v", arg)
	}
	var firstErr error
	out := subVar.ReplaceAllStringFunc(text, func(m string) string {
		name := m[2 : len(m)-1]
		var v any
		var err error
		switch x, ok := vars[name]; {
		case ok:
			v = x
		case strings.Contains(name, "."):
			res, attr, _ := strings.Cut(name, ".")
			v, err = r.attribute(res, attr)
		default:
			v, err = r.ref(name)
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("Fn::Sub %q: %w", text, err)
		}
		return fmt.Sprint(v)
	})
	return strings.ReplaceAll(out, "${!", "${"), firstErr
}

// condition evaluates a named condition ("" is true).
func (r *resolver) condition(name string) (bool, error) {
	if name == "" {
		return true, nil
	}
	if v, ok := r.conds[name]; ok {
		return v, nil
	}
	def, ok := r.t.Conditions[name]
	if !ok {
		return false, fmt.Errorf("condition %s is not defined", name)
	}
	v, err := r.boolean(def)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	r.conds[name] = v
	return v, nil
}

func (r *resolver) boolean(def any) (bool, error) {
	m, ok := def.(map[string]any)
	if !ok || len(m) != 1 {
		return false, fmt.Errorf("condition %v", def)
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Condition":
			return r.condition(fmt.Sprint(arg))
		case "Fn::Equals":
			if len(args) != 2 {
				return false, fmt.Errorf("Fn::Equals %v", arg)
			}
			a, err := r.value(args[0])
			if err != nil {
				return false, err
			}
			b, err := r.value(args[1])
			if err != nil {
				return false, err
			}
			return fmt.Sprint(a) == fmt.Sprint(b), nil
		case "Fn::Not", "Fn::And", "Fn::Or":
			var vals []bool
			for _, a := range args {
				v, err := r.boolean(a)
				if err != nil {
					return false, err
				}
				vals = append(vals, v)
			}
			switch fn {
			case "Fn::Not":
				if len(vals) != 1 {
					return false, fmt.Errorf("Fn::Not %v", arg)
				}
				return !vals[0], nil
			case "Fn::And":
				return !slices.Contains(vals, false), nil
			default:
				return slices.Contains(vals, true), nil
			}
		}
		return false, fmt.Errorf("condition function %s is not evaluated by iamcheck", fn)
	}
	return false, nil
}

// managed returns the statements of an AWS managed policy the SAM
// translator attaches to function roles, as AWS publishes them
// (https://docs.aws.amazon.com/lambda/latest/dg/security-iam-awsmanpol.html
// and the AWS managed policy reference). Any other managed policy is an
// error: a template that attaches one must add it here.
func managed(arn string) ([]Statement, error) {
	name := arn[strings.LastIndexByte(arn, '/')+1:]
	logs := []string{"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}
	var actions []string
	switch name {
	case "AWSLambdaBasicExecutionRole":
		actions = logs
	case "AWSXrayWriteOnlyAccess":
		actions = []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets", "xray:GetSamplingStatisticSummaries"}
	case "AWSLambdaSQSQueueExecutionRole":
		// What the SQS event source needs of the function's role (the
		// mapping polls with it): receive, delete, read the attributes.
		actions = append([]string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}, logs...)
	case "AWSLambdaVPCAccessExecutionRole":
		// What Lambda needs of a function in a VPC (the template's
		// VpcConfig): its network interfaces in the subnets.
		actions = append([]string{"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets", "ec2:DeleteNetworkInterface",
			"ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"}, logs...)
	default:
		return nil, fmt.Errorf("managed policy %s is not known to iamcheck", arn)
	}
	sort.Strings(actions)
	return []Statement{{ID: name, Effect: "Allow", Actions: actions, Resources: []string{"*"}}}, nil
}
