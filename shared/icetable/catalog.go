package icetable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/layout"
)

// The table's metadata folder, beside its data: the layout of Iceberg's
// file-system ("Hadoop") tables, which DuckDB's iceberg_scan, Spark's path
// load and the version-hint readers find by themselves.
const (
	MetadataDir     = layout.TableDir
	VersionHintName = "version-hint.text"
	// maxProbe bounds how far past the version hint a load looks for newer
	// metadata files: each commit writes the hint right after its metadata
	// file, so the hint lags by at most the commits whose writer died in
	// between. Past it, the load lists the metadata folder instead
	// (catalog.newestListed).
	maxProbe = 32
)

// ErrNoTable is a load of a location that holds no table yet.
var ErrNoTable = errors.New("icetable: no table")

// MetadataKey is the key of version n's metadata file under the table at loc.
func MetadataKey(loc string, n int) string {
	return loc + "/" + MetadataDir + "/v" + strconv.Itoa(n) + ".metadata.json"
}

// VersionHintKey is the key of the table's version hint.
func VersionHintKey(loc string) string { return loc + "/" + MetadataDir + "/" + VersionHintName }

// catalog is the table's commit point, with no catalog service: version n+1
// of the metadata is written with If-None-Match, so of two writers that
// loaded version n exactly one commits and the other gets
// table.ErrCommitFailed (and reloads). A load reads the version hint, that
// metadata file, and probes the next versions until one is missing; only
// when the hint cannot be used does it list the metadata folder, once, for
// the newest version (newestListed). It implements table.CatalogIO for the
// library's transactions; one catalog serves one table and one goroutine.
//
// The metadata is the customer's bucket's content, so a load trusts none of
// it (check): the table's location must be its own, every metadata-log
// entry, manifest list and statistics file must be a file of its metadata/
// folder, and the properties that decide where and what the library
// writes, deletes and retries are daybook's (daybookProperties), whatever
// the file says. Metadata that fails a check is broken (BrokenError).
type catalog struct {
	store Store
	loc   string // key of the table's folder, no trailing slash
	// limits bound what one load, and the commit built on it, read; scope
	// counts it (a new one per load).
	limits Limits
	scope  *scope
	// version and meta are the metadata last loaded or committed.
	version int
	meta    table.Metadata
	// fresh: meta is a new table written after version (Rebuild), which
	// does not continue that version's metadata log.
	fresh bool
	// keepVersions is how many older metadata files stay (the metadata
	// log's length); a commit deletes the one that falls out of it.
	keepVersions int
	// staleHint: the version hint does not name version, the newest
	// metadata file the load found (it is missing, unreadable, not a
	// version's number as daybook writes it, lower, or naming a version
	// that is not there), or put's write of it failed; syncHint writes it.
	// hintErr is the last hint write's failure.
	staleHint bool
	hintErr   error
}

var _ table.CatalogIO = (*catalog)(nil)

func (c *catalog) ident() table.Identifier {
	return table.Identifier{"daybook", c.loc[strings.LastIndexByte(c.loc, '/')+1:]}
}

func (c *catalog) fsF(ctx context.Context) (iceio.IO, error) {
	return &fsys{ctx: ctx, store: c.store, scope: c.scope}, nil
}

// load reads the current metadata: ErrNoTable when there is none. With a
// usable hint it reads at most two metadata files (the hint's version and
// the newest), probing the versions between with HEAD requests, and lists
// nothing. A hint that cannot be used (missing, not a version's number, too
// large, naming a version that is not there, or more than maxProbe versions
// behind) costs one listing of the metadata folder (newestListed), which
// finds the newest version to read and probe past instead.
func (c *catalog) load(ctx context.Context) (*table.Table, error) {
	c.scope = newScope(c.store, c.loc, c.limits)
	start := 0 // the hint's version (0: none usable)
	// The hint is a shortcut, not the truth: one that does not read as a
	// version (or is larger than one) is ignored.
	var hint string // its text, trimmed ("": missing or too large)
	if b, err := c.store.Get(ctx, VersionHintKey(c.loc), 64); err == nil {
		hint = strings.TrimSpace(string(b))
		if n, err := strconv.Atoi(hint); err == nil && n > 0 && n < maxVersion {
			start = n
		}
	} else if !bucket.IsNotFound(err) && !errors.Is(err, bucket.ErrTooLarge) {
		return nil, fmt.Errorf("read the table's version hint: %w", err)
	}
	var version int
	var body []byte
	err := errHintUnusable
	if start > 0 {
		version, body, err = c.walk(ctx, start)
	}
	if errors.Is(err, errHintUnusable) {
		listed, lerr := c.newestListed(ctx)
		switch {
		case lerr != nil:
			return nil, lerr
		case listed == 0 && start > 0:
			// The hint names a version and none is left: the table's
			// metadata was deleted. A new table would hold only the next
			// day; the repair rebuilds every committed one.
			return nil, broken(VersionHintKey(c.loc), fmt.Errorf("the version hint names v%d but %s holds no metadata file", start, c.store.URI(c.metadataDir())))
		case listed == 0:
			return nil, ErrNoTable
		}
		version, body, err = c.walk(ctx, listed)
		switch {
		case errors.Is(err, errVersionMissing):
			// Deleted since the listing: a retry lists again.
			return nil, fmt.Errorf("table metadata v%d, listed in %s, is gone: %w", listed, c.store.URI(c.metadataDir()), err)
		case errors.Is(err, errPastProbe):
			return nil, broken(c.metadataDir(), fmt.Errorf("more than %d versions past v%d, the newest listed: %w", maxProbe, listed, err))
		}
	}
	if err != nil {
		return nil, err
	}
	meta, err := c.parse(version, body)
	if err != nil {
		return nil, err
	}
	c.version, c.meta = version, meta
	// Only a version read and checked here is ever written back
	// (syncHint), never the hint's own text: a hint at a version that
	// does not parse failed the load above, one at a version that is not
	// there is replaced by the newest listed.
	c.staleHint = hint != strconv.Itoa(version)
	return c.table(), nil
}

// maxVersion bounds the versions a hint or a listed file's name may name:
// a number at or past it is not a version (a load still probes past the
// newest one below it).
const maxVersion = 1 << 30

var (
	// errHintUnusable: the walk from the hint's version found it missing
	// (errVersionMissing) or ran past maxProbe (errPastProbe).
	errHintUnusable   = errors.New("the version hint cannot be used")
	errVersionMissing = fmt.Errorf("%w: its version is missing", errHintUnusable)
	errPastProbe      = fmt.Errorf("%w: newer versions past the probe", errHintUnusable)
)

// walk reads metadata version start and probes the next versions with HEAD
// until one is missing: the newest version and its body. start missing is
// errVersionMissing (wrapping the store's not-found error), a version
// start+maxProbe found is errPastProbe.
func (c *catalog) walk(ctx context.Context, start int) (int, []byte, error) {
	body, err := c.readMetadata(ctx, start)
	if bucket.IsNotFound(err) {
		return 0, nil, fmt.Errorf("%w: %w", errVersionMissing, err)
	}
	if err != nil {
		return 0, nil, err
	}
	version := start
	for n := start + 1; ; n++ {
		if n == start+maxProbe {
			return 0, nil, fmt.Errorf("%w: v%d is there", errPastProbe, n)
		}
		_, err := c.store.Head(ctx, MetadataKey(c.loc, n))
		if bucket.IsNotFound(err) {
			break
		}
		if err != nil {
			return 0, nil, fmt.Errorf("read table metadata v%d: %w", n, err)
		}
		version = n
	}
	if version != start {
		if body, err = c.readMetadata(ctx, version); err != nil {
			// Missing now: deleted since its probe, which no daybook
			// writer does (the cleanup deletes the oldest).
			return 0, nil, err
		}
	}
	return version, body, nil
}

func (c *catalog) metadataDir() string { return c.loc + "/" + MetadataDir + "/" }

// newestListed is the newest metadata version in the table's metadata
// folder, by one listing of its v* keys (0: none): only a key that is
// exactly <loc>/metadata/v<N>.metadata.json, N a version as daybook writes
// it (listedVersion), counts; every other key is ignored. The folder is the
// customer's bucket's: more than Limits.MetadataListed keys is a broken
// table (ErrTableLimit), the listing stopped a page past the limit.
func (c *catalog) newestListed(ctx context.Context) (int, error) {
	dir := c.metadataDir()
	limit := c.scope.limits.MetadataListed
	n, err := NewestVersion(ctx, c.store, c.loc, limit)
	if errors.Is(err, bucket.ErrTooMany) {
		return 0, broken(dir, fmt.Errorf("%w: the version hint cannot be used, and a load lists at most %d v* objects of the metadata folder to find the newest version: %w",
			ErrTableLimit, limit, err))
	}
	return n, err
}

// NewestVersion is the newest metadata version of the table at location as
// a load finds it without a hint: by one listing of at most limit v* keys
// of its metadata folder (more is bucket.ErrTooMany), of which only the
// keys MetadataKey writes count (0: none).
func NewestVersion(ctx context.Context, store Store, location string, limit int) (int, error) {
	dir := location + "/" + MetadataDir + "/"
	objs, err := store.List(ctx, dir+"v", limit)
	if err != nil {
		return 0, fmt.Errorf("list the table's metadata folder: %w", err)
	}
	newest := 0
	for _, o := range objs {
		newest = max(newest, listedVersion(dir, o.Key))
	}
	return newest, nil
}

// listedVersion is the version of the metadata file key in the folder dir
// (ending in "/"): N when key is exactly dir + "v<N>.metadata.json" with N
// a positive decimal without sign or leading zero below maxVersion, as
// MetadataKey writes it; 0 for any other key.
func listedVersion(dir, key string) int {
	rest, ok := strings.CutPrefix(key, dir+"v")
	if !ok {
		return 0
	}
	digits, ok := strings.CutSuffix(rest, ".metadata.json")
	if !ok || digits == "" || digits[0] == '0' || len(digits) > len(strconv.Itoa(maxVersion)) {
		return 0
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return 0
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n >= maxVersion {
		return 0
	}
	return n
}

// syncHint writes the version hint as the version last loaded or
// committed, when it does not name it (staleHint): a load had to go past
// it, or its write after a commit failed. Readers that follow only the
// hint (DuckDB's iceberg_scan, the bucket README's commands) see that
// version, not an older one, once an operation that finds the table
// already right (a repeated table commit or withdrawal, which commits nothing)
// has run. It is best-effort like the commit's own write: a failure is
// returned for the caller to report, never a reason to fail.
//
// A writer that committed a newer version since the load writes its own
// hint after its metadata file; so that this one does not land after it
// and set the hint back, a next version found first is left to that
// writer (the window left, between the probe and the write, is the one
// every commit's hint write has, and the next operation closes it).
func (c *catalog) syncHint(ctx context.Context) error {
	if !c.staleHint || c.version < 1 || c.fresh {
		return nil
	}
	_, err := c.store.Head(ctx, MetadataKey(c.loc, c.version+1))
	if err == nil {
		return nil
	}
	if !bucket.IsNotFound(err) {
		return fmt.Errorf("write the table's version hint v%d: read v%d: %w", c.version, c.version+1, err)
	}
	return c.writeHint(ctx, c.version)
}

// writeHint writes the version hint naming version v. A failure leaves the
// hint stale, with its error (Result.HintErr), for the next operation to
// write again.
func (c *catalog) writeHint(ctx context.Context, v int) error {
	if err := c.store.Put(ctx, VersionHintKey(c.loc), []byte(strconv.Itoa(v)), "text/plain"); err != nil {
		c.staleHint, c.hintErr = true, fmt.Errorf("write the table's version hint v%d: %w", v, err)
		return c.hintErr
	}
	c.staleHint, c.hintErr = false, nil
	return nil
}

// readMetadata reads metadata file version n, at most Limits.MetadataBytes.
func (c *catalog) readMetadata(ctx context.Context, n int) ([]byte, error) {
	key := MetadataKey(c.loc, n)
	b, err := c.store.Get(ctx, key, c.scope.limits.MetadataBytes)
	switch {
	case errors.Is(err, bucket.ErrTooLarge):
		return nil, broken(key, fmt.Errorf("%w: table metadata v%d is larger than %d bytes", ErrTableLimit, n, c.scope.limits.MetadataBytes))
	case err != nil:
		return nil, err
	}
	if err := c.scope.count(key, int64(len(b))); err != nil {
		return nil, broken(key, err)
	}
	return b, nil
}

// parse decodes metadata file version n with daybook's properties in place
// of the file's own, and checks it.
func (c *catalog) parse(n int, body []byte) (table.Metadata, error) {
	key := MetadataKey(c.loc, n)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, broken(key, fmt.Errorf("parse table metadata v%d: %w", n, err))
	}
	var props map[string]string
	if p, ok := raw["properties"]; ok {
		if err := json.Unmarshal(p, &props); err != nil {
			return nil, broken(key, fmt.Errorf("parse table metadata v%d: properties: %w", n, err))
		}
	}
	if want := daybookProperties(props); !maps.Equal(want, props) {
		p, err := json.Marshal(want)
		if err == nil {
			raw["properties"] = p
			body, err = json.Marshal(raw)
		}
		if err != nil {
			return nil, fmt.Errorf("table metadata v%d: %w", n, err)
		}
	}
	meta, err := table.ParseMetadataBytes(body)
	if err != nil {
		return nil, broken(key, fmt.Errorf("parse table metadata v%d: %w", n, err))
	}
	if err := c.check(meta); err != nil {
		return nil, broken(key, fmt.Errorf("table metadata v%d: %w", n, err))
	}
	return meta, nil
}

// check refuses metadata that is not this table's own: another format
// version or location, a metadata-log entry, manifest list or statistics
// file that is not a file of the table's metadata/ folder, more snapshots
// than Limits.Snapshots, or properties other than daybook's.
func (c *catalog) check(meta table.Metadata) error {
	if v := meta.Version(); v != 2 {
		return fmt.Errorf("format version %d; daybook's tables are version 2", v)
	}
	if got, want := strings.TrimSuffix(meta.Location(), "/"), uri(c.store, c.loc); got != want {
		return fmt.Errorf("%w: its location is %s, not the table's %s", ErrOutsideTable, got, want)
	}
	inFolder := func(what, path, suffix string) error {
		if _, err := c.scope.writable(path); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if !strings.HasSuffix(path, suffix) {
			return fmt.Errorf("%w: %s %s is not a %s file", ErrOutsideTable, what, path, suffix)
		}
		return nil
	}
	for e := range meta.PreviousFiles() {
		if err := inFolder("metadata-log entry", e.MetadataFile, ".metadata.json"); err != nil {
			return err
		}
	}
	snaps := meta.Snapshots()
	if len(snaps) > c.scope.limits.Snapshots {
		return fmt.Errorf("%w: %d snapshots; daybook keeps at most %d", ErrTableLimit, len(snaps), c.scope.limits.Snapshots)
	}
	for _, s := range snaps {
		if err := inFolder(fmt.Sprintf("snapshot %d's manifest list", s.SnapshotID), s.ManifestList, ".avro"); err != nil {
			return err
		}
	}
	for f := range meta.Statistics() {
		if err := inFolder("statistics file", f.StatisticsPath, ""); err != nil {
			return err
		}
	}
	for f := range meta.PartitionStatistics() {
		if err := inFolder("partition statistics file", f.StatisticsPath, ""); err != nil {
			return err
		}
	}
	if want := daybookProperties(meta.Properties()); !maps.Equal(want, map[string]string(meta.Properties())) {
		return errors.New("its write.*, commit.* and history.* properties are not daybook's")
	}
	return nil
}

// classify tells a failure of building or committing a change to the
// table as loaded: a failure to reach the store (or of the context, or of
// a data file's footer) stays as it is, and the attempt fails; anything
// else comes from what the table's files hold (a manifest that does not
// decode, a file the metadata names that is missing, one past the limits)
// and no retry changes it, so the table is broken (*BrokenError naming the
// loaded metadata file, unless the error names another object).
func (c *catalog) classify(err error) error {
	return contentError(MetadataKey(c.loc, c.version), err)
}

// contentError is err as classify tells it, key the object at fault when
// the error names none.
func contentError(key string, err error) error {
	var se *storeError
	if err == nil || errors.Is(err, ErrBroken) || errors.As(err, &se) || errors.Is(err, errDataFile) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return broken(key, err)
}

func (c *catalog) table() *table.Table {
	return table.New(c.ident(), c.meta, uri(c.store, MetadataKey(c.loc, c.version)), c.fsF, c)
}

// create writes version 1 of a new table; a table created meanwhile by
// another writer is loaded instead.
func (c *catalog) create(ctx context.Context, sc *iceberg.Schema, spec iceberg.PartitionSpec) (*table.Table, error) {
	meta, err := newMetadata(c.store, c.loc, sc, spec)
	if err != nil {
		return nil, err
	}
	if err := c.put(ctx, 1, meta); errors.Is(err, table.ErrCommitFailed) {
		return c.load(ctx)
	} else if err != nil {
		return nil, err
	}
	return c.table(), nil
}

// newMetadata is the metadata of a new table at location, with daybook's
// properties and no snapshot.
func newMetadata(store Store, location string, sc *iceberg.Schema, spec iceberg.PartitionSpec) (table.Metadata, error) {
	props := maps.Clone(tableProperties)
	props["format-version"] = "2"
	meta, err := table.NewMetadata(sc, &spec, table.UnsortedSortOrder, uri(store, location), props)
	if err != nil {
		return nil, fmt.Errorf("new table metadata: %w", err)
	}
	return meta, nil
}

// put writes meta as version n if no writer did, then the version hint.
func (c *catalog) put(ctx context.Context, n int, meta table.Metadata) error {
	body, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("encode table metadata: %w", err)
	}
	if err := c.store.PutIfAbsent(ctx, MetadataKey(c.loc, n), body, "application/json"); err != nil {
		if errors.Is(err, bucket.ErrExists) {
			return fmt.Errorf("%w: v%d was committed by another writer", table.ErrCommitFailed, n)
		}
		return fmt.Errorf("write table metadata v%d: %w", n, &storeError{err})
	}
	c.version, c.meta, c.fresh = n, meta, false
	// The hint is a shortcut, not the truth: a load probes past it, so a
	// failed (or lower, raced) hint costs a read, never a wrong table;
	// the table's next operation writes it again (syncHint).
	_ = c.writeHint(ctx, n) // a failure is kept in c.hintErr
	if old := n - c.keepVersions - 1; c.keepVersions > 0 && old >= 1 {
		_ = c.store.Delete(ctx, MetadataKey(c.loc, old))
	}
	return nil
}

// LoadTable is the table as last loaded or committed.
func (c *catalog) LoadTable(ctx context.Context, _ table.Identifier) (*table.Table, error) {
	if c.meta == nil {
		return c.load(ctx)
	}
	return c.table(), nil
}

// CommitTable applies updates to the metadata the transaction started from
// and writes it as the next version, conditionally.
func (c *catalog) CommitTable(ctx context.Context, _ table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	for _, r := range reqs {
		if err := r.Validate(c.meta); err != nil {
			return nil, "", fmt.Errorf("%w: %w", table.ErrCommitFailed, err)
		}
	}
	previous := uri(c.store, MetadataKey(c.loc, c.version))
	if c.fresh {
		previous = ""
	}
	updated, err := table.UpdateTableMetadata(c.meta, updates, previous)
	if err != nil {
		return nil, "", fmt.Errorf("apply table updates: %w", err)
	}
	// What is written is held to what a load accepts (its paths the
	// table's own), before it is written.
	if err := c.check(updated); err != nil {
		return nil, "", fmt.Errorf("table metadata v%d as committed: %w", c.version+1, err)
	}
	if err := c.put(ctx, c.version+1, updated); err != nil {
		return nil, "", err
	}
	return updated, uri(c.store, MetadataKey(c.loc, c.version)), nil
}

// Load reads the table at location (the dataset folder's key) as a reader
// finds it: by the version hint, probing past it (by one listing of its
// metadata folder when the hint cannot be used). ErrNoTable when there is
// none. The table reads through store, for scans and time travel.
// Metadata that cannot be used as it is in the bucket is a *BrokenError
// (ErrBroken); other errors are the store's. Reads are bounded by
// DefaultLimits.
func Load(ctx context.Context, store Store, location string) (*table.Table, error) {
	return newCatalog(store, location, Limits{}).load(ctx)
}

// newCatalog is the commit point of the table at location.
func newCatalog(store Store, location string, limits Limits) *catalog {
	return &catalog{store: store, loc: location, limits: limits, keepVersions: keepMetadataVersions}
}

// VersionOf is the version of a metadata file's location (0: not one).
func VersionOf(loc string) int {
	name := loc[strings.LastIndexByte(loc, '/')+1:]
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "v"), ".metadata.json"))
	return n
}
