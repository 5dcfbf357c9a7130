// Package icetable keeps an Apache Iceberg table (format v2) of one
// dataset of one account beside its Hive-layout folders, with no catalog
// service: the table's data files are the partitions' own part-* files, its
// metadata lives in <prefix>/v1/<dataset>/metadata/ (vN.metadata.json and a
// version hint), and each commit writes the next metadata version with
// If-None-Match (catalog.go), so concurrent writers of one table serialise
// by retrying.
//
// A day's files change in two commits around the folder's commit protocol:
//
//   - Withdraw, before the generation touches the folder (before the old
//     _SUCCESS goes and data files are overwritten), removes the day's files
//     from the current snapshot, so the current snapshot never references a
//     file that is about to change or go;
//   - Add, after _SUCCESS, adds the new generation's files in one
//     snapshot whose summary names the generation, day, reason and manifest.
//
// A day the table does not hold is simply added; a generation the table
// already holds (the same files, sizes and rows) is not made again, so a
// run that died after its table commit converges when repeated. The
// library (github.com/apache/iceberg-go) writes every manifest, manifest
// list, snapshot summary and metadata file; this package decides what goes
// in and owns the conditional commit.
package icetable

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// Summary properties of daybook's snapshots.
const (
	PropOperation  = "daybook.operation" // deliver (Add) or withdraw, as stored since the first tables
	PropDay        = "daybook.day"
	PropGeneration = "daybook.generation"
	PropReason     = "daybook.reason"
	PropManifest   = "daybook.manifest" // the store's URI of the generation's _manifest.json
	PropRunID      = "daybook.run-id"
)

// Retention is when old snapshots expire: a snapshot older than MaxAge
// expires, and beyond the newest MaxSnapshots every older one does; the
// current snapshot never expires. Expiry drops snapshots from the metadata
// only: it deletes no file, since a part file's name is reused by the
// day's next generation (the folder protocol deletes and replaces files).
type Retention struct {
	MaxAge       time.Duration
	MaxSnapshots int
}

// DefaultRetention keeps a week of snapshots, at most 100.
var DefaultRetention = Retention{MaxAge: 7 * 24 * time.Hour, MaxSnapshots: 100}

// tableProperties are daybook's table properties, set when the table is
// created and put in place of the file's own at every load
// (daybookProperties). Manifests merge once a snapshot has more than 16, so
// the manifest list and a commit's reads stay bounded whatever the table's
// age; the metadata log keeps 20 versions, and daybook's own commit deletes
// the one metadata file that falls out of it (the library deletes none:
// delete-after-commit is off); the library never retries a commit itself
// (Table.retry reloads and builds again).
var tableProperties = iceberg.Properties{
	table.ManifestMergeEnabledKey:             "true",
	table.ManifestMinMergeCountKey:            "16",
	table.MetadataPreviousVersionsMaxKey:      "20",
	table.MetadataDeleteAfterCommitEnabledKey: "false",
	table.CommitNumRetriesKey:                 "0",
	table.ParquetCompressionKey:               "zstd",
}

// daybookProperties are props with daybook's in place of every property
// that decides where the library writes (write.metadata.path,
// write.data.path, the object-storage layout), what it deletes
// (write.metadata.delete-after-commit.enabled, history.expire.*), how it
// retries (commit.retry.*) or merges: every write.*, commit.* and history.*
// key is daybook's, a planted one dropped. Other properties stay.
func daybookProperties(props map[string]string) iceberg.Properties {
	out := iceberg.Properties{}
	for k, v := range props {
		if !strings.HasPrefix(k, "write.") && !strings.HasPrefix(k, "commit.") && !strings.HasPrefix(k, "history.") {
			out[k] = v
		}
	}
	maps.Copy(out, tableProperties)
	return out
}

const keepMetadataVersions = 20

// DefaultAttempts is how many times a commit is tried against a table that
// other writers keep moving.
const DefaultAttempts = 12

// Table is one dataset's Iceberg table in one account's bucket.
type Table struct {
	Store Store
	// Location is the key of the dataset's folder, <prefix>/v1/<dataset>,
	// without a trailing slash: the table's location.
	Location string
	Dataset  dataset.Dataset
	// Retention; zero is DefaultRetention.
	Retention Retention
	// Attempts; zero is DefaultAttempts.
	Attempts int
	// Limits bound what one commit reads; zero fields are DefaultLimits'.
	Limits Limits
}

// Committed is a committed generation of one day, as its manifest lists it.
type Committed struct {
	Day         civil.Date
	Generation  int64
	Reason      string
	RunID       string
	ManifestKey string // the _manifest.json key, in the bucket
	Files       []manifest.File
}

// Result tells what a commit did.
type Result struct {
	// Changed is false when the table already was as asked (nothing written).
	Changed bool
	// Version is the table's metadata version after the commit.
	Version int
	// SnapshotID is the current snapshot's id (0: none).
	SnapshotID int64
	// Attempts is how many commits were tried (conflicts retried).
	Attempts int
	// Table is the table as committed, or as found when nothing changed
	// (nil: no table).
	Table *table.Table
	// HintErr is the failure of writing the version hint after the
	// operation (nil: written, or already right). It never fails the
	// operation: a reader that loads through daybook probes past a stale
	// hint, and the table's next operation writes it again; a reader that
	// follows only the hint sees the table as of the version it names
	// until then.
	HintErr error
}

// Withdraw removes day's files from the table's current snapshot, if it
// has any, in one snapshot; generation is the generation about to be
// written. A missing table is left missing.
func (t *Table) Withdraw(ctx context.Context, day civil.Date, generation int64) (Result, error) {
	return t.retry(ctx, false, func(ctx context.Context, tbl *table.Table) (*table.Transaction, error) {
		current, err := t.dayFiles(ctx, tbl, day)
		if err != nil || len(current) == 0 {
			return nil, err
		}
		txn := tbl.NewTransaction()
		props := iceberg.Properties{PropOperation: "withdraw", PropDay: day.String(), PropGeneration: strconv.FormatInt(generation, 10)}
		if err := txn.ReplaceDataFilesWithDataFiles(ctx, current, nil, props); err != nil {
			return nil, fmt.Errorf("withdraw %s: %w", day, err)
		}
		return txn, nil
	})
}

// Add makes d's files the day's files in the table's current snapshot,
// in one table commit (replacing any the day still has), creating the table or
// adding the dataset's newer columns first, and expires old snapshots.
func (t *Table) Add(ctx context.Context, d Committed) (Result, error) {
	want, err := t.schema()
	if err != nil {
		return Result{}, err
	}
	keys := make([]string, 0, len(d.Files))
	for _, f := range d.Files {
		keys = append(keys, f.Key)
	}
	if err := t.checkFiles(d.Day, keys); err != nil {
		return Result{}, err
	}
	return t.retry(ctx, true, func(ctx context.Context, tbl *table.Table) (*table.Transaction, error) {
		current, err := t.dayFiles(ctx, tbl, d.Day)
		if err != nil {
			return nil, err
		}
		txn := tbl.NewTransaction()
		if missing(tbl.Schema(), want) {
			u := txn.UpdateSchema(true, false, table.WithNameMapping(tbl.Metadata().NameMapping())).UnionByNameWith(want)
			if err := u.Commit(); err != nil {
				return nil, fmt.Errorf("add the dataset's new columns: %w", err)
			}
		} else if t.same(current, d.Files) {
			return nil, nil
		}
		sc := tbl.Schema()
		if staged, err := txn.StagedTable(); err == nil {
			sc = staged.Schema() // with the columns the transaction added
		}
		files := make([]iceberg.DataFile, 0, len(d.Files))
		for _, f := range d.Files {
			df, err := t.dataFile(ctx, tbl, sc, d.Day, f)
			if err != nil {
				return nil, err
			}
			files = append(files, df)
		}
		props := iceberg.Properties{PropOperation: "deliver", PropDay: d.Day.String(),
			PropGeneration: strconv.FormatInt(d.Generation, 10), PropReason: d.Reason, PropRunID: d.RunID,
			PropManifest: uri(t.Store, d.ManifestKey)}
		if overlaps(current, files) {
			// The day was not withdrawn and the new generation reused its
			// files' names: Iceberg cannot remove and add one path in one
			// snapshot, so the transaction holds two (old out, new in),
			// committed as one metadata version.
			wprops := iceberg.Properties{PropOperation: "withdraw", PropDay: d.Day.String(), PropGeneration: props[PropGeneration]}
			if err := txn.ReplaceDataFilesWithDataFiles(ctx, current, nil, wprops); err != nil {
				return nil, fmt.Errorf("withdraw %s: %w", d.Day, err)
			}
			current = nil
		}
		if err := txn.ReplaceDataFilesWithDataFiles(ctx, current, files, props); err != nil {
			return nil, fmt.Errorf("replace the files of %s: %w", d.Day, err)
		}
		if err := t.expire(txn, tbl); err != nil {
			return nil, err
		}
		return txn, nil
	})
}

// retry builds a transaction on the table as loaded and commits it; a
// conflict (another writer committed the version first) reloads the table
// and builds again. build returns a nil transaction when there is nothing
// to do. create makes the table when there is none.
func (t *Table) retry(ctx context.Context, create bool, build func(context.Context, *table.Table) (*table.Transaction, error)) (Result, error) {
	attempts := cmpOr(t.Attempts, DefaultAttempts)
	for n := 1; ; n++ {
		cat := newCatalog(t.Store, t.Location, t.Limits)
		tbl, err := cat.load(ctx)
		if errors.Is(err, ErrNoTable) {
			if !create {
				return Result{Attempts: n}, nil
			}
			tbl, err = t.create(ctx, cat)
		}
		if err != nil {
			return Result{Attempts: n}, err
		}
		// A hint the load had to go past is written as the version it
		// found, or the commit wrote: a repeated run that finds the table
		// already right commits nothing, and would otherwise leave a hint
		// reader on an older version. A failed operation writes no hint
		// (a commit's metadata file may have landed, or another writer's
		// did; in an outage it would only add requests that fail).
		txn, err := build(ctx, tbl)
		if err != nil {
			return Result{Attempts: n}, cat.classify(err)
		}
		if txn == nil {
			r := resultOf(tbl, false, n)
			r.HintErr = cat.syncHint(ctx)
			return r, nil
		}
		committed, err := txn.Commit(ctx)
		if err == nil {
			t.dropExpired(ctx, cat, tbl.Metadata(), committed.Metadata())
			r := resultOf(committed, true, n)
			r.HintErr = cat.hintErr
			return r, nil
		}
		if !errors.Is(err, table.ErrCommitFailed) || n >= attempts {
			if !errors.Is(err, table.ErrCommitFailed) {
				err = cat.classify(err)
			}
			return Result{Attempts: n}, fmt.Errorf("commit table %s: %w", t.Store.URI(t.Location), err)
		}
	}
}

func resultOf(tbl *table.Table, changed bool, n int) Result {
	r := Result{Changed: changed, Version: VersionOf(tbl.MetadataLocation()), Attempts: n, Table: tbl}
	if s := tbl.CurrentSnapshot(); s != nil {
		r.SnapshotID = s.SnapshotID
	}
	return r
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func (t *Table) schema() (*iceberg.Schema, error) { return SchemaOf(t.Dataset) }

func (t *Table) create(ctx context.Context, cat *catalog) (*table.Table, error) {
	sc, err := t.schema()
	if err != nil {
		return nil, err
	}
	spec, err := specOf(t.Dataset, sc)
	if err != nil {
		return nil, err
	}
	return cat.create(ctx, sc, spec)
}

// dayFiles are the data files of day in the table's current snapshot.
func (t *Table) dayFiles(ctx context.Context, tbl *table.Table, day civil.Date) ([]iceberg.DataFile, error) {
	files, err := LiveFiles(ctx, tbl, day)
	if err != nil {
		return nil, fmt.Errorf("the files of %s: %w", day, err)
	}
	return files, nil
}

// LiveFiles are the data files of the table's current snapshot: every live
// entry of its data manifests, of the given days only when days are given
// (a manifest whose dt summary leaves them out is then not read). A scan's
// plan is not that: it drops files whose record count shows they hold no
// rows, such as an empty day's one valid empty file, which is still the
// day's file, and which the day's next generation, reusing its name, must
// replace.
func LiveFiles(ctx context.Context, tbl *table.Table, days ...civil.Date) ([]iceberg.DataFile, error) {
	s := tbl.CurrentSnapshot()
	if s == nil {
		return nil, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := s.Manifests(fs)
	if err != nil {
		return nil, contentError(s.ManifestList, fmt.Errorf("read the manifest list: %w", err))
	}
	wanted := func(d civil.Date) bool { return len(days) == 0 || slices.Contains(days, d) }
	var files []iceberg.DataFile
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData ||
			(len(days) > 0 && !slices.ContainsFunc(days, func(d civil.Date) bool { return mayHold(m, d) })) {
			continue
		}
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return nil, contentError(m.FilePath(), fmt.Errorf("read manifest %s: %w", m.FilePath(), err))
		}
		for _, e := range entries {
			if wanted(DayOf(e.DataFile())) {
				files = append(files, e.DataFile())
			}
		}
	}
	return files, nil
}

// mayHold reports whether manifest m may list files of day: false only
// when its summary of the dt partition field (the table's one, a date:
// 4 bytes little-endian, Iceberg's single-value serialization) has bounds
// that leave day out.
func mayHold(m iceberg.ManifestFile, day civil.Date) bool {
	ps := m.Partitions()
	if len(ps) != 1 || ps[0].LowerBound == nil || ps[0].UpperBound == nil || len(*ps[0].LowerBound) != 4 || len(*ps[0].UpperBound) != 4 {
		return true
	}
	lo, hi := int32(binary.LittleEndian.Uint32(*ps[0].LowerBound)), int32(binary.LittleEndian.Uint32(*ps[0].UpperBound))
	return lo <= day.EpochDays() && day.EpochDays() <= hi
}

// DayOf is the day of a data file's dt partition (the zero date if it has
// none).
func DayOf(f iceberg.DataFile) civil.Date {
	if v, ok := f.Partition()[partitionFieldID]; ok {
		if d := dateOf(v); d != -1<<31 {
			return civil.FromEpochDays(d)
		}
	}
	return civil.Date{}
}

func dateOf(v any) int32 {
	switch v := v.(type) {
	case iceberg.Date:
		return int32(v)
	case int32:
		return v
	case int64:
		return int32(v)
	case int:
		return int32(v)
	}
	return -1 << 31
}

// same reports whether current are exactly files (paths, sizes, rows).
func (t *Table) same(current []iceberg.DataFile, files []manifest.File) bool {
	if len(current) != len(files) {
		return false
	}
	type stat struct{ rows, bytes int64 }
	have := make(map[string]stat, len(current))
	for _, df := range current {
		have[df.FilePath()] = stat{df.Count(), df.FileSizeBytes()}
	}
	for _, f := range files {
		if have[uri(t.Store, f.Key)] != (stat{f.Rows, f.Bytes}) {
			return false
		}
	}
	return true
}

// overlaps reports whether a and b share a path.
func overlaps(a, b []iceberg.DataFile) bool {
	paths := make(map[string]bool, len(a))
	for _, f := range a {
		paths[f.FilePath()] = true
	}
	for _, f := range b {
		if paths[f.FilePath()] {
			return true
		}
	}
	return false
}

// missing reports whether want has a column the table's schema lacks.
func missing(have, want *iceberg.Schema) bool {
	for _, f := range want.Fields() {
		if _, ok := have.FindFieldByName(f.Name); !ok {
			return true
		}
	}
	return false
}

// maxDeletesPerCommit bounds the objects a commit deletes after it (the
// expired snapshots' manifests and manifest lists): with the default
// retention a commit expires about one snapshot, so this is never reached
// but after a change of the retention rule; what it leaves is an
// unreferenced object, never a missing one.
const maxDeletesPerCommit = 64

// dropExpired deletes, after a commit from before to after, what only the
// snapshots it expired needed: their manifest lists (a list belongs to its
// snapshot alone) and the manifests no retained snapshot lists. The table's
// history is one line and a manifest, once a snapshot stops listing it, is
// never listed again (a merge or rewrite writes new ones), so the snapshots
// that list a manifest are consecutive: a manifest an expired snapshot lists
// is needed by a retained one exactly when the oldest retained snapshot
// lists it. That is one manifest list read per expired snapshot and one
// more, and nothing is listed. Data files are never deleted (their names are
// reused by the day's next generation). A failed read or delete leaves
// unreferenced objects, nothing worse.
func (t *Table) dropExpired(ctx context.Context, cat *catalog, before, after table.Metadata) {
	kept := map[int64]bool{}
	var oldest *table.Snapshot
	for i, s := range after.Snapshots() {
		kept[s.SnapshotID] = true
		if oldest == nil || s.SequenceNumber < oldest.SequenceNumber {
			oldest = &after.Snapshots()[i]
		}
	}
	var expired []table.Snapshot
	for _, s := range before.Snapshots() {
		if !kept[s.SnapshotID] {
			expired = append(expired, s)
		}
	}
	if len(expired) == 0 {
		return
	}
	fs := &fsys{ctx: ctx, store: t.Store, scope: cat.scope}
	var drop []string
	if needed, ok := manifestPaths(fs, oldest); ok {
		seen := map[string]bool{}
		for _, s := range expired {
			if oldest == nil || s.SequenceNumber >= oldest.SequenceNumber {
				drop = nil // not a prefix of the history: keep every manifest
				break
			}
			paths, ok := manifestPaths(fs, &s)
			if !ok {
				break // unreadable, or the commit's reads are spent: keep what is left
			}
			for p := range paths {
				if !needed[p] && !seen[p] {
					seen[p] = true
					drop = append(drop, p)
				}
			}
		}
	}
	slices.Sort(drop)
	for _, s := range expired {
		if s.ManifestList != "" {
			drop = append(drop, s.ManifestList) // after the manifests it names
		}
	}
	// Only a file of the table's metadata/ folder is ever deleted (fsys
	// refuses any other), and only a manifest or manifest list.
	drop = slices.DeleteFunc(drop, func(p string) bool { return !strings.HasSuffix(p, ".avro") })
	for _, p := range drop[:min(len(drop), maxDeletesPerCommit)] {
		_ = fs.Remove(p)
	}
}

// manifestPaths are the manifests s lists (none for a nil snapshot); false
// when its manifest list cannot be read.
func manifestPaths(fs *fsys, s *table.Snapshot) (map[string]bool, bool) {
	out := map[string]bool{}
	if s == nil {
		return out, true
	}
	ms, err := s.Manifests(fs)
	if err != nil {
		return nil, false
	}
	for _, m := range ms {
		out[m.FilePath()] = true
	}
	return out, true
}

// expire stages the retention rule on txn.
func (t *Table) expire(txn *table.Transaction, tbl *table.Table) error {
	r := t.Retention
	if r.MaxAge <= 0 {
		r.MaxAge = DefaultRetention.MaxAge
	}
	if r.MaxSnapshots <= 0 {
		r.MaxSnapshots = DefaultRetention.MaxSnapshots
	}
	// The new snapshot is one more than the table holds.
	if len(tbl.Metadata().Snapshots())+1 > r.MaxSnapshots {
		return txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(r.MaxSnapshots), table.WithPostCommit(false))
	}
	return txn.ExpireSnapshots(table.WithOlderThan(r.MaxAge), table.WithRetainLast(1), table.WithPostCommit(false))
}
