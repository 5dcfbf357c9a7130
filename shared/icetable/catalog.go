package icetable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// between.
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
// table.ErrCommitFailed (and reloads). Nothing is ever listed: a load reads
// the version hint, that metadata file, and probes the next versions until
// one is missing. It implements table.CatalogIO for the library's
// transactions; one catalog serves one table and one goroutine.
type catalog struct {
	store Store
	loc   string // key of the table's folder, no trailing slash
	// version and meta are the metadata last loaded or committed.
	version int
	meta    table.Metadata
	// keepVersions is how many older metadata files stay (the metadata
	// log's length); a commit deletes the one that falls out of it.
	keepVersions int
}

var _ table.CatalogIO = (*catalog)(nil)

func (c *catalog) ident() table.Identifier {
	return table.Identifier{"daybook", c.loc[strings.LastIndexByte(c.loc, '/')+1:]}
}

func (c *catalog) fsF(ctx context.Context) (iceio.IO, error) {
	return &fsys{ctx: ctx, store: c.store}, nil
}

// load reads the current metadata: ErrNoTable when there is none.
func (c *catalog) load(ctx context.Context) (*table.Table, error) {
	start := 1
	if b, err := c.store.Get(ctx, VersionHintKey(c.loc), 64); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			start = n
		}
	} else if !bucket.IsNotFound(err) {
		return nil, fmt.Errorf("read the table's version hint: %w", err)
	}
	var body []byte
	version := 0
	for n := start; ; n++ {
		if n == start+maxProbe {
			return nil, fmt.Errorf("table metadata past v%d: the version hint is %d versions behind", n, maxProbe)
		}
		b, err := c.store.Get(ctx, MetadataKey(c.loc, n), MaxMetadataObjectBytes)
		if bucket.IsNotFound(err) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read table metadata v%d: %w", n, err)
		}
		body, version = b, n
	}
	if version == 0 {
		if start > 1 {
			return nil, fmt.Errorf("the version hint names v%d but %s is missing", start, c.store.URI(MetadataKey(c.loc, start)))
		}
		return nil, ErrNoTable
	}
	meta, err := table.ParseMetadataBytes(body)
	if err != nil {
		return nil, fmt.Errorf("parse table metadata v%d: %w", version, err)
	}
	c.version, c.meta = version, meta
	return c.table(), nil
}

func (c *catalog) table() *table.Table {
	return table.New(c.ident(), c.meta, uri(c.store, MetadataKey(c.loc, c.version)), c.fsF, c)
}

// create writes version 1 of a new table; a table created meanwhile by
// another writer is loaded instead.
func (c *catalog) create(ctx context.Context, sc *iceberg.Schema, spec iceberg.PartitionSpec, props iceberg.Properties) (*table.Table, error) {
	meta, err := table.NewMetadata(sc, &spec, table.UnsortedSortOrder, uri(c.store, c.loc), props)
	if err != nil {
		return nil, fmt.Errorf("new table metadata: %w", err)
	}
	if err := c.put(ctx, 1, meta); errors.Is(err, table.ErrCommitFailed) {
		return c.load(ctx)
	} else if err != nil {
		return nil, err
	}
	return c.table(), nil
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
		return fmt.Errorf("write table metadata v%d: %w", n, err)
	}
	c.version, c.meta = n, meta
	// The hint is a shortcut, not the truth: a load probes past it, so a
	// failed (or lower, raced) hint costs a read, never a wrong table.
	_ = c.store.Put(ctx, VersionHintKey(c.loc), []byte(strconv.Itoa(n)), "text/plain")
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
	updated, err := table.UpdateTableMetadata(c.meta, updates, uri(c.store, MetadataKey(c.loc, c.version)))
	if err != nil {
		return nil, "", fmt.Errorf("apply table updates: %w", err)
	}
	if err := c.put(ctx, c.version+1, updated); err != nil {
		return nil, "", err
	}
	return updated, uri(c.store, MetadataKey(c.loc, c.version)), nil
}

// Load reads the table at location (the dataset folder's key) as a reader
// finds it: by the version hint, probing past it. ErrNoTable when there is
// none. The table reads through store, for scans and time travel.
func Load(ctx context.Context, store Store, location string) (*table.Table, error) {
	return newCatalog(store, location).load(ctx)
}

// newCatalog is the commit point of the table at location.
func newCatalog(store Store, location string) *catalog {
	return &catalog{store: store, loc: location, keepVersions: keepMetadataVersions}
}

// VersionOf is the version of a metadata file's location (0: not one).
func VersionOf(loc string) int {
	name := loc[strings.LastIndexByte(loc, '/')+1:]
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "v"), ".metadata.json"))
	return n
}
