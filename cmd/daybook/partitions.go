package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/ops"
	"github.com/daybook-dev/daybook/shared/partition"
)

// requestFlags maps the fields of a manual request, as jobs.CheckRequest
// names them, to the flags they come from.
var requestFlags = map[string]string{
	"account_id": "--account",
	"dataset":    "--dataset",
	"day":        "--day",
	"from":       "--from",
	"to":         "--to",
}

// requestError is a refusal of jobs.CheckRequest worded with the flag the
// user typed: `--day "2026-11-30" is not closed yet for account ...`.
// errors.Is sees jobs.ErrMalformed or jobs.ErrRefused through it.
type requestError struct {
	flag string
	fe   *jobs.FieldError
	hint string
}

func (e *requestError) Error() string {
	msg := fmt.Sprintf("%s %q %s", e.flag, e.fe.Value, e.fe.Reason)
	if e.fe.Value == "" {
		msg = e.flag + " " + e.fe.Reason
	}
	return msg + e.hint
}

func (e *requestError) Unwrap() error { return e.fe }

// flagError words err, from jobs.CheckRequest, with the flag its field came
// from; a malformed value is a usage error (exit 2), a refused one a
// runtime error (exit 1).
func flagError(c *cobra.Command, err error) error {
	var fe *jobs.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	re := &requestError{flag: cmp.Or(requestFlags[fe.Field], fe.Field), fe: fe}
	if fe.Field == "account_id" && errors.Is(fe, jobs.ErrRefused) {
		if strings.Contains(fe.Reason, "disabled") {
			re.hint = fmt.Sprintf("; enable it first: daybook account enable %s", fe.Value)
		} else {
			re.hint = "; daybook account list shows them"
		}
	}
	if errors.Is(fe, jobs.ErrMalformed) {
		return cli.Usage(c, re)
	}
	return re
}

// checkRequests is the exporter's own check of a manual request
// (ops.CheckRequests, jobs.CheckRequest) on the flags, before anything is
// written or sent: a malformed value is refused before the deployment is
// opened, then the account is read and the request checked against it
// (unknown or disabled account, a dataset it does not export, a day before
// its start date or not closed yet). Without --dataset it covers every
// dataset of the account, a snapshot dataset for its newest closed day
// alone or left out, said in the []ops.LeftOut (ops.CheckRequests, which
// the console's actions call too). maxDays bounds the range. Every
// refusal names the flag.
func (a *app) checkRequests(c *cobra.Command, p partitionFlags, maxDays int) (*opsEnv, account.Account, []ops.Planned, []ops.LeftOut, error) {
	m := jobs.Manual{Kind: jobs.KindManual, AccountID: p.account, Dataset: p.dataset, Day: p.day, From: p.from, To: p.to}
	lim := jobs.Limits{Now: a.now(), MaxDays: maxDays}
	probe := m
	if probe.Dataset == "" {
		names := a.catalog.Names()
		if len(names) == 0 {
			return nil, account.Account{}, nil, nil, errors.New("the dataset catalog is empty")
		}
		probe.Dataset = names[0] // the form alone: any dataset of the catalog
	}
	if err := ops.CheckForm(a.catalog, probe, lim); err != nil {
		return nil, account.Account{}, nil, nil, flagError(c, err)
	}
	e, err := a.open(c.Context())
	if err != nil {
		return nil, account.Account{}, nil, nil, err
	}
	lim.SettleDelay = e.settle
	acct, plan, left, err := ops.CheckRequests(c.Context(), a.catalog, ops.LedgerOf(e.ledger), m, lim)
	if err != nil {
		return nil, account.Account{}, nil, nil, flagError(c, err)
	}
	return e, acct, plan, left, nil
}

func plannedNames(plan []ops.Planned) []string {
	out := make([]string, len(plan))
	for i, p := range plan {
		out[i] = p.Dataset
	}
	return out
}

// retried is what retry did, over the datasets it made due.
type retried struct {
	ledger.RequeueResult
	Datasets []string      `json:"datasets"`
	LeftOut  []ops.LeftOut `json:"left_out,omitempty"`
}

// retryCommand is daybook retry; requeueCommand keeps the earlier name.
func (a *app) retryCommand() *cobra.Command {
	var p partitionFlags
	var reason, by string
	c := &cobra.Command{
		Use:   "retry --account ID [--dataset NAME] (--day DAY | --from DAY --to DAY)",
		Short: "Make days due for the next sweep: a backfill, or a retry of partitions that stopped retrying",
		Long: `Make days due in the ledger (waiting for a sweep; --state due), for every dataset of the account or only --dataset: the sweeper claims them first, oldest first, within its
per-account and per-sweep caps, so a long backfill is paced. Missing rows are created; stopped
rows get a fresh attempt count; a row that is running now is marked to run again
when it finishes. Who asked (your AWS identity unless --requested-by) is recorded in the
ledger, shown by daybook history and written into each exported day's _manifest.json.
Without --dataset, a snapshot dataset (copied for the newest closed day only) is made due for
that day alone when the range holds it and left out otherwise; the output says what was left
out and why. (daybook requeue, the earlier name, still works.)`,
		Example: "  daybook retry --account acct_localdemoaccount --from 2026-09-01 --to 2026-09-30\n  daybook retry --account acct_localdemoaccount --dataset events --day 2026-09-14",
	}
	a.deploymentFlags(c)
	a.registerPartitionFlags(c, &p, true)
	c.Flags().StringVar(&by, "requested-by", "", "who asks, recorded with the rows (default: your AWS identity's ARN)")
	c.Flags().StringVar(&reason, "reason", string(partition.ReasonBackfill), "backfill or manual (recorded in the manifest)")
	_ = c.RegisterFlagCompletionFunc("reason", cobra.FixedCompletions([]string{"backfill", "manual"}, cobra.ShellCompDirectiveNoFileComp))
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := requireFlags(c, "account"); err != nil {
			return err
		}
		if p.dataset != "" {
			if _, err := a.datasetFlag(c, p.dataset); err != nil {
				return err
			}
		}
		if r := partition.Reason(reason); r != partition.ReasonBackfill && r != partition.ReasonManual {
			return cli.Usagef(c, "--reason %q: want backfill or manual", reason)
		}
		from, to, err := dayRange(c, p.day, p.from, p.to)
		if err != nil {
			return err
		}
		ctx := c.Context()
		e, acct, plan, left, err := a.checkRequests(c, p, from.DaysUntil(to)+1) // the sweeper paces a retry: no bound
		if err != nil {
			return err
		}
		days := civil.Range(from, to)
		who := a.requestedBy(ctx, e.sts, by)
		total := 0
		for _, pl := range plan {
			total += len(pl.Days())
		}
		bar := a.progress(total, "retry")
		res := retried{Datasets: plannedNames(plan), LeftOut: left}
		for _, pl := range plan {
			r, err := ops.Retry(ctx, a.catalog, ops.LedgerOf(e.ledger), acct.ID, pl.Dataset, pl.Days(), partition.Reason(reason), who, bar)
			res.Queued += r.Queued
			res.Created += r.Created
			res.RerunRequested += r.RerunRequested
			if err != nil {
				bar.Finish()
				return fmt.Errorf("%s: %w", pl.Dataset, err)
			}
		}
		bar.Finish()
		if *out == outputJSON {
			return printJSON(a.stdout, res)
		}
		if _, err := fmt.Fprintf(a.stdout, "made %s due (%s %s..%s, %s) for account %s (%d new rows, %d running now and marked to run again); the next sweep claims them\n",
			countOf(res.Queued, "partition"), countOf(len(days), "day"), from, to, strings.Join(res.Datasets, ", "), acct.ID, res.Created, res.RerunRequested); err != nil {
			return err
		}
		if h := e.dep.drainHint(); h != "" {
			fmt.Fprintf(a.stderr, "daybook: a local stack has no scheduler: %s --sweep sweeps and exports them\n", h)
		}
		return printLeftOut(a, left)
	}
	return c
}

// requeueCommand is retry under its earlier name, hidden from the help: an
// operator's scripts that run daybook requeue keep working.
func (a *app) requeueCommand() *cobra.Command {
	c := a.retryCommand()
	c.Use = "requeue" + strings.TrimPrefix(c.Use, "retry")
	c.Short = "The earlier name of daybook retry"
	c.Hidden = true
	return c
}

// sendAPI is the part of SQS `reexport` uses.
type sendAPI = ops.SendAPI

type sentRequest = ops.SentRequest

func (a *app) reexportCommand() *cobra.Command {
	var p partitionFlags
	var by string
	c := &cobra.Command{
		Use:   "reexport --account ID [--dataset NAME] (--day DAY | --from DAY --to DAY)",
		Short: "Re-export a day or a range now, through the jobs queue",
		Long: fmt.Sprintf(`Send one manual re-export request per day and dataset to the jobs queue: every dataset of the
account, or only --dataset. The exporter claims each day in
the ledger (a day running now runs again after it finishes) and writes the next generation.
At most %d days per command; larger backfills go through daybook retry, which the sweeper
paces. Who asked (your AWS identity unless --requested-by) is recorded in the ledger, shown by
daybook history and the console, and written into the day's _manifest.json (provenance).
Without --dataset, a snapshot dataset (copied for the newest closed day only) is re-exported
for that day alone when the range holds it and left out otherwise, as the output says.`, jobs.MaxManualRangeDays),
		Example: "  daybook reexport --account acct_localdemoaccount --day 2026-11-20\n  daybook reexport --account acct_localdemoaccount --dataset events --from 2026-11-18 --to 2026-11-20",
	}
	a.deploymentFlags(c)
	a.registerPartitionFlags(c, &p, true)
	c.Flags().Lookup("from").Usage = fmt.Sprintf("first day of a range, YYYY-MM-DD (the range at most %d days)", jobs.MaxManualRangeDays)
	c.Flags().StringVar(&by, "requested-by", "", "who asks, recorded with the request (default: your AWS identity's ARN)")
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := requireFlags(c, "account"); err != nil {
			return err
		}
		if p.dataset != "" {
			if _, err := a.datasetFlag(c, p.dataset); err != nil {
				return err
			}
		}
		from, to, err := dayRange(c, p.day, p.from, p.to)
		if err != nil {
			return err
		}
		if n := from.DaysUntil(to) + 1; n > jobs.MaxManualRangeDays {
			return cli.Usagef(c, "--from %s --to %s is %d days; at most %d per re-export (use daybook retry for more)", from, to, n, jobs.MaxManualRangeDays)
		}
		ctx := c.Context()
		e, acct, plan, left, err := a.checkRequests(c, p, jobs.MaxManualRangeDays)
		if err != nil {
			return err
		}
		datasets := plannedNames(plan)
		if e.queueURL == "" {
			return fmt.Errorf("%s names no jobs queue (JOBS_QUEUE_URL, or the stack output JobsQueueUrl)", e.dep.desc)
		}
		who := a.requestedBy(ctx, e.sts, by)
		var sent []sentRequest
		for _, pl := range plan {
			s, serr := a.sendReexports(ctx, ops.LedgerOf(e.ledger), e.sqs, e.queueURL, acct.ID, pl.Dataset, pl.Days(), who)
			sent = append(sent, s...)
			if serr != nil {
				err = fmt.Errorf("%s: %w", pl.Dataset, serr)
				break
			}
		}
		if *out == outputJSON {
			if perr := printJSON(a.stdout, nonNil(sent)); perr != nil {
				return perr
			}
		} else if len(sent) == 1 {
			fmt.Fprintf(a.stdout, "sent %s (message %s)\n", sent[0].Body, sent[0].MessageID)
		} else if len(sent) > 1 {
			fmt.Fprintf(a.stdout, "sent %d re-export requests for %s (%s) %s..%s\n", len(sent), acct.ID, strings.Join(datasets, ", "), from, to)
		}
		if h := e.dep.drainHint(); h != "" && len(sent) > 0 {
			fmt.Fprintf(a.stderr, "daybook: queued: a local stack has no event source, so nothing runs the requests until %s feeds the queue to the exporter\n", h)
		}
		if *out != outputJSON {
			err = errors.Join(err, printLeftOut(a, left))
		}
		return err
	}
	return c
}

// printLeftOut says which datasets (or days) a request for every dataset
// left out, and why.
func printLeftOut(a *app, left []ops.LeftOut) error {
	for _, l := range left {
		if _, err := fmt.Fprintf(a.stdout, "left out %s: %s\n", l.Dataset, l.Reason); err != nil {
			return err
		}
	}
	return nil
}

// sendReexports sends one manual request per day, ten per batch, noted on
// the days' rows first so status shows them requested (ops.SendReexports).
func (a *app) sendReexports(ctx context.Context, l ops.ReexportNoter, api sendAPI, queueURL, acct, ds string, days []civil.Date, by string) ([]sentRequest, error) {
	bar := a.progress(len(days), "reexport")
	defer bar.Finish()
	return ops.SendReexports(ctx, a.catalog, l, api, queueURL, acct, ds, days, by, bar)
}

// countOf is "1 day", "3 days".
func countOf(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
