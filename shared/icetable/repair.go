package icetable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/layout"
)

// RepairCommand is the command that repairs the table of dataset ds of an
// account (cmd/daybook's table repair): the exporter's message and the
// ledger's table error name it, a test runs it as they print it.
func RepairCommand(accountID, ds string) string {
	return "daybook table repair --account " + accountID + " --dataset " + ds
}

// PropRepairedAfter names, on the snapshot a repair writes, the metadata
// version it was written after (the broken one, which stays in place).
const PropRepairedAfter = "daybook.repaired-after"

// ErrNotInFolder: a table commit names a file that is not in its day's folder
// of the table (a forged manifest's); nothing is committed.
var ErrNotInFolder = errors.New("icetable: a data file outside its day's folder")

// checkFiles refuses a table commit of day that names a file outside the
// day's folder of the table (<location>/dt=YYYY-MM-DD/): a table never
// lists another day's, dataset's or account's file.
func (t *Table) checkFiles(day civil.Date, files []string) error {
	dir := t.Location + "/dt=" + day.String() + "/"
	for _, k := range files {
		rest, ok := strings.CutPrefix(k, dir)
		if !ok || strings.Contains(rest, "/") || !layout.IsDataKey(k) {
			return fmt.Errorf("%w: %s is not a data file of %s", ErrNotInFolder, k, dir)
		}
	}
	return nil
}

// Rebuild writes version after+1 of the table's metadata: a new table
// holding exactly the given days' files, each as its table commit lists them,
// in one snapshot. It repairs a table whose metadata cannot be used (after
// is its newest metadata version): nothing of the old table is read, and
// the files up to version after stay where they are, unreferenced (a reader
// of the version hint, or of the newest version, never reads them again).
// It writes only in the table's metadata/ folder. A version after+1 that
// exists (another writer, or a version past after) is
// table.ErrCommitFailed, with nothing written.
func (t *Table) Rebuild(ctx context.Context, after int, days []Committed) (Result, error) {
	if after < 0 {
		return Result{}, fmt.Errorf("rebuild the table after version %d", after)
	}
	sc, err := t.schema()
	if err != nil {
		return Result{}, err
	}
	spec, err := specOf(t.Dataset, sc)
	if err != nil {
		return Result{}, err
	}
	meta, err := newMetadata(t.Store, t.Location, sc, spec)
	if err != nil {
		return Result{}, err
	}
	cat := newCatalog(t.Store, t.Location, t.Limits)
	cat.scope = newScope(t.Store, t.Location, t.Limits)
	cat.version, cat.meta, cat.fresh = after, meta, true
	if len(days) == 0 {
		if err := cat.put(ctx, after+1, meta); err != nil {
			return Result{}, err
		}
		r := resultOf(cat.table(), true, 1)
		r.HintErr = cat.hintErr
		return r, nil
	}
	tbl := cat.table()
	slices.SortFunc(days, func(a, b Committed) int { return a.Day.Compare(b.Day) })
	var files []iceberg.DataFile
	for i, d := range days {
		if i > 0 && d.Day == days[i-1].Day {
			return Result{}, fmt.Errorf("rebuild: %s is delivered twice", d.Day)
		}
		var keys []string
		for _, f := range d.Files {
			keys = append(keys, f.Key)
		}
		if err := t.checkFiles(d.Day, keys); err != nil {
			return Result{}, err
		}
		for _, f := range d.Files {
			df, err := t.dataFile(ctx, tbl, sc, d.Day, f)
			if err != nil {
				return Result{}, err
			}
			files = append(files, df)
		}
	}
	txn := tbl.NewTransaction()
	props := iceberg.Properties{PropOperation: "repair", PropRepairedAfter: strconv.Itoa(after)}
	if err := txn.ReplaceDataFilesWithDataFiles(ctx, nil, files, props); err != nil {
		return Result{}, fmt.Errorf("rebuild: %w", err)
	}
	committed, err := txn.Commit(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("rebuild table %s as v%d: %w", t.Store.URI(t.Location), after+1, err)
	}
	r := resultOf(committed, true, 1)
	r.HintErr = cat.hintErr
	return r, nil
}

// DayFiles are the data files of the table's current snapshot by day:
// their keys in the bucket, rows and sizes.
func DayFiles(ctx context.Context, tbl *table.Table) (map[civil.Date][]FileStat, error) {
	files, err := LiveFiles(ctx, tbl)
	if err != nil {
		return nil, err
	}
	out := map[civil.Date][]FileStat{}
	for _, f := range files {
		d := DayOf(f)
		key := f.FilePath()
		// s3://bucket/key, gs://bucket/key, abfss://container@host/key
		if _, uri, ok := strings.Cut(key, "://"); ok {
			if _, rest, ok := strings.Cut(uri, "/"); ok {
				key = rest
			}
		}
		out[d] = append(out[d], FileStat{Key: key, Rows: f.Count(), Bytes: f.FileSizeBytes()})
	}
	return out, nil
}

// FileStat is a data file as the table lists it.
type FileStat struct {
	Key         string
	Rows, Bytes int64
}
