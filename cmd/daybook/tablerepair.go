package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	icetbl "github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/icetable"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
)

func (a *app) tableCommand() *cobra.Command {
	return cli.Group("table", "Repair an account's Iceberg tables (destination.table_format: iceberg)", a.tableRepairCommand())
}

func (a *app) tableRepairCommand() *cobra.Command {
	var accountID, name string
	var yes bool
	c := &cobra.Command{
		Use:   "repair --account ID --dataset NAME [--yes]",
		Short: "Rebuild a dataset's Iceberg table from the committed days, when its metadata cannot be used",
		Long: `Repair the Iceberg table of one dataset of an account: what the console lists as table_broken
(the day's files were delivered, the table did not take them because its metadata in the bucket
cannot be used: an empty or unparsable newest metadata file, or one that names paths outside the
table, written by another tool or planted).

It reads the table as the exporter does and says what is wrong with it, then plans the table the
ledger's committed days make: every day of the dataset whose generation in the ledger is committed
in the bucket (its _SUCCESS commits that generation), whatever the day's state (a day queued,
running or failed again keeps its delivered files until an export of it begins its next
generation), with the files its _manifest.json lists, once that manifest is checked against the
ledger (account, dataset, day, generation) and every file is a data file of the day's folder; a
day that fails a check is left out and named.

Without --yes it prints the plan and changes nothing. With --yes:
  - a broken table (or none) gets a new metadata version, written after the newest one in its
    metadata/ folder (If-None-Match: if another writer got there first, nothing is written and the
    command says to run it again): a new table holding exactly the planned days, in one snapshot.
    Nothing older is read or changed; the broken metadata files stay where they are, and no reader
    of the table reads them again (look at them, then delete them if you like);
  - a table that reads fine gets each planned day whose files it does not hold, one table commit
    each, as the exporter would.
It writes only in the table's metadata/ folder, then clears the table error of every partition
whose committed generation the table now holds, and of every partition whose generation is no
longer committed in the bucket (an export of the day began its next generation: nothing of that
generation is delivered for the table to hold; the export that commits the day records its own).
Find out who changed the table's metadata first: whatever changed it may do so again.`,
		Example: "  daybook table repair --account acct_localdemoaccount --dataset events\n  daybook table repair --account acct_localdemoaccount --dataset events --yes",
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&accountID, "account", "", "account id (acct_...)")
	c.Flags().StringVar(&name, "dataset", "", "dataset: "+strings.Join(a.catalog.Names(), ", "))
	c.Flags().BoolVar(&yes, "yes", false, "repair; without it the command only prints what it would do")
	a.completeDatasets(c, "dataset")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if accountID == "" || name == "" {
			return cli.Usagef(c, "--account and --dataset are required")
		}
		ds, err := a.datasetFlag(c, name)
		if err != nil {
			return err
		}
		r, err := a.newTableRepair(c.Context(), accountID, ds)
		if err != nil {
			return err
		}
		if err := r.plan(c.Context()); err != nil {
			return err
		}
		r.print(a)
		if !yes {
			fmt.Fprintln(a.stdout, "dry run: nothing written. Run the command again with --yes to repair.")
			return nil
		}
		return r.apply(c.Context(), a)
	}
	return c
}

// tableRepair is the repair of one dataset's table: what it found, and
// what it will write.
type tableRepair struct {
	e      *opsEnv
	acct   account.Account
	ds     dataset.Dataset
	prefix string
	store  *bucket.Bucket
	table  *icetable.Table

	// current is the table as it reads (nil: broken or none); broken why it
	// does not; newest the newest metadata version in its folder.
	current *icetbl.Table
	broken  error
	newest  int
	// generations are the committed days the table is to hold, rows their
	// ledger rows; skipped the days left out, and why; gone the ledger's
	// generation of each day whose generation is not committed in the
	// bucket (a day being exported again, or failed after it began).
	generations []icetable.Committed
	rows        map[civil.Date]ledger.Row
	skipped     []string
	gone        map[civil.Date]int64
	// add are the days a readable table lacks (or holds otherwise).
	add []civil.Date
	// marked are the rows that carry a table error.
	marked []ledger.Row
	today  civil.Date
}

func (a *app) newTableRepair(ctx context.Context, accountID string, ds dataset.Dataset) (*tableRepair, error) {
	e, acct, err := a.account(ctx, accountID, "--account")
	if err != nil {
		return nil, err
	}
	if acct.Destination.TableFormat != account.TableFormatIceberg {
		return nil, fmt.Errorf("account %s keeps no Iceberg table (destination.table_format is %q)", acct.ID, acct.Destination.TableFormat)
	}
	if !slices.Contains(acct.Datasets, ds.Name) {
		return nil, fmt.Errorf("account %s does not export %s; its datasets: %s", acct.ID, ds.Name, strings.Join(acct.Datasets, ", "))
	}
	prefix, err := acct.Prefix(e.stage)
	if err != nil {
		return nil, err
	}
	store, err := e.bucket(ctx, acct)
	if err != nil {
		return nil, err
	}
	loc := strings.TrimSuffix(layout.DatasetPrefix(prefix, ds.LedgerName()), "/")
	return &tableRepair{e: e, acct: acct, ds: ds, prefix: prefix, store: store, today: civil.Of(a.now().UTC()),
		table: &icetable.Table{Store: store, Location: loc, Dataset: ds}}, nil
}

// maxMetadataListed is the most objects the repair lists in a table's
// metadata folder to find its newest version: the folder is in the
// customer's bucket, and a planted flood is refused (bucket.ErrTooMany),
// not held.
const maxMetadataListed = 100_000

// plan reads the table, the ledger and the committed manifests, and
// decides what the repair writes. It writes nothing.
func (r *tableRepair) plan(ctx context.Context) error {
	tbl, err := icetable.Load(ctx, r.store, r.table.Location)
	switch {
	case err == nil:
		r.current = tbl
	case errors.Is(err, icetable.ErrNoTable):
	case errors.Is(err, icetable.ErrBroken):
		r.broken = err
	default:
		return fmt.Errorf("read the table s3://%s/%s: %w", r.store.Name(), r.table.Location, err)
	}
	// The newest version as a load finds it without a hint: the rebuilt
	// table goes past it, where a load that lists finds it too.
	if r.newest, err = icetable.NewestVersion(ctx, r.store, r.table.Location, maxMetadataListed); err != nil {
		return err
	}
	rows, err := r.e.ledger.Partitions().List(ctx, r.acct.ID, r.ds.LedgerName(), r.acct.StartDate, r.today.AddDays(1))
	if err != nil {
		return err
	}
	r.rows, r.gone = map[civil.Date]ledger.Row{}, map[civil.Date]int64{}
	for _, row := range rows {
		if row.TableError != "" {
			r.marked = append(r.marked, row)
		}
		// Whatever its state: a day queued, running or failed again keeps
		// its committed generation (its files delivered) until an export
		// of it begins the next one.
		if row.Generation <= 0 {
			continue
		}
		d, why, gone, err := r.committed(ctx, row)
		if err != nil {
			return err
		}
		if gone {
			r.gone[row.Day] = row.Generation
		}
		if why != "" {
			r.skipped = append(r.skipped, row.Day.String()+": "+why)
			continue
		}
		r.generations = append(r.generations, d)
		r.rows[row.Day] = row
	}
	if r.current == nil {
		return nil
	}
	have, err := icetable.DayFiles(ctx, r.current)
	if err != nil {
		return fmt.Errorf("read the table's files: %w", err)
	}
	for _, d := range r.generations {
		want := map[string]icetable.FileStat{}
		for _, f := range d.Files {
			want[f.Key] = icetable.FileStat{Key: f.Key, Rows: f.Rows, Bytes: f.Bytes}
		}
		got := map[string]icetable.FileStat{}
		for _, f := range have[d.Day] {
			got[f.Key] = f
		}
		if !maps.Equal(want, got) {
			r.add = append(r.add, d.Day)
		}
	}
	return nil
}

// committed is row's committed generation, as its
// _manifest.json lists it; why says why the day is left out instead, and
// gone that it is left out because the bucket does not commit the
// ledger's generation (no _SUCCESS of it: an export of the day began the
// next one, or the marker is not daybook's), so there is nothing of it
// for the table to hold.
func (r *tableRepair) committed(ctx context.Context, row ledger.Row) (d icetable.Committed, why string, gone bool, err error) {
	key := layout.ManifestKey(r.prefix, r.ds.LedgerName(), row.Day)
	successKey := layout.SuccessKey(r.prefix, r.ds.LedgerName(), row.Day)
	notCommitted := fmt.Sprintf("generation %d is not committed in the bucket: ", row.Generation)
	b, err := r.store.Get(ctx, successKey, manifest.MaxSuccessBytes)
	switch {
	case bucket.IsNotFound(err):
		return d, notCommitted + "no " + successKey + " (an export of the day began since; the export that commits the day adds it to the table)", true, nil
	case errors.Is(err, bucket.ErrTooLarge):
		return d, notCommitted + err.Error(), true, nil
	case err != nil:
		return d, "", false, err
	}
	marker, err := manifest.DecodeSuccess(b)
	switch {
	case err != nil:
		return d, fmt.Sprintf("%s%s: %v", notCommitted, successKey, err), true, nil
	case marker.Generation != row.Generation:
		return d, fmt.Sprintf("%s%s commits generation %d (the day's next export adds it to the table)", notCommitted, successKey, marker.Generation), true, nil
	case marker.ManifestKey != key:
		return d, fmt.Sprintf("%s%s names the manifest %q", notCommitted, successKey, marker.ManifestKey), true, nil
	}
	body, err := r.store.Get(ctx, key, manifest.MaxManifestBytes)
	switch {
	case bucket.IsNotFound(err):
		return d, "no " + key, false, nil
	case errors.Is(err, bucket.ErrTooLarge):
		return d, err.Error(), false, nil
	case err != nil:
		return d, "", false, err
	}
	if !marker.Matches(body) {
		return d, fmt.Sprintf("%s is not the manifest %s commits (its SHA-256 differs)", key, successKey), false, nil
	}
	m, err := manifest.Decode(body)
	if err != nil {
		return d, fmt.Sprintf("%s: %v", key, err), false, nil
	}
	switch {
	case m.AccountID != r.acct.ID:
		return d, fmt.Sprintf("%s names account %q", key, m.AccountID), false, nil
	case m.Dataset != r.ds.Name:
		return d, fmt.Sprintf("%s names dataset %q", key, m.Dataset), false, nil
	case m.Day != row.Day.String():
		return d, fmt.Sprintf("%s names day %q", key, m.Day), false, nil
	case m.Generation != row.Generation:
		return d, fmt.Sprintf("%s is generation %d; the ledger's is %d (its next export adds it to the table)", key, m.Generation, row.Generation), false, nil
	}
	folder := layout.PartitionPrefix(r.prefix, r.ds.LedgerName(), row.Day)
	for _, f := range m.Files {
		if !strings.HasPrefix(f.Key, folder) || strings.Contains(strings.TrimPrefix(f.Key, folder), "/") || !layout.IsDataKey(f.Key) {
			return d, fmt.Sprintf("%s lists %s, not a data file of %s", key, f.Key, folder), false, nil
		}
	}
	return icetable.Committed{Day: row.Day, Generation: m.Generation, Reason: m.Reason, RunID: m.RunID, ManifestKey: key, Files: m.Files}, "", false, nil
}

func (r *tableRepair) print(a *app) {
	w := a.stdout
	fmt.Fprintf(w, "table s3://%s/%s\n", r.store.Name(), r.table.Location)
	switch {
	case r.broken != nil:
		fmt.Fprintf(w, "  broken: %v\n", r.broken)
	case r.current == nil:
		fmt.Fprintln(w, "  no table yet")
	default:
		fmt.Fprintf(w, "  reads fine: %s\n", r.current.MetadataLocation())
	}
	if r.newest > 0 {
		fmt.Fprintf(w, "  newest metadata file: %s\n", icetable.MetadataKey(r.table.Location, r.newest))
	}
	days := func(ds []icetable.Committed) {
		for _, d := range ds {
			var rows int64
			for _, f := range d.Files {
				rows += f.Rows
			}
			fmt.Fprintf(w, "  %s  generation %d  %d files  %d rows\n", d.Day, d.Generation, len(d.Files), rows)
		}
	}
	if r.current == nil {
		fmt.Fprintf(w, "plan: write %s, a new table of the %d committed days:\n", icetable.MetadataKey(r.table.Location, r.newest+1), len(r.generations))
		days(r.generations)
		if r.newest > 0 {
			fmt.Fprintf(w, "the metadata files up to v%d stay where they are: no reader of the table reads them once v%d exists\n", r.newest, r.newest+1)
		}
	} else {
		var ds []icetable.Committed
		for _, d := range r.generations {
			if slices.Contains(r.add, d.Day) {
				ds = append(ds, d)
			}
		}
		if len(ds) == 0 {
			fmt.Fprintf(w, "plan: nothing to write: the table holds each of the %d committed days as committed\n", len(r.generations))
		} else {
			fmt.Fprintf(w, "plan: add the %d committed days the table does not hold as committed, one table commit each:\n", len(ds))
			days(ds)
		}
	}
	for _, s := range r.skipped {
		fmt.Fprintf(w, "left out: %s\n", s)
	}
	if len(r.marked) > 0 {
		fmt.Fprintf(w, "%d partitions carry a table error; the repair clears those whose committed generation the table then holds, and those whose generation is not committed in the bucket\n", len(r.marked))
	}
}

// apply writes the plan, then clears the table errors of the rows the
// table holds.
func (r *tableRepair) apply(ctx context.Context, a *app) error {
	if r.current == nil {
		res, err := r.table.Rebuild(ctx, r.newest, r.generations)
		if errors.Is(err, icetbl.ErrCommitFailed) {
			return fmt.Errorf("the table changed meanwhile (%s exists now): nothing was written; run the command again", icetable.MetadataKey(r.table.Location, r.newest+1))
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "repaired: %s holds %d days\n", res.Table.MetadataLocation(), len(r.generations))
	} else {
		for _, d := range r.generations {
			if !slices.Contains(r.add, d.Day) {
				continue
			}
			res, err := r.table.Add(ctx, d)
			if err != nil {
				return fmt.Errorf("table commit of %s: %w", d.Day, err)
			}
			fmt.Fprintf(a.stdout, "committed %s generation %d to the table: v%d\n", d.Day, d.Generation, res.Version)
		}
	}
	cleared := 0
	for _, row := range r.marked {
		held, ok := r.rows[row.Day]
		gone, isGone := r.gone[row.Day]
		if (!ok || held.Generation != row.Generation) && (!isGone || gone != row.Generation) {
			continue // its generation is committed and left out above: the table still lacks it
		}
		ok, err := r.e.ledger.Partitions().ClearTableError(ctx, row.Key, row.Generation)
		if err != nil {
			return err
		}
		if ok {
			cleared++
		}
	}
	if len(r.marked) > 0 {
		fmt.Fprintf(a.stdout, "table errors cleared: %d of %d\n", cleared, len(r.marked))
	}
	if left := len(r.marked) - cleared; left > 0 {
		fmt.Fprintf(a.stdout, "%d partitions keep their table error (left out above, or exported again meanwhile): run the command again once they are committed\n", left)
	}
	return nil
}
