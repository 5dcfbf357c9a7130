package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/ops"
)

var (
	errDuplicateName = errors.New("an account with this name already exists")
	errRunning       = errors.New("partitions are running")
)

// The widest day range a ledger read can name.
var (
	firstDay = ops.FirstDay
	lastDay  = ops.LastDay
)

func (a *app) accountCommand() *cobra.Command {
	return cli.Group("account", "Register (put), get, list, test, enable, disable and delete accounts",
		a.accountPutCommand(), a.accountGetCommand(), a.accountHistoryCommand(), a.accountListCommand(), a.accountTestCommand(),
		a.accountEnableCommand(true), a.accountEnableCommand(false), a.accountDeleteCommand())
}

// account opens the deployment and reads one account; a missing one is
// named with the flag or argument it came from.
func (a *app) account(ctx context.Context, id, from string) (*opsEnv, account.Account, error) {
	e, err := a.open(ctx)
	if err != nil {
		return nil, account.Account{}, err
	}
	acct, err := e.ledger.Accounts().GetAccount(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, account.Account{}, fmt.Errorf("%s %s: no such account (daybook account list shows them)", from, id)
	}
	if err != nil {
		return nil, account.Account{}, err
	}
	return e, acct, nil
}

func (a *app) accountGetCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "get ID",
		Short: "Show one account and its latest changes",
		Long: `Show one account: its settings, then its latest changes (who changed what, when; daybook
account history ID shows them all). -o json prints the account alone.`,
		Args: cli.ExactArgs("ID"),
	}
	a.deploymentFlags(c)
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, args []string) error {
		e, acct, err := a.account(c.Context(), args[0], "account")
		if err != nil {
			return err
		}
		if *out == outputJSON {
			return printJSON(a.stdout, acct)
		}
		d := acct.WithDefaults(e.settle)
		prefix, _ := acct.Prefix(e.stage)
		how := "daybook's own role"
		if acct.Destination.RoleARN != "" {
			how = "assumes " + acct.Destination.RoleARN + " (external id set)"
		}
		tw := newTable(a.stdout)
		for _, kv := range [][2]string{
			{"id", acct.ID}, {"name", acct.Name}, {"enabled", fmt.Sprint(acct.Enabled)},
			{"start date", acct.StartDate.String()}, {"time zone", d.TimeZone}, {"settle delay", d.SettleDelay.D().String()},
			{"datasets", strings.Join(acct.Datasets, ", ")},
			{"destination", acct.Destination.URI(prefix + "/")}, {"access", how},
			{"format", fmt.Sprintf("%s (%s)", d.Destination.Format, d.Destination.Compression)},
			{"created", acct.CreatedAt.UTC().Format("2006-01-02 15:04:05Z")},
		} {
			tw.row(kv[0], kv[1])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		events, err := e.ledger.Accounts().AccountHistory(c.Context(), acct.ID)
		if err != nil {
			return err
		}
		const latest = 5
		fmt.Fprintln(a.stdout)
		if len(events) == 0 {
			_, err := fmt.Fprintln(a.stdout, "no recorded changes (the account was last saved before daybook kept a history)")
			return err
		}
		if len(events) > latest {
			fmt.Fprintf(a.stdout, "latest %d of %d changes (daybook account history %s shows them all):\n", latest, len(events), acct.ID)
			events = events[len(events)-latest:]
		}
		return printEvents(a.stdout, events)
	}
	return c
}

func (a *app) accountListCommand() *cobra.Command {
	c := &cobra.Command{Use: "list", Short: "List accounts"}
	a.deploymentFlags(c)
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		e, err := a.open(c.Context())
		if err != nil {
			return err
		}
		accts, err := e.ledger.Accounts().ListAccounts(c.Context())
		if err != nil {
			return err
		}
		if *out == outputJSON {
			return printJSON(a.stdout, nonNil(accts))
		}
		tw := newTable(a.stdout)
		tw.header("ID\tNAME\tENABLED\tSTART\tZONE\tFORMAT\tBUCKET\tDATASETS")
		for _, x := range accts {
			tw.row(x.ID, x.Name, x.Enabled, x.StartDate, cmp.Or(x.TimeZone, account.DefaultTimeZone),
				cmp.Or(x.Destination.Format, fileformat.Default), x.Destination.Bucket, strings.Join(x.Datasets, ","))
		}
		return tw.Flush()
	}
	return c
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (a *app) accountEnableCommand(enable bool) *cobra.Command {
	use, short := "disable ID", "Stop exporting an account: the sweeper skips it and the exporter refuses its jobs"
	if enable {
		use, short = "enable ID", "Export an account again"
	}
	c := &cobra.Command{Use: use, Short: short, Args: cli.ExactArgs("ID")}
	if enable {
		c.Long = `Export an account again. A disabled account's destination is tested first, as daybook account
test does (a write, a read, a multipart upload started and aborted, the listings and a delete under
its prefix): a failure names the step and the permission and leaves the account disabled.`
	}
	a.deploymentFlags(c)
	c.RunE = func(c *cobra.Command, args []string) error {
		e, err := a.open(c.Context())
		if err != nil {
			return err
		}
		if enable {
			if err := a.testBeforeEnable(c.Context(), e, args[0]); err != nil {
				return err
			}
		}
		acct, changed, err := ops.SetEnabled(c.Context(), ops.LedgerOf(e.ledger), args[0], enable, a.requestedBy(c.Context(), e.sts, ""))
		if errors.Is(err, ops.ErrNoAccount) {
			return fmt.Errorf("account %s: no such account (daybook account list shows them)", args[0])
		}
		if err != nil {
			return err
		}
		word := map[bool]string{true: "enabled", false: "disabled"}[enable]
		if !changed {
			_, err := fmt.Fprintf(a.stdout, "account %s (%s) is already %s; nothing changed\n", acct.ID, printable(acct.Name), word)
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "account %s (%s) %s\n", acct.ID, printable(acct.Name), word)
		return err
	}
	return c
}

// testBeforeEnable tests a disabled account's destination before it is
// enabled (an account saved with --save-disabled was never tested), and
// refuses with the failed step and its permission.
func (a *app) testBeforeEnable(ctx context.Context, e *opsEnv, id string) error {
	acct, err := e.ledger.Accounts().GetAccount(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("account %s: no such account (daybook account list shows them)", id)
	}
	if err != nil || acct.Enabled {
		return err
	}
	checks, err := a.testDestination(ctx, e, acct)
	if err == nil {
		fmt.Fprintf(a.stderr, "daybook: destination s3://%s tested: %d steps ok\n", acct.Destination.Bucket, len(checks))
		return nil
	}
	problem := err.Error()
	for _, ch := range checks {
		if !ch.OK {
			problem = fmt.Sprintf("%s failed (needs %s): %s", ch.Step, ch.Permission, ch.Problem)
			break
		}
	}
	return fmt.Errorf("%w for account %s (destination.bucket %q): %s; the account stays disabled. Fix the bucket or its permissions (daybook account test %s shows every step and the role's policies), then enable it",
		errDestination, acct.ID, acct.Destination.Bucket, problem, acct.ID)
}

func (a *app) accountDeleteCommand() *cobra.Command {
	var yes, purge bool
	c := &cobra.Command{
		Use:   "delete ID --yes",
		Short: "Delete an account record (its ledger rows stay unless --purge)",
		Long: `Delete an account record. The sweeper and the exporter stop seeing the account at once. Refused
while any of its partitions runs (a claim whose lease is live, started or waiting in the queue).
Its ledger rows, watermarks and attempt history stay, so re-registering the same id resumes
where it stopped, unless --purge deletes them too. Files in the customer's bucket are never
touched.`,
		Args: cli.ExactArgs("ID"),
	}
	a.deploymentFlags(c)
	c.Flags().BoolVar(&yes, "yes", false, "really delete")
	c.Flags().BoolVar(&purge, "purge", false, "also delete the account's ledger rows, watermarks and attempt history")
	c.RunE = func(c *cobra.Command, args []string) error {
		if !yes {
			return cli.Usagef(c, "deleting account %s cannot be undone: pass --yes", args[0])
		}
		ctx := c.Context()
		e, err := a.open(ctx)
		if err != nil {
			return err
		}
		acct, err := e.ledger.Accounts().GetAccount(ctx, args[0])
		switch {
		case errors.Is(err, ledger.ErrNotFound) && purge:
			// Deleted earlier; purge what is left of it.
			acct = account.Account{ID: args[0], Name: "already deleted"}
		case errors.Is(err, ledger.ErrNotFound):
			return fmt.Errorf("account %s: no such account (daybook account list shows them)", args[0])
		case err != nil:
			return err
		}
		open, err := e.ledger.Partitions().Open(ctx, acct.ID)
		if err != nil {
			return err
		}
		var running []string
		now := a.now()
		for _, r := range open {
			if r.State == ledger.StateRunning && !r.LeaseUntil.Before(now) {
				running = append(running, r.Dataset+" "+r.Day.String())
			}
		}
		if len(running) > 0 {
			return fmt.Errorf("%w: account %s has %d partitions running (%s); disable it (daybook account disable %s), wait for them to finish, then delete",
				errRunning, acct.ID, len(running), strings.Join(running[:min(5, len(running))], ", "), acct.ID)
		}
		if err := e.ledger.Accounts().DeleteAccount(ctx, acct.ID); err != nil && !errors.Is(err, ledger.ErrNotFound) {
			return err
		}
		if purge {
			res, err := e.ledger.Accounts().PurgeAccount(ctx, acct.ID, ledgerNames(a.catalog, union(acct.Datasets, a.catalog.Names())))
			if err != nil {
				return fmt.Errorf("account %s deleted, but purging its ledger rows failed (run the same command again to finish): %w", acct.ID, err)
			}
			_, err = fmt.Fprintf(a.stdout, "deleted account %s (%s) and purged %d ledger rows, %d history items, %d watermarks, %d account changes\n",
				acct.ID, printable(acct.Name), res.Rows, res.History, res.Watermarks, res.Events)
			return err
		}
		rows := 0
		for _, ds := range acct.Datasets {
			n, err := e.ledger.Partitions().Count(ctx, acct.ID, ds, firstDay, lastDay)
			if err != nil {
				return err
			}
			rows += n
		}
		_, err = fmt.Fprintf(a.stdout, "deleted account %s (%s); its %d ledger rows are kept (delete them with --purge)\n", acct.ID, printable(acct.Name), rows)
		return err
	}
	return c
}

// ledgerNames is every ledger name the datasets names have had: the bare
// name (v1 rows) and name.vN for each later contract up to the catalog's
// (a dataset at v3 may have rows of v1, v2 and v3).
func ledgerNames(catalog *dataset.Set, names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, n)
		d, err := catalog.Get(n)
		if err != nil {
			continue
		}
		last, err := strconv.Atoi(strings.TrimPrefix(d.ContractVersion(), "v"))
		if err != nil {
			continue
		}
		for v := 2; v <= last; v++ {
			out = append(out, dataset.LedgerName(n, "v"+strconv.Itoa(v)))
		}
	}
	return out
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string{}, a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func (a *app) accountHistoryCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "history ID",
		Short: "Show every recorded change of an account: when, by whom, what",
		Long: `Show every recorded change of an account, oldest first: when, who (the AWS identity that ran
the command, or the console's user), what (create, update, enable, disable, delete) and each
changed field's old and new value (an external id's values are hidden). The history outlives
account delete; delete --purge removes it.`,
		Args: cli.ExactArgs("ID"),
	}
	a.deploymentFlags(c)
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, args []string) error {
		e, err := a.open(c.Context())
		if err != nil {
			return err
		}
		events, err := e.ledger.Accounts().AccountHistory(c.Context(), args[0])
		if err != nil {
			return err
		}
		if *out == outputJSON {
			return printJSON(a.stdout, nonNil(events))
		}
		if len(events) == 0 {
			_, err := fmt.Fprintf(a.stdout, "no recorded changes of account %s\n", args[0])
			return err
		}
		return printEvents(a.stdout, events)
	}
	return c
}

// printEvents shows account changes as a table, one row per changed field.
func printEvents(w io.Writer, events []ledger.AccountEvent) error {
	tw := newTable(w)
	tw.header("AT\tVERSION\tBY\tACTION\tFIELD\tOLD\tNEW")
	for _, ev := range events {
		at, by := ev.At.UTC().Format("2006-01-02 15:04:05Z"), cmp.Or(ev.By, "-")
		if len(ev.Changes) == 0 {
			tw.row(at, ev.Version, by, ev.Action, "-", "-", "-")
		}
		for _, ch := range ev.Changes {
			tw.row(at, ev.Version, by, ev.Action, ch.Field, cmp.Or(ch.Old, "-"), cmp.Or(ch.New, "-"))
		}
	}
	return tw.Flush()
}
