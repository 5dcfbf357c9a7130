package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
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
--state narrows both views to partitions in those states; --from/--to (or --days, default the
last 90 closed days) set the window.`,
		Example: "  daybook status\n  daybook status --state failed,stopped\n  daybook status --account acct_localdemoaccount --from 2026-09-01 --to 2026-11-30",
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&f.account, "account", "", "one account's datasets by day")
	c.Flags().StringSliceVar(&f.datasets, "dataset", nil, "only these datasets (repeat or comma-separate): "+strings.Join(datasetNames(), ", "))
	c.Flags().StringSliceVar(&f.states, "state", nil, "only partitions in these states: "+phaseNames())
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
			return usagef(c, "%v", err)
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
			return usagef(c, "--to %s is before --from %s", f.to, f.from)
		case f.days != 0 && (f.from != "" || f.to != ""):
			return usagef(c, "give --days, or --from/--to, not both")
		case f.days < 0:
			return usagef(c, "--days %d: want a positive number", f.days)
		case f.days != 0 && f.account == "":
			return usagef(c, "--days needs --account (the fleet view counts every day unless --from/--to)")
		}
		if f.account == "" {
			return a.fleetStatus(c.Context(), f, states, from, to, *out)
		}
		return a.accountStatus(c.Context(), f, states, from, to, *out)
	}
	return c
}

func phaseNames() string {
	names := make([]string, len(phases))
	for i, p := range phases {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// fleetLine is one account in the fleet view.
type fleetLine struct {
	Account      string        `json:"account"`
	Name         string        `json:"name"`
	Enabled      bool          `json:"enabled"`
	Datasets     []string      `json:"datasets"`
	Counts       map[phase]int `json:"counts"`
	OldestDue    string        `json:"oldest_due_day,omitempty"`
	LastExport   string        `json:"last_export_day,omitempty"`
	LastExportAt string        `json:"last_export_at,omitempty"`
}

func (l fleetLine) severity() int {
	switch {
	case l.Counts[phaseStopped] > 0:
		return 3
	case l.Counts[phaseFailed] > 0:
		return 2
	case l.OldestDue != "":
		return 1
	}
	return 0
}

func (a *app) fleetStatus(ctx context.Context, f statusFlags, states map[phase]bool, from, to civil.Date, out outputFormat) error {
	e, err := a.open(ctx)
	if err != nil {
		return err
	}
	if from.IsZero() {
		from = firstDay
	}
	if to.IsZero() {
		to = lastDay
	}
	accts, err := e.ledger.ListAccounts(ctx)
	if err != nil {
		return err
	}
	var lines []fleetLine
	for _, acct := range accts {
		l, err := a.fleetLine(ctx, e, acct, f.datasets, from, to)
		if err != nil {
			return err
		}
		if len(states) > 0 && !slices.ContainsFunc(phases, func(p phase) bool { return states[p] && l.Counts[p] > 0 }) {
			continue
		}
		lines = append(lines, l)
	}
	sort.SliceStable(lines, func(i, j int) bool {
		li, lj := lines[i], lines[j]
		if si, sj := li.severity(), lj.severity(); si != sj {
			return si > sj
		}
		if li.OldestDue != lj.OldestDue {
			return li.OldestDue != "" && (lj.OldestDue == "" || li.OldestDue < lj.OldestDue)
		}
		return li.Account < lj.Account
	})
	if out == outputJSON {
		return printJSON(a.stdout, nonNil(lines))
	}
	tw := newTable(a.stdout)
	fmt.Fprintln(tw, "ACCOUNT\tNAME\tDATASETS\tCOMPLETED\tQUEUED\tCLAIMED\tRUNNING\tFAILED\tSTOPPED\tOLDEST DUE\tLAST EXPORT")
	for _, l := range lines {
		name := l.Name
		if !l.Enabled {
			name += " (disabled)"
		}
		last := "-"
		if l.LastExport != "" {
			last = l.LastExport + " at " + l.LastExportAt
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", l.Account, name, strings.Join(l.Datasets, ","),
			l.Counts[phaseCompleted], l.Counts[phaseQueued]+l.Counts[phasePending], l.Counts[phaseClaimed], l.Counts[phaseRunning],
			l.Counts[phaseFailed], l.Counts[phaseStopped], cmp.Or(l.OldestDue, "-"), last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(a.stdout, "\nqueued: waiting for a sweep · claimed: job waiting in the queue · running: an exporter started it · failed: will retry · stopped: waits for daybook requeue")
	return err
}

// fleetLine counts one account from its open rows (the due index), a COUNT
// of its rows per dataset, and its newest completed day per dataset.
func (a *app) fleetLine(ctx context.Context, e *opsEnv, acct account.Account, only []string, from, to civil.Date) (fleetLine, error) {
	l := fleetLine{Account: acct.ID, Name: acct.Name, Enabled: acct.Enabled, Counts: map[phase]int{}}
	for _, ds := range acct.Datasets {
		if len(only) == 0 || slices.Contains(only, ds) {
			l.Datasets = append(l.Datasets, ds)
		}
	}
	open, err := e.ledger.Open(ctx, acct.ID)
	if err != nil {
		return l, err
	}
	openPerDataset := map[string]int{}
	for _, r := range open {
		if !slices.Contains(l.Datasets, r.Dataset) || r.Day.Before(from) || r.Day.After(to) {
			continue
		}
		if r.State == ledger.StateRunning { // the index does not project started_at
			full, err := e.ledger.Get(ctx, r.Key)
			if err != nil {
				return l, err
			}
			r = full
		}
		if r.State == ledger.StateCompleted {
			continue // finished between the two reads
		}
		l.Counts[phaseOf(r)]++
		openPerDataset[r.Dataset]++
		if d := r.Day.String(); l.OldestDue == "" || d < l.OldestDue {
			l.OldestDue = d
		}
	}
	for _, ds := range l.Datasets {
		n, err := e.ledger.Count(ctx, acct.ID, ds, from, to)
		if err != nil {
			return l, err
		}
		l.Counts[phaseCompleted] += max(0, n-openPerDataset[ds])
		last, ok, err := e.ledger.LastCompleted(ctx, acct.ID, ds, to)
		if err != nil {
			return l, err
		}
		if ok && (last.Day.String() > l.LastExport || (last.Day.String() == l.LastExport && fmtTime(last.CompletedAt) > l.LastExportAt)) {
			l.LastExport, l.LastExportAt = last.Day.String(), fmtTime(last.CompletedAt)
		}
	}
	return l, nil
}
