package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/bucketdocs"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// catalogCommand is `daybook catalog`: the deployment's dataset catalog,
// the file it is built with (CATALOG=path) and its evolution.
func (a *app) catalogCommand() *cobra.Command {
	return cli.Group("catalog", "Write, show and check a dataset catalog: against the source database and against what was delivered",
		a.catalogInitCommand(), a.catalogCheckCommand(), a.catalogShowCommand(), a.catalogDiffCommand())
}

// loadCatalogFlag reads --catalog FILE, or this process's catalog
// (DAYBOOK_CATALOG, else the shipped example) when it is empty.
func (a *app) loadCatalogFlag(c *cobra.Command, path string) (*dataset.Set, error) {
	if path == "" {
		return dataset.FromEnv(func(k string) (string, bool) { v := a.getenv(k); return v, v != "" })
	}
	s, err := dataset.Load(path)
	if err != nil {
		return nil, cli.Usagef(c, "--catalog: %v", err)
	}
	return s, nil
}

func (a *app) catalogShowCommand() *cobra.Command {
	var path, name string
	c := &cobra.Command{
		Use:   "show [--catalog FILE] [--dataset NAME] [-o table|json]",
		Short: "Load a catalog file and print its datasets with the queries they run",
		Long: `Load a catalog file (YAML or JSON), check it as the functions do at start, and print each
dataset: its version, relation, partition, columns, and the export and fingerprint queries for
every source dialect, the ones daybook writes for a dataset that gives tenant_column instead of
queries included. Without --catalog, the catalog this CLI runs with: the file DAYBOOK_CATALOG
names, else the shipped example. -o json prints the datasets as loaded, queries filled in.`,
		Example:     "  daybook catalog show --catalog catalog.yaml --dataset orders",
		Annotations: map[string]string{ownCatalog: "true"}, // without --catalog it reads DAYBOOK_CATALOG and says why it cannot
	}
	c.Flags().StringVar(&path, "catalog", "", "catalog file (YAML or JSON)")
	c.Flags().StringVar(&name, "dataset", "", "show only this dataset")
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		s, err := a.loadCatalogFlag(c, path)
		if err != nil {
			return err
		}
		ds := s.Datasets()
		if name != "" {
			d, err := s.Get(name)
			if err != nil {
				return cli.Usagef(c, "--dataset %q: not in the catalog; valid: %s", name, strings.Join(s.Names(), ", "))
			}
			ds = []dataset.Dataset{d}
		}
		if *out == outputJSON {
			return printJSON(a.stdout, map[string]any{"datasets": ds})
		}
		for i, d := range ds {
			if i > 0 {
				fmt.Fprintln(a.stdout)
			}
			writeDataset(a.stdout, d)
		}
		return nil
	}
	return c
}

func writeDataset(w io.Writer, d dataset.Dataset) {
	on := " on " + d.PartitionColumn
	if d.IsSnapshot() {
		on = " (a complete copy per day)"
	}
	from := ""
	if d.Source != "" {
		from = " (source " + d.Source + ")"
	}
	fmt.Fprintf(w, "%s (version %d): %s%s, partition %s%s, %s, read %s\n", d.Name, d.Version, d.Relation, from, d.Partition, on, d.Mode, d.Read)
	fmt.Fprintf(w, "  contract %s: delivered under <prefix>/%s/%s/\n", d.ContractVersion(), d.ContractVersion(), d.Name)
	bound := "$1 of its queries"
	if d.TenantColumn != "" {
		bound = "tenant_column " + d.TenantColumn
	}
	fmt.Fprintf(w, "  tenant_type %s: each account's tenant_key (else its id) is bound to %s\n", d.TenantKind(), bound)
	for _, c := range d.Columns {
		null := "required"
		if c.Nullable {
			null = "nullable"
		}
		zone := ""
		if c.SourceTimeZone != "" {
			zone = ", source_time_zone " + c.SourceTimeZone
		}
		fmt.Fprintf(w, "  %-24s %-16s %s, since %d%s\n", c.Name, c.Type, null, c.SinceVersion(), zone)
	}
	how := "declared"
	if d.TenantColumn != "" {
		how = "generated"
	}
	for _, dialect := range dataset.Dialects {
		fmt.Fprintf(w, "  export %s (%s):\n    %s\n", dialect, how, d.Queries[dialect])
		if q, err := d.FingerprintQuery(dialect); err == nil {
			fmt.Fprintf(w, "  fingerprint %s:\n    %s\n", dialect, q)
		}
	}
}

func (a *app) catalogDiffCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "diff OLD NEW | diff --deployed NEW",
		Short: "Refuse a catalog that breaks what customers already have",
		Long: `Compare NEW, a catalog file, with OLD: the catalog file it replaces, or what was delivered, a
directory of schema documents as a bucket's _schemas/ holds them (one <dataset>.json each), or
one such document. With --deployed, OLD is what the deployment has delivered, as its ledger
table records it (the newest contract of each dataset), and no bucket is read. Each dataset of OLD must still be in NEW, with its columns in their order,
names and types; NEW may append nullable columns (raising the version, with since set to it)
and loosen a required column to nullable (with nullable_since). Any other change needs a new
contract: set contract: v2 on the dataset, and it is delivered again from its first day under
v2/ while v1/ stays as it is (a contract never goes back down). A refusal names the dataset and
the column and exits 1; an accepted change prints what each dataset gains.`,
		Example: "  aws s3 cp --recursive s3://BUCKET/PREFIX/v1/_schemas/ delivered/\n  daybook catalog diff delivered/ catalog.yaml\n" +
			"  daybook catalog diff --deployed catalog.yaml --stack daybook-prod",
		Annotations: map[string]string{ownCatalog: "true"},
	}
	deployed := c.Flags().Bool("deployed", false, "compare NEW with the schemas the deployment recorded as delivered (no OLD)")
	a.deploymentFlags(c)
	c.Args = func(c *cobra.Command, args []string) error {
		if *deployed {
			return cli.ExactArgs("NEW")(c, args)
		}
		return cli.ExactArgs("OLD", "NEW")(c, args)
	}
	c.RunE = func(c *cobra.Command, args []string) error {
		var old []dataset.Dataset
		var err error
		if *deployed {
			old, err = a.deployedSchemas(c)
			if err != nil {
				return err
			}
		} else {
			if old, err = readDelivered(args[0]); err != nil {
				return cli.Usagef(c, "OLD %q: %v", args[0], err)
			}
			args = args[1:]
		}
		next, err := dataset.Load(args[0])
		if err != nil {
			return cli.Usagef(c, "NEW %q: %v", args[0], err)
		}
		if err := next.CheckAgainst(old); err != nil {
			return err
		}
		for _, o := range dataset.NewestContracts(old) {
			n, _ := next.Get(o.Name)
			switch {
			case n.ContractVersion() != o.ContractVersion():
				fmt.Fprintf(a.stdout, "%s: new contract %s -> %s: delivered again from its first day under %s/, %s/%s/ stays as it is\n",
					o.Name, o.ContractVersion(), n.ContractVersion(), n.ContractVersion(), o.ContractVersion(), o.Name)
			case len(n.Columns) > len(o.Columns):
				fmt.Fprintf(a.stdout, "%s: version %d -> %d, appends %s\n", o.Name, o.Version, n.Version, strings.Join(n.ColumnNames()[len(o.Columns):], ", "))
			case n.Version != o.Version:
				fmt.Fprintf(a.stdout, "%s: version %d -> %d\n", o.Name, o.Version, n.Version)
			default:
				fmt.Fprintf(a.stdout, "%s: unchanged contract\n", o.Name)
			}
		}
		for _, n := range next.Names() {
			if !slices.ContainsFunc(old, func(d dataset.Dataset) bool { return d.Name == n }) {
				fmt.Fprintf(a.stdout, "%s: new dataset\n", n)
			}
		}
		zoneChanges(a.stdout, old, next)
		return nil
	}
	return c
}

// readDelivered reads OLD: a directory of schema documents, one schema
// document (a .json file with "schema_version"), or a catalog file.
func readDelivered(path string) ([]dataset.Dataset, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		files, err := filepath.Glob(filepath.Join(path, "*.json"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, errors.New("no <dataset>.json schema documents in the directory")
		}
		var out []dataset.Dataset
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			d, err := bucketdocs.Delivered(b)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Base(f), err)
			}
			out = append(out, d)
		}
		return out, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.Contains(string(b), `"schema_version"`) {
		d, err := bucketdocs.Delivered(b)
		if err != nil {
			return nil, err
		}
		return []dataset.Dataset{d}, nil
	}
	s, err := dataset.Parse(b)
	if err != nil {
		return nil, err
	}
	return s.Datasets(), nil
}

// zoneChanges says which wall-clock columns of OLD (a catalog file: the
// delivered schemas do not carry the zone) NEW reads in another zone: the
// days delivered so far hold instants read in the old one.
func zoneChanges(w io.Writer, old []dataset.Dataset, next *dataset.Set) {
	for _, o := range old {
		n, err := next.Get(o.Name)
		if err != nil {
			continue
		}
		for _, oc := range o.Columns {
			nc, ok := n.Column(oc.Name)
			if !ok || oc.SourceTimeZone == "" || nc.SourceTimeZone == oc.SourceTimeZone {
				continue
			}
			fmt.Fprintf(w, "%s: column %s: source_time_zone %s -> %s: the days delivered so far were read as wall times in %s; retry them (daybook retry --account ID --dataset %s --from DAY --to DAY) to deliver them read in %s\n",
				o.Name, oc.Name, oc.SourceTimeZone, cmp.Or(nc.SourceTimeZone, "none (instants)"), oc.SourceTimeZone, o.Name, cmp.Or(nc.SourceTimeZone, "none"))
		}
	}
}
