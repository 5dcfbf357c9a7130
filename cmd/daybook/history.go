package main

import (
	"cmp"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/ops"
	"github.com/daybook-dev/daybook/shared/partition"
)

// attemptOut is one attempt in `daybook history`.
type attemptOut = ops.Attempt

type historyOut = ops.PartitionHistory

func (a *app) historyCommand() *cobra.Command {
	var p partitionFlags
	c := &cobra.Command{
		Use:   "history --account ID --dataset NAME --day DAY",
		Short: "Show every attempt and generation of one partition",
		Long: `Show every attempt of one partition: when it started, how long it ran, rows, bytes and files
written, the generation it committed, who asked for it (a re-export or retry), and how it ended (completed, failed, stopped, or
lease_expired when the exporter died). The ledger keeps one history item per attempt for
400 days; partitions exported before it kept history show their current state only.`,
		Example: "  daybook history --account acct_localdemoaccount --dataset events --day 2026-11-20",
	}
	a.deploymentFlags(c)
	a.registerPartitionFlags(c, &p, false)
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := requireFlags(c, "account", "dataset", "day"); err != nil {
			return err
		}
		if _, err := a.datasetFlag(c, p.dataset); err != nil {
			return err
		}
		day, err := dayFlag(c, "day", p.day)
		if err != nil {
			return err
		}
		ctx := c.Context()
		e, acct, err := a.account(ctx, p.account, "--account")
		if err != nil {
			return err
		}
		res, err := ops.History(ctx, ops.LedgerOf(e.ledger), partition.Key{AccountID: acct.ID, Dataset: a.catalog.Current(p.dataset), Day: day}, a.now())
		if err != nil {
			return err
		}
		if *out == outputJSON {
			return printJSON(a.stdout, res)
		}
		w := a.stdout
		fmt.Fprintf(w, "%s %s %s: ", acct.ID, p.dataset, day)
		if res.Current == nil {
			fmt.Fprintln(w, "no ledger row (the day was never materialized, retried or re-exported)")
		} else {
			line := describe(*res.Current)
			if res.Current.RequestedBy != "" {
				line += "; requested by " + res.Current.RequestedBy
			}
			fmt.Fprintln(w, printable(line))
		}
		if err := printSlices(w, res.Slices); err != nil {
			return err
		}
		if len(res.Attempts) == 0 {
			_, err := fmt.Fprintln(w, "no attempts recorded")
			return err
		}
		fmt.Fprintln(w)
		tw := newTable(w)
		tw.header("STARTED\tATTEMPT\tREASON\tREQUESTED BY\tDURATION\tOUTCOME\tGENERATION\tROWS\tBYTES\tFILES\tERROR")
		for _, h := range res.Attempts {
			gen, rows, size, files := "-", "-", "-", "-"
			if h.Outcome == string(ledger.OutcomeCompleted) {
				gen, rows, size, files = fmt.Sprint(h.Generation), fmt.Sprint(h.Rows), ops.HumanBytes(h.Bytes), fmt.Sprint(h.Files)
			}
			tw.row(cmp.Or(h.StartedAt, h.ClaimedAt), h.Attempt, h.Reason, cmp.Or(h.RequestedBy, "-"),
				ops.FormatDuration(h.DurationMS), h.Outcome, gen, rows, size, files, h.Error)
		}
		return tw.Flush()
	}
	return c
}

// printSlices shows the running attempt's slices, if it exports the day in
// slices.
func printSlices(w io.Writer, p *ops.SliceProgress) error {
	if p == nil {
		return nil
	}
	fmt.Fprintf(w, "in slices since %s: %d of %d in (%d rows), generation %d, %d rows expected\n\n",
		p.Planned, p.Completed, len(p.Slices), p.Rows, p.Generation, p.Expected)
	tw := newTable(w)
	tw.header("SLICE\tSTATE\tATTEMPTS\tROWS\tBYTES\tLEASE UNTIL\tERROR")
	for _, sl := range p.Slices {
		rows, size := "-", "-"
		if sl.State == string(ledger.StateCompleted) {
			rows, size = fmt.Sprint(sl.Rows), ops.HumanBytes(sl.Bytes)
		}
		tw.row(sl.Slice, sl.State, sl.Attempts, rows, size, cmp.Or(sl.LeaseUntil, "-"), sl.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}
