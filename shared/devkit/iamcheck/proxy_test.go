package iamcheck

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/daybook-dev/daybook/shared/awsclient"
)

const template = "../../../template.yaml"

func loadTemplate(t *testing.T, params map[string]string) *Policies {
	t.Helper()
	p, err := Load(context.Background(), template, Deployment{Params: params, Account: testAccount, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTemplatePolicies: the functions' roles and statements as the
// translated template gives them, resolved for one deployment: names from
// the stage, the account and the patterns of the parameters; the console
// and its actions only under their conditions; the managed policies SAM
// attaches.
func TestTemplatePolicies(t *testing.T) {
	p := loadTemplate(t, map[string]string{"Stage": "t"})
	if fns := p.Functions(); !slices.Equal(fns, []string{"ExporterFunction", "SweeperFunction"}) {
		t.Errorf("functions %v without the console", fns)
	}
	sts, err := p.Statements("ExporterFunction")
	if err != nil {
		t.Fatal(err)
	}
	find := func(sts []Statement, id string) Statement {
		for _, s := range sts {
			if s.ID == id {
				return s
			}
		}
		t.Fatalf("no statement %s", id)
		return Statement{}
	}
	objects := find(sts, "DirectBucketObjects")
	if !slices.Equal(objects.Resources, []string{"arn:aws:s3:::daybook-exports-*/*"}) ||
		len(objects.Conditions) != 1 || objects.Conditions[0].String() != "StringEquals s3:ResourceAccount [123456789012]" {
		t.Errorf("DirectBucketObjects %+v", objects)
	}
	if w := find(sts, "LedgerWrite"); !slices.Equal(w.Resources, []string{tableARN}) {
		t.Errorf("LedgerWrite resources %v, want the stage's table %s", w.Resources, tableARN)
	}
	if s := find(sts, "SourceDSN"); !slices.Equal(s.Resources, []string{"arn:aws:ssm:us-east-1:123456789012:parameter/daybook/source-dsn*"}) {
		t.Errorf("SourceDSN resources %v", s.Resources)
	}
	if s := find(sts, "AWSLambdaSQSQueueExecutionRole"); !slices.Contains(s.Actions, "sqs:ReceiveMessage") {
		t.Errorf("the SQS event source's managed policy: %+v", s)
	}
	if _, err := p.Statements("ConsoleFunction"); err == nil {
		t.Error("a console without DeployConsole")
	}
	// A sweep that fails goes to the sweeper DLQ through the function's
	// on-failure destination, which Lambda sends to with the function's
	// role: the policy SAM generates for it allows that (the template's
	// own statements need not).
	sw, _ := p.Statements("SweeperFunction")
	d, err := Evaluate(sw, Request{Action: "sqs:SendMessage", Resource: "arn:aws:sqs:us-east-1:123456789012:daybook-t-sweeper-dlq"})
	if err != nil || !d.Allowed || !slices.Contains(d.Allowing, "SweeperFunctionEventInvokeConfigOnFailureSQSPolicy[0]") {
		t.Errorf("the on-failure destination's send: %+v %v", d, err)
	}

	ro := loadTemplate(t, map[string]string{"Stage": "t", "DeployConsole": "true"})
	rw := loadTemplate(t, map[string]string{"Stage": "t", "DeployConsole": "true", "ConsoleActions": "true"})
	roSts, _ := ro.Statements("ConsoleFunction")
	rwSts, _ := rw.Statements("ConsoleFunction")
	has := func(sts []Statement, id string) bool {
		return slices.ContainsFunc(sts, func(s Statement) bool { return s.ID == id })
	}
	if has(roSts, "LedgerActions") || !has(rwSts, "LedgerActions") || !has(rwSts, "ReexportRequests") {
		t.Errorf("console statements: read-only %d, with actions %d", len(roSts), len(rwSts))
	}
	if _, err := Load(context.Background(), template, Deployment{Params: map[string]string{"Stag": "t"}, Account: testAccount, Region: "us-east-1"}); err == nil {
		t.Error("a parameter the template does not have was accepted")
	}
}

// TestProxy: calls signed with the function's own key go on when its
// policy allows them; a denied one is answered AccessDenied (the SDK sees
// AWS's error) and reported naming the function, the action, the resource
// and the closest statement; calls signed with another key (an assumed
// role's session) go on unchecked. And one permission removed from the
// exporter's statements turns an allowed call into a failure naming it.
func TestProxy(t *testing.T) {
	p := loadTemplate(t, map[string]string{"Stage": "t"})
	cfg, rec := recordingConfig(t)
	var mu sync.Mutex
	var reports []string
	px, err := Start(p, Route{Function: "ExporterFunction", Upstream: *cfg.BaseEndpoint, Report: func(m string) {
		mu.Lock()
		reports = append(reports, m)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	cfg.BaseEndpoint = aws.String(px.URL())
	db := dynamodb.NewFromConfig(cfg)
	ctx := context.Background()
	put := func(db *dynamodb.Client, pk string) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(testTable), Item: key(pk, "x")})
		return err
	}
	if err := put(db, "P#acct_a#events"); err != nil {
		t.Fatalf("an allowed put: %v", err)
	}
	rec.take(t) // it reached the upstream
	err = put(db, "WM#acct_a")
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDeniedException" {
		t.Errorf("a denied put: %v", err)
	}
	rec.mu.Lock()
	if len(rec.calls) != 0 {
		t.Errorf("a denied call reached the upstream")
	}
	rec.mu.Unlock()
	s3c := awsclient.NewS3(cfg)
	_, err = s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("someone-elses"), Key: aws.String("k"), Body: strings.NewReader("x")})
	if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" {
		t.Errorf("a denied S3 put: %v", err)
	}
	session := cfg.Copy()
	session.Credentials = credentials.NewStaticCredentialsProvider("ASIASESSION", "s", "token")
	if err := put(dynamodb.NewFromConfig(session), "WM#acct_a"); err != nil {
		t.Errorf("a session's call: %v", err)
	}
	mu.Lock()
	got := strings.Join(reports, "\n")
	mu.Unlock()
	for _, want := range []string{
		"function ExporterFunction (role ExporterFunctionRole) is denied dynamodb:PutItem on " + tableARN,
		"dynamodb:LeadingKeys=[WM#acct_a]",
		"LedgerWrite (fails ForAllValues:StringLike dynamodb:LeadingKeys",
		"is denied s3:PutObject on arn:aws:s3:::someone-elses/k",
		"no statement of the template names s3:PutObject on this resource",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("reports lack %q:\n%s", want, got)
		}
	}
	if len(reports) != 2 {
		t.Errorf("%d reports, want 2:\n%s", len(reports), got)
	}

	// One permission removed: the exporter's partition writes lose
	// dynamodb:PutItem, and the put allowed above is denied, naming the
	// statement.
	removed := *p
	removed.roles = map[string][]Statement{}
	for role, sts := range p.roles {
		for _, s := range sts {
			if s.ID == "LedgerWrite" {
				s.Actions = slices.DeleteFunc(slices.Clone(s.Actions), func(a string) bool { return a == "dynamodb:PutItem" })
			}
			removed.roles[role] = append(removed.roles[role], s)
		}
	}
	reports = nil
	px2, err := Start(&removed, Route{Function: "ExporterFunction", Upstream: *recordingCfgEndpoint(t), Report: func(m string) { reports = append(reports, m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer px2.Close()
	cfg.BaseEndpoint = aws.String(px2.URL())
	if err := put(dynamodb.NewFromConfig(cfg), "P#acct_a#events"); err == nil || len(reports) != 1 ||
		!strings.Contains(reports[0], "is denied dynamodb:PutItem") || !strings.Contains(reports[0], "dynamodb:LeadingKeys=[P#acct_a#events]") ||
		!strings.Contains(reports[0], "no statement allows it") {
		t.Errorf("with dynamodb:PutItem removed from LedgerWrite: %v, reports %q", err, reports)
	}
}

func recordingCfgEndpoint(t *testing.T) *string {
	cfg, _ := recordingConfig(t)
	return cfg.BaseEndpoint
}

// TestCheckRecorded: moto's recording of a local stack's calls is checked
// by the User-Agent's app id (AWS_SDK_UA_APP_ID): a function's denied call
// is reported, another function's allowed one is not, and the operator
// CLI's (no app id) is not a function's.
func TestCheckRecorded(t *testing.T) {
	p := loadTemplate(t, map[string]string{"Stage": "t"})
	cfg, rec := recordingConfig(t)
	var lines []string
	record := func(app, pk string) {
		t.Helper()
		c := cfg.Copy()
		c.AppID = app
		_, _ = dynamodb.NewFromConfig(c).PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(testTable), Item: key(pk, "x")})
		call := rec.take(t)
		h := map[string]string{}
		for k := range call.Header {
			h[k] = call.Header.Get(k)
		}
		b, _ := json.Marshal(recorded{Headers: h, Method: call.Method, URL: "http://127.0.0.1:5000" + call.URL.RequestURI(),
			Body: base64.StdEncoding.EncodeToString(call.Body), BodyEncoded: true})
		lines = append(lines, string(b))
	}
	record("ExporterFunction", "WM#acct_a")      // denied: the exporter writes no watermark
	record("SweeperFunction", "P#acct_a#events") // allowed
	record("", "ACCOUNTS")                       // the operator CLI
	var reports []string
	n, err := checkRecorded(strings.NewReader(strings.Join(lines, "\n")), p, Names{}, func(m string) { reports = append(reports, m) })
	if err != nil || n != 2 || len(reports) != 1 || !strings.Contains(reports[0], "function ExporterFunction (role ExporterFunctionRole) is denied dynamodb:PutItem") ||
		!strings.Contains(reports[0], "dynamodb:LeadingKeys=[WM#acct_a]") {
		t.Errorf("checked %d, %v, reports %q", n, err, reports)
	}
}

// TestStoreCredentialStatements: the exporter's statements for GCS and
// Azure credentials as the template gives them: GetSecretValue only under
// the deployment's destination secret prefix, GetWebIdentityToken only
// for Entra ID's audience and at most five minutes (both condition keys
// as the request carries them); Without removes one statement and no
// other.
func TestStoreCredentialStatements(t *testing.T) {
	p := loadTemplate(t, map[string]string{"Stage": "t"})
	sts, err := p.Statements("ExporterFunction")
	if err != nil {
		t.Fatal(err)
	}
	token := func(duration string, audiences ...string) Request {
		return Request{Action: "sts:GetWebIdentityToken", Resource: "*",
			Context: map[string][]string{"sts:DurationSeconds": {duration}, "sts:IdentityTokenAudience": audiences, "sts:SigningAlgorithm": {"RS256"}}}
	}
	secret := func(name string) Request {
		return Request{Action: "secretsmanager:GetSecretValue", Resource: "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + name}
	}
	for _, c := range []struct {
		name string
		r    Request
		want string // the allowing statement, "" for a denial
	}{
		{"a destination secret", secret("daybook/destinations/acme-gcs-AbCdEf"), "DestinationSecrets"},
		{"another secret", secret("daybook/source-dsn-AbCdEf"), ""},
		{"another account's secret", Request{Action: "secretsmanager:GetSecretValue", Resource: "arn:aws:secretsmanager:us-east-1:210987654321:secret:daybook/destinations/acme-AbCdEf"}, ""},
		{"an Entra ID token", token("300", "api://AzureADTokenExchange"), "OutboundIdentityTokens"},
		{"a shorter one", token("60", "api://AzureADTokenExchange"), "OutboundIdentityTokens"},
		{"a longer one", token("900", "api://AzureADTokenExchange"), ""},
		{"another audience", token("300", "https://sts.googleapis.com"), ""},
		{"Entra's and another audience", token("300", "api://AzureADTokenExchange", "https://example.com"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := Evaluate(sts, c.r)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" && d.Allowed || c.want != "" && !slices.Contains(d.Allowing, c.want) {
				t.Errorf("%s: %+v, want allowed by %q", c.r, d, c.want)
			}
		})
	}
	without, err := p.Without("ExporterFunction", "OutboundIdentityTokens")
	if err != nil {
		t.Fatal(err)
	}
	less, _ := without.Statements("ExporterFunction")
	if len(less) != len(sts)-1 || slices.ContainsFunc(less, func(s Statement) bool { return s.ID == "OutboundIdentityTokens" }) {
		t.Errorf("Without: %d statements of %d", len(less), len(sts))
	}
	if again, _ := p.Statements("ExporterFunction"); len(again) != len(sts) {
		t.Error("Without changed the policies it copied")
	}
	if _, err := p.Without("ExporterFunction", "NoSuchStatement"); err == nil {
		t.Error("Without a statement the role lacks")
	}
}
