package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/console"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// The stage of the stack with the console and its actions deployed.
const actionsStage = "consoleact"

var actionsParams = map[string]string{"DeployConsole": "true", "ConsoleActions": "true"}

// lambdaConsole is the console function as main builds it (build, from
// the deployed function's environment), invoked in-process as its function
// URL invokes it; every AWS call it makes is checked against the console
// role's policy (with ConsoleActions).
type lambdaConsole struct {
	t      *testing.T
	invoke func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error)
	cookie string
}

func deployedConsole(t *testing.T, now time.Time) (*lambdaConsole, aws.Config, map[string]string) {
	t.Helper()
	return deployedConsoleWith(t, now, storeAccess{})
}

// storeAccess is how a test's console reaches GCS and Azure: the token
// endpoints (their fakes), where STS calls go when set (the fake of
// sts:GetWebIdentityToken), and what is told the statements each allowed
// AWS call reached.
type storeAccess struct {
	tokens  destination.TokenEndpoints
	sts     string
	allowed func(action string, statements []string)
}

// deployedConsoleWith is deployedConsole reaching GCS and Azure with s.
func deployedConsoleWith(t *testing.T, now time.Time, s storeAccess) (*lambdaConsole, aws.Config, map[string]string) {
	t.Helper()
	return deployedStage(t, now, stageSpec{actionsStage, actionsParams, "true"}, s)
}

// The stage of the stack with the console deployed read-only (as
// TestBootstrapServesFunctionURLRequests deploys it).
const readOnlyStage = "consolefn"

var readOnlyParams = map[string]string{"DeployConsole": "true"} // ConsoleActions false

// deployedReadOnlyConsole is deployedConsole as deployed without
// ConsoleActions: its role has no ConsoleActionsPolicy, and build reads
// the read-only mode from the function's CONSOLE_ACTIONS, as main does.
func deployedReadOnlyConsole(t *testing.T, now time.Time) (*lambdaConsole, aws.Config, map[string]string) {
	t.Helper()
	return deployedStage(t, now, stageSpec{readOnlyStage, readOnlyParams, "false"}, storeAccess{})
}

// stageSpec is a deployed stage of the console tests: its name, its
// template parameters and the CONSOLE_ACTIONS its ConsoleFunction must
// have.
type stageSpec struct {
	name    string
	params  map[string]string
	actions string
}

// deployedStage is the console function as main builds it from the
// environment of st's deployed ConsoleFunction (whose CONSOLE_ACTIONS
// must be st.actions), its calls checked against that stage's console role.
func deployedStage(t *testing.T, now time.Time, st stageSpec, s storeAccess) (*lambdaConsole, aws.Config, map[string]string) {
	t.Helper()
	stage, params, actions := st.name, st.params, st.actions
	tokens, sts, allowed := s.tokens, s.sts, s.allowed
	cfg, outs := samstacktest.StackWith(t, srv, stage, params)
	vars := samstacktest.FunctionEnv(t, srv, stage, "ConsoleFunction")
	if vars["CONSOLE_ACTIONS"] != actions {
		t.Fatalf("the deployed console's CONSOLE_ACTIONS is %q, want %q", vars["CONSOLE_ACTIONS"], actions)
	}
	route := iamcheck.Route{Function: "ConsoleFunction", Upstream: *cfg.BaseEndpoint, Allowed: allowed}
	if sts != "" {
		route.Services = map[string]string{"sts": sts}
	}
	fcfg := cfg.Copy()
	fcfg.BaseEndpoint = aws.String(iamcheck.Endpoint(t, iamcheck.ForStage(t, stage, params), route))
	vars["AWS_ENDPOINT_URL"] = *fcfg.BaseEndpoint
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	seed := sha256.Sum256([]byte(t.Name()))
	fn, err := build(environ, Options{AWS: fcfg, Now: func() time.Time { return now }, Rand: &lockedRand{r: rand.NewChaCha8(seed)}, Stdout: t.Output(), Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	return &lambdaConsole{t: t, invoke: console.FunctionURLHandler(fn.Handler)}, cfg, outs
}

type lockedRand struct {
	mu sync.Mutex
	r  *rand.ChaCha8
}

func (l *lockedRand) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

const consoleHost = "abc.lambda-url.us-east-1.on.aws"

func (c *lambdaConsole) do(method, path, query, body string) events.LambdaFunctionURLResponse {
	c.t.Helper()
	ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: path, RawQueryString: query, Body: body,
		Headers: map[string]string{"host": consoleHost, "origin": "https://" + consoleHost, "content-type": "application/x-www-form-urlencoded"},
		RequestContext: events.LambdaFunctionURLRequestContext{DomainName: consoleHost,
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: method, Path: path},
			Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
				UserARN: "arn:aws:sts::123456789012:assumed-role/ops/alice"}}}}
	if c.cookie != "" {
		ev.Cookies = []string{c.cookie}
	}
	res, err := c.invoke(context.Background(), ev)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	for _, ck := range res.Cookies {
		c.cookie, _, _ = strings.Cut(ck, ";")
	}
	return res
}

var csrfInput = regexp.MustCompile(`<input type="hidden" name="csrf" value="([^"]+)">`)

// act confirms an action (its GET page) and posts it with the page's
// token, as a person's browser does.
func (c *lambdaConsole) act(path string, form url.Values) events.LambdaFunctionURLResponse {
	c.t.Helper()
	page := c.do("GET", path, form.Encode(), "")
	m := csrfInput.FindStringSubmatch(page.Body)
	if page.StatusCode != 200 || m == nil {
		c.t.Fatalf("confirmation of %s %v: %d\n%s", path, form, page.StatusCode, page.Body)
	}
	form.Set("csrf", m[1])
	return c.do("POST", path, "", form.Encode())
}

// TestDeployedConsoleActions: the console function as main builds it
// from the deployed template (DeployConsole and ConsoleActions), on the
// emulated stack: its pages read the ledger and a partition's manifests in
// a direct bucket and, through the account's role, in a customer's; its
// actions retry a failed day, re-export a day (to the jobs queue) and
// disable and enable an account. Every call it makes is checked against
// the console role's policy in template.yaml.
func TestDeployedConsoleActions(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	c, cfg, outs := deployedConsole(t, now)
	led, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Config{Catalog: datasettest.Example(t), Table: outs["LedgerTableName"], Lease: time.Hour, MaxAttempts: 1,
		Stage: actionsStage, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	s3c := awsclient.NewS3(cfg)
	direct := account.Account{ID: "acct_consoleactiondir", Name: "Direct Co", Enabled: true, StartDate: civil.MustParse("2026-11-10"),
		Datasets: []string{"events"}, Destination: account.Destination{Bucket: "daybook-exports-consoleact"}}
	viaRole := account.Account{ID: "acct_consoleactionrol", Name: "Role Co", Enabled: true, StartDate: civil.MustParse("2026-11-10"),
		Datasets: []string{"events"}, Destination: account.Destination{Bucket: "customer-consoleact",
			RoleARN: "arn:aws:iam::210987654321:role/daybook-export-console", ExternalID: "daybook-ext-console"}}
	for _, a := range []account.Account{direct, viaRole} {
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(a.Destination.Bucket)}); err != nil {
			t.Fatal(err)
		}
		if err := led.Accounts().PutAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
		if _, err := led.Fleet().Refresh(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
	}
	day := civil.MustParse("2026-11-15")
	key := partition.Key{AccountID: direct.ID, Dataset: "events", Day: day}
	if _, err := led.Schedule().Materialize(ctx, direct.ID, "events", day, day); err != nil {
		t.Fatal(err)
	}
	stopDay(t, led, key)

	if res := c.do("GET", "/", "", ""); res.StatusCode != 200 || !strings.Contains(res.Body, "Direct Co") {
		t.Fatalf("fleet page: %d\n%s", res.StatusCode, res.Body)
	}
	for _, a := range []account.Account{direct, viaRole} {
		if res := c.do("GET", "/accounts/"+a.ID+"/partitions/events/"+day.String(), "", ""); res.StatusCode != 200 {
			t.Errorf("partition page of %s: %d\n%s", a.ID, res.StatusCode, res.Body)
		}
	}

	if res := c.act("/actions/retry", url.Values{"account": {direct.ID}, "dataset": {"events"}, "from": {day.String()}, "to": {day.String()}}); res.StatusCode != 200 {
		t.Fatalf("retry: %d\n%s", res.StatusCode, res.Body)
	}
	if r, err := led.Partitions().Get(ctx, key); err != nil || r.State != ledger.StateQueued {
		t.Errorf("the retried day: %+v %v", r, err)
	}
	q := sqs.NewFromConfig(cfg)
	queue := outs["JobsQueueUrl"]
	for {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queue, MaxNumberOfMessages: 10})
		if err != nil || len(out.Messages) == 0 {
			break
		}
	}
	if res := c.act("/actions/reexport", url.Values{"account": {direct.ID}, "dataset": {"events"}, "day": {"2026-11-12"}}); res.StatusCode != 200 {
		t.Fatalf("re-export: %d\n%s", res.StatusCode, res.Body)
	}
	out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queue, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("jobs queue after a re-export: %+v %v", out, err)
	}
	var m struct {
		AccountID string `json:"account_id"`
		Day       string `json:"day"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &m); err != nil || m.AccountID != direct.ID || m.Day != "2026-11-12" ||
		!strings.Contains(aws.ToString(out.Messages[0].Body), "assumed-role/ops/alice") {
		t.Errorf("re-export message %s", aws.ToString(out.Messages[0].Body))
	}
	// A re-export of a day with a row shows it requested from the moment it
	// is sent (the console notes it on the row, an UpdateItem under its
	// policy), on the account's heatmap and the partition's page, until the
	// exporter claims it. On the old code the day still read "queued".
	if res := c.act("/actions/reexport", url.Values{"account": {direct.ID}, "dataset": {"events"}, "day": {day.String()}}); res.StatusCode != 200 {
		t.Fatalf("re-export of %s: %d\n%s", day, res.StatusCode, res.Body)
	}
	if r, err := led.Partitions().Get(ctx, key); err != nil || r.State != ledger.StateQueued || ledger.PhaseOf(r) != "requested" {
		t.Errorf("the re-exported day: %+v %v; want queued, in the requested phase", r, err)
	}
	acctPage := c.do("GET", "/accounts/"+direct.ID, "from=2026-11-10&to=2026-11-19", "")
	if !strings.Contains(acctPage.Body, `class="hm-cell p-requested"`) || !strings.Contains(acctPage.Body, "re-export requested, in the jobs queue") {
		t.Errorf("the account page shows no requested day:\n%s", acctPage.Body)
	}
	page := c.do("GET", "/accounts/"+direct.ID+"/partitions/events/"+day.String(), "", "")
	if !strings.Contains(page.Body, "re-export requested by arn:aws:sts::123456789012:assumed-role/ops/alice at 2026-11-20T12:00:00Z, waiting in the jobs queue") {
		t.Errorf("the partition page does not say the re-export was requested:\n%s", page.Body)
	}
	for {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queue, MaxNumberOfMessages: 10})
		if err != nil || len(out.Messages) == 0 {
			break
		}
	}

	// The account as one saved before isolation guards existed: no guard
	// items, none held by its record. Disabling it takes them (the
	// console's LedgerActions on pk=GUARDS).
	db := dynamodb.NewFromConfig(cfg)
	guards, err := direct.Guards(actionsStage)
	if err != nil || len(guards) == 0 {
		t.Fatalf("guards %v %v", guards, err)
	}
	guardKey := func(g account.Guard) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "GUARDS"}, "sk": &types.AttributeValueMemberS{Value: g.Key}}
	}
	for _, g := range guards {
		if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(outs["LedgerTableName"]), Key: guardKey(g)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(outs["LedgerTableName"]), UpdateExpression: aws.String("REMOVE guards"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ACCOUNTS"}, "sk": &types.AttributeValueMemberS{Value: direct.ID}}}); err != nil {
		t.Fatal(err)
	}
	for _, enabled := range []string{"false", "true"} {
		if res := c.act("/actions/account", url.Values{"account": {direct.ID}, "enabled": {enabled}}); res.StatusCode != 200 {
			t.Fatalf("enabled=%s: %d\n%s", enabled, res.StatusCode, res.Body)
		}
		if a, err := led.Accounts().GetAccount(ctx, direct.ID); err != nil || a.Enabled != (enabled == "true") {
			t.Errorf("the account after enabled=%s: %+v %v", enabled, a, err)
		}
	}
	for _, g := range guards {
		if out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(outs["LedgerTableName"]), Key: guardKey(g), ConsistentRead: aws.Bool(true)}); err != nil || len(out.Item) == 0 {
			t.Errorf("guard %s after the update of a legacy account: %v %v", g.Key, out, err)
		}
	}
}
