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

func (a *app) catalogCheckCommand() *cobra.Command {
	var sources []string
	var catalogFile string
	var names []string
	c := &cobra.Command{
		Use:   "check --source [NAME=]DSN... [--catalog FILE] [--dataset NAME]... [-o json]",
		Short: "Check every dataset of the catalog against the live source databases",
		Long: `Check every dataset of the catalog against the live source database it reads: its relation and
every declared column exist; each source type maps to the declared type (a narrower or wider
decimal, a type without a catalog type, a missing source time zone are named); a column
declared required that the source allows to be NULL is reported; the tenant the query binds is
of the declared tenant_type; the export query's result columns are the declared ones; the
query runs on an empty window; and the relation can be read through an index: for generated
queries (tenant_column), the table (or each partition of a partitioned table) has an index
whose keys begin with the tenant column and then the partition column (the tenant column
alone for a snapshot), read from PostgreSQL's system tables whatever the table's size today (none
is reported with the table's estimated rows); for hand-written queries, the generic plan with
sequential scans off reads the relation through an index bounding the tenant and the day. Each finding
names the dataset, its source, the column, what is declared and what was found. Exit 1 when
any finding is an error; warnings alone exit 0. Nothing is written to the database.
--source takes one connection string per source the catalog names: NAME=DSN (repeat it), a
bare DSN for the default source. A dataset whose source was given none is an error finding.`,
		Example: "  daybook catalog check --source postgres://reader@db/app -o json\n" +
			"  daybook catalog check --source postgres://reader@db/app --source billing=postgres://reader@billing/db",
		Annotations: map[string]string{ownCatalog: "true"},
	}
	f := c.Flags()
	f.StringArrayVar(&sources, "source", nil, "PostgreSQL connection string of a source: NAME=DSN, or a bare DSN for the default source (repeatable)")
	f.StringVar(&catalogFile, "catalog", "", "catalog file (YAML or JSON; default: the catalog this CLI runs with)")
	f.StringArrayVar(&names, "dataset", nil, "check only this dataset (repeatable)")
	out := outputFlag(c)
	c.RunE = func(c *cobra.Command, _ []string) error {
		if err := requireFlags(c, "source"); err != nil {
			return err
		}
		dsns, err := sourceFlags(c, sources)
		if err != nil {
			return err
		}
		ds, err := a.loadCheckCatalog(c, catalogFile, names)
		if err != nil {
			return err
		}
		findings, err := checkSources(c, ds, dsns)
		if err != nil {
			return err
		}
		if err := printFindings(a, *out, len(ds), findings); err != nil {
			return err
		}
		if hasErrors(findings) {
			return fmt.Errorf("catalog check: %d error(s) in %d dataset(s)", countSeverity(findings, pgcatalog.SeverityError), len(ds))
		}
		return nil
	}
	return c
}

// sourceFinding is a finding with the name of the source the dataset
// reads.
type sourceFinding struct {
	pgcatalog.Finding
	Source string `json:"source"`
}

// sourceFlags reads the --source values: NAME=DSN, or a bare DSN for the
// default source. A name twice, or a name that is not a source name, is a
// usage error naming the value.
func sourceFlags(c *cobra.Command, values []string) (map[string]string, error) {
	dsns := map[string]string{}
	for _, v := range values {
		name, dsn := dataset.DefaultSource, v
		if n, d, ok := strings.Cut(v, "="); ok && dataset.ValidSourceName(n) == nil && (d == "" || namedDSN(d)) {
			name, dsn = n, d
		}
		if dsn == "" {
			return nil, cli.Usagef(c, "--source %q: no connection string", v)
		}
		if _, dup := dsns[name]; dup {
			return nil, cli.Usagef(c, "--source %q: source %s given twice", v, name)
		}
		dsns[name] = dsn
	}
	return dsns, nil
}

// namedDSN reports whether rest, what follows NAME= in a --source value, is
// a whole connection string: a URL, or key=value pairs. Otherwise the
// value is itself a bare key=value connection string ("host=db
// dbname=app": host is not a source).
func namedDSN(rest string) bool {
	first, _, _ := strings.Cut(rest, " ")
	return strings.Contains(rest, "://") || strings.Contains(first, "=")
}

// checkSources checks each dataset against its own source's database; a
// dataset whose source has no DSN is an error finding.
func checkSources(c *cobra.Command, ds []dataset.Dataset, dsns map[string]string) ([]sourceFinding, error) {
	findings := []sourceFinding{}
	conns := map[string]*sql.Conn{}
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()
	for _, d := range ds {
		name := d.SourceName()
		dsn, ok := dsns[name]
		if !ok {
			findings = append(findings, sourceFinding{Source: name, Finding: pgcatalog.Finding{Severity: pgcatalog.SeverityError, Dataset: d.Name, Check: "source",
				Message: fmt.Sprintf("dataset %s reads source %s, which has no --source %s=DSN: it was not checked", d.Name, name, name)}})
			continue
		}
		conn, ok := conns[name]
		if !ok {
			db, err := openSource(c, dsn)
			if err != nil {
				return nil, fmt.Errorf("source %s: %w", name, err)
			}
			defer db.Close()
			if conn, err = db.Conn(c.Context()); err != nil {
				return nil, fmt.Errorf("catalog check: connect to source %s: %w", name, err)
			}
			conns[name] = conn
		}
		fs, err := pgcatalog.CheckDataset(c.Context(), conn, d)
		if err != nil {
			return nil, fmt.Errorf("catalog check: dataset %s (source %s): %w", d.Name, name, err)
		}
		for _, f := range fs {
			findings = append(findings, sourceFinding{Finding: f, Source: name})
		}
	}
	return findings, nil
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

func hasErrors(fs []sourceFinding) bool {
	plain := make([]pgcatalog.Finding, len(fs))
	for i, f := range fs {
		plain[i] = f.Finding
	}
	return pgcatalog.HasErrors(plain)
}

func countSeverity(fs []sourceFinding, s pgcatalog.Severity) int {
	n := 0
	for _, f := range fs {
		if f.Severity == s {
			n++
		}
	}
	return n
}

func printFindings(a *app, out outputFormat, datasets int, fs []sourceFinding) error {
	errs, warns := countSeverity(fs, pgcatalog.SeverityError), countSeverity(fs, pgcatalog.SeverityWarning)
	if out == outputJSON {
		return printJSON(a.stdout, struct {
			Datasets int             `json:"datasets"`
			Errors   int             `json:"errors"`
			Warnings int             `json:"warnings"`
			Findings []sourceFinding `json:"findings"`
		}{datasets, errs, warns, fs})
	}
	if len(fs) > 0 {
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEVERITY\tDATASET\tSOURCE\tCOLUMN\tDECLARED\tFOUND\tFINDING")
		for _, f := range fs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Severity, f.Dataset, f.Source, dash(f.Column), dash(f.Declared), dash(f.Found), f.Message)
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
