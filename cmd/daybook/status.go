package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/ops"
)

// statusFlags are status's filters.
type statusFlags struct {
	account  string
	datasets []string
	states   []string
	from, to string
	days     int
	// The fleet view's page: --search, --limit, --page-token.
	search, pageToken string
	limit             int
}

func (a *app) statusCommand() *cobra.Command {
	var f statusFlags
	c := &cobra.Command{
		Use:   "status [--account ID | --search TEXT] [--dataset NAME] [--state STATE] [--from DAY --to DAY | --days N] [--limit N] [--page-token TOKEN]",
		Short: "Show the ledger: the fleet, worst first, or one account's datasets by day",
		Long: `Without --account: one line per account, worst first (stopped, then failed, then the oldest day
not exported): partitions completed, running (an exporter started it), in-queue (claimed by a
sweep, its job in the jobs queue), requested (a re-export sent from the console or daybook
reexport, in the jobs queue), due (waiting for a sweep), failed (will retry), stopped (waits
for daybook retry; --state takes the earlier names claimed and queued too),
the oldest day not exported and the newest day exported. The fleet view
shows --limit accounts (default 50) and ends with the command for the next page
(--page-token); --search finds an account by id, or the accounts whose name starts with the
text. Its counts are the accounts' summaries, which each sweep refreshes after a change (run
'daybook fleet rebuild' once after upgrading from a release without them); with --dataset or
--from/--to the page's accounts are counted from their partitions.

With --account: a map of dataset by day with a date axis, one character per day (in colour on
a terminal), the days before the window summed up, and the partitions that need attention.
--state (a comma-separated list, or repeated) shows only partitions in those states in both
views; --from/--to (or --days, default the
last 90 closed days) set the window.`,
		Example: "  daybook status\n  daybook status --state failed,stopped\n  daybook status --search acme\n  daybook status --account acct_localdemoaccount --from 2026-09-01 --to 2026-11-30",
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&f.account, "account", "", "one account's datasets by day")
	c.Flags().StringSliceVar(&f.datasets, "dataset", nil, "only these datasets (repeat or comma-separate): "+strings.Join(a.catalog.Names(), ", "))
	c.Flags().StringSliceVar(&f.states, "state", nil, "only partitions in these states (repeat or comma-separate): "+ops.Names())
	c.Flags().StringVar(&f.from, "from", "", "first day shown, YYYY-MM-DD")
	c.Flags().StringVar(&f.to, "to", "", "last day shown, YYYY-MM-DD (default: the last closed day)")
	c.Flags().IntVar(&f.days, "days", 0, "show the last N closed days (with --account; default 90)")
	c.Flags().StringVar(&f.search, "search", "", "the fleet view of the account with this id, or of the accounts whose name starts with it")
	c.Flags().IntVar(&f.limit, "limit", ops.DefaultFleetLimit, "accounts per page of the fleet view")
	c.Flags().StringVar(&f.pageToken, "page-token", "", "the fleet view's next page, as the previous page printed it")
	a.completeDatasets(c, "dataset")
	_ = c.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(strings.Split(ops.Names(), ", "), cobra.ShellCompDirectiveNoFileComp))
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		for _, ds := range f.datasets {
			if _, err := a.datasetFlag(c, ds); err != nil {
				return err
			}
		}
		states, err := parsePhases(f.states)
		if err != nil {
			return cli.Usagef(c, "%v", err)
		}
		var from, to civil.Date
		if f.from != "" {
			if from, err = dayFlag(c, "from", f.from); err != nil {
				return err
			}
		}
		if f.to != "" {
			if to, err = dayFlag(c, "to", f.to); err != nil {
				return err
			}
		}
		switch {
		case !from.IsZero() && !to.IsZero() && to.Before(from):
			return cli.Usagef(c, "--to %s is before --from %s", f.to, f.from)
		case f.days != 0 && (f.from != "" || f.to != ""):
			return cli.Usagef(c, "give --days, or --from/--to, not both")
		case f.days < 0:
			return cli.Usagef(c, "--days %d: want a positive number", f.days)
		case f.days != 0 && f.account == "":
			return cli.Usagef(c, "--days needs --account (the fleet view counts every day unless --from/--to)")
		case f.limit < 1 || f.limit > maxFleetLimit:
			return cli.Usagef(c, "--limit %d: want 1 to %d", f.limit, maxFleetLimit)
		case f.account != "" && (f.search != "" || f.pageToken != "" || c.Flags().Changed("limit")):
			return cli.Usagef(c, "--search, --limit and --page-token page the fleet view; --account shows one account")
		}
		if f.account == "" {
			return a.fleetStatus(c.Context(), f, states, from, to, *out)
		}
		return a.accountStatus(c.Context(), f, states, from, to, *out)
	}
	return c
}

// fleetLine is one account in the fleet view.
type fleetLine = ops.FleetLine

// maxFleetLimit bounds --limit: a page is FleetShards queries of at most
// that many items each.
const maxFleetLimit = 500

// fleetPage is the fleet view's JSON: a page of accounts and the token of
// the next page.
type fleetPage struct {
	Accounts      []fleetLine `json:"accounts"`
	NextPageToken string      `json:"next_page_token,omitempty"`
}

func (a *app) fleetStatus(ctx context.Context, f statusFlags, states map[ops.Phase]bool, from, to civil.Date, out outputFormat) error {
	e, err := a.open(ctx)
	if err != nil {
		return err
	}
	res, err := ops.Fleet(ctx, ops.LedgerOf(e.ledger), ops.FleetOptions{Datasets: f.datasets, From: from, To: to, States: states,
		Search: strings.TrimSpace(f.search), Token: f.pageToken, Limit: f.limit})
	if errors.Is(err, ledger.ErrBadPageToken) {
		return fmt.Errorf("--page-token %q: not a token daybook status printed; start again without it", f.pageToken)
	}
	if err != nil {
		return err
	}
	if out == outputJSON {
		return printJSON(a.stdout, fleetPage{Accounts: nonNil(res.Lines), NextPageToken: res.Next})
	}
	// A column per phase, in display order (ops.Phases).
	cols := []string{"ACCOUNT", "NAME", "DATASETS"}
	for _, p := range ops.Phases {
		cols = append(cols, strings.ToUpper(string(p)))
	}
	tw := newTable(a.stdout)
	tw.header(strings.Join(append(cols, "OLDEST DUE", "LAST EXPORT"), "\t"))
	for _, l := range res.Lines {
		name := l.Name
		if !l.Enabled {
			name += " (disabled)"
		}
		last := "-"
		if l.LastExport != "" {
			last = l.LastExport + " at " + l.LastExportAt
		}
		cells := []any{l.Account, name, strings.Join(l.Datasets, ",")}
		for _, p := range ops.Phases {
			cells = append(cells, l.Counts[p])
		}
		tw.row(append(cells, cmp.Or(l.OldestDue, "-"), last)...)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(a.stdout, "\n"+fleetColumnsNote); err != nil {
		return err
	}
	if res.Next != "" {
		_, err = fmt.Fprintf(a.stdout, "\nMore accounts: daybook status %s--page-token %s\n", nextArgs(f), res.Next)
	}
	return err
}

// fleetColumnsNote says what the fleet view's columns of phases count
// (every phase but completed; TestStatusFleetIsWorstFirst checks it names them all).
const fleetColumnsNote = "running: an exporter started it · in-queue: claimed by a sweep, its job in the jobs queue · requested: a re-export request in the jobs queue · " +
	"due: waiting for a sweep · failed: will retry · stopped: waits for daybook retry"

// nextArgs are the fleet view's flags the next page repeats.
func nextArgs(f statusFlags) string {
	var b strings.Builder
	if f.search != "" {
		fmt.Fprintf(&b, "--search %q ", f.search)
	}
	for _, ds := range f.datasets {
		fmt.Fprintf(&b, "--dataset %s ", ds)
	}
	if len(f.states) > 0 {
		fmt.Fprintf(&b, "--state %s ", strings.Join(f.states, ","))
	}
	if f.from != "" {
		fmt.Fprintf(&b, "--from %s ", f.from)
	}
	if f.to != "" {
		fmt.Fprintf(&b, "--to %s ", f.to)
	}
	if f.limit != ops.DefaultFleetLimit {
		fmt.Fprintf(&b, "--limit %d ", f.limit)
	}
	return b.String()
}
