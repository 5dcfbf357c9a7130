// Package iamcheck is test support: it checks every AWS request a test
// makes through a function's clients against that function's IAM policy in
// the translated template.yaml, as IAM would, so a request the deployed
// function would be refused fails the test that made it (moto enforces no
// IAM at all).
//
// Three parts, each its own file:
//   - policy.go evaluates identity-policy statements for one request: an
//     explicit Deny wins, else some Allow whose action, resource and every
//     condition match, else the implicit deny. It understands the
//     condition operators IAM documents for strings, ARNs, numbers, booleans and
//     Null, with the IfExists suffix and the ForAllValues / ForAnyValue
//     set qualifiers; any other operator is an error, never a pass.
//   - template.go reads the functions' roles and policies from the
//     template as the SAM translator emits it, with the intrinsics the
//     template uses resolved for one deployment (parameters, account,
//     region).
//   - request.go turns an HTTP request as the SDK sends it into the
//     authorizations IAM makes for it (DynamoDB with dynamodb:LeadingKeys,
//     dynamodb:Attributes and dynamodb:ReturnValues, a transaction item by
//     item; S3 with s3:ResourceAccount, DeleteObjects key by key, a new
//     object's tags and ACL as s3:PutObjectTagging and s3:PutObjectAcl; SQS;
//     EventBridge; STS; Glue with its catalog, database and table; SSM).
//
// proxy.go puts them in front of moto: a Proxy on loopback that a
// function's endpoint (an in-process aws.Config, or a bootstrap's
// AWS_ENDPOINT_URL) points at evaluates every request signed with the
// function's own credentials, answers a denied one with AccessDenied as AWS
// would, and reports it to the test naming the function, the action, the
// resource and the statements that came closest. tally.go counts what was
// exercised: (function, action, key prefix) triples and the statements that
// allowed something, written per test binary and summed up by Report.
package iamcheck

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Statement is one statement of an identity policy, every value resolved.
type Statement struct {
	// ID names the statement in reports: its Sid, or the policy's name
	// and its index when it has none.
	ID          string
	Effect      string // "Allow" or "Deny"
	Actions     []string
	NotAction   bool // Actions are the statement's NotAction
	Resources   []string
	NotResource bool // Resources are its NotResource
	Conditions  []Condition
}

// Condition is one key under one operator of a statement's Condition
// block: it holds when the request's values of Key satisfy Operator
// against Values (any of them).
type Condition struct {
	Operator string
	Key      string
	Values   []string
}

func (c Condition) String() string {
	return fmt.Sprintf("%s %s %v", c.Operator, c.Key, c.Values)
}

// Request is one authorization IAM makes for an API call: an action on a
// resource, with the request's condition keys. A call may need several
// (a transaction's items, a Glue table's catalog, database and table).
type Request struct {
	Action   string
	Resource string
	// Context holds the request's condition keys by name (IAM compares
	// key names case-insensitively; Evaluate does too). A key absent from
	// the map is absent from the request; a key with no values is an
	// empty set.
	Context map[string][]string
}

func (r Request) String() string {
	var keys []string
	for k, v := range r.Context {
		keys = append(keys, fmt.Sprintf("%s=%v", k, v))
	}
	slices.Sort(keys)
	s := r.Action + " on " + r.Resource
	if len(keys) > 0 {
		s += " with " + strings.Join(keys, ", ")
	}
	return s
}

// Decision is the outcome of Evaluate.
type Decision struct {
	Allowed bool
	// Allowing lists the Allow statements that match (empty when denied).
	Allowing []string
	// Denying is the Deny statement that matched, if one did.
	Denying string
	// Near lists, for an implicit deny, the Allow statements whose action
	// and resource match and why each failed: the statement a request is
	// missing is usually one of these, or a new one.
	Near []string
}

// Evaluate decides r under sts as IAM does for one identity policy set: an
// explicit Deny wins, else any Allow whose action, resource and every
// condition match allows, else it is denied. An operator it does not know
// is an error, so it never passes a statement it does not understand.
func Evaluate(sts []Statement, r Request) (Decision, error) {
	var d Decision
	for _, s := range sts {
		if !s.covers(r) {
			continue
		}
		failed, err := s.failedCondition(r)
		if err != nil {
			return Decision{}, fmt.Errorf("statement %s: %w", s.ID, err)
		}
		switch {
		case failed != nil && s.Effect == "Allow":
			d.Near = append(d.Near, fmt.Sprintf("%s (fails %s)", s.ID, failed))
		case failed != nil:
		case s.Effect == "Deny":
			d.Denying = s.ID
		case s.Effect == "Allow":
			d.Allowing = append(d.Allowing, s.ID)
		default:
			return Decision{}, fmt.Errorf("statement %s: Effect %q", s.ID, s.Effect)
		}
	}
	if d.Denying != "" {
		d.Allowing = nil
		return d, nil
	}
	d.Allowed = len(d.Allowing) > 0
	if d.Allowed {
		d.Near = nil
	}
	return d, nil
}

// covers reports whether s names r's action and resource.
func (s Statement) covers(r Request) bool {
	action := slices.ContainsFunc(s.Actions, func(p string) bool { return globFold(p, r.Action) })
	resource := slices.ContainsFunc(s.Resources, func(p string) bool { return ArnLike(p, r.Resource) })
	return action != s.NotAction && resource != s.NotResource
}

// failedCondition returns the first of s's conditions r fails, or nil.
func (s Statement) failedCondition(r Request) (*Condition, error) {
	ctx := map[string][]string{}
	present := map[string]bool{}
	for k, v := range r.Context {
		ctx[strings.ToLower(k)] = v
		present[strings.ToLower(k)] = true
	}
	for i, c := range s.Conditions {
		k := strings.ToLower(c.Key)
		ok, err := holds(c.Operator, ctx[k], present[k], c.Values)
		if err != nil {
			return nil, err
		}
		if !ok {
			return &s.Conditions[i], nil
		}
	}
	return nil, nil
}

// holds evaluates one operator on a key's request values (present: the
// key is in the request) against the policy's values.
func holds(op string, got []string, present bool, want []string) (bool, error) {
	set, base := "", op
	if q, rest, ok := strings.Cut(op, ":"); ok {
		set, base = q, rest
	}
	ifExists := strings.HasSuffix(base, "IfExists") && base != "IfExists"
	base = strings.TrimSuffix(base, "IfExists")
	if base == "Null" {
		if set != "" || ifExists {
			return false, fmt.Errorf("condition operator %s is not one IAM has", op)
		}
		if len(want) != 1 || (want[0] != "true" && want[0] != "false") {
			return false, fmt.Errorf("condition operator Null: values %v, want true or false", want)
		}
		return (want[0] == "true") == !present, nil
	}
	match, negated, err := matcher(base)
	if err != nil {
		return false, fmt.Errorf("condition operator %s: %w", op, err)
	}
	one := func(v string) bool { // v satisfies the operator
		any := slices.ContainsFunc(want, func(p string) bool { return match(p, v) })
		return any != negated
	}
	switch set {
	case "ForAllValues":
		// Every value of the request satisfies it; no values at all do.
		for _, v := range got {
			if !one(v) {
				return false, nil
			}
		}
		return true, nil
	case "ForAnyValue":
		return slices.ContainsFunc(got, one), nil
	case "":
		if !present {
			// A missing key: IfExists passes it, a negated operator is
			// true, any other false.
			return ifExists || negated, nil
		}
		if negated {
			for _, v := range got {
				if !one(v) {
					return false, nil
				}
			}
			return true, nil
		}
		return slices.ContainsFunc(got, one), nil
	}
	return false, fmt.Errorf("condition operator %s: qualifier %s is not one IAM has", op, set)
}

// matcher is the comparison of a base operator (no qualifier, no
// IfExists) and whether it is negated.
func matcher(base string) (func(pattern, v string) bool, bool, error) {
	switch base {
	case "StringEquals":
		return eq, false, nil
	case "StringNotEquals":
		return eq, true, nil
	case "StringEqualsIgnoreCase":
		return strings.EqualFold, false, nil
	case "StringNotEqualsIgnoreCase":
		return strings.EqualFold, true, nil
	case "StringLike":
		return glob, false, nil
	case "StringNotLike":
		return glob, true, nil
	case "ArnEquals", "ArnLike":
		return ArnLike, false, nil
	case "ArnNotEquals", "ArnNotLike":
		return ArnLike, true, nil
	case "Bool":
		return strings.EqualFold, false, nil
	case "NumericEquals":
		return numeric(func(c int) bool { return c == 0 }), false, nil
	case "NumericNotEquals":
		return numeric(func(c int) bool { return c == 0 }), true, nil
	case "NumericLessThan":
		return numeric(func(c int) bool { return c < 0 }), false, nil
	case "NumericLessThanEquals":
		return numeric(func(c int) bool { return c <= 0 }), false, nil
	case "NumericGreaterThan":
		return numeric(func(c int) bool { return c > 0 }), false, nil
	case "NumericGreaterThanEquals":
		return numeric(func(c int) bool { return c >= 0 }), false, nil
	}
	return nil, false, fmt.Errorf("not evaluated by iamcheck")
}

// numeric compares a request value v with the policy's value as numbers
// (cmp of v against the policy's); a value that is not a number matches
// nothing, as in IAM.
func numeric(ok func(cmp int) bool) func(pattern, v string) bool {
	return func(pattern, v string) bool {
		p, err1 := strconv.ParseFloat(pattern, 64)
		x, err2 := strconv.ParseFloat(v, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		switch {
		case x < p:
			return ok(-1)
		case x > p:
			return ok(1)
		}
		return ok(0)
	}
}

func eq(a, b string) bool { return a == b }

// glob matches IAM's wildcards: * any run of characters ('/' and ':'
// included), ? one character. Case-sensitive.
func glob(pattern, v string) bool {
	// path.Match treats '/' specially and knows classes and escapes; IAM
	// has only * and ?, so match on bytes with '/' mapped away and the
	// other specials escaped.
	esc := strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`, "/", "\x00")
	ok, err := path.Match(esc.Replace(pattern), strings.ReplaceAll(v, "/", "\x00"))
	return err == nil && ok
}

// globFold is glob ignoring case: action names are case-insensitive.
func globFold(pattern, v string) bool { return glob(strings.ToLower(pattern), strings.ToLower(v)) }

// ArnLike matches an ARN against a pattern as IAM's Resource element and
// ArnLike do: "*" alone matches every resource; otherwise both split into
// their six colon-separated parts (the last keeps its own colons) and each
// part matches with * and ?, so a wildcard never spans the partition,
// service, region or account.
func ArnLike(pattern, arn string) bool {
	if pattern == "*" {
		return true
	}
	p, a := strings.SplitN(pattern, ":", 6), strings.SplitN(arn, ":", 6)
	if len(p) != 6 || len(a) != 6 {
		return pattern == arn
	}
	for i := range p {
		if !glob(p[i], a[i]) {
			return false
		}
	}
	return true
}
