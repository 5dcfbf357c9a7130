package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// opsEnv is what the operator commands talk to.
type opsEnv struct {
	cfg      aws.Config
	ledger   *ledger.Ledger
	sqs      *sqs.Client
	queueURL string
	stage    string
	settle   time.Duration
	buckets  *destination.Clients
}

// envFileFlag registers --env-file: the deployment's function environment in
// the `sam local invoke --env-vars` format. It defaults to .local/env.json
// when that exists and LEDGER_TABLE is not set, so the local stack is used
// without extra flags.
func envFileFlag(fs *flag.FlagSet) *string {
	def := ""
	if _, err := os.Stat(".local/env.json"); err == nil && os.Getenv("LEDGER_TABLE") == "" {
		def = ".local/env.json"
	}
	return fs.String("env-file", def, "env.json of a deployment (default .local/env.json when present and LEDGER_TABLE is unset)")
}

func openOps(ctx context.Context, envFile string) (*opsEnv, error) {
	vars := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	if envFile != "" {
		file, err := readEnvFile(envFile)
		if err != nil {
			return nil, err
		}
		for k, v := range file["ExporterFunction"] {
			vars[k] = v
			if strings.HasPrefix(k, "AWS_") {
				os.Setenv(k, v) // the SDK reads endpoint, region and credentials from the environment
			}
		}
	}
	r := envvar.From(vars)
	e := &opsEnv{stage: r.Stage(), settle: r.SettleDelay()}
	lcfg := ledger.ConfigFromEnv(r)
	e.queueURL = r.StringOr("JOBS_QUEUE_URL", "")
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w (set it, or pass --env-file)", err)
	}
	cfg, err := awsclient.Load(ctx)
	if err != nil {
		return nil, err
	}
	e.cfg = cfg
	e.buckets = &destination.Clients{Base: cfg}
	e.ledger, err = ledger.New(dynamodb.NewFromConfig(cfg), lcfg)
	if err != nil {
		return nil, err
	}
	e.sqs = sqs.NewFromConfig(cfg)
	return e, nil
}

// openAccount opens the deployment and reads one account as stored.
func openAccount(ctx context.Context, envFile, id string) (*opsEnv, account.Account, error) {
	e, err := openOps(ctx, envFile)
	if err != nil {
		return nil, account.Account{}, err
	}
	a, err := e.ledger.GetAccount(ctx, id)
	if err != nil {
		return nil, account.Account{}, fmt.Errorf("account %q: %w", id, err)
	}
	return e, a, nil
}

// bucket returns an account's rendered prefix and a client acting in its
// destination (its role, endpoint and region).
func (e *opsEnv) bucket(a account.Account) (string, *s3.Client, error) {
	prefix, err := a.Prefix(e.stage)
	if err != nil {
		return "", nil, err
	}
	return prefix, e.buckets.Client(a.ID, a.Destination), nil
}

func readEnvFile(path string) (map[string]map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	m := map[string]map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("env file %s: %w", path, err)
	}
	return m, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runAccountPut(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("account put")
	envFile := envFileFlag(fs)
	file := fs.String("file", "", "account JSON (an id is generated when absent)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("--file is required")
	}
	b, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	var a account.Account
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return fmt.Errorf("account file %s: %w", *file, err)
	}
	if a.ID == "" {
		if a.ID, err = account.NewID(rand.Reader); err != nil {
			return err
		}
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = time.Now().UTC()
	}
	if err := a.ValidateShape(); err != nil {
		return err
	}
	e, err := openOps(ctx, *envFile)
	if err != nil {
		return err
	}
	if err := e.ledger.PutAccount(ctx, a); err != nil {
		return err
	}
	return printJSON(stdout, a)
}

func runAccountGet(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("account get")
	envFile := envFileFlag(fs)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New("usage: daybook account get ID")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	_, a, err := openAccount(ctx, *envFile, args[0])
	if err != nil {
		return err
	}
	return printJSON(stdout, a)
}

func runAccountList(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("account list")
	envFile := envFileFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	e, err := openOps(ctx, *envFile)
	if err != nil {
		return err
	}
	accts, err := e.ledger.ListAccounts(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tENABLED\tSTART\tZONE\tFORMAT\tBUCKET\tDATASETS")
	for _, a := range accts {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Name, a.Enabled, a.StartDate, cmp.Or(a.TimeZone, "-"),
			cmp.Or(a.Destination.Format, "-"), a.Destination.Bucket, strings.Join(a.Datasets, ","))
	}
	return tw.Flush()
}

func runAccountTest(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("account test")
	envFile := envFileFlag(fs)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New("usage: daybook account test ID")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	e, a, err := openAccount(ctx, *envFile, args[0])
	if err != nil {
		return err
	}
	prefix, api, err := e.bucket(a)
	if err != nil {
		return err
	}
	checks, err := destination.CheckConnection(ctx, api, a.Destination.Bucket, prefix, a.Destination.ExpectedBucketOwner, time.Now())
	for _, c := range checks {
		mark := "ok"
		if !c.OK {
			mark = "FAIL: " + c.Problem
		}
		fmt.Fprintf(stdout, "%-38s %-26s %s\n", c.Step, c.Permission, mark)
	}
	return err
}

func dayFlags(fs *flag.FlagSet) (account, ds, day, from, to *string) {
	return fs.String("account", "", "account id"), fs.String("dataset", "", "dataset name"),
		fs.String("day", "", "one day YYYY-MM-DD"), fs.String("from", "", "first day YYYY-MM-DD"), fs.String("to", "", "last day YYYY-MM-DD")
}

func runRequeue(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("requeue")
	envFile := envFileFlag(fs)
	acct, ds, day, from, to := dayFlags(fs)
	reason := fs.String("reason", "backfill", "backfill or manual")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m := jobs.Manual{AccountID: *acct, Dataset: *ds, Day: *day, From: *from, To: *to}
	if err := m.Validate(); err != nil {
		return err
	}
	f, t, _ := m.Days()
	if _, err := dataset.Get(*ds); err != nil {
		return err
	}
	e, a, err := openAccount(ctx, *envFile, *acct)
	if err != nil {
		return err
	}
	if closed := a.WithDefaults(e.settle).ClosedThrough(time.Now()); t.After(closed) {
		return fmt.Errorf("--to %s is not closed yet for account %s; the last closed day is %s", t, a.ID, closed)
	}
	res, err := e.ledger.Requeue(ctx, *acct, *ds, f, t, ledger.Reason(*reason))
	if err != nil {
		return err
	}
	return printJSON(stdout, res)
}

func runReexport(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("reexport")
	envFile := envFileFlag(fs)
	acct, ds, day, from, to := dayFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	user := cmp.Or(os.Getenv("USER"), "unknown")
	m := jobs.Manual{Kind: jobs.KindManual, AccountID: *acct, Dataset: *ds, Day: *day, From: *from, To: *to, RequestedBy: "cli:" + user}
	if err := m.Validate(); err != nil {
		return err
	}
	e, err := openOps(ctx, *envFile)
	if err != nil {
		return err
	}
	if e.queueURL == "" {
		return errors.New("JOBS_QUEUE_URL is required for reexport")
	}
	body, err := jobs.Encode(m)
	if err != nil {
		return err
	}
	out, err := e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(e.queueURL), MessageBody: aws.String(body)})
	if err != nil {
		return fmt.Errorf("send re-export request: %w", err)
	}
	fmt.Fprintf(stdout, "sent %s (message %s)\n", body, aws.ToString(out.MessageId))
	return nil
}

func runStatus(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("status")
	envFile := envFileFlag(fs)
	acct := fs.String("account", "", "account id")
	days := fs.Int("days", 120, "how many days back to show")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *acct == "" {
		return errors.New("--account is required")
	}
	e, a, err := openAccount(ctx, *envFile, *acct)
	if err != nil {
		return err
	}
	a = a.WithDefaults(e.settle)
	to := a.ClosedThrough(time.Now())
	from := to.AddDays(-*days + 1)
	if from.Before(a.StartDate) {
		from = a.StartDate
	}
	fmt.Fprintf(stdout, "account %s (%s), zone %s, days %s..%s\n", a.ID, a.Name, cmp.Or(a.TimeZone, "-"), from, to)
	for _, ds := range a.Datasets {
		rows, err := e.ledger.List(ctx, a.ID, ds, from, to)
		if err != nil {
			return err
		}
		writeStatus(stdout, ds, from, to, rows)
	}
	return nil
}

// writeStatus prints one dataset: counts by state, a one-character-per-day
// strip (oldest left), and the rows that need attention.
func writeStatus(w io.Writer, ds string, from, to civil.Date, rows []ledger.Row) {
	byDay := map[civil.Date]ledger.Row{}
	counts := map[ledger.State]int{}
	for _, r := range rows {
		byDay[r.Day] = r
		counts[r.State]++
	}
	var strip strings.Builder
	for _, d := range civil.Range(from, to) {
		r, ok := byDay[d]
		switch {
		case !ok:
			strip.WriteByte(' ')
		case r.State == ledger.StateCompleted:
			strip.WriteByte('#')
		case r.State == ledger.StateRunning:
			strip.WriteByte('>')
		case r.State == ledger.StateQueued:
			strip.WriteByte('q')
		case r.State == ledger.StatePending:
			strip.WriteByte('.')
		case r.State == ledger.StateFailed && r.Exhausted:
			strip.WriteByte('X')
		default:
			strip.WriteByte('x')
		}
	}
	states := []ledger.State{ledger.StateCompleted, ledger.StateRunning, ledger.StateQueued, ledger.StatePending, ledger.StateFailed}
	var parts []string
	for _, s := range states {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
		}
	}
	fmt.Fprintf(w, "\n%s: %s\n  [%s]  (# completed  > running  q queued  . pending  x failed  X stopped retrying)\n", ds, strings.Join(parts, ", "), strip.String())
	sort.Slice(rows, func(i, j int) bool { return rows[i].Day.Before(rows[j].Day) })
	for _, r := range rows {
		if r.State == ledger.StateFailed {
			next := "waits for a requeue"
			if !r.Exhausted {
				next = "next attempt " + r.NextAttemptAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(w, "  %s failed, attempt %d, %s: %s\n", r.Day, r.Attempts, next, r.LastError)
		}
	}
}
