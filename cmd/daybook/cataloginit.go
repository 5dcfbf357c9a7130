package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
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
	var dsn, appendTo string
	var tables []string
	c := &cobra.Command{
		Use:   "init --source DSN --table T... --tenant-column C (--partition-column P | --partition snapshot) [--append FILE]",
		Short: "Write catalog entries for source tables, from PostgreSQL's system tables",
		Long: `Write a catalog entry for each PostgreSQL table or view named by --table (repeat it for
several tables with the same tenant and partition columns), derived from PostgreSQL's system
tables: every column in order but the tenant column, their types through the mapping in
docs/types.md, NOT NULL as required, COMMENT ON COLUMN as descriptions, enums as
low-cardinality strings, and a json column only when the table has one. The entry names
tenant_column (and tenant_type, from the column's type), so daybook writes its queries:
order_by is the partition column then the primary key, and changed_column, whose max() the
late-data fingerprint takes so that an update in place restates its day, is the table's
updated_at-like column (` + strings.Join(pgcatalog.ChangedColumnNames[:4], ", ") + `, ...; --changed-column names
another, --changed-column - none). A timestamp without time zone column declares
source_time_zone, which the generated query converts the day's window with: the zone is
never guessed (--source-time-zone) and never written into a query.
With --partition snapshot (a table such as plans, users or settings, delivered as a complete
copy every day) there is no partition column: the query reads the tenant's whole current
table. A view does not say which columns are NOT NULL: its partition and id columns are
declared required, the others nullable.
The entries are printed as a catalog file (YAML); with --append FILE they are added to the
end of FILE's datasets list instead (FILE is created when it does not exist, and must stay a
valid catalog: a name already in it is refused). A column whose type has no catalog type is
named, with what to do instead, and nothing is written. What init chose for you (order_by,
changed_column, a nullable partition column) is said on stderr: review it.`,
		Example: "  daybook catalog init --source \"$SOURCE_DSN\" --table clicks --tenant-column company_id \\\n" +
			"      --partition-column clicked_at --source-time-zone UTC --append catalog.yaml\n" +
			"  daybook catalog init --source \"$SOURCE_DSN\" --table campaigns --table ads --tenant-column company_id \\\n" +
			"      --partition snapshot --source-time-zone UTC --append catalog.yaml",
		Annotations: map[string]string{ownCatalog: "true"},
	}
	f := c.Flags()
	f.StringVar(&dsn, "source", "", "PostgreSQL connection string of the source database")
	f.StringArrayVar(&tables, "table", nil, "table or view to describe (schema.table or table on the search path; repeatable)")
	f.StringVar(&o.TenantColumn, "tenant-column", "", "column holding the tenant (bound to each account's tenant key)")
	f.StringVar(&o.PartitionColumn, "partition-column", "", "column whose value decides a row's day")
	f.StringVar(&o.Partition, "partition", dataset.PartitionEventTime, "what the day means: "+strings.Join(initPartitions, ", "))
	f.StringVar(&o.IDColumn, "id-column", "", "activity only: the column identifying a record (its newest row is its state)")
	f.StringVar(&o.SourceTimeZone, "source-time-zone", "", "IANA zone of the tables' timestamp without time zone columns")
	f.StringVar(&o.ChangedColumn, "changed-column", "", "column whose max() the fingerprint takes (default: the updated_at-like column; - for none)")
	f.StringVar(&o.Name, "name", "", "dataset name (default: the table's name; one --table only)")
	f.StringVar(&appendTo, "append", "", "add the entries to this catalog file instead of printing them")
	_ = c.RegisterFlagCompletionFunc("partition", cobra.FixedCompletions(initPartitions, cobra.ShellCompDirectiveNoFileComp))
	_ = c.MarkFlagFilename("append", "yaml", "yml", "json")
	c.RunE = func(c *cobra.Command, _ []string) error {
		required := []string{"source", "tenant-column", "partition-column"}
		if o.Partition == dataset.PartitionSnapshot {
			required = required[:2]
		}
		if err := requireFlags(c, required...); err != nil {
			return err
		}
		if len(tables) == 0 {
			return cli.Usagef(c, "--table is required")
		}
		if o.Name != "" && len(tables) > 1 {
			return cli.Usagef(c, "--name %q: one name for %d tables; give --name with one --table", o.Name, len(tables))
		}
		if !slices.Contains(initPartitions, o.Partition) {
			return cli.Usagef(c, "--partition %q: unknown partition; valid: %s", o.Partition, strings.Join(initPartitions, ", "))
		}
		if o.SourceTimeZone != "" {
			if _, err := time.LoadLocation(o.SourceTimeZone); err != nil || o.SourceTimeZone == "Local" {
				return cli.Usagef(c, "--source-time-zone %q: not an IANA time zone", o.SourceTimeZone)
			}
		}
		var existing []byte
		if appendTo != "" {
			b, err := os.ReadFile(appendTo)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return cli.Usagef(c, "--append %s: %v", appendTo, err)
			}
			if len(bytes.TrimSpace(b)) > 0 {
				if _, err := dataset.Parse(b); err != nil {
					return cli.Usagef(c, "--append %s: not a valid catalog: %v", appendTo, err)
				}
			}
			existing = b
		}
		db, err := openSource(c, dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		var entries []dataset.Dataset
		for _, table := range tables {
			t, err := pgcatalog.ReadTable(c.Context(), db, table)
			if err != nil {
				return fmt.Errorf("catalog init: %w", err)
			}
			d, err := pgcatalog.Entry(t, o)
			if err != nil {
				return fmt.Errorf("catalog init: table %s:\n%w", table, err)
			}
			entries = append(entries, d)
			a.initNotes(d, t)
		}
		if appendTo == "" {
			_, err := a.stdout.Write(dataset.CatalogYAML(entries))
			return err
		}
		out, err := appendEntries(existing, appendTo, entries)
		if err != nil {
			return cli.Usagef(c, "--append %s: %v", appendTo, err)
		}
		if err := writeFileAtomic(appendTo, out); err != nil {
			return fmt.Errorf("catalog init: %w", err)
		}
		names := make([]string, len(entries))
		for i, d := range entries {
			names[i] = d.Name
		}
		fmt.Fprintf(a.stderr, "appended %s to %s\n", strings.Join(names, ", "), appendTo)
		return nil
	}
	return c
}

// initNotes says on stderr what init chose that the database did not
// say outright.
func (a *app) initNotes(d dataset.Dataset, t pgcatalog.Table) {
	if len(d.OrderBy) > 0 {
		from := "the partition column"
		if len(t.PrimaryKey) > 0 {
			from += " and the primary key (" + strings.Join(t.PrimaryKey, ", ") + ")"
		}
		fmt.Fprintf(a.stderr, "%s: order_by [%s]: %s\n", d.Name, strings.Join(d.OrderBy, ", "), from)
	}
	switch {
	case d.IsSnapshot():
	case d.ChangedColumn != "":
		fmt.Fprintf(a.stderr, "%s: changed_column %s: a day whose rows are updated (a later %s) is exported again\n", d.Name, d.ChangedColumn, d.ChangedColumn)
	default:
		fmt.Fprintf(a.stderr, "%s: no changed_column (no updated_at-like column): a day is exported again when rows are added to it or removed, not when one is updated in place; name the column that changes with --changed-column\n", d.Name)
	}
	if c, ok := t.Column(d.PartitionColumn); ok && !c.NotNull && !t.IsView() {
		fmt.Fprintf(a.stderr, "%s: partition column %s allows NULL: declared required; a row whose %s is NULL is in no day and is never delivered\n", d.Name, d.PartitionColumn, d.PartitionColumn)
	}
}

// listItemRE finds the indentation of a YAML catalog's first datasets
// item.
var listItemRE = regexp.MustCompile(`(?m)^datasets:[ \t]*\n(?:[ \t]*(?:#.*)?\n)*([ \t]*)- `)

// appendEntries returns the catalog file b (named path) with entries added
// at the end of its datasets list: a YAML file keeps every byte it had and
// gets the entries' text after it, indented as its own items; a JSON file
// is written again with the entries appended. The result must load with
// every old dataset first, in order, and the new ones after.
func appendEntries(b []byte, path string, entries []dataset.Dataset) ([]byte, error) {
	var out []byte
	var old []dataset.Dataset
	trimmed := bytes.TrimSpace(b)
	switch {
	case len(trimmed) == 0:
		out = dataset.CatalogYAML(entries)
		if filepath.Ext(path) == ".json" {
			j, err := json.MarshalIndent(map[string]any{"datasets": entries}, "", "  ")
			if err != nil {
				return nil, err
			}
			out = append(j, '\n')
		}
	case trimmed[0] == '{':
		var doc struct {
			Datasets []json.RawMessage `json:"datasets"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, err
		}
		for _, d := range entries {
			j, err := json.Marshal(d)
			if err != nil {
				return nil, err
			}
			doc.Datasets = append(doc.Datasets, j)
		}
		j, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return nil, err
		}
		out = append(j, '\n')
	default:
		m := listItemRE.FindSubmatch(b)
		if m == nil {
			return nil, errors.New(`no "datasets:" list of items in block style to append to: add the entries by hand`)
		}
		out = append([]byte(nil), b...)
		if out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		out = dataset.AppendYAML(out, entries, len(m[1]))
	}
	if len(trimmed) > 0 {
		s, err := dataset.Parse(b)
		if err != nil {
			return nil, err
		}
		old = s.Datasets()
	}
	for _, d := range entries {
		if slices.ContainsFunc(old, func(o dataset.Dataset) bool { return o.Name == d.Name }) {
			return nil, fmt.Errorf("dataset %s is already in the file: give the new one another --name", d.Name)
		}
	}
	s, err := dataset.Parse(out)
	if err != nil {
		return nil, fmt.Errorf("the file would not load with the entries appended (is datasets the last key, its items the last lines?): %w", err)
	}
	got := s.Names()
	var want []string
	for _, d := range append(old, entries...) {
		want = append(want, d.Name)
	}
	if !slices.Equal(got, want) {
		return nil, fmt.Errorf("the file would hold datasets %s, not %s (is datasets the last key, its items the last lines?): add the entries by hand", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	return out, nil
}

// writeFileAtomic replaces path with b: a file of its own beside it,
// renamed over it, so a crash leaves the old file or the new one.
func writeFileAtomic(path string, b []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
