package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/daybook-dev/daybook/shared/cli"
)

// rebuildConcurrency bounds the accounts fleet rebuild reads at once.
const rebuildConcurrency = 8

func (a *app) fleetCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "fleet",
		Short: "Rebuild the account summaries the fleet view reads",
	}
	var id string
	c := &cobra.Command{
		Use:   "rebuild [--account ID]",
		Short: "Rebuild the account summaries from the accounts' partitions",
		Long: `The fleet view reads one summary per account: its partitions by state, its oldest day not
exported, its newest export and its failures of the last 24 hours. Every change of a
partition marks its account's summary, and each sweep rebuilds the marked ones.

rebuild builds the summaries again from the accounts' partitions now: every account's, or
--account's. Run it once after upgrading from a release without summaries (until then an
account appears in the fleet view after its next change, or when searched for by id), or
when a summary looks wrong. It reads each account's partitions once. It also moves the
account's late-data checks written before their index was sharded, which no sweep reads, to
where the sweeps read them, and writes the isolation guards (its prefix, role and tenant
key, which no other account may then take) of an account saved before they existed or
before a kind of them was added, as saving the account would; an account that holds its
guards is not written, so running it again changes nothing. An account whose guard another
account holds is reported with both accounts named, and the others go on.`,
		Example: "  daybook fleet rebuild\n  daybook fleet rebuild --account acct_localdemoaccount",
		Args:    cobra.NoArgs,
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&id, "account", "", "only this account")
	c.RunE = func(c *cobra.Command, _ []string) error {
		ctx := c.Context()
		e, err := a.open(ctx)
		if err != nil {
			return err
		}
		ids := []string{id}
		if id != "" {
			if _, err := e.ledger.Accounts().GetAccount(ctx, id); err != nil {
				return cli.Usagef(c, "--account %s: %v", id, err)
			}
		} else {
			accts, err := e.ledger.Accounts().ListAccounts(ctx)
			if err != nil {
				return err
			}
			ids = ids[:0]
			for _, acct := range accts {
				ids = append(ids, acct.ID)
			}
		}
		r, err := rebuild(ctx, e, ids, a.requestedBy(ctx, e.sts, ""))
		if _, perr := fmt.Fprintf(a.stdout, "%d of %d account summaries rebuilt; %d late-data checks moved to their shard; %d accounts given their isolation guards\n",
			r.rebuilt, len(ids), r.moved, r.guarded); perr != nil && err == nil {
			err = perr
		}
		return err
	}
	root.AddCommand(c)
	return root
}

// rebuilt counts what rebuild did.
type rebuilt struct{ rebuilt, moved, guarded int }

// rebuild refreshes the summaries of ids, shards their unsharded
// restatement checks and writes the isolation guards they lack (by: who
// asked, for each account's history), rebuildConcurrency accounts at once;
// it goes on past a failure and returns the first.
func rebuild(ctx context.Context, e *opsEnv, ids []string, by string) (rebuilt, error) {
	var done, moved, guarded atomic.Int64
	var g errgroup.Group
	g.SetLimit(rebuildConcurrency)
	for _, id := range ids {
		g.Go(func() error {
			if _, err := e.ledger.Fleet().Refresh(ctx, id); err != nil {
				return fmt.Errorf("account %s: %w", id, err)
			}
			done.Add(1)
			n, err := e.ledger.Restates().ShardRestateChecks(ctx, id)
			moved.Add(int64(n))
			if err != nil {
				return fmt.Errorf("account %s: %w", id, err)
			}
			wrote, err := e.ledger.Accounts().EnsureGuards(ctx, id, by)
			if err != nil {
				return fmt.Errorf("account %s: isolation guards: %w", id, err)
			}
			if wrote {
				guarded.Add(1)
			}
			return nil
		})
	}
	err := g.Wait()
	return rebuilt{int(done.Load()), int(moved.Load()), int(guarded.Load())}, err
}
