package main

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/ledger"
)

// attemptOut is one attempt in `daybook history`.
type attemptOut struct {
	Attempt     int    `json:"attempt"`
	Outcome     string `json:"outcome"`
	Reason      string `json:"reason,omitempty"`
	ClaimedAt   string `json:"claimed_at,omitempty"`
	StartedAt   string `json:"started_at,omitempty"`
	FinishedAt  string `json:"finished_at,omitempty"`
	DurationMS  int64  `json:"duration_ms,omitempty"`
	Generation  int64  `json:"generation,omitempty"`
	Rows        int64  `json:"rows,omitempty"`
	Bytes       int64  `json:"bytes,omitempty"`
	Files       int    `json:"files,omitempty"`
	ManifestKey string `json:"manifest_key,omitempty"`
	Error       string `json:"error,omitempty"`
}

type historyOut struct {
	Account  string       `json:"account"`
	Dataset  string       `json:"dataset"`
	Day      string       `json:"day"`
	Current  *dayStatus   `json:"current,omitempty"`
	Attempts []attemptOut `json:"attempts"`
}

func (a *app) historyCommand() *cobra.Command {
	var p partitionFlags
	c := &cobra.Command{
		Use:   "history --account ID --dataset NAME --day DAY",
		Short: "Show every attempt and generation of one partition",
		Long: `Show every attempt of one partition: when it started, how long it ran, rows, bytes and files
written, the generation it committed, and how it ended (completed, failed, stopped, or
lease_expired when the exporter died). The ledger keeps one history item per attempt for
400 days; partitions exported before it kept history show their current state only.`,
		Example: "  daybook history --account acct_localdemoaccount --dataset events --day 2026-11-20",
	}
	a.deploymentFlags(c)
	p.register(c, false)
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := requireFlags(c, "account", "dataset", "day"); err != nil {
			return err
		}
		if _, err := datasetFlag(c, p.dataset); err != nil {
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
		key := ledger.Key{AccountID: acct.ID, Dataset: p.dataset, Day: day}
		res := historyOut{Account: acct.ID, Dataset: p.dataset, Day: day.String(), Attempts: []attemptOut{}}
		row, err := e.ledger.Get(ctx, key)
		switch {
		case err == nil:
			cur := toDayStatus(row, a.now())
			res.Current = &cur
		case !errors.Is(err, ledger.ErrNotFound):
			return err
		}
		hist, err := e.ledger.History(ctx, key)
		if err != nil {
			return err
		}
		for _, h := range hist {
			dur := h.DurationMS
			if dur == 0 && !h.StartedAt.IsZero() && h.FinishedAt.After(h.StartedAt) {
				dur = h.FinishedAt.Sub(h.StartedAt).Milliseconds()
			}
			res.Attempts = append(res.Attempts, attemptOut{
				Attempt: h.Attempt, Outcome: string(h.Outcome), Reason: string(h.Reason), ClaimedAt: fmtTime(h.ClaimedAt),
				StartedAt: fmtTime(h.StartedAt), FinishedAt: fmtTime(h.FinishedAt), DurationMS: dur, Generation: h.Generation,
				Rows: h.Rows, Bytes: h.Bytes, Files: h.Files, ManifestKey: h.ManifestKey, Error: h.Error,
			})
		}
		if *out == outputJSON {
			return printJSON(a.stdout, res)
		}
		w := a.stdout
		fmt.Fprintf(w, "%s %s %s: ", acct.ID, p.dataset, day)
		if res.Current == nil {
			fmt.Fprintln(w, "no ledger row (the day was never materialized, requeued or re-exported)")
		} else {
			fmt.Fprintln(w, describe(*res.Current))
		}
		if len(res.Attempts) == 0 {
			_, err := fmt.Fprintln(w, "no attempts recorded")
			return err
		}
		fmt.Fprintln(w)
		tw := newTable(w)
		fmt.Fprintln(tw, "STARTED\tATTEMPT\tREASON\tDURATION\tOUTCOME\tGENERATION\tROWS\tBYTES\tFILES\tERROR")
		for _, h := range res.Attempts {
			gen, rows, size, files := "-", "-", "-", "-"
			if h.Outcome == string(ledger.OutcomeCompleted) {
				gen, rows, size, files = fmt.Sprint(h.Generation), fmt.Sprint(h.Rows), humanBytes(h.Bytes), fmt.Sprint(h.Files)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cmp.Or(h.StartedAt, h.ClaimedAt), h.Attempt, h.Reason,
				fmtDuration(h.DurationMS), h.Outcome, gen, rows, size, files, h.Error)
		}
		return tw.Flush()
	}
	return c
}
