package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// reseedSent is what `daybook reseed -o json` prints.
type reseedSent struct {
	AccountID string `json:"account_id"`
	Dataset   string `json:"dataset"`
	From      string `json:"from"`
	Through   string `json:"through"`
	Days      int    `json:"days"`
	MessageID string `json:"message_id"`
	Body      string `json:"body"`
}

// seedView is a reseed's state as `daybook reseed --status -o json` prints it.
type seedView struct {
	AccountID   string     `json:"account_id"`
	Dataset     string     `json:"dataset"`
	Epoch       int64      `json:"epoch"`
	State       string     `json:"state"`
	From        string     `json:"from"`
	Through     string     `json:"through"`
	Days        int        `json:"days"`
	Done        int        `json:"done"`
	RequestedBy string     `json:"requested_by"`
	StartedAt   time.Time  `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
}

func (a *app) reseedCommand() *cobra.Command {
	var p partitionFlags
	var by string
	var status bool
	c := &cobra.Command{
		Use:   "reseed --account ID --dataset NAME",
		Short: "Rebuild an incremental dataset from its start date; customers drop their copy and load it again",
		Long: `Re-export every day of an incremental dataset (one whose current state is the latest row per
id, such as profiles) from the account's start date through its last closed day, under a new seed
epoch. The request goes to the jobs queue: the exporter starts the epoch, queues every day (the
sweeper paces them with its caps) and rewrites every day's delivery manifest, which says
reseed: true for the dataset until the last day is rebuilt; the bucket's README tells the customer
to drop their copy and load every day again. Datasets read as a union of days that do not change
once closed (events, daily_stats) are refused: re-export the days that changed with daybook
reexport. --status shows the dataset's last reseed instead of starting one.`,
		Example: "  daybook reseed --account acct_localdemoaccount --dataset profiles\n  daybook reseed --account acct_localdemoaccount --dataset profiles --status",
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&p.account, "account", "", "account id (acct_...)")
	c.Flags().StringVar(&p.dataset, "dataset", "", "an incremental dataset whose current state is the latest row per id (profiles)")
	a.completeDatasets(c, "dataset")
	c.Flags().StringVar(&by, "requested-by", "", "who asks, recorded with the reseed (default: your AWS identity's ARN)")
	c.Flags().BoolVar(&status, "status", false, "show the dataset's last reseed instead of starting one")
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := requireFlags(c, "account", "dataset"); err != nil {
			return err
		}
		if _, err := a.datasetFlag(c, p.dataset); err != nil {
			return err
		}
		if status {
			return a.reseedStatus(c, p, *out)
		}
		requestID, err := a.requestID()
		if err != nil {
			return err
		}
		r := jobs.Reseed{Kind: jobs.KindReseed, AccountID: p.account, Dataset: p.dataset, RequestID: requestID}
		// Refusals that need no deployment first: a malformed account id,
		// a dataset that cannot be reseeded.
		if _, _, err := jobs.CheckReseed(a.catalog, r, nil, jobs.Limits{Now: a.now()}); !isNoAccount(err) {
			return flagError(c, err)
		}
		ctx := c.Context()
		e, err := a.open(ctx)
		if err != nil {
			return err
		}
		var acct *account.Account
		switch got, err := e.ledger.Accounts().GetAccount(ctx, p.account); {
		case err == nil:
			acct = &got
		case !errors.Is(err, ledger.ErrNotFound):
			return err
		}
		from, through, err := jobs.CheckReseed(a.catalog, r, acct, jobs.Limits{Now: a.now(), SettleDelay: e.settle})
		if err != nil {
			return flagError(c, err)
		}
		switch seed, err := e.ledger.Seeds().Seed(ctx, p.account, p.dataset); {
		case err == nil && seed.Running():
			return fmt.Errorf("a reseed of %s for account %s is running (epoch %d since %s, %d of %d days rebuilt); it must finish first: daybook reseed --account %s --dataset %s --status",
				p.dataset, p.account, seed.Epoch, seed.StartedAt.Format(time.RFC3339), len(seed.Done), seed.Days, p.account, p.dataset)
		case err != nil && !errors.Is(err, ledger.ErrNotFound):
			return err
		}
		if e.queueURL == "" {
			return fmt.Errorf("%s names no jobs queue (JOBS_QUEUE_URL, or the stack output JobsQueueUrl)", e.dep.desc)
		}
		r.RequestedBy = a.requestedBy(ctx, e.sts, by)
		body, err := jobs.Encode(r)
		if err != nil {
			return err
		}
		res, err := jobs.Queue{API: e.sqs, URL: e.queueURL}.SendBatch(ctx, []jobs.Outgoing{{Body: body}})
		if err == nil {
			err = jobs.NotSent(res)
		}
		if err != nil {
			return fmt.Errorf("send reseed request: %w", err)
		}
		sent := reseedSent{AccountID: p.account, Dataset: p.dataset, From: from.String(), Through: through.String(),
			Days: from.DaysUntil(through) + 1, MessageID: res[0].MessageID, Body: body}
		if *out == outputJSON {
			return printJSON(a.stdout, sent)
		}
		_, err = fmt.Fprintf(a.stdout, "sent a reseed of %s for account %s, %s..%s (%d days; message %s): the exporter starts the next seed epoch and queues every day;\n"+
			"every day's delivery manifest says reseed: true for %s until the last day is rebuilt (daybook reseed --account %s --dataset %s --status)\n",
			p.dataset, p.account, sent.From, sent.Through, sent.Days, sent.MessageID, p.dataset, p.account, p.dataset)
		return err
	}
	return c
}

// isNoAccount reports whether err is CheckReseed's refusal for a missing
// account: what a check without the stored account ends in when nothing
// else is wrong.
func isNoAccount(err error) bool {
	var re *jobs.FieldError
	return errors.As(err, &re) && re.Field == "account_id" && errors.Is(err, jobs.ErrRefused)
}

// requestID is a fresh id for a reseed request.
func (a *app) requestID() (string, error) {
	var b [8]byte
	if _, err := io.ReadFull(a.rand, b[:]); err != nil {
		return "", fmt.Errorf("request id: %w", err)
	}
	return "reseed_" + hex.EncodeToString(b[:]), nil
}

// reseedStatus prints the dataset's last reseed.
func (a *app) reseedStatus(c *cobra.Command, p partitionFlags, out outputFormat) error {
	ctx := c.Context()
	e, err := a.open(ctx)
	if err != nil {
		return err
	}
	seed, err := e.ledger.Seeds().Seed(ctx, p.account, p.dataset)
	if errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("%s of account %s was never reseeded", p.dataset, p.account)
	}
	if err != nil {
		return err
	}
	v := seedView{AccountID: seed.AccountID, Dataset: seed.Dataset, Epoch: seed.Epoch, State: string(seed.State), From: seed.From.String(),
		Through: seed.Through.String(), Days: seed.Days, Done: len(seed.Done), RequestedBy: seed.RequestedBy, StartedAt: seed.StartedAt}
	if !seed.CompletedAt.IsZero() {
		v.CompletedAt = &seed.CompletedAt
	}
	if out == outputJSON {
		return printJSON(a.stdout, v)
	}
	line := fmt.Sprintf("%s of account %s: seed epoch %d %s, %d of %d days rebuilt (%s..%s), started %s",
		v.Dataset, v.AccountID, v.Epoch, v.State, v.Done, v.Days, v.From, v.Through, v.StartedAt.Format(time.RFC3339))
	if v.CompletedAt != nil {
		line += ", completed " + v.CompletedAt.Format(time.RFC3339)
	}
	if v.RequestedBy != "" {
		line += ", requested by " + v.RequestedBy
	}
	_, err = fmt.Fprintln(a.stdout, printable(line))
	return err
}
