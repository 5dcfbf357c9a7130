package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/netguard"
)

// Named errors of "where the CLI points".
var (
	errNoDeployment  = errors.New("no deployment to talk to: pass --stack NAME (a deployed daybook stack), or --env-file FILE, or run `make local-up` for a local one, or set LEDGER_TABLE")
	errStackNotFound = errors.New("no such CloudFormation stack")
	errNotDaybook    = errors.New("the stack has no LedgerTableName output: is it a daybook stack?")
	errNoCredentials = errors.New("no AWS credentials: pass --profile (after aws sso login or aws configure), or set AWS_PROFILE or AWS_ACCESS_KEY_ID")
)

// haveCredentials fails with errNoCredentials when cfg has none to give, before
// a first call fails with the SDK's chain of retries and lookups.
func haveCredentials(ctx context.Context, cfg aws.Config, where string) error {
	if cfg.Credentials == nil {
		return fmt.Errorf("%w (%s)", errNoCredentials, where)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return fmt.Errorf("%w (%s): %v", errNoCredentials, where, err)
	}
	return nil
}

// targetFlags say which deployment a command talks to.
type targetFlags struct {
	stack, region, profile, envFile string
}

// deploymentFlags registers --stack, --region, --profile and --env-file on
// a command that talks to a deployment.
func (a *app) deploymentFlags(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&a.target.stack, "stack", "", "deployed CloudFormation stack to talk to (its outputs name the table and queues)")
	f.StringVar(&a.target.region, "region", "", "AWS region (default: the SDK's, e.g. AWS_REGION or the profile's)")
	f.StringVar(&a.target.profile, "profile", "", "AWS shared config profile")
	f.StringVar(&a.target.envFile, "env-file", "", "a deployment's env.json (the sam local invoke --env-vars format written by make local-up)")
	for _, n := range []string{"stack", "region", "profile", "env-file"} {
		_ = f.SetAnnotation(n, cli.DeploymentAnnotation, []string{"true"})
	}
	_ = c.MarkFlagFilename("env-file", "json")
}

// stackOutputVars maps the template's outputs to the variables the
// functions read, so the three sources give the same configuration.
// CustomerRoleArnPattern, DestinationSecretPattern, DeploymentAccountId,
// AllowPrivateEndpoints and MaxBackfillDays are the deployment's account
// rules (account.RulesFromEnv).
var stackOutputVars = map[string]string{
	"LedgerTableName":           "LEDGER_TABLE",
	"JobsQueueUrl":              "JOBS_QUEUE_URL",
	"JobsDLQUrl":                "JOBS_DLQ_URL",
	"SweeperDLQUrl":             "SWEEPER_DLQ_URL",
	"Stage":                     "DAYBOOK_STAGE",
	"SettleDelay":               "SETTLE_DELAY",
	"ExporterTimeoutSeconds":    "EXPORTER_TIMEOUT_SECONDS",
	"LeaseMarginSeconds":        "LEASE_MARGIN_SECONDS",
	"MaxAttempts":               "MAX_ATTEMPTS",
	"DirectBucketPattern":       "DIRECT_BUCKET_PATTERN",
	"CustomerRoleArnPattern":    account.EnvCustomerRolePattern,
	"DestinationSecretPattern":  account.EnvDestinationSecretPattern,
	"DeploymentAccountId":       account.EnvDeploymentAccountID,
	"AllowPrivateEndpoints":     account.EnvAllowPrivateEndpoints,
	"MaxBackfillDays":           "MAX_BACKFILL_DAYS",
	"SweepQueueUrl":             "SWEEP_QUEUE_URL",
	"ExporterRoleArn":           "EXPORTER_ROLE_ARN",
	"ConsoleRoleArn":            "CONSOLE_ROLE_ARN",
	"DirectGlueDatabasePattern": "DIRECT_GLUE_DATABASE_PATTERN",
}

// deployment is where a command points, resolved.
type deployment struct {
	desc     string            // for the stderr line
	vars     map[string]string // LEDGER_TABLE, JOBS_QUEUE_URL, ...
	cfg      aws.Config
	endpoint string // custom endpoint, if any
	file     string // the env file it was read from, if any
}

// local reports whether the deployment is on this machine (its endpoint is
// a loopback address: the stack `make local-up` runs in moto).
func (d *deployment) local() bool {
	_, _, ok := awsclient.Loopback(d.endpoint)
	return ok
}

// stackAPI is the part of CloudFormation the CLI reads.
type stackAPI interface {
	DescribeStacks(ctx context.Context, params *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

var _ stackAPI = (*cloudformation.Client)(nil)

// stackOutputs reads a stack's outputs; a missing stack is errStackNotFound.
func stackOutputs(ctx context.Context, api stackAPI, name string) (map[string]string, error) {
	out, err := api.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "does not exist") {
			return nil, fmt.Errorf("%w: %s", errStackNotFound, name)
		}
		return nil, fmt.Errorf("describe stack %s: %w", name, err)
	}
	if len(out.Stacks) == 0 {
		return nil, fmt.Errorf("%w: %s", errStackNotFound, name)
	}
	m := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	// A stack deployed before the DeploymentAccountId output: its own ARN
	// (arn:aws:cloudformation:<region>:<account>:stack/...) names the account.
	if m["DeploymentAccountId"] == "" {
		if parts := strings.Split(aws.ToString(out.Stacks[0].StackId), ":"); len(parts) > 4 {
			m["DeploymentAccountId"] = parts[4]
		}
	}
	return m, nil
}

// resolve finds the deployment: --stack, else --env-file, else
// .local/env.json when LEDGER_TABLE is unset, else the environment.
func (a *app) resolve(ctx context.Context) (*deployment, error) {
	t := a.target
	if t.stack != "" && t.envFile != "" {
		return nil, errors.New("give --stack or --env-file, not both")
	}
	if t.stack != "" {
		return a.resolveStack(ctx)
	}
	file := t.envFile
	if file == "" && a.getenv("LEDGER_TABLE") == "" {
		if def := a.localDir + "/env.json"; fileExists(def) {
			file = def
		}
	}
	if file != "" {
		return a.resolveEnvFile(ctx, file)
	}
	if a.getenv("LEDGER_TABLE") == "" {
		if demo := a.demoDir + "/env.json"; fileExists(demo) {
			return nil, fmt.Errorf("%w; the demo's stack is described by %s: run it with daybook-dev demo --keep, then pass --env-file %s", errNoDeployment, demo, demo)
		}
	}
	vars := map[string]string{}
	for _, k := range append(sortedValues(stackOutputVars), "AWS_ENDPOINT_URL") {
		if v := a.getenv(k); v != "" {
			vars[k] = v
		}
	}
	if vars["LEDGER_TABLE"] == "" {
		return nil, errNoDeployment
	}
	cfg, err := a.awsConfig(ctx, t.region, t.profile)
	if err != nil {
		return nil, err
	}
	if err := a.probe(ctx, vars["AWS_ENDPOINT_URL"]); err != nil {
		return nil, err
	}
	if err := haveCredentials(ctx, cfg, "for the deployment in the environment variables"+where(cfg.Region, t.profile)); err != nil {
		return nil, err
	}
	return &deployment{desc: "the deployment in the environment variables" + where(cfg.Region, t.profile), vars: vars, cfg: cfg, endpoint: vars["AWS_ENDPOINT_URL"]}, nil
}

func (a *app) resolveStack(ctx context.Context) (*deployment, error) {
	t := a.target
	cfg, err := a.awsConfig(ctx, t.region, t.profile)
	if err != nil {
		return nil, err
	}
	endpoint := a.getenv("AWS_ENDPOINT_URL")
	if err := a.probe(ctx, endpoint); err != nil {
		return nil, err
	}
	if err := haveCredentials(ctx, cfg, "for stack "+t.stack+where(cfg.Region, t.profile)); err != nil {
		return nil, err
	}
	outs, err := stackOutputs(ctx, cloudformation.NewFromConfig(cfg), t.stack)
	if err != nil {
		if errors.Is(err, errStackNotFound) {
			return nil, fmt.Errorf("%w: %s%s (check --stack, --region and --profile)", errStackNotFound, t.stack, where(cfg.Region, t.profile))
		}
		return nil, err
	}
	if outs["LedgerTableName"] == "" {
		return nil, fmt.Errorf("%w (%s)", errNotDaybook, t.stack)
	}
	vars := map[string]string{}
	for out, v := range stackOutputVars {
		if outs[out] != "" {
			vars[v] = outs[out]
		}
	}
	return &deployment{desc: "stack " + t.stack + where(cfg.Region, t.profile), vars: vars, cfg: cfg, endpoint: endpoint}, nil
}

func (a *app) resolveEnvFile(ctx context.Context, file string) (*deployment, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	env := map[string]map[string]string{}
	if err := decodeJSON(file, b, &env); err != nil {
		return nil, fmt.Errorf("env file %w", err)
	}
	vars := map[string]string{}
	for _, fn := range []string{"SweeperFunction", "ExporterFunction"} {
		for k, v := range env[fn] {
			vars[k] = v
		}
	}
	if vars["LEDGER_TABLE"] == "" {
		return nil, fmt.Errorf("env file %s names no LEDGER_TABLE for ExporterFunction or SweeperFunction", file)
	}
	region := a.target.region
	if region == "" {
		region = vars["AWS_REGION"]
	}
	cfg, err := a.awsConfig(ctx, region, a.target.profile)
	if err != nil {
		return nil, err
	}
	desc := "the deployment in " + file + where(cfg.Region, a.target.profile)
	if id := vars["AWS_ACCESS_KEY_ID"]; id != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(id, vars["AWS_SECRET_ACCESS_KEY"], vars["AWS_SESSION_TOKEN"])
	} else if err := haveCredentials(ctx, cfg, "for "+desc); err != nil {
		return nil, err
	}
	endpoint := vars["AWS_ENDPOINT_URL"]
	if endpoint != "" {
		cfg.BaseEndpoint = aws.String(endpoint)
		desc = "the local stack in " + file + " (endpoint " + endpoint + ")"
	}
	return &deployment{desc: desc, vars: vars, cfg: cfg, endpoint: endpoint, file: file}, nil
}

// Variables daybook-dev writes into a local stack's env file for the CLI's
// hints (the functions ignore them): the command that starts that stack
// again, and the one that runs what its queues hold (a local stack has no
// scheduler or event source).
const (
	envLocalStart = "DAYBOOK_LOCAL_START"
	envLocalDrain = "DAYBOOK_LOCAL_DRAIN"
)

// localDown is a local stack that does not answer, named with the env file
// that describes it and the command that starts it again.
type localDown struct {
	file, start string
	err         error
}

func (e *localDown) Error() string {
	return fmt.Sprintf("the local stack in %s is not running: start it with %s (%v)", e.file, e.start, e.err)
}

func (e *localDown) Unwrap() error { return e.err }

// drainHint is what to run on a local stack for its queued messages to be
// exported, or "" for a deployment whose event sources run them.
func (d *deployment) drainHint() string {
	if !d.local() {
		return ""
	}
	if h := d.vars[envLocalDrain]; h != "" {
		return h
	}
	return "daybook-dev local drain"
}

// probe checks endpoint is a URL, then fails fast with
// awsclient.ErrLocalDown when it is on this machine and does not answer.
func (a *app) probe(ctx context.Context, endpoint string) error {
	if endpoint == "" {
		return nil
	}
	if u, err := url.Parse(endpoint); err != nil || u.Host == "" {
		return fmt.Errorf("endpoint %q is not a URL", endpoint)
	}
	return awsclient.Probe(ctx, a.dial, endpoint)
}

func where(region, profile string) string {
	var parts []string
	if region != "" {
		parts = append(parts, "region "+region)
	}
	if profile != "" {
		parts = append(parts, "profile "+profile)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// lastSegment is a queue's name from its URL.
func lastSegment(u string) string { return u[strings.LastIndex(u, "/")+1:] }

// opsEnv is an opened deployment: the clients and settings every command
// that talks to one needs.
type opsEnv struct {
	dep           *deployment
	cfg           aws.Config
	ledger        *ledger.Ledger
	sqs           *sqs.Client
	sts           callerAPI
	buckets       *destination.Clients
	queueURL      string
	dlqURL        string
	sweeperDLQURL string
	stage         string
	settle        time.Duration
	bucketPattern string
	// exporterRole is the exporter's role ARN, the principal a customer's
	// role trusts (EXPORTER_ROLE_ARN, the stack output ExporterRoleArn).
	exporterRole string
	// consoleRole is the web console's role ARN, which a GCS or Azure
	// customer's federation trusts beside the exporter's
	// (CONSOLE_ROLE_ARN, the stack output ConsoleRoleArn; "": the stack
	// deploys no console).
	consoleRole string
	// gluePattern is the Glue databases the exporter may write with its
	// own role (DirectGlueDatabasePattern; "": unchecked).
	gluePattern string
	// rules are the deployment's account rules (account.RulesFromEnv), read
	// when the deployment is opened; rulesErr names a malformed variable,
	// and only the commands that need the rules refuse for it.
	rules    account.Rules
	rulesErr error
}

// accountRules returns the deployment's account rules at the app's clock.
func (e *opsEnv) accountRules(now time.Time) (account.Rules, error) {
	if e.rulesErr != nil {
		return account.Rules{}, fmt.Errorf("%s: %w", e.dep.desc, e.rulesErr)
	}
	r := e.rules
	r.Now = now
	return r, nil
}

// bucketOwner is the account that must own acct's bucket, sent as
// ExpectedBucketOwner on every S3 call (destination.Owner); an owner that
// cannot be determined is an error naming the field, and nothing is called.
func (e *opsEnv) bucketOwner(acct account.Account) (string, error) {
	if e.rulesErr != nil {
		return "", fmt.Errorf("%s: %w", e.dep.desc, e.rulesErr)
	}
	owner, err := destination.Owner(acct.Destination, e.rules.DeploymentAccountID)
	if err != nil {
		return "", fmt.Errorf("account %s: %w", acct.ID, err)
	}
	return aws.ToString(owner), nil
}

// bucket opens acct's bucket for reading, on its store: the account's
// credentials (on S3 its role, or daybook's own, and the expected bucket
// owner) through the deployment's endpoint guard, as verify, sql and the
// console read it.
func (e *opsEnv) bucket(ctx context.Context, acct account.Account) (*bucket.Bucket, error) {
	owner, err := e.bucketOwner(acct)
	if err != nil {
		return nil, err
	}
	return e.buckets.Open(ctx, acct.ID, acct.Destination, bucket.Options{ExpectedOwner: owner})
}

// readRules reads the account rules from a deployment's variables. A local
// stack that names no deployment account (an env.json from before the
// variable) is in moto's account, awsclient.LocalAccountID.
func readRules(dep *deployment) (account.Rules, error) {
	rules, err := account.RulesFromEnv(func(k string) (string, bool) { v, ok := dep.vars[k]; return v, ok })
	if err == nil && rules.DeploymentAccountID == "" && dep.local() {
		rules.DeploymentAccountID = awsclient.LocalAccountID
	}
	return rules, err
}

// open resolves and opens the deployment once per run and says on stderr
// which one it is.
func (a *app) open(ctx context.Context) (*opsEnv, error) {
	if a.ops != nil {
		return a.ops, nil
	}
	dep, err := a.resolve(ctx)
	if err != nil {
		return nil, err
	}
	if dep.endpoint != "" && a.target.stack == "" {
		if err := a.probe(ctx, dep.endpoint); err != nil {
			if start := dep.vars[envLocalStart]; start != "" && errors.Is(err, awsclient.ErrLocalDown) {
				return nil, &localDown{file: dep.file, start: start, err: err}
			}
			return nil, err
		}
	}
	r := envvar.From(dep.vars)
	e := &opsEnv{
		dep: dep, cfg: dep.cfg,
		stage:         r.Stage(),
		settle:        r.SettleDelay(),
		queueURL:      r.StringOr("JOBS_QUEUE_URL", ""),
		dlqURL:        r.StringOr("JOBS_DLQ_URL", ""),
		sweeperDLQURL: r.StringOr("SWEEPER_DLQ_URL", ""),
		bucketPattern: r.StringOr("DIRECT_BUCKET_PATTERN", ""),
		exporterRole:  r.StringOr("EXPORTER_ROLE_ARN", ""),
		consoleRole:   r.StringOr("CONSOLE_ROLE_ARN", ""),
		gluePattern:   r.StringOr("DIRECT_GLUE_DATABASE_PATTERN", ""),
	}
	e.rules, e.rulesErr = readRules(dep)
	lcfg := ledger.ConfigFromEnv(r)
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", dep.desc, err)
	}
	lcfg.Catalog, lcfg.Now = a.catalog, a.now
	if e.ledger, err = ledger.New(dynamodb.NewFromConfig(dep.cfg), lcfg); err != nil {
		return nil, err
	}
	e.sqs = sqs.NewFromConfig(dep.cfg)
	e.sts = sts.NewFromConfig(dep.cfg)
	// Custom endpoints dial through the same guard as the exporter's: private
	// addresses only where the deployment allows them, loopback only for a
	// local stack.
	e.buckets = &destination.Clients{Base: dep.cfg, Endpoints: netguard.Policy{
		AllowPrivate: e.rules.AllowPrivateEndpoints, AllowLoopback: dep.local(),
	}, DeploymentAccountID: e.rules.DeploymentAccountID}
	// GCS and Azure destinations with credentials: federated from the
	// operator's own AWS identity (which the customer's trust must name,
	// as an S3 role's trust names it for account test), or the key the
	// account names in Secrets Manager.
	e.buckets.SetStoreCredentials(e.rules.SecretPattern, destination.TokenEndpoints{})
	line := fmt.Sprintf("daybook: using %s: table %s", dep.desc, lcfg.Table)
	if e.queueURL != "" {
		line += ", queue " + lastSegment(e.queueURL)
	}
	fmt.Fprintln(a.stderr, line)
	a.ops = e
	return e, nil
}
