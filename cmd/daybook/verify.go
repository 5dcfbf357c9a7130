package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/verify"
)

// verified is one partition's verification, for output.
type verified struct {
	Dataset    string   `json:"dataset"`
	Day        string   `json:"day"`
	Location   string   `json:"location"`
	Committed  bool     `json:"committed"`
	OK         bool     `json:"ok"`
	Generation int64    `json:"generation,omitempty"`
	Files      int      `json:"files,omitempty"`
	Rows       int64    `json:"rows,omitempty"`
	Problems   []string `json:"problems,omitempty"`
}

func (a *app) verifyCommand() *cobra.Command {
	var p partitionFlags
	c := &cobra.Command{
		Use:   "verify --account ID [--dataset NAME] (--day DAY | --from DAY --to DAY)",
		Short: "Check delivered partitions against their manifests (files, sizes, checksums, row counts)",
		Long: `Check delivered partitions against their manifests: every data file listed, no other file,
sizes, CRC32C and SHA-256, and row counts read back from the files. Without --dataset, every
dataset of the account. Exits 1 when a partition has a problem or is not committed (no _SUCCESS).`,
		Example: "  daybook verify --account acct_localdemoaccount --dataset events --day 2026-11-20\n  daybook verify --account acct_localdemoaccount --from 2026-11-01 --to 2026-11-30",
	}
	a.deploymentFlags(c)
	p.register(c, true)
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := requireFlags(c, "account"); err != nil {
			return err
		}
		if p.dataset != "" {
			if _, err := datasetFlag(c, p.dataset); err != nil {
				return err
			}
		}
		from, to, err := dayRange(c, p.day, p.from, p.to)
		if err != nil {
			return err
		}
		ctx := c.Context()
		e, acct, err := a.account(ctx, p.account, "--account")
		if err != nil {
			return err
		}
		datasets := acct.Datasets
		if p.dataset != "" {
			datasets = []string{p.dataset}
		}
		prefix, err := acct.Prefix(e.stage)
		if err != nil {
			return err
		}
		api, owner, err := e.bucketClient(acct)
		if err != nil {
			return err
		}
		days := civil.Range(from, to)
		bar := a.progress(len(days)*len(datasets), "verify")
		var results []verified
		for _, ds := range datasets {
			for _, d := range days {
				t := verify.Target{Bucket: acct.Destination.Bucket, Owner: owner, Prefix: prefix, Dataset: ds, Day: d}
				r, err := verify.Check(ctx, api, t, verify.Options{Download: true})
				if err != nil {
					bar.Finish()
					return fmt.Errorf("verify %s: %w", t.URI(), err)
				}
				results = append(results, verified{Dataset: ds, Day: d.String(), Location: t.URI(),
					Committed: r.Committed(), OK: r.Status == verify.StatusOK, Generation: r.Generation, Files: r.Files, Rows: r.Rows, Problems: r.Problems()})
				bar.Add(1)
			}
		}
		bar.Finish()
		return a.printVerified(*out, results)
	}
	return c
}

func (a *app) printVerified(out outputFormat, results []verified) error {
	var notCommitted, bad int
	for _, r := range results {
		switch {
		case !r.Committed:
			notCommitted++
		case !r.OK:
			bad++
		}
	}
	if out == outputJSON {
		if err := printJSON(a.stdout, nonNil(results)); err != nil {
			return err
		}
	} else if len(results) == 1 {
		r := results[0]
		switch {
		case !r.Committed:
			fmt.Fprintf(a.stdout, "%s: no _SUCCESS (not exported yet, in progress, or failed)\n", r.Location)
		case r.OK:
			fmt.Fprintf(a.stdout, "%s: OK, generation %d, %d files, %d rows match the manifest\n", r.Location, r.Generation, r.Files, r.Rows)
		}
		for _, p := range r.Problems {
			fmt.Fprintln(a.stdout, "PROBLEM:", printable(fmt.Sprint(p)))
		}
	} else {
		tw := newTable(a.stdout)
		tw.header("DATASET\tDAY\tRESULT\tGENERATION\tFILES\tROWS")
		for _, r := range results {
			res := "OK"
			switch {
			case !r.Committed:
				res = "not committed"
			case !r.OK:
				res = fmt.Sprintf("%d problems", len(r.Problems))
			}
			tw.row(r.Dataset, r.Day, res, r.Generation, r.Files, r.Rows)
		}
		tw.Flush()
		for _, r := range results {
			for _, p := range r.Problems {
				fmt.Fprintf(a.stdout, "PROBLEM: %s %s: %s\n", r.Dataset, r.Day, printable(fmt.Sprint(p)))
			}
		}
		fmt.Fprintf(a.stdout, "%d partitions: %d OK, %d not committed, %d with problems\n", len(results), len(results)-notCommitted-bad, notCommitted, bad)
	}
	switch {
	case len(results) == 1 && notCommitted == 1:
		return errors.New("partition not committed")
	case len(results) == 1 && bad == 1:
		return fmt.Errorf("%d problems in %s", len(results[0].Problems), results[0].Location)
	case notCommitted+bad > 0:
		return fmt.Errorf("%d of %d partitions not verified: %d not committed, %d with problems", notCommitted+bad, len(results), notCommitted, bad)
	}
	return nil
}
