package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
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
	"github.com/daybook-dev/daybook/shared/source"
	"github.com/daybook-dev/daybook/shared/upload"
)

// Buckets gives the S3 client acting in an account's destination.
type Buckets interface {
	Client(accountID string, d account.Destination) bucket.API
}

// Scripts renders the files of a committed partition's `_load/` folder,
// keyed by file name (one load script per engine).
type Scripts func(ds dataset.Dataset, m *manifest.Manifest, bucket, partitionPrefix string) (map[string][]byte, error)

// DefaultMaxFileBytes is the file size past which an export rolls to the
// next part-NNNNN file when ExportConfig.MaxFileBytes is zero (E2).
const DefaultMaxFileBytes int64 = 256 << 20

// rollCheckRows is the most rows written between two checks of a data
// file's size against MaxFileBytes (see writeData).
const rollCheckRows = 1024

// fileParts is how many multipart parts a data file of MaxFileBytes is
// sent in when no part size is configured (see Exporter.partSize).
const fileParts = 32

// ExportConfig sets file sizes and upload concurrency.
type ExportConfig struct {
	Stage        string
	MaxFileBytes int64 // roll to the next part-NNNNN file past this size (default 256 MiB)
	PartSize     int64 // multipart part size (default: see Exporter.partSize)
	Concurrency  int   // concurrent part uploads per file
	RowGroupRows int64
	// SliceRows is the rows-per-slice target: a day expected to hold more
	// is exported in slices (slices.go); 0 never slices. MaxSlices caps
	// the slices of a day (0: DefaultMaxSlices).
	SliceRows int64
	MaxSlices int
}

// Exporter writes one partition into its account's bucket with the commit
// protocol. It holds no per-partition state; one value serves every message.
type Exporter struct {
	Source  source.Source
	Buckets Buckets
	Scripts Scripts
	Config  ExportConfig
	Now     func() time.Time
	// DeploymentAccountID is the deployment's own AWS account id
	// (DEPLOYMENT_ACCOUNT_ID): the expected owner of a bucket written with
	// daybook's own role (destination.Owner).
	DeploymentAccountID string
}

// Partition is one export to do: an account, its dataset and a claimed day.
type Partition struct {
	Account account.Account
	Dataset dataset.Dataset
	Day     civil.Date
	Claim   ledger.Claim
	RunID   string
	// NoteCommitted records a generation found committed in the bucket that
	// the claim did not know of (ledger.NoteCommitted); nil skips it.
	NoteCommitted func(ctx context.Context, generation int64) error
	// Plan records a plan of slices and sends their messages (E7); nil
	// never slices.
	Plan func(ctx context.Context, plan ledger.SlicePlan) error
}

// Written is what an export committed.
type Written struct {
	Manifest    *manifest.Manifest
	ManifestKey string
	Bytes       int64
	// Fingerprint is the day's fingerprint in the source, taken right
	// before the rows were read (restate.go); zero when none was taken.
	Fingerprint ledger.Fingerprint
	// Planned is set, and nothing else but Fingerprint, when the day was
	// planned in slices instead of written (slices.go).
	Planned *ledger.SlicePlan
}

// Export writes the partition as source → encoder → committer: it begins
// a generation (Committer.Begin removes the old _SUCCESS), streams the
// source's rows through the encoder into data files, and commits them with
// the manifest and load scripts (_SUCCESS last). On error nothing after the
// failed step runs and in-flight multipart uploads are aborted.
//
// A day larger than one run (E7; slices.go) is not read here: once the
// generation has begun, Export plans it in slices through p.Plan and
// returns a Written with Planned set; the slices write the data and the
// last of them commits.
func (e *Exporter) Export(ctx context.Context, p Partition, log *slog.Logger) (*Written, error) {
	started := e.Now().UTC()
	t, err := e.targetOf(p)
	if err != nil {
		return nil, err
	}
	pending, err := t.committer.Begin(ctx, p.Claim.Generation, p.NoteCommitted)
	if err != nil {
		return nil, err
	}
	defer pending.Abort(ctx) // after Commit it does nothing

	q := partitionQuery(p.Account, p.Dataset, p.Day)
	fp, rows := e.fingerprint(ctx, q, log)
	if plan, ok := e.planFor(p, t, pending.Generation(), rows, fp, started); ok && p.Plan != nil {
		if err := p.Plan(ctx, plan); err != nil {
			return nil, fmt.Errorf("plan %d slices: %w", plan.Slices, err)
		}
		return &Written{Planned: &plan, Fingerprint: fp}, nil
	}
	files, prov, err := e.writeData(ctx, pending, p, t.format, q, true, func(n int) string {
		return layout.DataKey(t.prefix, p.Dataset.Name, p.Day, n, t.format.Extension())
	})
	if err != nil {
		return nil, err
	}
	return e.commit(ctx, t, pending, p, started, files, prov, fp, log)
}

// target is where a partition is written: its account's prefix, file
// format and bucket, and the committer of its partition prefix.
type target struct {
	prefix     string
	partPrefix string
	format     fileformat.Format
	bucket     *bucket.Bucket
	committer  *Committer
	// destination names where and in what form the files go: bucket,
	// prefix, format, compression and Parquet profile. A plan of slices
	// records it; its slices and its commit must find the same.
	destination string
}

func (e *Exporter) targetOf(p Partition) (target, error) {
	prefix, err := p.Account.Prefix(e.Config.Stage)
	if err != nil {
		return target{}, err
	}
	format, err := p.Account.Destination.FileFormat()
	if err != nil {
		return target{}, fmt.Errorf("account %s destination format: %w", p.Account.ID, err)
	}
	b, err := e.bucketOf(p.Account)
	if err != nil {
		return target{}, err
	}
	partPrefix := layout.PartitionPrefix(prefix, p.Dataset.Name, p.Day)
	d := p.Account.Destination
	return target{prefix: prefix, partPrefix: partPrefix, format: format, bucket: b,
		committer:   &Committer{Bucket: b, Partition: partPrefix, RunID: p.RunID, Now: e.Now},
		destination: strings.Join([]string{d.Bucket, prefix, string(format), string(format.Codec(d.Compression)), string(d.ParquetProfile)}, "|")}, nil
}

// commit writes the generation's manifest (files in order, provenance and
// fingerprint as read), load scripts and _SUCCESS, and the bucket's docs.
func (e *Exporter) commit(ctx context.Context, t target, pending *Pending, p Partition, started time.Time, files []manifest.File, prov source.Provenance, fp ledger.Fingerprint, log *slog.Logger) (*Written, error) {
	dest := p.Account.Destination
	m := &manifest.Manifest{
		FormatVersion: manifest.FormatVersion,
		Contract:      layout.Version,
		AccountID:     p.Account.ID,
		Dataset:       p.Dataset.Name,
		SchemaVersion: p.Dataset.Version,
		Day:           p.Day.String(),
		Partition:     p.Dataset.Partition,
		Mode:          p.Dataset.Mode,
		Read:          p.Dataset.Read,
		RunID:         p.RunID,
		Reason:        string(p.Claim.Reason),
		Attempt:       p.Claim.Attempt,
		Format:        string(t.format),
		Compression:   string(t.format.Codec(dest.Compression)),
		StartedAt:     started,
		Schema:        manifest.SchemaOf(p.Dataset),
		Files:         files,
		Provenance:    prov,
		Restatement:   restatementOf(p.Claim, files),
	}
	var scripts func(*manifest.Manifest) (map[string][]byte, error)
	if e.Scripts != nil {
		scripts = func(m *manifest.Manifest) (map[string][]byte, error) {
			return e.Scripts(p.Dataset, m, t.bucket.Name(), t.partPrefix)
		}
	}
	manifestKey, err := pending.Commit(ctx, m, scripts)
	if err != nil {
		return nil, err
	}
	log.InfoContext(ctx, "partition committed", "files", len(files), "rows", m.Totals.Rows, "bytes", m.Totals.Bytes,
		"source_rows", prov.RowCount, "manifest", manifestKey)
	e.writeDocs(ctx, t.bucket, p.Account, t.prefix, t.format, log)
	return &Written{Manifest: m, ManifestKey: manifestKey, Bytes: m.Totals.Bytes, Fingerprint: fp}, nil
}

// bucketOf is the account's destination bucket: its client, name, expected
// owner and checksum setting. Every write into a destination goes through
// it. The expected owner is destination.Owner's, the one derivation the CLI
// uses too; when it cannot be determined nothing may be written, and the
// error wraps account.ErrNoBucketOwner (destination_misconfigured).
func (e *Exporter) bucketOf(a account.Account) (*bucket.Bucket, error) {
	d := a.Destination
	owner, err := destination.Owner(d, e.DeploymentAccountID)
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", a.ID, err)
	}
	opts := bucket.Options{ExpectedOwner: aws.ToString(owner)}
	switch d.Checksums {
	case account.ChecksumsComposite:
		opts.Checksums = upload.ChecksumComposite
	case account.ChecksumsNone:
		opts.Checksums = upload.ChecksumNone
	}
	return bucket.New(e.Buckets.Client(a.ID, d), d.Bucket, opts), nil
}

// writeData streams the source through the encoder into the generation's
// data files, named keyOf(0), keyOf(1), ..., rolling to the next file past
// MaxFileBytes. With emptyFile, a query without rows still gets one valid
// zero-row file. On error the file being written is left to Pending.Abort.
func (e *Exporter) writeData(ctx context.Context, pending *Pending, p Partition, format fileformat.Format, q source.Query, emptyFile bool, keyOf func(n int) string) ([]manifest.File, source.Provenance, error) {
	var (
		files []manifest.File
		cur   *dataFile
	)
	maxFile := e.maxFileBytes()
	open := func() error {
		f, err := e.openFile(ctx, pending, p, keyOf(len(files)), format)
		cur = f
		return err
	}
	closeCur := func() error {
		f, err := cur.close()
		cur = nil
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	}
	// A batch is written in slices of at most step rows, and the file
	// rolls between slices: past MaxFileBytes by at most one slice's row
	// groups.
	step := rollCheckRows
	if n := e.Config.RowGroupRows; n > 0 && n < int64(step) {
		step = int(n)
	}
	var view dataset.Batch
	prov, err := e.Source.Batches(ctx, q, func(b *dataset.Batch) error {
		for lo := 0; lo < b.Len(); lo += step {
			if cur == nil {
				if err := open(); err != nil {
					return err
				}
			}
			if err := cur.enc.WriteBatch(b.View(lo, min(lo+step, b.Len()), &view)); err != nil {
				return err
			}
			if cur.w.Written() >= maxFile {
				if err := closeCur(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil && len(files) == 0 && cur == nil && emptyFile {
		err = open()
	}
	if err == nil && cur != nil {
		err = closeCur()
	}
	if err != nil {
		return nil, prov, fmt.Errorf("write data: %w", err)
	}
	return files, prov, nil
}

// dataFile is one data file: the encoder writing into the upload.
type dataFile struct {
	key string
	w   *upload.Writer
	enc encode.Writer
}

func (e *Exporter) openFile(ctx context.Context, pending *Pending, p Partition, key string, format fileformat.Format) (*dataFile, error) {
	profile, err := encode.ParseProfile(string(p.Account.Destination.ParquetProfile))
	if err != nil {
		return nil, fmt.Errorf("account %s destination parquet_profile: %w", p.Account.ID, err)
	}
	w := pending.NewDataFile(ctx, key, upload.Options{
		PartSize:      e.partSize(),
		Concurrency:   e.Config.Concurrency,
		MaxObjectSize: 4 * e.maxFileBytes(),
		ContentType:   format.ContentType(),
	})
	encOpts := encode.Options{MaxRowGroupRows: e.Config.RowGroupRows, Profile: profile}
	if c := p.Account.Destination.Compression; format == fileformat.Parquet && c != "" {
		encOpts.Compression = c
	}
	// A row group is buffered until flushed; keep it well under the file
	// size so files roll close to MaxFileBytes.
	encOpts.MaxRowGroupBytes = min(64<<20, max(1<<20, e.maxFileBytes()/4))
	enc, err := encode.New(format, w, p.Dataset, encOpts)
	if err != nil {
		return nil, err
	}
	return &dataFile{key: key, w: w, enc: enc}, nil
}

// maxFileBytes is the configured file size, or the default: a zero
// MaxFileBytes must not roll to a new file after every row.
func (e *Exporter) maxFileBytes() int64 {
	if e.Config.MaxFileBytes <= 0 {
		return DefaultMaxFileBytes
	}
	return e.Config.MaxFileBytes
}

// partSize is the configured part size, or the one that sends a file of
// MaxFileBytes in fileParts parts: 8 MiB for the default 256 MiB, a whole
// number of MiB, never under S3's 5 MiB minimum. The upload of a file holds
// Concurrency+1 parts in memory (upload.Writer), so this bounds what it
// costs: 40 MiB with the defaults, where a fixed 16 MiB part made it 80 MiB
// for no gain (S3 takes up to 10,000 parts; upload.PartSizeFor raises the
// size if a file could need more). Customers see whole objects, never parts.
func (e *Exporter) partSize() int64 {
	if e.Config.PartSize > 0 {
		return e.Config.PartSize
	}
	p := (e.maxFileBytes()/fileParts + upload.MiB - 1) / upload.MiB * upload.MiB
	return max(p, upload.MinPartSize)
}

// close flushes the encoder and commits the file's upload.
func (f *dataFile) close() (manifest.File, error) {
	if err := f.enc.Close(); err != nil {
		return manifest.File{}, fmt.Errorf("%s: %w", f.key, err)
	}
	if err := f.w.Close(); err != nil {
		return manifest.File{}, fmt.Errorf("%s: %w", f.key, err)
	}
	r := f.w.Result()
	return manifest.File{Key: f.key, Rows: f.enc.Rows(), Bytes: r.Bytes, CRC32C: r.CRC32C, SHA256: r.SHA256}, nil
}
