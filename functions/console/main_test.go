package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/devkit/hostbuild"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/mototest"
	"github.com/daybook-dev/daybook/shared/devkit/runtimeemulator"
	"github.com/daybook-dev/daybook/shared/devkit/samstack/samstacktest"
	"github.com/daybook-dev/daybook/shared/ledger"
)

var srv *motoserver.Server

func TestMain(m *testing.M) { os.Exit(mototest.RunTests(m, &srv)) }

// TestBootstrapServesFunctionURLRequests runs the console's bootstrap
// under the Lambda runtime emulator, as the function URL invokes it, with
// the deployed template's table and queue: a page reads the ledger, and a
// read-only console refuses an action.
func TestBootstrapServesFunctionURLRequests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	params := readOnlyParams
	cfg, outs := samstacktest.StackWith(t, srv, readOnlyStage, params)
	led, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Config{Catalog: datasettest.Example(t), Table: outs["LedgerTableName"], Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const id = "acct_consolefunction2"
	if err := led.Accounts().PutAccount(ctx, account.Account{ID: id, Name: "Console function test", Enabled: true, StartDate: civil.MustParse("2026-11-01"),
		Datasets: []string{"events"}, Destination: account.Destination{Bucket: "daybook-exports-consolefn"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := led.Fleet().Refresh(ctx, id); err != nil { // as the next sweep would
		t.Fatal(err)
	}

	dir := t.TempDir()
	hostbuild.Bootstraps(t, dir, "ConsoleFunction")
	bin := filepath.Join(dir, "ConsoleFunction", "bootstrap")
	// The deployed function's environment; its AWS endpoint checks every
	// call against the console role's policy in template.yaml.
	env := samstacktest.FunctionEnv(t, srv, readOnlyStage, "ConsoleFunction")
	endpoint := iamcheck.Endpoint(t, iamcheck.ForStage(t, readOnlyStage, params), iamcheck.Route{Function: "ConsoleFunction", Upstream: srv.URL})
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": motoserver.Region,
		"AWS_ACCESS_KEY_ID": iamcheck.DefaultKey, "AWS_SECRET_ACCESS_KEY": "testing"} {
		env[k] = v
	}
	if env["CONSOLE_ACTIONS"] != "false" {
		t.Fatalf("the deployed console's CONSOLE_ACTIONS is %q", env["CONSOLE_ACTIONS"])
	}
	var log strings.Builder
	fn, err := runtimeemulator.Start(ctx, bin, runtimeemulator.Options{Name: "ConsoleFunction", Env: env, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer fn.Stop()

	invoke := func(method, path, query, body string) events.LambdaFunctionURLResponse {
		t.Helper()
		ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: path, RawQueryString: query, Body: body,
			Headers: map[string]string{"host": "abc.lambda-url.us-east-1.on.aws", "origin": "https://abc.lambda-url.us-east-1.on.aws", "content-type": "application/x-www-form-urlencoded"},
			RequestContext: events.LambdaFunctionURLRequestContext{DomainName: "abc.lambda-url.us-east-1.on.aws",
				HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: method, Path: path},
				Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
					UserARN: "arn:aws:sts::123456789012:assumed-role/ops/alice"}}}}
		payload, _ := json.Marshal(ev)
		out, err := fn.Invoke(ctx, payload)
		if err != nil {
			t.Fatalf("invoke %s %s: %v\n%s", method, path, err, log.String())
		}
		var res events.LambdaFunctionURLResponse
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("response %s: %v", out, err)
		}
		return res
	}
	res := invoke("GET", "/", "", "")
	if res.StatusCode != 200 || !strings.Contains(res.Body, id) || !strings.Contains(res.Body, "Console function test") ||
		!strings.Contains(res.Body, `<span class="badge ro"`) || !strings.Contains(res.Body, "assumed-role/ops/alice") {
		t.Errorf("fleet page: %d\n%s", res.StatusCode, res.Body)
	}
	if len(res.Cookies) != 1 || !strings.HasPrefix(res.Cookies[0], "__Host-daybook_csrf=") || !strings.Contains(res.Cookies[0], "Secure") {
		t.Errorf("cookies %v", res.Cookies)
	}
	if res := invoke("GET", "/static/console.css", "", ""); res.StatusCode != 200 || !strings.HasPrefix(res.Headers["Content-Type"], "text/css") {
		t.Errorf("stylesheet: %d %v", res.StatusCode, res.Headers)
	}
	if res := invoke("POST", "/actions/account", "", "account="+id+"&enabled=false"); res.StatusCode != 403 || !strings.Contains(res.Body, "read-only") {
		t.Errorf("an action on a read-only console: %d\n%s", res.StatusCode, res.Body)
	}
	if acct, err := led.Accounts().GetAccount(ctx, id); err != nil || !acct.Enabled {
		t.Errorf("the account after a refused action: %+v %v", acct, err)
	}
}
