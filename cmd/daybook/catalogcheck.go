package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/pgcatalog"
)

// initPartitions are the --partition values of catalog init.
var initPartitions = []string{dataset.PartitionEventTime, dataset.PartitionStatDate, dataset.PartitionActivity, dataset.PartitionSnapshot}

func (a *app) catalogInitCommand() *cobra.Command {
	var o pgcatalog.EntryOptions
	var dsn, table string
	c := &cobra.Command{
		Use:   "init --source DSN --table T --tenant-column C --partition-column P [--partition event_time|stat_date|activity|snapshot]",
		Short: "Print a catalog entry derived from a source table",
		Long: `Print a catalog entry for a PostgreSQL table or view, derived from the database's own catalog:
its columns in order (all but the tenant column), their types through the mapping in
docs/types.md, NOT NULL as required, COMMENT ON COLUMN as descriptions, enums as
low-cardinality strings. A view does not say which columns are NOT NULL: its partition and id
columns are declared required, the others nullable. The entry's queries read one tenant's
day by the partition column. With --partition snapshot (a table such as plans, users or
settings, delivered as a complete copy every day) there is no partition column: the query
reads the tenant's whole current table.
A column whose type has no catalog type is named, with what to do instead, and nothing is
printed. A table with timestamp without time zone columns needs --source-time-zone: the
zone those wall-clock times are in is never guessed. Review the entry, then add it to the
catalog's "datasets" list.`,
		Example: "  daybook catalog init --source postgres://reader@db/app --table invoices --tenant-column org_id \\\n" +
			"      --partition-column created_at --source-time-zone Europe/Berlin",
	}
	f := c.Flags()
	f.StringVar(&dsn, "source", "", "PostgreSQL connection string of the source database")
	f.StringVar(&table, "table", "", "table or view to describe (schema.table or table on the search path)")
	f.StringVar(&o.TenantColumn, "tenant-column", "", "column holding the tenant (bound to the account id)")
	f.StringVar(&o.PartitionColumn, "partition-column", "", "column whose value decides a row's day")
	f.StringVar(&o.Partition, "partition", dataset.PartitionEventTime, "what the day means: "+strings.Join(initPartitions, ", "))
	f.StringVar(&o.IDColumn, "id-column", "", "activity only: the column identifying a record (its newest row is its state)")
	f.StringVar(&o.SourceTimeZone, "source-time-zone", "", "IANA zone of the table's timestamp without time zone columns")
	f.StringVar(&o.Name, "name", "", "dataset name (default: the table's name)")
	_ = c.RegisterFlagCompletionFunc("partition", cobra.FixedCompletions(initPartitions, cobra.ShellCompDirectiveNoFileComp))
	c.RunE = func(c *cobra.Command, _ []string) error {
		required := []string{"source", "table", "tenant-column", "partition-column"}
		if o.Partition == dataset.PartitionSnapshot {
			required = required[:3]
		}
		if err := requireFlags(c, required...); err != nil {
			return err
		}
		if !slices.Contains(initPartitions, o.Partition) {
			return cli.Usagef(c, "--partition %q: unknown partition; valid: %s", o.Partition, strings.Join(initPartitions, ", "))
		}
		if o.SourceTimeZone != "" {
			if _, err := time.LoadLocation(o.SourceTimeZone); err != nil || o.SourceTimeZone == "Local" {
				return cli.Usagef(c, "--source-time-zone %q: not an IANA time zone", o.SourceTimeZone)
			}
		}
		db, err := openSource(c, dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		t, err := pgcatalog.ReadTable(c.Context(), db, table)
		if err != nil {
			return fmt.Errorf("catalog init: %w", err)
		}
		d, err := pgcatalog.Entry(t, o)
		if err != nil {
			return fmt.Errorf("catalog init: table %s:\n%w", table, err)
		}
		return printJSON(a.stdout, d)
	}
	return c
}

func (a *app) catalogCheckCommand() *cobra.Command {
	var dsn, catalogFile string
	var names []string
	c := &cobra.Command{
		Use:   "check --source DSN [--catalog FILE] [--dataset NAME]... [-o json]",
		Short: "Check every dataset of the catalog against the live source database",
		Long: `Check every dataset of the catalog against the live source database: its relation and every
declared column exist; each source type maps to the declared type (a narrower or wider
decimal, a type without a catalog type, a missing source time zone are named); a column
declared required that the source allows to be NULL is reported; the export query's result
columns are the declared ones; the query runs on an empty window; and its plan reads the
relation through an index on the partition column (a sequential scan is reported with the
table's estimated rows). Each finding names the dataset, the column, what is declared and
what was found. Exit 1 when any finding is an error; warnings alone exit 0. Nothing is
written to the database.`,
		Example: "  daybook catalog check --source postgres://reader@db/app -o json",
	}
	f := c.Flags()
	f.StringVar(&dsn, "source", "", "PostgreSQL connection string of the source database")
	f.StringVar(&catalogFile, "catalog", "", "catalog file (JSON with a \"datasets\" list; default: the shipped catalog)")
	f.StringArrayVar(&names, "dataset", nil, "check only this dataset (repeatable)")
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := requireFlags(c, "source"); err != nil {
			return err
		}
		ds, err := a.loadCheckCatalog(c, catalogFile, names)
		if err != nil {
			return err
		}
		db, err := openSource(c, dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		conn, err := db.Conn(c.Context())
		if err != nil {
			return fmt.Errorf("catalog check: connect: %w", err)
		}
		defer conn.Close()
		findings := []pgcatalog.Finding{}
		for _, d := range ds {
			fs, err := pgcatalog.CheckDataset(c.Context(), conn, d)
			if err != nil {
				return fmt.Errorf("catalog check: dataset %s: %w", d.Name, err)
			}
			findings = append(findings, fs...)
		}
		if err := printFindings(a, *out, len(ds), findings); err != nil {
			return err
		}
		if pgcatalog.HasErrors(findings) {
			return fmt.Errorf("catalog check: %d error(s) in %d dataset(s)", countSeverity(findings, pgcatalog.SeverityError), len(ds))
		}
		return nil
	}
	return c
}

// openSource opens the --source database and checks it answers.
func openSource(c *cobra.Command, dsn string) (*sql.DB, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, cli.Usagef(c, "--source: %v", err)
	}
	ctx, cancel := context.WithTimeout(c.Context(), 15*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("--source: cannot connect: %w", err)
	}
	return db, nil
}

// loadCheckCatalog returns the datasets to check: the catalog file's (YAML
// or JSON), or this process's catalog (DAYBOOK_CATALOG, else the shipped
// example), narrowed to names.
func (a *app) loadCheckCatalog(c *cobra.Command, file string, names []string) ([]dataset.Dataset, error) {
	set, err := a.loadCatalogFlag(c, file)
	if err != nil {
		return nil, err
	}
	ds := set.Datasets()
	if len(names) == 0 {
		return ds, nil
	}
	var out []dataset.Dataset
	var all []string
	for _, d := range ds {
		all = append(all, d.Name)
	}
	for _, n := range names {
		i := slices.Index(all, n)
		if i < 0 {
			return nil, cli.Usagef(c, "--dataset %q: not in the catalog; valid: %s", n, strings.Join(all, ", "))
		}
		out = append(out, ds[i])
	}
	return out, nil
}

func countSeverity(fs []pgcatalog.Finding, s pgcatalog.Severity) int {
	n := 0
	for _, f := range fs {
		if f.Severity == s {
			n++
		}
	}
	return n
}

func printFindings(a *app, out outputFormat, datasets int, fs []pgcatalog.Finding) error {
	errs, warns := countSeverity(fs, pgcatalog.SeverityError), countSeverity(fs, pgcatalog.SeverityWarning)
	if out == outputJSON {
		return printJSON(a.stdout, struct {
			Datasets int                 `json:"datasets"`
			Errors   int                 `json:"errors"`
			Warnings int                 `json:"warnings"`
			Findings []pgcatalog.Finding `json:"findings"`
		}{datasets, errs, warns, fs})
	}
	if len(fs) > 0 {
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEVERITY\tDATASET\tCOLUMN\tDECLARED\tFOUND\tFINDING")
		for _, f := range fs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Severity, f.Dataset, dash(f.Column), dash(f.Declared), dash(f.Found), f.Message)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(a.stdout, "%d dataset(s) checked: %d error(s), %d warning(s)\n", datasets, errs, warns)
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
