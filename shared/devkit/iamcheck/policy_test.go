package iamcheck

import (
	"slices"
	"strings"
	"testing"
)

// TestEvaluate: IAM's evaluation for one identity's statements: an
// explicit Deny wins over any Allow, an Allow needs its action, its
// resource and every condition, anything else is the implicit deny; the
// condition operators the template uses and their IfExists and set forms.
func TestEvaluate(t *testing.T) {
	const table = "arn:aws:dynamodb:us-east-1:123456789012:table/daybook-t-ledger"
	write := Statement{ID: "LedgerWrite", Effect: "Allow", Actions: []string{"dynamodb:PutItem", "dynamodb:UpdateItem"}, Resources: []string{table},
		Conditions: []Condition{{"ForAllValues:StringLike", "dynamodb:LeadingKeys", []string{"P#*", "H#*"}}}}
	wake := Statement{ID: "AccountWake", Effect: "Allow", Actions: []string{"dynamodb:UpdateItem"}, Resources: []string{table},
		Conditions: []Condition{
			{"ForAllValues:StringEquals", "dynamodb:LeadingKeys", []string{"ACCOUNTS"}},
			{"ForAllValues:StringEquals", "dynamodb:Attributes", []string{"pk", "sk", "fleet_key", "wake_seq"}},
			{"StringEqualsIfExists", "dynamodb:ReturnValues", []string{"NONE", "UPDATED_OLD"}},
		}}
	objects := Statement{ID: "DirectBucketObjects", Effect: "Allow", Actions: []string{"s3:PutObject", "s3:GetObject"},
		Resources:  []string{"arn:aws:s3:::daybook-exports-*/*"},
		Conditions: []Condition{{"StringEquals", "s3:ResourceAccount", []string{"123456789012"}}}}
	roles := Statement{ID: "AssumeCustomerRoles", Effect: "Allow", Actions: []string{"sts:AssumeRole"}, Resources: []string{"arn:aws:iam::*:role/daybook-export-*"}}
	denyTmp := Statement{ID: "NoTmp", Effect: "Deny", Actions: []string{"s3:*"}, Resources: []string{"arn:aws:s3:::daybook-exports-*/tmp/*"}}
	sts := []Statement{write, wake, objects, roles, denyTmp}
	ddb := func(action, lead string, attrs []string, rv string) Request {
		ctx := map[string][]string{"dynamodb:LeadingKeys": {lead}, "dynamodb:Attributes": attrs}
		if rv != "" {
			ctx["dynamodb:ReturnValues"] = []string{rv}
		}
		return Request{Action: action, Resource: table, Context: ctx}
	}
	s3 := func(action, res, owner string) Request {
		return Request{Action: action, Resource: res, Context: map[string][]string{"s3:ResourceAccount": {owner}}}
	}
	for _, tc := range []struct {
		name  string
		r     Request
		allow string // the allowing statement, "" for a denial
		deny  string // the denying statement
		near  string // a statement the denial names as closest
	}{
		{"put a partition row", ddb("dynamodb:PutItem", "P#acct_a#events", []string{"pk", "sk", "state"}, ""), "LedgerWrite", "", ""},
		{"action names are case-insensitive", ddb("DynamoDB:putitem", "H#acct_a#events#2026-03-05", nil, ""), "LedgerWrite", "", ""},
		{"put under a leading key no pattern has", ddb("dynamodb:PutItem", "SCHEMAS", []string{"pk", "sk"}, ""), "", "", "LedgerWrite (fails ForAllValues:StringLike dynamodb:LeadingKeys [P#* H#*])"},
		{"an action no statement names", ddb("dynamodb:DeleteItem", "P#a", nil, ""), "", "", ""},
		{"another table", Request{Action: "dynamodb:PutItem", Resource: table + "-2", Context: map[string][]string{"dynamodb:LeadingKeys": {"P#a"}}}, "", "", ""},
		{"index of the table is another resource", Request{Action: "dynamodb:PutItem", Resource: table + "/index/due", Context: map[string][]string{"dynamodb:LeadingKeys": {"P#a"}}}, "", "", ""},
		{"wake attributes of an account", ddb("dynamodb:UpdateItem", "ACCOUNTS", []string{"fleet_key", "pk", "sk", "wake_seq"}, "NONE"), "AccountWake", "", ""},
		{"no ReturnValues: IfExists passes", ddb("dynamodb:UpdateItem", "ACCOUNTS", []string{"pk", "sk"}, ""), "AccountWake", "", ""},
		{"the account's doc", ddb("dynamodb:UpdateItem", "ACCOUNTS", []string{"doc", "pk", "sk"}, "NONE"), "", "", "AccountWake (fails ForAllValues:StringEquals dynamodb:Attributes"},
		{"the whole item back", ddb("dynamodb:UpdateItem", "ACCOUNTS", []string{"pk", "sk"}, "ALL_NEW"), "", "", "dynamodb:ReturnValues"},
		{"StringEquals is case-sensitive", ddb("dynamodb:UpdateItem", "accounts", []string{"pk", "sk"}, ""), "", "", "AccountWake"},
		{"an object of a direct bucket", s3("s3:PutObject", "arn:aws:s3:::daybook-exports-a/daybook/acct/v1/x.parquet", "123456789012"), "DirectBucketObjects", "", ""},
		{"a matching bucket of another account", s3("s3:PutObject", "arn:aws:s3:::daybook-exports-a/x", "210987654321"), "", "", "s3:ResourceAccount"},
		{"no resource account: StringEquals fails", Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::daybook-exports-a/x"}, "", "", "DirectBucketObjects"},
		{"the bucket itself is not an object", s3("s3:PutObject", "arn:aws:s3:::daybook-exports-a", "123456789012"), "", "", ""},
		{"another bucket", s3("s3:PutObject", "arn:aws:s3:::other/x", "123456789012"), "", "", ""},
		{"explicit deny wins", s3("s3:PutObject", "arn:aws:s3:::daybook-exports-a/tmp/x", "123456789012"), "", "NoTmp", ""},
		{"a customer role in any account", Request{Action: "sts:AssumeRole", Resource: "arn:aws:iam::210987654321:role/daybook-export-acme"}, "AssumeCustomerRoles", "", ""},
		{"a wildcard does not span the account", Request{Action: "sts:AssumeRole", Resource: "arn:aws:iam::2109:x:role/daybook-export-acme"}, "", "", ""},
		{"another role", Request{Action: "sts:AssumeRole", Resource: "arn:aws:iam::210987654321:role/admin"}, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Evaluate(sts, tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != (tc.allow != "") || (tc.allow != "" && !slices.Contains(d.Allowing, tc.allow)) || d.Denying != tc.deny {
				t.Errorf("%s: %+v, want allowed by %q, denied by %q", tc.r, d, tc.allow, tc.deny)
			}
			if tc.near != "" && !strings.Contains(strings.Join(d.Near, "; "), tc.near) {
				t.Errorf("%s: near %v, want %q", tc.r, d.Near, tc.near)
			}
		})
	}
}

// TestOperators: each operator on a present key, a missing key and an
// empty set, as IAM documents them (negated operators and IfExists pass
// a missing key; ForAllValues passes an empty set, ForAnyValue fails it).
func TestOperators(t *testing.T) {
	for _, tc := range []struct {
		op      string
		got     []string
		present bool
		want    []string
		ok      bool
	}{
		{"StringEquals", []string{"a"}, true, []string{"a", "b"}, true},
		{"StringEquals", []string{"c"}, true, []string{"a", "b"}, false},
		{"StringEquals", nil, false, []string{"a"}, false},
		{"StringEqualsIfExists", nil, false, []string{"a"}, true},
		{"StringEqualsIfExists", []string{"c"}, true, []string{"a"}, false},
		{"StringNotEquals", []string{"c"}, true, []string{"a"}, true},
		{"StringNotEquals", []string{"a"}, true, []string{"a"}, false},
		{"StringNotEquals", nil, false, []string{"a"}, true},
		{"StringEqualsIgnoreCase", []string{"A"}, true, []string{"a"}, true},
		{"StringLike", []string{"P#x"}, true, []string{"P#*"}, true},
		{"StringLike", []string{"PX"}, true, []string{"P?"}, true},
		{"StringLike", []string{"a/b/c"}, true, []string{"a*c"}, true},
		{"StringLike", []string{"[x]"}, true, []string{"[x]"}, true},
		{"StringLike", []string{"x"}, true, []string{"[x]"}, false},
		{"StringNotLike", []string{"P#x"}, true, []string{"P#*"}, false},
		{"ForAllValues:StringLike", []string{"P#a", "H#b"}, true, []string{"P#*", "H#*"}, true},
		{"ForAllValues:StringLike", []string{"P#a", "X"}, true, []string{"P#*"}, false},
		{"ForAllValues:StringLike", nil, false, []string{"P#*"}, true},
		{"ForAllValues:StringEquals", []string{}, true, []string{"a"}, true},
		{"ForAnyValue:StringEquals", []string{"x", "a"}, true, []string{"a"}, true},
		{"ForAnyValue:StringEquals", nil, false, []string{"a"}, false},
		{"ForAllValues:StringNotEquals", []string{"x", "y"}, true, []string{"a"}, true},
		{"ArnLike", []string{"arn:aws:iam::1:role/daybook-export-a"}, true, []string{"arn:aws:iam::*:role/daybook-export-*"}, true},
		{"ArnNotLike", []string{"arn:aws:iam::1:role/x"}, true, []string{"arn:aws:iam::*:role/daybook-export-*"}, true},
		{"Bool", []string{"true"}, true, []string{"true"}, true},
		{"NumericLessThanEquals", []string{"300"}, true, []string{"300"}, true},
		{"NumericLessThanEquals", []string{"301"}, true, []string{"300"}, false},
		{"NumericLessThanEquals", []string{"x"}, true, []string{"300"}, false},
		{"NumericLessThanEquals", nil, false, []string{"300"}, false},
		{"NumericLessThan", []string{"300"}, true, []string{"300"}, false},
		{"NumericGreaterThan", []string{"3e2"}, true, []string{"299"}, true},
		{"NumericGreaterThanEquals", []string{"299"}, true, []string{"300"}, false},
		{"NumericEquals", []string{"300.0"}, true, []string{"300"}, true},
		{"NumericNotEquals", []string{"300"}, true, []string{"300"}, false},
		{"Null", nil, false, []string{"true"}, true},
		{"Null", []string{"a"}, true, []string{"true"}, false},
		{"Null", []string{"a"}, true, []string{"false"}, true},
	} {
		ok, err := holds(tc.op, tc.got, tc.present, tc.want)
		if err != nil || ok != tc.ok {
			t.Errorf("%s %v (present %v) against %v = %v, %v; want %v", tc.op, tc.got, tc.present, tc.want, ok, err, tc.ok)
		}
	}
	for _, op := range []string{"NumericLess", "DateGreaterThan", "ForSomeValues:StringEquals", "ForAllValues:Null", "IpAddress"} {
		if _, err := holds(op, []string{"1"}, true, []string{"1"}); err == nil {
			t.Errorf("%s: evaluated; an operator iamcheck does not know must be an error", op)
		}
	}
	// An unknown operator fails the evaluation of a statement that names the request.
	st := []Statement{{ID: "S", Effect: "Allow", Actions: []string{"s3:GetObject"}, Resources: []string{"*"},
		Conditions: []Condition{{"IpAddress", "aws:SourceIp", []string{"10.0.0.0/8"}}}}}
	if _, err := Evaluate(st, Request{Action: "s3:GetObject", Resource: "arn:aws:s3:::b/k"}); err == nil || !strings.Contains(err.Error(), "statement S") {
		t.Errorf("an unknown operator: %v", err)
	}
}

func TestArnLike(t *testing.T) {
	for _, tc := range []struct {
		pattern, arn string
		ok           bool
	}{
		{"*", "arn:aws:s3:::b/k", true},
		{"arn:aws:s3:::daybook-exports-*/*", "arn:aws:s3:::daybook-exports-a/p/v1/x", true},
		{"arn:aws:s3:::daybook-exports-*/*", "arn:aws:s3:::daybook-exports-a", false},
		{"arn:aws:s3:::daybook-exports-*", "arn:aws:s3:::daybook-exports-a", true},
		{"arn:aws:glue:*:123:table/*/*", "arn:aws:glue:eu-west-1:123:table/db/t", true},
		{"arn:aws:glue:*:123:table/*/*", "arn:aws:glue:eu-west-1:456:table/db/t", false},
		{"arn:aws:ssm:us-east-1:123:parameter/daybook/source-dsn*", "arn:aws:ssm:us-east-1:123:parameter/daybook/source-dsn-billing", true},
		{"arn:aws:ssm:us-east-1:123:parameter/daybook/source-dsn*", "arn:aws:ssm:us-east-1:123:parameter/other", false},
		{"arn:aws:sqs:us-east-1:123:q", "arn:aws:sqs:us-east-1:123:q2", false},
		{"arn:aws:dynamodb:us-east-1:123:table/t", "arn:aws:dynamodb:us-east-1:123:table/t/index/due", false},
		{"arn:aws:dynamodb:us-east-1:123:table/t*", "arn:aws:dynamodb:us-east-1:123:table/t/index/due", true},
	} {
		if got := ArnLike(tc.pattern, tc.arn); got != tc.ok {
			t.Errorf("ArnLike(%q, %q) = %v, want %v", tc.pattern, tc.arn, got, tc.ok)
		}
	}
}
