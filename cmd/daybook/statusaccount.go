package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ops"
)

// dayStatus is one partition in the account view.
type dayStatus = ops.Day

type accountStatusOut = ops.AccountDays

func (a *app) accountStatus(ctx context.Context, f statusFlags, states map[ops.Phase]bool, from, to civil.Date, out outputFormat) error {
	e, acct, err := a.account(ctx, f.account, "--account")
	if err != nil {
		return err
	}
	from, to = ops.Window(acct, e.settle, a.now(), from, to, f.days)
	res, err := ops.AccountView(ctx, a.catalog, ops.LedgerOf(e.ledger), acct, e.settle, a.now(), f.datasets, states, from, to)
	if err != nil {
		if errors.Is(err, ops.ErrNoDatasets) {
			return fmt.Errorf("--dataset %s: account %s exports none of them; its datasets: %s", strings.Join(f.datasets, ","), acct.ID, strings.Join(acct.Datasets, ", "))
		}
		return err
	}
	if out == outputJSON {
		return printJSON(a.stdout, res)
	}
	a.printAccountStatus(res, from, to, states)
	return nil
}

func (a *app) printAccountStatus(res accountStatusOut, from, to civil.Date, states map[ops.Phase]bool) {
	w := a.stdout
	color := a.useColor()
	enabled := ""
	if !res.Enabled {
		enabled = "  DISABLED"
	}
	fmt.Fprintf(w, "account %s  %s  zone %s  start %s  closed through %s%s\n", res.Account, printable(res.Name), printable(res.TimeZone), res.StartDate, res.ClosedThrough, enabled)
	if to.Before(from) {
		fmt.Fprintf(w, "no day to show: the window %s..%s is empty (the account starts %s)\n", from, to, res.StartDate)
		return
	}
	filter := ""
	if len(states) > 0 {
		var ss []string
		for _, p := range ops.Phases {
			if states[p] {
				ss = append(ss, string(p))
			}
		}
		filter = ", only " + strings.Join(ss, ", ")
	}
	days := civil.Range(from, to)
	fmt.Fprintf(w, "days %s..%s (%d)%s\n\n", from, to, len(days), filter)
	var rows []heatRow
	for _, ds := range res.Datasets {
		byDay := map[string]ops.Phase{}
		for _, d := range ds.Days {
			byDay[d.Day] = d.State
		}
		cells := make([]ops.Phase, len(days))
		for i, d := range days {
			cells[i] = byDay[d.String()]
		}
		rows = append(rows, heatRow{label: ds.Dataset, cells: cells, note: ops.CountsText(ds.Counts)})
	}
	drawHeatmap(w, days, rows, color)
	fmt.Fprintf(w, "\n%s\n", legend(color))
	for _, ds := range res.Datasets {
		if len(ds.Before) > 0 {
			fmt.Fprintf(w, "%s before %s: %s (show them with --from)\n", ds.Dataset, from, ops.CountsText(ds.Before))
		}
		if len(ds.After) > 0 {
			fmt.Fprintf(w, "%s after %s: %s (show them with --to)\n", ds.Dataset, to, ops.CountsText(ds.After))
		}
	}
	groups := ops.GroupFailures(res.Datasets)
	printFailureGroups(w, groups)
	var lines []string
	for _, ds := range res.Datasets {
		for _, d := range ds.Days {
			if line := attention(ds.Dataset, d, len(states) > 0); line != "" {
				lines = append(lines, line)
			}
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w)
		const most = 50
		for _, l := range lines[:min(most, len(lines))] {
			fmt.Fprintln(w, printable(l))
		}
		if len(lines) > most {
			fmt.Fprintf(w, "  ... and %d more (-o json lists every day)\n", len(lines)-most)
		}
	}
}

// attention describes a partition an operator may need to look at (every
// listed partition when the view is filtered by state), or returns "".
func attention(ds string, d dayStatus, all bool) string {
	switch d.State {
	case ops.Failed, ops.Stopped:
		return "" // in their failure group
	case ops.Claimed, ops.Running, ops.Requested:
	default:
		if !all {
			return ""
		}
	}
	return fmt.Sprintf("  %s %s  %s", ds, d.Day, describe(d))
}

// describe says what a partition is doing, in a sentence.
func describe(d dayStatus) string { return ops.Describe(d) }

// printFailureGroups shows the failed and stopped partitions grouped by
// reason code, as the console's account page does: the code, what happened,
// the partitions, the fix and the most common raw error.
func printFailureGroups(w io.Writer, groups []ops.FailureGroup) {
	for _, g := range groups {
		var days []string
		for i, p := range g.Partitions {
			if i == 8 {
				days = append(days, fmt.Sprintf("... and %d more", len(g.Partitions)-i))
				break
			}
			days = append(days, p.Dataset+" "+p.Day)
		}
		stopped := ""
		if g.Stopped > 0 {
			stopped = fmt.Sprintf(", %d stopped retrying", g.Stopped)
		}
		fmt.Fprintf(w, "\nFAILED %s: %s (%s%s)\n", g.Code, cmp.Or(g.What, "see the error"), countOf(len(g.Partitions), "partition"), stopped)
		fmt.Fprintf(w, "  %s\n", strings.Join(days, ", "))
		if g.Fix != "" {
			fmt.Fprintf(w, "  fix: %s\n", g.Fix)
		}
		if len(g.Errors) > 0 {
			more := ""
			if len(g.Errors) > 1 {
				more = fmt.Sprintf(" (and %d other errors; -o json lists them)", len(g.Errors)-1)
			}
			fmt.Fprintf(w, "  error: %s%s\n", printable(clip(g.Errors[0], 300)), more)
		}
	}
}
