package main

import (
	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/cli"
)

// rootCommand builds the command tree. Every command: help on stdout with
// exit 0 for -h/--help, extra arguments refused, flag and argument errors
// are usage errors (exit 2).
func (a *app) rootCommand() *cobra.Command {
	root := cli.Root("daybook", "Operate daybook: accounts, the export ledger, delivered partitions and the dead-letter queue",
		`daybook exports each account's data one day at a time into the account's own S3 bucket,
through a ledger of (account, dataset, day) partitions. This CLI registers accounts, shows the
ledger, asks for re-exports and backfills, checks delivered partitions, and empties the
dead-letter queue. The local stack and the demo are a separate program, daybook-dev (make build).

Where it points: --stack NAME [--region R] [--profile P] reads the deployed CloudFormation
stack's outputs; otherwise --env-file FILE, then .local/env.json (written by make local-up) when
LEDGER_TABLE is not set, then the environment (LEDGER_TABLE, JOBS_QUEUE_URL, ...). Each command
that talks to a deployment says which one on stderr.`, a.stdout, a.stderr)
	root.AddGroup(
		&cobra.Group{ID: "ledger", Title: "The export ledger:"},
		&cobra.Group{ID: "accounts", Title: "Accounts:"},
		&cobra.Group{ID: "delivery", Title: "Delivered partitions:"},
		&cobra.Group{ID: "catalog", Title: "The dataset catalog:"},
	)
	add := func(group string, cs ...*cobra.Command) {
		for _, c := range cs {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("ledger", a.statusCommand(), a.historyCommand(), a.retryCommand(), a.requeueCommand(), a.reexportCommand(), a.reseedCommand(), a.dlqCommand(), a.consoleCommand(), a.fleetCommand())
	add("accounts", a.accountCommand())
	add("delivery", a.verifyCommand(), a.sqlCommand(), a.tableCommand())
	add("catalog", a.catalogCommand())
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		for p := c; p != nil; p = p.Parent() {
			if p.Annotations[ownCatalog] != "" || p.Name() == "help" || p.Name() == "completion" {
				return nil
			}
		}
		return a.catalogErr
	}
	cli.Finish(root, a.stdout)
	return root
}
