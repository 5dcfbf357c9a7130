package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/loadsql"
	"github.com/daybook-dev/daybook/shared/manifest"
)

func (a *app) sqlCommand() *cobra.Command {
	var p partitionFlags
	var engine string
	var current bool
	c := &cobra.Command{
		Use:   "sql --dataset NAME --engine ENGINE [--account ID --day DAY] [--current-state]",
		Short: "Print the load SQL of a dataset for a warehouse engine",
		Long: `Print the load SQL of a dataset for a warehouse engine. With --account and --day, the SQL of
that delivered partition (what its _load/<engine>.sql holds, read from its manifest); without,
the SQL for a placeholder day folder, to read a dataset's table definition. --current-state
prints the query for the latest state of an activity dataset (profiles: the newest row per id).`,
		Example: "  daybook sql --dataset profiles --engine snowflake --current-state",
	}
	a.deploymentFlags(c)
	a.registerPartitionFlags(c, &p, false)
	c.Flags().StringVar(&engine, "engine", "", "engine: "+strings.Join(loadsql.Engines, ", "))
	c.Flags().BoolVar(&current, "current-state", false, "print the current-state query of an activity dataset (latest row per id)")
	_ = c.RegisterFlagCompletionFunc("engine", cobra.FixedCompletions(loadsql.Engines, cobra.ShellCompDirectiveNoFileComp))
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := requireFlags(c, "dataset", "engine"); err != nil {
			return err
		}
		d, err := a.datasetFlag(c, p.dataset)
		if err != nil {
			return err
		}
		if !slices.Contains(loadsql.Engines, engine) {
			return cli.Usagef(c, "--engine %q: unknown engine; valid: %s", engine, strings.Join(loadsql.Engines, ", "))
		}
		var day civil.Date
		if p.day != "" {
			if day, err = dayFlag(c, "day", p.day); err != nil {
				return err
			}
		}
		if p.account != "" && p.day == "" {
			return cli.Usagef(c, "--day is required with --account")
		}
		part, note, err := a.sqlPartition(c.Context(), d, p.account, day)
		if err != nil {
			return err
		}
		var sql string
		if current {
			sql, err = loadsql.CurrentState(engine, part)
		} else {
			sql, err = loadsql.Generate(engine, part)
		}
		if err != nil {
			return err
		}
		if note != "" {
			fmt.Fprintln(a.stdout, note)
		}
		_, err = io.WriteString(a.stdout, sql)
		return err
	}
	return c
}

// sqlPartition describes the partition the SQL is for: the committed
// manifest when an account is given (exactly what `_load/` holds),
// otherwise a placeholder day folder so an operator can read a dataset's DDL.
func (a *app) sqlPartition(ctx context.Context, d dataset.Dataset, acctID string, day civil.Date) (loadsql.Partition, string, error) {
	if acctID == "" {
		if day.IsZero() {
			day = civil.Of(a.now().UTC().Add(-24 * time.Hour))
		}
		const prefix = "<prefix>"
		return loadsql.Partition{
			Dataset: d, Day: day, Generation: 1, Format: fileformat.Default, Bucket: "<bucket>",
			PartitionPrefix: layout.PartitionPrefix(prefix, d.LedgerName(), day),
			Files:           []loadsql.File{{Key: layout.DataKey(prefix, d.LedgerName(), day, 0, fileformat.Default.Extension())}},
		}, "-- placeholder day folder: pass --account and --day for the SQL of a delivered partition", nil
	}
	e, acct, err := a.account(ctx, acctID, "--account")
	if err != nil {
		return loadsql.Partition{}, "", err
	}
	prefix, err := acct.Prefix(e.stage)
	if err != nil {
		return loadsql.Partition{}, "", err
	}
	bkt, err := e.bucket(ctx, acct)
	if err != nil {
		return loadsql.Partition{}, "", err
	}
	b, err := bkt.Get(ctx, layout.ManifestKey(prefix, d.LedgerName(), day), manifest.MaxManifestBytes)
	if err != nil {
		return loadsql.Partition{}, "", fmt.Errorf("read manifest (is %s %s exported? daybook status --account %s): %w", d.Name, day, acct.ID, err)
	}
	m, err := manifest.Decode(b)
	if err != nil {
		return loadsql.Partition{}, "", err
	}
	part, err := loadsql.ForManifest(d, m, acct.Destination.Bucket, layout.PartitionPrefix(prefix, d.LedgerName(), day))
	part.Store, part.AzureAccount = string(acct.Destination.Kind()), acct.Destination.StorageAccount
	return part, "", err
}
