package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// outputFormat is the -o flag of read commands.
type outputFormat string

const (
	outputTable outputFormat = "table"
	outputJSON  outputFormat = "json"
)

func (o *outputFormat) String() string { return string(*o) }
func (o *outputFormat) Type() string   { return "table|json" }
func (o *outputFormat) Set(s string) error {
	switch outputFormat(s) {
	case outputTable, outputJSON:
		*o = outputFormat(s)
		return nil
	}
	return fmt.Errorf("want table or json")
}

// outputFlag registers -o/--output on c.
func outputFlag(c *cobra.Command) *outputFormat {
	o := outputTable
	c.Flags().VarP(&o, "output", "o", "output format: table or json")
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return &o
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// requireFlags refuses a command line that lacks any of the flags.
func requireFlags(c *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if f := c.Flags().Lookup(n); f == nil || f.Value.String() == "" {
			missing = append(missing, "--"+n)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return cli.Usagef(c, "%s is required", missing[0])
	}
	return cli.Usagef(c, "%s are required", strings.Join(missing, " and "))
}

// dayFlag parses a YYYY-MM-DD flag value; the error names the flag.
func dayFlag(c *cobra.Command, name, v string) (civil.Date, error) {
	d, err := civil.Parse(v)
	if err != nil {
		return civil.Date{}, cli.Usagef(c, "--%s %q: not a date (want YYYY-MM-DD)", name, v)
	}
	return d, nil
}

// dayRange reads --day, or --from and --to, as the user typed them.
func dayRange(c *cobra.Command, day, from, to string) (f, t civil.Date, err error) {
	switch {
	case day != "" && (from != "" || to != ""):
		return f, t, cli.Usagef(c, "give --day, or --from and --to, not both")
	case day != "":
		d, err := dayFlag(c, "day", day)
		return d, d, err
	case from == "" && to == "":
		return f, t, cli.Usagef(c, "--day (or --from and --to) is required")
	case from == "":
		return f, t, cli.Usagef(c, "--from is required with --to")
	case to == "":
		return f, t, cli.Usagef(c, "--to is required with --from")
	}
	if f, err = dayFlag(c, "from", from); err != nil {
		return
	}
	if t, err = dayFlag(c, "to", to); err != nil {
		return
	}
	if t.Before(f) {
		return f, t, cli.Usagef(c, "--to %s is before --from %s", to, from)
	}
	return f, t, nil
}

// datasetFlag checks a --dataset value against the catalog's datasets.
func (a *app) datasetFlag(c *cobra.Command, v string) (dataset.Dataset, error) {
	d, err := a.catalog.Get(v)
	if err != nil {
		return dataset.Dataset{}, cli.Usagef(c, "--dataset %q: unknown dataset; valid: %s", v, strings.Join(a.catalog.Names(), ", "))
	}
	return d, nil
}

// completeDatasets completes --dataset.
func (a *app) completeDatasets(c *cobra.Command, name string) {
	_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(a.catalog.Names(), cobra.ShellCompDirectiveNoFileComp))
}

// partitionFlags are --account, --dataset, --day, --from and --to.
type partitionFlags struct {
	account, dataset, day, from, to string
}

func (a *app) registerPartitionFlags(c *cobra.Command, p *partitionFlags, ranges bool) {
	c.Flags().StringVar(&p.account, "account", "", "account id (acct_...)")
	c.Flags().StringVar(&p.dataset, "dataset", "", "dataset: "+strings.Join(a.catalog.Names(), ", "))
	c.Flags().StringVar(&p.day, "day", "", "one day, YYYY-MM-DD")
	a.completeDatasets(c, "dataset")
	if ranges {
		c.Flags().StringVar(&p.from, "from", "", "first day of a range, YYYY-MM-DD")
		c.Flags().StringVar(&p.to, "to", "", "last day of a range, YYYY-MM-DD")
	}
}
