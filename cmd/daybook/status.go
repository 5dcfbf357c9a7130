package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/console/ops"
)

// statusFlags are status's filters.
type statusFlags struct {
	account  string
	datasets []string
	states   []string
	from, to string
	days     int
}

func (a *app) statusCommand() *cobra.Command {
	var f statusFlags
	c := &cobra.Command{
		Use:   "status [--account ID] [--dataset NAME] [--state STATE] [--from DAY --to DAY | --days N]",
		Short: "Show the ledger: the fleet, worst first, or one account's datasets by day",
		Long: `Without --account: one line per account, worst first (stopped, then failed, then the oldest day
not exported): partitions completed, queued (waiting for a sweep), claimed (a job waiting in
the queue), running (an exporter started it), failed (will retry), stopped (waits for
daybook requeue), the oldest day not exported and the newest day exported.

With --account: a map of dataset by day with a date axis, one character per day (in colour on
a terminal), the days before the window summed up, and the partitions that need attention.
--state (a comma-separated list, or repeated) shows only partitions in those states in both
views; --from/--to (or --days, default the
last 90 closed days) set the window.`,
		Example: "  daybook status\n  daybook status --state failed,stopped\n  daybook status --account acct_localdemoaccount --from 2026-09-01 --to 2026-11-30",
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&f.account, "account", "", "one account's datasets by day")
	c.Flags().StringSliceVar(&f.datasets, "dataset", nil, "only these datasets (repeat or comma-separate): "+strings.Join(datasetNames(), ", "))
	c.Flags().StringSliceVar(&f.states, "state", nil, "only partitions in these states (repeat or comma-separate): "+phaseNames())
	c.Flags().StringVar(&f.from, "from", "", "first day shown, YYYY-MM-DD")
	c.Flags().StringVar(&f.to, "to", "", "last day shown, YYYY-MM-DD (default: the last closed day)")
	c.Flags().IntVar(&f.days, "days", 0, "show the last N closed days (with --account; default 90)")
	completeDatasets(c, "dataset")
	_ = c.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(strings.Split(phaseNames(), ", "), cobra.ShellCompDirectiveNoFileComp))
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		for _, ds := range f.datasets {
			if _, err := datasetFlag(c, ds); err != nil {
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

func (a *app) fleetStatus(ctx context.Context, f statusFlags, states map[phase]bool, from, to civil.Date, out outputFormat) error {
	e, err := a.open(ctx)
	if err != nil {
		return err
	}
	lines, err := ops.Fleet(ctx, e.ledger, ops.FleetOptions{Datasets: f.datasets, From: from, To: to, States: states})
	if err != nil {
		return err
	}
	if out == outputJSON {
		return printJSON(a.stdout, nonNil(lines))
	}
	tw := newTable(a.stdout)
	tw.header("ACCOUNT\tNAME\tDATASETS\tCOMPLETED\tQUEUED\tCLAIMED\tRUNNING\tFAILED\tSTOPPED\tOLDEST DUE\tLAST EXPORT")
	for _, l := range lines {
		name := l.Name
		if !l.Enabled {
			name += " (disabled)"
		}
		last := "-"
		if l.LastExport != "" {
			last = l.LastExport + " at " + l.LastExportAt
		}
		tw.row(l.Account, name, strings.Join(l.Datasets, ","),
			l.Counts[phaseCompleted], l.Counts[phaseQueued], l.Counts[phaseClaimed], l.Counts[phaseRunning],
			l.Counts[phaseFailed], l.Counts[phaseStopped], cmp.Or(l.OldestDue, "-"), last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(a.stdout, "\nqueued: waiting for a sweep · claimed: job waiting in the queue · running: an exporter started it · failed: will retry · stopped: waits for daybook requeue")
	return err
}
