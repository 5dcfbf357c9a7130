package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/ledger"
)

var (
	errAccountExists = errors.New("the account exists")
	errNoAccount     = errors.New("no such account")
)

// putFlags are `account put`'s choices.
type putFlags struct {
	argID, id        string
	update, allowDup bool
	dryRun           bool
	saveDisabled     bool
	kmsKey           string
}

func (a *app) accountPutCommand() *cobra.Command {
	var file string
	var p putFlags
	c := &cobra.Command{
		Use:   "put [ID] --file FILE",
		Short: "Create an account from a JSON file, or update one (--update)",
		Long: `Create an account from a JSON file (see README.md, "Accounts"), or update one.

Creating and updating are distinct. Without --update the command creates: a file without an "id"
gets a new one (acct_ + 16 random characters), written back into the file as its first field;
a file whose id is an existing account is refused, so a copied or stale file never replaces
another account. To update an account, say so: --update (the account is the file's id), the
account's id as the argument, or --id. An update prints each field it changes, old and new, on
stderr (--dry-run prints them and writes nothing), and is recorded in the account's history with
who made it (your AWS identity's ARN): daybook account history ID shows it. When the file cannot
be written (stdin, read-only), the command prints the --id flag that updates the account.

A destination.role_arn without an external_id gets one: the stored account's when it has the same
role, else a new random one (daybook- + 32 characters), printed once on stderr for the role's
trust policy (sts:ExternalId) and written into the file after role_arn.

The account is checked against the deployment's rules before anything is saved: the role must
match the roles the exporter may assume (CUSTOMER_ROLE_PATTERN), a bucket written with daybook's
own role must belong to the deployment's account (DEPLOYMENT_ACCOUNT_ID; a local stack is in moto's
account 123456789012) and match DirectBucketPattern, a custom endpoint may be on a private address
only where ALLOW_PRIVATE_ENDPOINTS is true, and no other account may share its bucket and prefix
(nested either way, on the same store however its endpoint is spelled) or its role and external
id. The ledger enforces the last two itself when it writes, so two commands run at once cannot
both take overlapping prefixes. A second account with the same name is refused unless
--allow-duplicate-name is given. A refusal names each field and value and changes nothing:
neither the ledger nor the file.

Before an enabled account is saved with a new or changed destination (or is enabled), its
destination is tested as daybook account test does: the bucket exists, and a write, a read, a
multipart upload started and aborted, the listings and a delete succeed under its prefix. A
failure refuses the account and names the step and the permission; --save-disabled saves it
disabled instead (daybook account enable ID once the destination works). --dry-run skips the
test, which writes into the bucket. The stored account is printed on stdout as JSON.

For an account with a role_arn, a new account or a changed destination also prints on stderr what
the customer pastes into their AWS account: the role's trust policy (the exporter's role,
ExporterRoleArn, with the external id) and its permissions policy on the bucket and prefix (Glue
tables with glue, the bucket's KMS key with --kms-key). daybook account test ID prints them again.
A new account whose role does not exist yet fails the destination test: save it with
--save-disabled, send the customer the policies, then daybook account test ID and account enable ID.
For a Google Cloud Storage or Azure destination with destination.gcs or destination.azure it prints
instead the commands the customer runs in their cloud (the workload identity pool and provider, or
the Entra ID federated credential, and the role on the bucket or container), trusting the
exporter's role and, when the stack deploys the web console (ConsoleRoleArn), the console's role,
which reads the bucket as itself.`,
		Example: "  daybook account put --file account.json\n  daybook account put --file account.json --update\n" +
			"  daybook account put acct_localdemoaccount --file account.json --dry-run",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("unexpected argument %q: this command takes at most one account id", args[1])
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := requireFlags(c, "file"); err != nil {
				return err
			}
			if len(args) == 1 {
				p.argID = args[0]
			}
			for _, v := range [][2]string{{"the argument", p.argID}, {"--id", p.id}} {
				if v[1] != "" && !account.ValidID(v[1]) {
					return cli.Usagef(c, "%s %q: want acct_ followed by 16 characters a-z and 2-7", v[0], v[1])
				}
			}
			if p.argID != "" && p.id != "" && p.argID != p.id {
				return cli.Usagef(c, "the argument %s and --id %s name different accounts", p.argID, p.id)
			}
			return a.accountPut(c, file, p)
		},
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&file, "file", "", `account JSON file ("-" for stdin)`)
	c.Flags().BoolVar(&p.update, "update", false, "update the existing account the file names (its id)")
	c.Flags().StringVar(&p.id, "id", "", "update this account (when the file has no id); implies --update")
	c.Flags().BoolVar(&p.dryRun, "dry-run", false, "check the file and show what would change; write nothing")
	c.Flags().BoolVar(&p.allowDup, "allow-duplicate-name", false, "create the account even if another one has the same name")
	c.Flags().BoolVar(&p.saveDisabled, "save-disabled", false, "when the destination test fails, save the account disabled instead of refusing it")
	c.Flags().StringVar(&p.kmsKey, "kms-key", "", "ARN of the KMS key the bucket encrypts objects with by default (SSE-KMS): the printed permissions policy lets the role use it")
	_ = c.MarkFlagFilename("file", "json")
	return c
}

func (a *app) accountPut(c *cobra.Command, file string, p putFlags) error {
	ctx := c.Context()
	acct, orig, err := readAccountFile(file, c.InOrStdin())
	if err != nil {
		return err
	}
	named := cmp.Or(p.argID, p.id)
	if named != "" && acct.ID != "" && acct.ID != named {
		return cli.Usagef(c, "%s differs from the id in %s (%s)", named, file, acct.ID)
	}
	update := p.update || named != ""
	acct.ID = cmp.Or(named, acct.ID)
	if update && acct.ID == "" {
		return cli.Usagef(c, "--update: %s has no id; name the account: daybook account put ID --file %s --update", file, file)
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
	if err := fileProblems(file, acct.ValidateShape(a.catalog), resolved); err != nil {
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
	old, err := e.ledger.Accounts().GetAccount(ctx, acct.ID)
	exists := err == nil
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		return err
	}
	switch {
	case update && !exists:
		return fmt.Errorf("%w: account %s, which %s names, is not stored (daybook account list shows them); to create it, run the command without --update, --id or the argument",
			errNoAccount, acct.ID, cmp.Or(map[bool]string{true: "the command line"}[named != ""], file))
	case !update && exists:
		return fmt.Errorf("%w: %s names account %s (%s); creating would replace it, so nothing was written. To change that account, say so: daybook account put --file %s --update (it shows what changes)",
			errAccountExists, file, old.ID, printable(old.Name), file)
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
	if err := fileProblems(file, acct.Validate(a.catalog, rules), func(fe *account.FieldError) bool { return generated && fe.Field == "id" }); err != nil {
		return err
	}
	if err := checkBucketPattern(acct, e.bucketPattern); err != nil {
		return fmt.Errorf("account file %s: %w", file, err)
	}
	if err := checkGluePattern(acct, e.gluePattern); err != nil {
		return fmt.Errorf("account file %s: %w", file, err)
	}
	all, err := e.ledger.Accounts().ListAccounts(ctx)
	if err != nil {
		return err
	}
	if !p.allowDup {
		for _, o := range all {
			if o.ID != acct.ID && sameName(o.Name, acct.Name) {
				hint := fmt.Sprintf("to update it, run daybook account put --file %s --id %s", file, o.ID)
				return fmt.Errorf("%w: %q is %s (bucket %s); %s; to create another account with the same name, pass --allow-duplicate-name",
					errDuplicateName, acct.Name, o.ID, o.Destination.Bucket, hint)
			}
		}
	}
	// The ledger refuses an overlap when it writes (even with a concurrent
	// put); checking here first names every conflict, accounts saved before
	// the ledger kept guards included.
	if err := fileProblems(file, account.CheckIsolation(acct, all, e.stage), nil); err != nil {
		return err
	}
	var changes []account.Change
	if exists {
		acct.CreatedAt, acct.Version = old.CreatedAt, old.Version
		changes = account.Diff(old, acct)
		a.printChanges(acct, changes)
	}
	if p.dryRun {
		fmt.Fprintf(a.stderr, "daybook: --dry-run: nothing written (the destination was not tested)\n")
		return printJSON(a.stdout, acct)
	}
	if acct.Enabled && (!exists || !old.Enabled || !reflect.DeepEqual(old.Destination, acct.Destination)) {
		if err := a.checkDestination(ctx, e, &acct, p.saveDisabled); err != nil {
			return err
		}
		if exists {
			changes = account.Diff(old, acct)
		}
	}
	var stored account.Account
	switch {
	case exists && len(changes) == 0:
		stored = old
	case exists:
		stored, err = e.ledger.Accounts().UpdateAccount(ctx, acct, a.requestedBy(ctx, e.sts, ""))
	default:
		stored, err = e.ledger.Accounts().CreateAccount(ctx, acct, a.requestedBy(ctx, e.sts, ""))
	}
	switch {
	case errors.Is(err, ledger.ErrIsolation):
		return fileProblems(file, err, nil)
	case errors.Is(err, ledger.ErrChanged):
		return fmt.Errorf("account %s was changed by someone else while this command ran; nothing was written: run it again to see the changes (%w)", acct.ID, err)
	case errors.Is(err, ledger.ErrExists):
		return fmt.Errorf("%w: account %s was created by someone else while this command ran; nothing was written (%v)", errAccountExists, acct.ID, err)
	case err != nil:
		return err
	}
	verb := map[bool]string{true: "updated", false: "created"}[exists]
	if exists && len(changes) == 0 {
		verb = "left unchanged"
	}
	fmt.Fprintf(a.stderr, "daybook: %s account %s (%s)\n", verb, stored.ID, printable(stored.Name))
	if verb != "left unchanged" {
		// The fleet view shows the account as written at once; the write
		// also marked it, so the next sweep refreshes it if this fails.
		if _, err := e.ledger.Fleet().Refresh(ctx, stored.ID); err != nil {
			fmt.Fprintf(a.stderr, "daybook: the fleet view shows account %s as it was until the next sweep: %v\n", stored.ID, err)
		}
	}
	if newExternalID != "" {
		fmt.Fprintf(a.stderr, "daybook: generated external id %s for role %s: put it in the role's trust policy (condition sts:ExternalId); it is shown here once\n",
			newExternalID, acct.Destination.RoleARN)
	}
	a.writeBack(file, orig, stored, generated, stored.Destination.ExternalID != "" && needsExternalID)
	if !exists || !reflect.DeepEqual(old.Destination, stored.Destination) || p.kmsKey != "" {
		e.printCustomerPart(a.stderr, a.stderr, stored, p.kmsKey)
	}
	if exists && len(changes) > 0 {
		if err := a.startMoved(ctx, e.ledger, e.settle, old, stored); err != nil {
			return err
		}
	}
	return printJSON(a.stdout, stored)
}

// printChanges shows on stderr what an update changes, field by field.
func (a *app) printChanges(acct account.Account, changes []account.Change) {
	if len(changes) == 0 {
		fmt.Fprintf(a.stderr, "daybook: account %s (%s): the file changes nothing\n", acct.ID, printable(acct.Name))
		return
	}
	fmt.Fprintf(a.stderr, "daybook: changes to account %s (%s):\n", acct.ID, printable(acct.Name))
	for _, ch := range changes {
		fmt.Fprintf(a.stderr, "  %s: %s -> %s\n", ch.Field, printable(cmp.Or(ch.Old, "(none)")), printable(cmp.Or(ch.New, "(none)")))
	}
}

// writeBack writes what the CLI filled in (a generated id, an external id)
// into the account file, so that `account put --file F --update` updates the
// same account with the same external id next time, and says so on stderr;
// when the file cannot be written (stdin, read-only) it says what to do
// instead.
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
	msg := "to change this account later, run daybook account put --file " + file + " --update"
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

// errDestination is a destination the account test refused on put.
var errDestination = errors.New("the destination test failed")

// checkDestination runs account test's checks on acct's destination before
// it is saved enabled. A failure refuses the account, naming the step and
// permission, or with saveDisabled saves it disabled and says so.
func (a *app) checkDestination(ctx context.Context, e *opsEnv, acct *account.Account, saveDisabled bool) error {
	checks, err := a.testDestination(ctx, e, *acct)
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
	if saveDisabled {
		acct.Enabled = false
		fmt.Fprintf(a.stderr, "daybook: %s: %s; saving the account disabled (--save-disabled): fix the destination, then daybook account test %s and daybook account enable %s\n",
			errDestination, problem, acct.ID, acct.ID)
		return nil
	}
	return fmt.Errorf("%w for destination.bucket %q: %s; nothing was saved. Fix the bucket or its permissions (daybook account test shows every step once saved), or pass --save-disabled to save the account disabled",
		errDestination, acct.Destination.Bucket, problem)
}
