package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/console/ops"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/ledger"
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
	return cli.Group("account", "Register, show, test, enable, disable and delete accounts",
		a.accountPutCommand(), a.accountGetCommand(), a.accountListCommand(), a.accountTestCommand(),
		a.accountEnableCommand(true), a.accountEnableCommand(false), a.accountDeleteCommand())
}

func (a *app) accountPutCommand() *cobra.Command {
	var file, id string
	var allowDup bool
	c := &cobra.Command{
		Use:   "put --file FILE",
		Short: "Create or update an account from a JSON file (an upsert keyed by its id)",
		Long: `Create or update an account from a JSON file (see README.md, "Accounts").

The file's "id" says which account to update. A file without one creates a new account: its id
(acct_ + 16 random characters) is written back into the file as its first field, so running the
same command again updates that account instead of creating another. When the file cannot be
written (stdin, read-only), the command prints the --id flag to use next time.

A destination.role_arn without an external_id gets one: the stored account's when it has the same
role, else a new random one (daybook- + 32 characters), printed once on stderr for the role's
trust policy (sts:ExternalId) and written into the file after role_arn.

The account is checked against the deployment's rules before anything is saved: the role must
match the roles the exporter may assume (CUSTOMER_ROLE_PATTERN), a bucket written with daybook's
own role must belong to the deployment's account (DEPLOYMENT_ACCOUNT_ID; a local stack is in moto's
account 123456789012) and match DirectBucketPattern, a custom endpoint may be on a private address
only where ALLOW_PRIVATE_ENDPOINTS is true, and no other account may share its bucket and prefix
(nested either way) or its role and external id. A second account with the same name is refused
unless --allow-duplicate-name is given. A refusal names each field and value and changes nothing:
neither the ledger nor the file. The stored account is printed on stdout as JSON.`,
		Example: "  daybook account put --file account.json\n  daybook account put --file account.json --id acct_localdemoaccount",
		RunE: func(c *cobra.Command, _ []string) error {
			if err := requireFlags(c, "file"); err != nil {
				return err
			}
			if id != "" && !account.ValidID(id) {
				return cli.Usagef(c, "--id %q: want acct_ followed by 16 characters a-z and 2-7", id)
			}
			return a.accountPut(c, file, id, allowDup)
		},
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&file, "file", "", `account JSON file ("-" for stdin)`)
	c.Flags().StringVar(&id, "id", "", "the account to update (when the file has no id)")
	c.Flags().BoolVar(&allowDup, "allow-duplicate-name", false, "create the account even if another one has the same name")
	_ = c.MarkFlagFilename("file", "json")
	return c
}

func (a *app) accountPut(c *cobra.Command, file, id string, allowDup bool) error {
	ctx := c.Context()
	acct, orig, err := readAccountFile(file, c.InOrStdin())
	if err != nil {
		return err
	}
	switch {
	case id != "" && acct.ID != "" && acct.ID != id:
		return cli.Usagef(c, "--id %s differs from the id in %s (%s)", id, file, acct.ID)
	case id != "":
		acct.ID = id
	}
	generated := acct.ID == ""
	if generated {
		if acct.ID, err = account.NewID(a.rand); err != nil {
			return err
		}
	}
	if acct.CreatedAt.IsZero() {
		acct.CreatedAt = a.now().UTC().Truncate(1e9)
	}
	// A role without an external id gets one below, once the stored account
	// is known; the file's own form is checked first, before any deployment.
	needsExternalID := acct.Destination.RoleARN != "" && acct.Destination.ExternalID == ""
	resolved := func(fe *account.FieldError) bool {
		return (generated && fe.Field == "id") || (needsExternalID && fe.Field == "destination.external_id" && fe.Value == "")
	}
	if err := fileProblems(file, acct.ValidateShape(), resolved); err != nil {
		return err
	}
	e, err := a.open(ctx)
	if err != nil {
		return err
	}
	rules, err := e.accountRules(a.now())
	if err != nil {
		return err
	}
	old, err := e.ledger.GetAccount(ctx, acct.ID)
	exists := err == nil
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		return err
	}
	newExternalID := ""
	if needsExternalID {
		if exists && old.Destination.ExternalID != "" && strings.EqualFold(old.Destination.RoleARN, acct.Destination.RoleARN) {
			// The customer's trust policy already names the stored one.
			acct.Destination.ExternalID = old.Destination.ExternalID
		} else {
			if newExternalID, err = account.NewExternalID(a.rand); err != nil {
				return err
			}
			acct.Destination.ExternalID = newExternalID
		}
	}
	if exists && !acct.StartDate.Before(old.StartDate) {
		// The backfill limit bounds the backfill a put starts; an account
		// keeping its start date (or moving it later) starts none, however
		// long ago it was created. ledger.PutAccount judges it the same way.
		rules.MaxBackfillDays = 0
	}
	if err := fileProblems(file, acct.Validate(rules), func(fe *account.FieldError) bool { return generated && fe.Field == "id" }); err != nil {
		return err
	}
	if err := checkBucketPattern(acct, e.bucketPattern); err != nil {
		return fmt.Errorf("account file %s: %w", file, err)
	}
	all, err := e.ledger.ListAccounts(ctx)
	if err != nil {
		return err
	}
	if !allowDup {
		for _, o := range all {
			if o.ID != acct.ID && sameName(o.Name, acct.Name) {
				hint := fmt.Sprintf(`to update it, add "id": %q to %s (or pass --id %s)`, o.ID, file, o.ID)
				return fmt.Errorf("%w: %q is %s (bucket %s); %s; to create another account with the same name, pass --allow-duplicate-name",
					errDuplicateName, acct.Name, o.ID, o.Destination.Bucket, hint)
			}
		}
	}
	if err := fileProblems(file, account.CheckIsolation(acct, all, e.stage), nil); err != nil {
		return err
	}
	if exists {
		acct.CreatedAt = old.CreatedAt
	}
	if err := e.ledger.PutAccount(ctx, acct); err != nil {
		return err
	}
	verb := "created"
	if exists {
		verb = "updated"
	}
	fmt.Fprintf(a.stderr, "daybook: %s account %s (%s)\n", verb, acct.ID, acct.Name)
	if newExternalID != "" {
		fmt.Fprintf(a.stderr, "daybook: generated external id %s for role %s: put it in the role's trust policy (condition sts:ExternalId); it is shown here once\n",
			newExternalID, acct.Destination.RoleARN)
	}
	a.writeBack(file, orig, acct, generated, acct.Destination.ExternalID != "" && needsExternalID)
	return printJSON(a.stdout, acct)
}

// writeBack writes what the CLI filled in (a generated id, an external id)
// into the account file, so that the same command updates the same account
// with the same external id next time, and says so on stderr; when the file
// cannot be written (stdin, read-only) it says what to do instead.
func (a *app) writeBack(file string, orig []byte, acct account.Account, id, externalID bool) {
	add := fileFields{}
	var names []string
	if id {
		add.id = acct.ID
		names = append(names, fmt.Sprintf("\"id\": %q", acct.ID))
	}
	if externalID {
		add.externalID = acct.Destination.ExternalID
		names = append(names, "destination.external_id")
	}
	if len(names) == 0 {
		return
	}
	what := strings.Join(names, " and ")
	if err := writeBackFields(file, orig, add); err != nil {
		fmt.Fprintf(a.stderr, "daybook: %s not written to %s (%v)\n", what, file, err)
		if id {
			fmt.Fprintf(a.stderr, "daybook: to update this account next time run:\n  daybook account put --file %s --id %s\n", file, acct.ID)
		}
		if externalID {
			fmt.Fprintf(a.stderr, "daybook: the stored account keeps its external id while its role_arn stays the same\n")
		}
		return
	}
	msg := "running the same command again updates this account"
	if !id {
		msg = "the file matches the stored account"
	}
	fmt.Fprintf(a.stderr, "daybook: wrote %s into %s; %s\n", what, file, msg)
}

// fileError is a refused account file: each problem on its own line, naming
// the field and the value.
type fileError struct {
	file string
	errs []error
}

func (e *fileError) Error() string {
	lines := make([]string, len(e.errs))
	for i, err := range e.errs {
		lines[i] = strings.ReplaceAll(err.Error(), "\n", "\n  ")
	}
	return fmt.Sprintf("account file %s:\n  %s", e.file, strings.Join(lines, "\n  "))
}

func (e *fileError) Unwrap() []error { return e.errs }

// fileProblems turns a validation error of an account file into a
// fileError, without the problems skip says the CLI resolves itself (an id
// it generated, an external id it is about to generate); nil when none is
// left.
func fileProblems(file string, err error, skip func(*account.FieldError) bool) error {
	if err == nil {
		return nil
	}
	fes := account.Fields(err)
	if len(fes) == 0 {
		return &fileError{file: file, errs: []error{err}}
	}
	var keep []error
	for _, fe := range fes {
		if skip == nil || !skip(fe) {
			keep = append(keep, fe)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	return &fileError{file: file, errs: keep}
}

func sameName(a, b string) bool {
	return strings.EqualFold(strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " "))
}

// account opens the deployment and reads one account; a missing one is
// named with the flag or argument it came from.
func (a *app) account(ctx context.Context, id, from string) (*opsEnv, account.Account, error) {
	e, err := a.open(ctx)
	if err != nil {
		return nil, account.Account{}, err
	}
	acct, err := e.ledger.GetAccount(ctx, id)
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
		Short: "Show one account",
		Args:  cli.ExactArgs("ID"),
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
			{"destination", "s3://" + acct.Destination.Bucket + "/" + prefix + "/"}, {"access", how},
			{"format", fmt.Sprintf("%s (%s)", d.Destination.Format, d.Destination.Compression)},
			{"created", acct.CreatedAt.UTC().Format("2006-01-02 15:04:05Z")},
		} {
			fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
		}
		return tw.Flush()
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
		accts, err := e.ledger.ListAccounts(c.Context())
		if err != nil {
			return err
		}
		if *out == outputJSON {
			return printJSON(a.stdout, nonNil(accts))
		}
		tw := newTable(a.stdout)
		fmt.Fprintln(tw, "ID\tNAME\tENABLED\tSTART\tZONE\tFORMAT\tBUCKET\tDATASETS")
		for _, x := range accts {
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\t%s\t%s\n", x.ID, x.Name, x.Enabled, x.StartDate, cmp.Or(x.TimeZone, account.DefaultTimeZone),
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
	a.deploymentFlags(c)
	c.RunE = func(c *cobra.Command, args []string) error {
		e, err := a.open(c.Context())
		if err != nil {
			return err
		}
		acct, changed, err := ops.SetEnabled(c.Context(), e.ledger, args[0], enable)
		if errors.Is(err, ops.ErrNoAccount) {
			return fmt.Errorf("account %s: no such account (daybook account list shows them)", args[0])
		}
		if err != nil {
			return err
		}
		word := map[bool]string{true: "enabled", false: "disabled"}[enable]
		if !changed {
			_, err := fmt.Fprintf(a.stdout, "account %s (%s) is already %s; nothing changed\n", acct.ID, acct.Name, word)
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "account %s (%s) %s\n", acct.ID, acct.Name, word)
		return err
	}
	return c
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
		acct, err := e.ledger.GetAccount(ctx, args[0])
		switch {
		case errors.Is(err, ledger.ErrNotFound) && purge:
			// Deleted earlier; purge what is left of it.
			acct = account.Account{ID: args[0], Name: "already deleted"}
		case errors.Is(err, ledger.ErrNotFound):
			return fmt.Errorf("account %s: no such account (daybook account list shows them)", args[0])
		case err != nil:
			return err
		}
		open, err := e.ledger.Open(ctx, acct.ID)
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
		if err := e.ledger.DeleteAccount(ctx, acct.ID); err != nil && !errors.Is(err, ledger.ErrNotFound) {
			return err
		}
		if purge {
			res, err := e.ledger.PurgeAccount(ctx, acct.ID, union(acct.Datasets, datasetNames()))
			if err != nil {
				return fmt.Errorf("account %s deleted, but purging its ledger rows failed (run the same command again to finish): %w", acct.ID, err)
			}
			_, err = fmt.Fprintf(a.stdout, "deleted account %s (%s) and purged %d ledger rows, %d history items, %d watermarks\n",
				acct.ID, acct.Name, res.Rows, res.History, res.Watermarks)
			return err
		}
		rows := 0
		for _, ds := range acct.Datasets {
			n, err := e.ledger.Count(ctx, acct.ID, ds, firstDay, lastDay)
			if err != nil {
				return err
			}
			rows += n
		}
		_, err = fmt.Fprintf(a.stdout, "deleted account %s (%s); its %d ledger rows are kept (delete them with --purge)\n", acct.ID, acct.Name, rows)
		return err
	}
	return c
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
