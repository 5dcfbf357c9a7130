package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/destination"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/partition"
	"github.com/daybook-dev/daybook/shared/source"
	"github.com/daybook-dev/daybook/shared/upload"
)

// Buckets gives the S3 client acting in an account's destination.
type Buckets interface {
	Client(accountID string, d account.Destination) bucket.API
}

// Stores opens an account's destination bucket on a store other than S3
// (GCS, Azure) with the destination's credentials, encryption and tags;
// *destination.Clients has it.
type Stores interface {
	Open(ctx context.Context, accountID string, d account.Destination, opts bucket.Options) (*bucket.Bucket, error)
}

// rollCheckRows is the most rows written between two checks of a data
// file's size against MaxFileBytes (see writeData): a whole batch of the
// source's. The size grows only when a row group is written out (128k rows
// by default), so checking more often would only cut the encoder's work
// into smaller pieces: each piece is one start of its column workers. A
// row group that ends inside a batch and takes the file past MaxFileBytes
// leaves the rest of the batch to the same file, a short row group.
const rollCheckRows = source.BatchRows

// ExportConfig sets file sizes and upload concurrency.
type ExportConfig struct {
	Stage        string
	MaxFileBytes int64 // roll to the next part-NNNNN file past this size (default 256 MiB)
	PartSize     int64 // multipart part size (default: see partSize)
	Concurrency  int   // concurrent part uploads per file
	RowGroupRows int64
	// SliceRows is the rows-per-slice target: a day expected to hold more
	// is exported in slices (slices.go); 0 never slices. MaxSlices caps
	// the slices of a day (0: DefaultMaxSlices).
	SliceRows int64
	MaxSlices int
	// Pipeline is how many batches the source may read ahead of the
	// encoder, on its own goroutine (pipeline.go): 0 chooses from the CPUs
	// the process may use (pipelineDepth), a negative value reads and
	// encodes on one goroutine. A pipelined export also encodes a Parquet
	// file's columns on several goroutines (encodeWorkers).
	Pipeline int
}

// pipelineDepth is the configured read-ahead, or the one for this process.
func (c ExportConfig) pipelineDepth() int {
	switch {
	case c.Pipeline < 0:
		return 0
	case c.Pipeline > 0:
		return c.Pipeline
	}
	return pipelineDepth()
}

// DefaultMaxFileBytes is the file size past which an export rolls to the
// next part-NNNNN file when ExportConfig.MaxFileBytes is zero (E2).
const DefaultMaxFileBytes int64 = 256 << 20

// fileParts is how many multipart parts a data file of MaxFileBytes is
// sent in when no part size is configured (see partSize).
const fileParts = 32

// maxFileBytes is the configured file size, or the default: a zero
// MaxFileBytes must not roll to a new file after every row.
func (c ExportConfig) maxFileBytes() int64 {
	if c.MaxFileBytes <= 0 {
		return DefaultMaxFileBytes
	}
	return c.MaxFileBytes
}

// partSize is the configured part size, or the one that sends a file of
// MaxFileBytes in fileParts parts: 8 MiB for the default 256 MiB, a whole
// number of MiB, never under S3's 5 MiB minimum. The upload of a file holds
// Concurrency+1 parts in memory (upload.Writer), so this bounds what it
// costs: 40 MiB with the defaults, where a fixed 16 MiB part made it 80 MiB
// for no gain (S3 takes up to 10,000 parts; upload.PartSizeFor raises the
// size if a file could need more). Customers see whole objects, never parts.
func (c ExportConfig) partSize() int64 {
	if c.PartSize > 0 {
		return c.PartSize
	}
	p := (c.maxFileBytes()/fileParts + upload.MiB - 1) / upload.MiB * upload.MiB
	return max(p, upload.MinPartSize)
}

// Exporter is what every generation is written with (generation.go): the
// source, the destinations' buckets and tables, the load scripts, file
// sizes and the clock. It holds no per-partition state; one value serves
// every message.
type Exporter struct {
	// Catalog is the deployment's dataset catalog (Config.Catalog).
	Catalog *dataset.Set
	Source  source.Source
	Buckets Buckets
	// Stores opens the destinations on GCS and Azure; nil fails their
	// partitions (destination_misconfigured is not theirs: internal).
	Stores Stores
	Config ExportConfig
	Now    func() time.Time
	// DeploymentAccountID is the deployment's own AWS account id
	// (DEPLOYMENT_ACCOUNT_ID): the expected owner of a bucket written with
	// daybook's own role (destination.Owner).
	DeploymentAccountID string
	// GlueClients registers the accounts' Iceberg tables in the Glue Data
	// Catalog (destination.glue); nil registers none.
	GlueClients GlueClients

	// docs remembers the bucket documents found current (docs.go); nil
	// checks them at every export.
	docs *docsSeen
	// Schemas records each committed dataset's schema in the ledger
	// (schemarecord.go); nil records none. schemas remembers what it saw.
	Schemas SchemaLedger
	schemas *schemasSeen
}

// Partition is one export to do: an account, its dataset and a claimed day.
type Partition struct {
	Account account.Account
	Dataset dataset.Dataset
	Day     civil.Date
	Claim   ledger.Claim
	RunID   string
}

// target is a partition and where it is written: its account's prefix,
// file format, bucket and table, and how its data files are encoded and
// uploaded. A generation places it once per run (generation.place).
type target struct {
	Partition
	prefix     string
	partPrefix string
	format     fileformat.Format
	bucket     *bucket.Bucket
	table      *accountTable // the account's Iceberg table of the dataset; nil: none
	// destination names where and in what form the files go: bucket,
	// prefix, format, compression and Parquet profile. A plan of slices
	// records it; its slices and its commit must find the same.
	destination string
	upload      upload.Options // of every data file
	encode      encode.Options // of every data file
	// rewriteDocs: a bucket document did not read (checkDelivered), so the
	// commit rewrites every document instead of trusting the README's mark.
	rewriteDocs bool
}

// Written is what an export did: the generation it committed, or the plan
// of slices it decided on instead.
type Written struct {
	Manifest    *manifest.Manifest
	ManifestKey string
	Bytes       int64
	// Fingerprint is the day's fingerprint in the source, taken right
	// before the rows were read (fingerprint); zero when none was taken.
	Fingerprint ledger.Fingerprint
	// Planned is set, and nothing else but Fingerprint, when the day is to
	// be exported in slices instead (slices.go): the generation has begun
	// and nothing is written; the caller records the plan and sends its
	// slices, which write the data, and the last of them commits.
	Planned *ledger.SlicePlan
	// Unregistered: the account's Iceberg table committed the generation,
	// and its Glue registration failed (the run counts it; the table's next
	// delivery registers it again).
	Unregistered bool
	// TableError: the account's Iceberg table could not take the
	// generation (its metadata cannot be used); the ledger records it with
	// the generation (iceberg.go).
	TableError string
}

// content is what a generation commits: its data files in order, where
// their rows came from, when its export started and the fingerprint taken
// before the rows were read.
type content struct {
	started time.Time
	fp      ledger.Fingerprint
	files   []manifest.File
	prov    source.Provenance
}

// errProbed ends a probe's read at its first batch.
var errProbed = errors.New("probed")

// probe runs the source's read of q over its first microsecond alone, and
// stops at its first batch if it has one: the source checks what it checks
// before any row (the tenant key, the query's result columns and their
// types, that it can be reached) at the cost of an empty index range, not
// of the day. A day planned in slices is probed before its generation
// begins, so a refusal leaves the committed generation as it was.
func (e *Exporter) probe(ctx context.Context, q source.Query) error {
	if q.Dataset.IsSnapshot() || q.Dataset.Partition == dataset.PartitionStatDate {
		return nil // never sliced (Sliceable)
	}
	q.End = q.Start.Add(time.Microsecond)
	_, err := e.Source.Batches(ctx, q, func(*dataset.Batch) error { return errProbed })
	if errors.Is(err, errProbed) {
		return nil
	}
	return err
}

// partitionQuery is the source query of a day, as a generation writes it.
func partitionQuery(a account.Account, ds dataset.Dataset, day civil.Date) source.Query {
	start, end := a.Window(day)
	return source.Query{AccountID: a.ID, TenantKey: a.TenantKey, Dataset: ds, Day: civil.Of(day.Start(time.UTC)), Start: start, End: end, Shard: a.SourceShard}
}

// errNoFingerprint: the source cannot fingerprint a day, or the dataset
// declares no fingerprint query.
var errNoFingerprint = errors.New("no fingerprint for this source and dataset")

// fingerprintOf runs the dataset's fingerprint query for q.
func (e *Exporter) fingerprintOf(ctx context.Context, q source.Query) (source.Summary, error) {
	f, ok := e.Source.(source.Fingerprinter)
	if !ok {
		return source.Summary{}, errNoFingerprint
	}
	v, err := f.Fingerprint(ctx, q)
	if errors.Is(err, dataset.ErrNoFingerprint) {
		return source.Summary{}, fmt.Errorf("%w: %w", errNoFingerprint, err)
	}
	return v, err
}

// fingerprint takes the fingerprint a generation is exported with, right
// before its rows are read: the order is what makes the restatement check
// (restate.go) safe. A change that lands in the source after the
// fingerprint is either read by the export too (the next check then finds
// a fingerprint that differs, and the day is exported once more for
// nothing) or not (the next check finds it and the day is restated); a
// change can never be in the stored fingerprint without being in the
// exported rows, which is the one way it could be missed. A fingerprint
// taken after the read could record a change the rows lack, and hide it
// for good.
//
// Without one (the source or dataset has none, or the query failed) the
// export goes on, and the generation is simply never checked for late
// data. rows is the day's row count from the same query (source.Summary),
// -1 when unknown.
func (e *Exporter) fingerprint(ctx context.Context, q source.Query, log *slog.Logger) (fp ledger.Fingerprint, rows int64) {
	at := e.Now().UTC()
	v, err := e.fingerprintOf(ctx, q)
	switch {
	case errors.Is(err, errNoFingerprint):
		return ledger.Fingerprint{}, -1
	case err != nil:
		log.WarnContext(ctx, "fingerprint not taken; this generation will not be checked for late data", "error", err.Error())
		return ledger.Fingerprint{}, -1
	}
	return ledger.Fingerprint{Value: v.Hash, At: at.Truncate(time.Second)}, v.Rows
}

// slicesFor decides whether the day is exported in slices (slices.go),
// and in how many: its dataset is partitioned on a timestamp, and its
// expected rows (the fingerprint's row count rows, else the previous
// generation's rows) pass SliceRows. The number of slices is the expected
// rows over SliceRows, rounded up, at most MaxSlices; 0 exports the day in
// one run.
func (e *Exporter) slicesFor(t *target, rows int64) int {
	per := e.Config.SliceRows
	if per <= 0 || !t.Dataset.Sliceable() {
		return 0
	}
	expected := rows
	if expected < 0 {
		expected = t.Claim.Prev.Rows
	}
	if expected <= per {
		return 0
	}
	maxSlices := e.Config.MaxSlices
	if maxSlices <= 0 {
		maxSlices = DefaultMaxSlices
	}
	n := int(min((expected+per-1)/per, int64(min(maxSlices, partition.MaxSlices))))
	if n < 2 {
		return 0
	}
	return n
}

// planOf is the plan of n slices of generation, begun at c.started with
// c.fp; rows as slicesFor took them.
func (e *Exporter) planOf(t *target, generation int64, n int, rows int64, c content) ledger.SlicePlan {
	expected := rows
	if expected < 0 {
		expected = t.Claim.Prev.Rows
	}
	return ledger.SlicePlan{Key: t.Claim.Key, Token: t.Claim.Token, Generation: generation, Slices: n, RunID: t.RunID,
		StartedAt: c.started, ExpectedRows: expected, Fingerprint: c.fp, Destination: t.destination}
}

// wholeDay is writeData's slice for the data files of a day written whole.
const wholeDay = -1

// dataKey is the key of data file n of slice (wholeDay: of the day).
func (t *target) dataKey(slice, n int) string {
	if slice == wholeDay {
		return layout.DataKey(t.prefix, t.Dataset.LedgerName(), t.Day, n, t.format.Extension())
	}
	return layout.SliceDataKey(t.prefix, t.Dataset.LedgerName(), t.Day, slice, n, t.format.Extension())
}

// restatementOf is the restatement a run of claim makes, for its
// manifest: set when the row was queued for a restatement and nothing was
// committed since.
func restatementOf(claim ledger.Claim, files []manifest.File) *manifest.Restatement {
	if !claim.Prev.Restating() {
		return nil
	}
	var rows int64
	for _, f := range files {
		rows += f.Rows
	}
	r := claim.Prev.Restatement
	return &manifest.Restatement{PreviousGeneration: r.PreviousGeneration, PreviousRows: r.PreviousRows, Rows: rows}
}

// bucketOf is the account's destination bucket: its client, name, expected
// owner, checksum setting, encryption and tags. Every write into a
// destination goes through it. The expected owner is destination.Owner's,
// the one derivation the CLI uses too; when it cannot be determined nothing
// may be written, and the error wraps account.ErrNoBucketOwner
// (destination_misconfigured). A GCS or Azure destination is opened by
// Stores.
func (e *Exporter) bucketOf(ctx context.Context, a account.Account) (*bucket.Bucket, error) {
	d := a.Destination
	owner, err := destination.Owner(d, e.DeploymentAccountID)
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", a.ID, err)
	}
	opts := bucket.Options{ExpectedOwner: aws.ToString(owner)}
	if d.Kind() != account.StoreS3 {
		if e.Stores == nil {
			return nil, fmt.Errorf("account %s: destination.store %s: this exporter opens no %s buckets", a.ID, d.Kind(), d.Kind())
		}
		return e.Stores.Open(ctx, a.ID, d, opts)
	}
	return destination.OpenS3(e.Buckets.Client(a.ID, d), d, e.DeploymentAccountID, opts), nil
}
