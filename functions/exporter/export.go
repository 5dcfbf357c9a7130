package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/encode"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/manifest"
	"github.com/daybook-dev/daybook/shared/source"
	"github.com/daybook-dev/daybook/shared/upload"
)

// BucketAPI is what an export does in a destination bucket.
type BucketAPI interface {
	upload.S3API
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

var _ BucketAPI = (*s3.Client)(nil)

// Buckets gives the S3 client acting in an account's destination.
type Buckets interface {
	Client(accountID string, d account.Destination) BucketAPI
}

// Scripts renders the files of a committed partition's `_load/` folder,
// keyed by file name (SPEC Q1).
type Scripts func(ds dataset.Dataset, m *manifest.Manifest, bucket, partitionPrefix string) (map[string][]byte, error)

// Step names a point of the commit protocol, for crash-injection in tests.
type Step string

// Steps of the commit protocol (SPEC E3), in order.
const (
	StepSuccessRemoved Step = "success_removed"
	StepDataWritten    Step = "data_written"
	StepStaleDeleted   Step = "stale_deleted"
	StepManifest       Step = "manifest_written"
)

// DefaultMaxFileBytes is the file size past which an export rolls to the
// next part-NNNNN file when ExportConfig.MaxFileBytes is zero (SPEC E2).
const DefaultMaxFileBytes int64 = 256 << 20

// ExportConfig sets file sizes and upload concurrency.
type ExportConfig struct {
	Stage        string
	MaxFileBytes int64 // roll to the next part-NNNNN file past this size (default 256 MiB)
	PartSize     int64 // multipart part size
	Concurrency  int   // concurrent part uploads per file
	RowGroupRows int64
}

// Exporter writes one partition into its account's bucket with the commit
// protocol. It holds no per-partition state; one value serves every message.
type Exporter struct {
	Source  source.Source
	Buckets Buckets
	Scripts Scripts
	Config  ExportConfig
	Now     func() time.Time
	// After is called after each commit step; an error stops the export
	// there, as a crash would. Nil in production.
	After func(Step) error
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
}

// Written is what an export committed.
type Written struct {
	Manifest    *manifest.Manifest
	ManifestKey string
	Bytes       int64
}

// Export runs the commit protocol of SPEC E3, in its order:
//  1. remove the old _SUCCESS, so readers stop trusting the partition;
//  2. write the data files (streamed, multipart);
//  3. delete every object under the partition that this generation did not write;
//  4. write _manifest.json and the load scripts;
//  5. write _SUCCESS last.
//
// Invariant: whenever _SUCCESS exists, the data files under the partition
// are exactly those its manifest lists. On error nothing after the failed
// step runs and in-flight multipart uploads are aborted.
func (e *Exporter) Export(ctx context.Context, p Partition, log *slog.Logger) (*Written, error) {
	started := e.Now().UTC()
	dest := p.Account.Destination
	prefix, err := p.Account.Prefix(e.Config.Stage)
	if err != nil {
		return nil, err
	}
	format, err := dest.FileFormat()
	if err != nil {
		return nil, fmt.Errorf("account %s destination format: %w", p.Account.ID, err)
	}
	api := e.Buckets.Client(p.Account.ID, dest)
	var owner *string
	if dest.ExpectedBucketOwner != "" {
		owner = aws.String(dest.ExpectedBucketOwner)
	}
	bucket := dest.Bucket
	partPrefix := layout.PartitionPrefix(prefix, p.Dataset.Name, p.Day)
	successKey := layout.SuccessKey(prefix, p.Dataset.Name, p.Day)

	// A generation only ever increases, even when an earlier run committed
	// and then died before the ledger heard of it.
	generation, err := nextGeneration(ctx, api, bucket, successKey, owner, p.Claim.Generation)
	if err != nil {
		return nil, err
	}
	if found := generation - 1; found >= p.Claim.Generation && p.NoteCommitted != nil {
		// The bucket is ahead of the ledger: say so before removing the
		// evidence, in case this run fails too.
		if err := p.NoteCommitted(ctx, found); err != nil {
			return nil, fmt.Errorf("note committed generation %d: %w", found, err)
		}
	}
	if _, err := api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &successKey, ExpectedBucketOwner: owner}); err != nil {
		return nil, fmt.Errorf("remove old _SUCCESS: %w", err)
	}
	if err := e.after(StepSuccessRemoved); err != nil {
		return nil, err
	}

	start, end := p.Account.Window(p.Day)
	q := source.Query{AccountID: p.Account.ID, Dataset: p.Dataset, Day: civil.Of(p.Day.Start(time.UTC)), Start: start, End: end}
	p.Claim.Generation = generation
	files, prov, err := e.writeData(ctx, api, p, prefix, format, q, owner)
	if err != nil {
		return nil, err
	}
	if err := e.after(StepDataWritten); err != nil {
		return nil, err
	}

	keep := make(map[string]bool, len(files))
	for _, f := range files {
		keep[f.Key] = true
	}
	if err := deleteStale(ctx, api, bucket, partPrefix, keep, owner); err != nil {
		return nil, err
	}
	if err := e.after(StepStaleDeleted); err != nil {
		return nil, err
	}

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
		Generation:    generation,
		RunID:         p.RunID,
		Reason:        string(p.Claim.Reason),
		Attempt:       p.Claim.Attempt,
		Format:        string(format),
		Compression:   string(format.Codec(dest.Compression)),
		StartedAt:     started,
		Schema:        manifest.SchemaOf(p.Dataset),
		Files:         files,
		Provenance:    prov,
	}
	m.Sum()
	m.FinishedAt = e.Now().UTC()
	body, err := m.Encode()
	if err != nil {
		return nil, err
	}
	manifestKey := layout.ManifestKey(prefix, p.Dataset.Name, p.Day)
	if err := put(ctx, api, bucket, manifestKey, body, "application/json", owner); err != nil {
		return nil, fmt.Errorf("write manifest: %w", err)
	}
	if e.Scripts != nil {
		scripts, err := e.Scripts(p.Dataset, m, bucket, partPrefix)
		if err != nil {
			return nil, fmt.Errorf("load scripts: %w", err)
		}
		engines := make([]string, 0, len(scripts))
		for k := range scripts {
			engines = append(engines, k)
		}
		slices.Sort(engines)
		for _, name := range engines {
			key := partPrefix + layout.LoadDir + "/" + name
			if err := put(ctx, api, bucket, key, scripts[name], "text/plain; charset=utf-8", owner); err != nil {
				return nil, fmt.Errorf("write load script %s: %w", name, err)
			}
		}
	}
	if err := e.after(StepManifest); err != nil {
		return nil, err
	}

	marker := manifest.NewSuccess(m.Generation, m.RunID, manifestKey, body, e.Now())
	if err := put(ctx, api, bucket, successKey, marker.Encode(), "application/json", owner); err != nil {
		return nil, fmt.Errorf("write _SUCCESS: %w", err)
	}
	log.InfoContext(ctx, "partition committed", "files", len(files), "rows", m.Totals.Rows, "bytes", m.Totals.Bytes,
		"source_rows", prov.RowCount, "manifest", manifestKey)
	return &Written{Manifest: m, ManifestKey: manifestKey, Bytes: m.Totals.Bytes}, nil
}

// nextGeneration is the claim's generation, or one more than the generation
// the partition's current _SUCCESS commits if that is not lower.
func nextGeneration(ctx context.Context, api BucketAPI, bucket, successKey string, owner *string, claimed int64) (int64, error) {
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &successKey, ExpectedBucketOwner: owner})
	var nsk *s3types.NoSuchKey
	if errors.As(err, &nsk) {
		return claimed, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read old _SUCCESS: %w", err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return 0, fmt.Errorf("read old _SUCCESS: %w", err)
	}
	old, err := manifest.DecodeSuccess(b)
	if err != nil {
		return claimed, nil // an unreadable marker is replaced; it names no generation to beat
	}
	return max(claimed, old.Generation+1), nil
}

func (e *Exporter) after(s Step) error {
	if e.After == nil {
		return nil
	}
	if err := e.After(s); err != nil {
		return fmt.Errorf("stopped after %s: %w", s, err)
	}
	return nil
}

// writeData streams the source through the encoder into multipart uploads,
// rolling to the next part-NNNNN file past MaxFileBytes. An empty day still
// gets one valid zero-row file (SPEC E6).
func (e *Exporter) writeData(ctx context.Context, api BucketAPI, p Partition, prefix string, format fileformat.Format, q source.Query, owner *string) ([]manifest.File, source.Provenance, error) {
	var (
		files []manifest.File
		cur   *dataFile
	)
	maxFile := e.maxFileBytes()
	open := func() error {
		key := layout.DataKey(prefix, p.Dataset.Name, p.Day, len(files), format.Extension())
		f, err := e.openFile(ctx, api, p, key, format, owner)
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
	prov, err := e.Source.Rows(ctx, q, func(row []any) error {
		if cur == nil {
			if err := open(); err != nil {
				return err
			}
		}
		if err := cur.enc.Write(row); err != nil {
			return err
		}
		if cur.w.Written() >= maxFile {
			return closeCur()
		}
		return nil
	})
	if err == nil && len(files) == 0 && cur == nil {
		err = open()
	}
	if err == nil && cur != nil {
		err = closeCur()
	}
	if err != nil {
		if cur != nil {
			cur.abort(ctx)
		}
		return nil, prov, fmt.Errorf("write data: %w", err)
	}
	return files, prov, nil
}

type dataFile struct {
	key string
	w   *upload.Writer
	enc encode.Writer
}

func (e *Exporter) openFile(ctx context.Context, api BucketAPI, p Partition, key string, format fileformat.Format, owner *string) (*dataFile, error) {
	opts := upload.Options{
		PartSize:      e.Config.PartSize,
		Concurrency:   e.Config.Concurrency,
		MaxObjectSize: 4 * e.maxFileBytes(),
		ContentType:   format.ContentType(),
		Metadata:      map[string]string{"daybook-generation": fmt.Sprint(p.Claim.Generation), "daybook-run-id": p.RunID},
	}
	if owner != nil {
		opts.ExpectedBucketOwner = *owner
	}
	switch p.Account.Destination.Checksums {
	case account.ChecksumsComposite:
		opts.Checksums = upload.ChecksumComposite
	case account.ChecksumsNone:
		opts.Checksums = upload.ChecksumNone
	}
	w := upload.NewWriter(ctx, api, p.Account.Destination.Bucket, key, opts)
	encOpts := encode.Options{MaxRowGroupRows: e.Config.RowGroupRows}
	if c := p.Account.Destination.Compression; format == fileformat.Parquet && c != "" {
		encOpts.Compression = c
	}
	// A row group is buffered until flushed; keep it well under the file
	// size so files roll close to MaxFileBytes.
	encOpts.MaxRowGroupBytes = min(64<<20, max(1<<20, e.maxFileBytes()/4))
	enc, err := encode.New(format, w, p.Dataset, encOpts)
	if err != nil {
		_ = w.Abort(ctx)
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

func (f *dataFile) close() (manifest.File, error) {
	if err := f.enc.Close(); err != nil {
		_ = f.w.Abort(context.Background())
		return manifest.File{}, fmt.Errorf("%s: %w", f.key, err)
	}
	if err := f.w.Close(); err != nil {
		return manifest.File{}, fmt.Errorf("%s: %w", f.key, err)
	}
	r := f.w.Result()
	return manifest.File{Key: f.key, Rows: f.enc.Rows(), Bytes: r.Bytes, CRC32C: r.CRC32C, SHA256: r.SHA256}, nil
}

// abort gives up the file's multipart upload (with a fresh context inside
// upload.Writer, so a cancelled invocation still cleans up).
func (f *dataFile) abort(ctx context.Context) { _ = f.w.Abort(ctx) }

// deleteStale removes every object under the partition that is not in keep:
// parts a longer earlier run left, the old manifest and load scripts. S3 has
// no rename, so this is what makes "replace the partition" literally true.
func deleteStale(ctx context.Context, api BucketAPI, bucket, prefix string, keep map[string]bool, owner *string) error {
	var stale []s3types.ObjectIdentifier
	p := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, ExpectedBucketOwner: owner})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list partition %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			if k := aws.ToString(o.Key); !keep[k] {
				stale = append(stale, s3types.ObjectIdentifier{Key: aws.String(k)})
			}
		}
	}
	for len(stale) > 0 {
		n := min(len(stale), 1000)
		out, err := api.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: &bucket, Delete: &s3types.Delete{Objects: stale[:n], Quiet: aws.Bool(true)}, ExpectedBucketOwner: owner,
		})
		if err != nil {
			return fmt.Errorf("delete stale objects under %s: %w", prefix, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete stale object %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
		stale = stale[n:]
	}
	return nil
}

func put(ctx context.Context, api BucketAPI, bucket, key string, body []byte, contentType string, owner *string) error {
	_, err := api.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &bucket, Key: &key, Body: bytes.NewReader(body), ContentType: &contentType, ExpectedBucketOwner: owner,
	})
	return err
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
