// Package bucket is daybook's one adapter to an S3 bucket it writes into. A
// [Bucket] owns the client, the bucket name and the expected bucket owner, and
// may be scoped to a key prefix; the rest of daybook says what to store and
// never builds an S3 request itself.
//
// The model is go-cloud's *blob.Bucket and thanos' objstore.Bucket:
//   - the expected bucket owner, when known, is sent on every request, so
//     daybook never writes into a bucket another account took over;
//   - AWS errors become the few named errors callers branch on ([ErrNotFound],
//     [ErrNoSuchBucket], [ErrAccessDenied]), wrapped with %w and the operation and
//     key, and still wrapping the SDK's error;
//   - every read is bounded: [Bucket.Get] takes the most bytes the caller will hold,
//     and a larger object is [ErrTooLarge], never a large allocation;
//   - large objects are streamed with [Bucket.NewWriter] (an [upload.Writer]): Close
//     commits the object, Abort (or any failure) aborts it, and nothing
//     partial is ever visible;
//   - [Bucket.AbortIncomplete] aborts the multipart uploads nobody will finish (a
//     killed run's, or one whose CreateMultipartUpload response was lost and
//     retried), so none is left under a committed partition: those listed
//     under a prefix, and those at the keys the caller names, for stores
//     (MinIO) that list uploads only by object name.
package bucket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/daybook-dev/daybook/shared/upload"
)

// API is the part of *s3.Client a Bucket uses, with the SDK's signatures.
type API interface {
	upload.S3API
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, optFns ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
}

var _ API = (*s3.Client)(nil)

// The errors a Bucket's methods wrap, whatever the SDK's error type for the
// operation. Test them with errors.Is (or IsNotFound).
var (
	// ErrNotFound: the object does not exist.
	ErrNotFound = errors.New("bucket: object not found")
	// ErrNoSuchBucket: the bucket does not exist.
	ErrNoSuchBucket = errors.New("bucket: no such bucket")
	// ErrAccessDenied: the credentials may not do this, or the bucket is not
	// owned by the expected owner.
	ErrAccessDenied = errors.New("bucket: access denied")
	// ErrTooLarge: the object is larger than the read allows (Get's limit).
	ErrTooLarge = errors.New("bucket: object too large")
	// ErrExists: a conditional write found the object already there
	// (PutIfAbsent: S3's 412 PreconditionFailed, or 409
	// ConditionalRequestConflict while another such write is in flight).
	ErrExists = errors.New("bucket: object already exists")
)

// IsNotFound reports whether err says an object does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// MaxDeleteBatch is the most keys one DeleteObjects request may name.
const MaxDeleteBatch = 1000

// Options configures a Bucket. The zero value is usable.
type Options struct {
	// ExpectedOwner is the AWS account id that must own the bucket. When set
	// it is sent on every request, writers included; S3 refuses a request
	// to a bucket another account owns (ErrAccessDenied).
	ExpectedOwner string
	// Checksums is what NewWriter asks the store to verify; see
	// upload.ChecksumMode. The default sends per-part and full-object CRC32C.
	Checksums upload.ChecksumMode
}

// Bucket is one S3 bucket, optionally scoped to a key prefix: every key its
// methods take or return is relative to that prefix, while error messages
// name the full key. A Bucket holds no per-call state; one value may be used
// from several goroutines.
type Bucket struct {
	api    API
	name   string
	owner  *string // nil when the owner is not known: an empty header is refused
	opts   Options
	prefix string
}

// New returns the bucket name reached through api.
func New(api API, name string, opts Options) *Bucket {
	b := &Bucket{api: api, name: name, opts: opts}
	if opts.ExpectedOwner != "" {
		b.owner = aws.String(opts.ExpectedOwner)
	}
	return b
}

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.name }

// Prefix is the key prefix the Bucket is scoped to ("" for the whole bucket).
func (b *Bucket) Prefix() string { return b.prefix }

// WithPrefix returns the same bucket scoped to prefix, below b's own prefix:
// b.WithPrefix("a/").Put(ctx, "k", ...) writes the key b.Prefix()+"a/k".
// prefix is used as given; end it with "/" for a folder.
func (b *Bucket) WithPrefix(prefix string) *Bucket {
	c := *b
	c.prefix = b.prefix + prefix
	return &c
}

// Put stores body at key in one PutObject with contentType (none when
// empty), replacing what was there.
func (b *Bucket) Put(ctx context.Context, key string, body []byte, contentType string) error {
	return b.PutWith(ctx, key, body, PutOptions{ContentType: contentType})
}

// PutOptions are the attributes PutWith stores with an object.
type PutOptions struct {
	ContentType string // none when empty
	// Metadata is the object's user metadata (x-amz-meta-*). Use lower-case
	// keys: S3 returns them lower-cased.
	Metadata map[string]string
}

// PutWith is Put with the object's attributes.
func (b *Bucket) PutWith(ctx context.Context, key string, body []byte, o PutOptions) error {
	full := b.prefix + key
	in := &s3.PutObjectInput{Bucket: &b.name, Key: &full, Body: bytes.NewReader(body), ExpectedBucketOwner: b.owner, Metadata: o.Metadata}
	if o.ContentType != "" {
		in.ContentType = &o.ContentType
	}
	if _, err := b.api.PutObject(ctx, in); err != nil {
		return b.fail("put", full, err)
	}
	return nil
}

// PutIfAbsent is Put only when no object is at key (If-None-Match: *), the
// commit primitive of a writer that has no other lock: of two writers of
// one key exactly one succeeds, the other gets ErrExists.
func (b *Bucket) PutIfAbsent(ctx context.Context, key string, body []byte, contentType string) error {
	full := b.prefix + key
	in := &s3.PutObjectInput{Bucket: &b.name, Key: &full, Body: bytes.NewReader(body), ExpectedBucketOwner: b.owner,
		IfNoneMatch: aws.String("*")}
	if contentType != "" {
		in.ContentType = &contentType
	}
	if _, err := b.api.PutObject(ctx, in); err != nil {
		return b.fail("put if absent", full, err)
	}
	return nil
}

// Info is what Head returns about an object.
type Info struct {
	Size        int64
	ContentType string
	// Metadata is the object's user metadata, keys lower-cased.
	Metadata map[string]string
}

// Head returns the size and attributes of the object at key without its
// bytes; an absent object is an error for which IsNotFound is true.
func (b *Bucket) Head(ctx context.Context, key string) (Info, error) {
	full := b.prefix + key
	out, err := b.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.name, Key: &full, ExpectedBucketOwner: b.owner})
	if err != nil {
		return Info{}, b.fail("head", full, err)
	}
	md := make(map[string]string, len(out.Metadata))
	for k, v := range out.Metadata {
		md[strings.ToLower(k)] = v
	}
	return Info{Size: aws.ToInt64(out.ContentLength), ContentType: aws.ToString(out.ContentType), Metadata: md}, nil
}

// Get returns the bytes of the object at key, at most limit of them; an
// absent object is an error for which IsNotFound is true, and a larger one
// an error matching ErrTooLarge that names the key and the limit. Every
// object daybook reads back may have been written by someone else (the
// bucket is the customer's), so every read says how much it will hold.
func (b *Bucket) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	return GetObject(ctx, b.api, &s3.GetObjectInput{Bucket: &b.name, Key: aws.String(b.prefix + key), ExpectedBucketOwner: b.owner}, limit)
}

// GetTail reads the last n bytes of the object at key (all of it when it
// is shorter), with a suffix Range: what a reader of a file's trailer, a
// Parquet footer, needs without downloading the file.
func (b *Bucket) GetTail(ctx context.Context, key string, n int64) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("get the last %d bytes of s3://%s/%s%s: want a positive length", n, b.name, b.prefix, key)
	}
	return GetObject(ctx, b.api, &s3.GetObjectInput{Bucket: &b.name, Key: aws.String(b.prefix + key), ExpectedBucketOwner: b.owner,
		Range: aws.String(fmt.Sprintf("bytes=-%d", n))}, n)
}

// Getter is the one S3 call GetObject makes.
type Getter interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// GetObject reads the object in names through api, at most limit bytes, for
// a reader that holds its own client (a read-only one): the bounded read of
// Bucket.Get, with its errors. An object S3 says is larger than limit
// (Content-Length) is refused before its body is read; the body is read
// through a limit of limit+1 bytes too, so a store whose length is missing
// or wrong cannot get more through.
func GetObject(ctx context.Context, api Getter, in *s3.GetObjectInput, limit int64) ([]byte, error) {
	where := fmt.Sprintf("get s3://%s/%s", aws.ToString(in.Bucket), aws.ToString(in.Key))
	if limit < 0 {
		return nil, fmt.Errorf("%s: negative limit %d", where, limit)
	}
	out, err := api.GetObject(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, classify(err))
	}
	defer out.Body.Close()
	if n := aws.ToInt64(out.ContentLength); n > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than the %d this read allows", where, ErrTooLarge, n, limit)
	}
	body, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, classify(err))
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%s: %w: more than the %d bytes this read allows (the store said %d)", where, ErrTooLarge, limit, aws.ToInt64(out.ContentLength))
	}
	return body, nil
}

// Delete removes the object at key. Deleting an absent object succeeds, as
// in S3.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	full := b.prefix + key
	if _, err := b.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.name, Key: &full, ExpectedBucketOwner: b.owner}); err != nil {
		return b.fail("delete", full, err)
	}
	return nil
}

// Object is one listed object.
type Object struct {
	Key  string // relative to the Bucket's prefix
	Size int64
}

// List returns every object whose key starts with prefix, in key order
// (S3's order), following every page.
func (b *Bucket) List(ctx context.Context, prefix string) ([]Object, error) {
	full := b.prefix + prefix
	var out []Object
	p := s3.NewListObjectsV2Paginator(b.api, &s3.ListObjectsV2Input{Bucket: &b.name, Prefix: &full, ExpectedBucketOwner: b.owner})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, b.fail("list", full, err)
		}
		for _, o := range page.Contents {
			out = append(out, Object{Key: strings.TrimPrefix(aws.ToString(o.Key), b.prefix), Size: aws.ToInt64(o.Size)})
		}
	}
	return out, nil
}

// DeleteStale deletes every object under prefix whose key is not in keep
// (keys relative to the Bucket's prefix, as List returns them). It lists
// the whole prefix first, then deletes in DeleteObjects requests of at most
// MaxDeleteBatch keys, in key order; the first key S3 could not delete
// stops it with an error naming that key.
func (b *Bucket) DeleteStale(ctx context.Context, prefix string, keep map[string]bool) error {
	objs, err := b.List(ctx, prefix)
	if err != nil {
		return err
	}
	var stale []types.ObjectIdentifier
	for _, o := range objs {
		if !keep[o.Key] {
			stale = append(stale, types.ObjectIdentifier{Key: aws.String(b.prefix + o.Key)})
		}
	}
	for len(stale) > 0 {
		n := min(len(stale), MaxDeleteBatch)
		out, err := b.api.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: &b.name, Delete: &types.Delete{Objects: stale[:n], Quiet: aws.Bool(true)}, ExpectedBucketOwner: b.owner,
		})
		if err != nil {
			return b.fail("delete stale objects under", b.prefix+prefix, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete stale object s3://%s/%s: %w", b.name, aws.ToString(e.Key),
				classify(&smithy.GenericAPIError{Code: aws.ToString(e.Code), Message: aws.ToString(e.Message)}))
		}
		stale = stale[n:]
	}
	return nil
}

// AbortIncomplete aborts the incomplete multipart uploads under prefix and
// returns the keys whose uploads it aborted: those found by prefix in
// listing order, then those found by key in the order of keys. An upload
// that is gone by the time it is aborted (completed or aborted meanwhile) is
// skipped. It is for uploads nobody will finish: those of a run that was
// killed, or the first of two CreateMultipartUpload calls when the response
// to the first was lost and the SDK retried. The caller must know that no
// upload under prefix is still being written.
//
// S3-compatible stores differ in how they list uploads, so it looks two
// ways. It lists the uploads whose key starts with prefix, following every
// page: S3 (and moto) list every upload under it so. Then it lists the
// uploads of each of keys (relative to the Bucket's prefix, each under
// prefix), up to KeyListings at a time: MinIO lists uploads only by object
// name, and a prefix that is no object's finds none, so there only the
// uploads at keys are found. On S3 these listings find nothing more; they
// cost one request each. A key outside prefix is an error, before any call.
func (b *Bucket) AbortIncomplete(ctx context.Context, prefix string, keys []string) ([]string, error) {
	full := b.prefix + prefix
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			return nil, fmt.Errorf("abort incomplete multipart uploads under s3://%s/%s: key %q is not under that prefix", b.name, full, k)
		}
	}
	aborted, err := b.abortListed(ctx, full, func(key string) bool {
		return strings.HasPrefix(key, full) // a store that ignores the prefix must not make us abort outside it
	})
	if err != nil {
		return aborted, err
	}
	keys = distinct(keys)
	found := make([][]string, len(keys))
	errs := make([]error, len(keys))
	var failed atomic.Bool
	var wg sync.WaitGroup
	sem := make(chan struct{}, KeyListings)
	for i, k := range keys {
		sem <- struct{}{}
		if failed.Load() {
			<-sem
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			fk := b.prefix + k
			found[i], errs[i] = b.abortListed(ctx, fk, func(key string) bool { return key == fk })
			if errs[i] != nil {
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	for i := range keys {
		aborted = append(aborted, found[i]...)
		if errs[i] != nil {
			return aborted, errs[i]
		}
	}
	return aborted, nil
}

// distinct is keys without repeats, in first-seen order.
func distinct(keys []string) []string {
	seen := make(map[string]bool, len(keys))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// KeyListings is how many of AbortIncomplete's listings by key run at once.
const KeyListings = 8

// abortListed aborts every upload ListMultipartUploads lists for prefix
// whose key match accepts, following every page, and returns their keys
// relative to the Bucket's prefix.
func (b *Bucket) abortListed(ctx context.Context, prefix string, match func(key string) bool) ([]string, error) {
	in := &s3.ListMultipartUploadsInput{Bucket: &b.name, Prefix: &prefix, ExpectedBucketOwner: b.owner}
	var aborted []string
	for {
		page, err := b.api.ListMultipartUploads(ctx, in)
		if err != nil {
			return aborted, b.fail("list multipart uploads under", prefix, err)
		}
		for _, u := range page.Uploads {
			key := aws.ToString(u.Key)
			if !match(key) {
				continue
			}
			_, err := b.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: &b.name, Key: u.Key, UploadId: u.UploadId, ExpectedBucketOwner: b.owner,
			})
			var gone *types.NoSuchUpload
			var api smithy.APIError
			switch {
			case errors.As(err, &gone), errors.As(err, &api) && api.ErrorCode() == "NoSuchUpload":
				continue
			case err != nil:
				return aborted, b.fail("abort multipart upload "+aws.ToString(u.UploadId)+" of", key, err)
			}
			aborted = append(aborted, strings.TrimPrefix(key, b.prefix))
		}
		if !aws.ToBool(page.IsTruncated) {
			return aborted, nil
		}
		if aws.ToString(page.NextKeyMarker) == "" && aws.ToString(page.NextUploadIdMarker) == "" {
			return aborted, fmt.Errorf("list multipart uploads under s3://%s/%s: truncated page without a next marker", b.name, prefix)
		}
		// MinIO pages one key's uploads by upload id alone.
		in.KeyMarker, in.UploadIdMarker = nil, page.NextUploadIdMarker
		if aws.ToString(page.NextKeyMarker) != "" {
			in.KeyMarker = page.NextKeyMarker
		}
	}
}

// NewWriter returns a Writer streaming the object at key: Close commits it,
// Abort (or any failure) aborts it with a fresh context, and until Close
// returns nil nothing is visible at key. opts.ExpectedBucketOwner and
// opts.Checksums are the Bucket's, whatever opts says; the rest (part size,
// concurrency, content type, metadata) is the caller's.
func (b *Bucket) NewWriter(ctx context.Context, key string, opts upload.Options) *upload.Writer {
	opts.ExpectedBucketOwner = b.opts.ExpectedOwner
	opts.Checksums = b.opts.Checksums
	return upload.NewWriter(ctx, b.api, b.name, b.prefix+key, opts)
}

// Classify returns err wrapped so that errors.Is matches ErrNotFound,
// ErrNoSuchBucket or ErrAccessDenied when an AWS error in its chain stands
// for one; err itself otherwise. The Bucket's own methods already return
// classified errors; this is for errors of a Writer it made, which come
// from package upload unclassified.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	return classify(err)
}

// fail wraps err with the operation, the full key and the named error it
// stands for.
func (b *Bucket) fail(op, key string, err error) error {
	return fmt.Errorf("%s s3://%s/%s: %w", op, b.name, key, classify(err))
}

// classify returns err wrapped so that errors.Is matches the named error it
// stands for, if any; errors.As still finds the SDK's error.
func classify(err error) error {
	var kind error
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var nsb *types.NoSuchBucket
	var api smithy.APIError
	switch {
	case errors.As(err, &nsk), errors.As(err, &nf):
		kind = ErrNotFound
	case errors.As(err, &nsb):
		kind = ErrNoSuchBucket
	case errors.As(err, &api):
		switch api.ErrorCode() {
		case "NoSuchKey", "NotFound":
			kind = ErrNotFound
		case "NoSuchBucket":
			kind = ErrNoSuchBucket
		case "AccessDenied", "AllAccessDisabled", "Forbidden":
			kind = ErrAccessDenied
		case "PreconditionFailed", "ConditionalRequestConflict":
			kind = ErrExists
		}
	}
	if kind == nil {
		return err
	}
	return &kindError{kind: kind, err: err}
}

// kindError reads as the SDK's error and matches both it and its kind.
type kindError struct {
	kind, err error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }
