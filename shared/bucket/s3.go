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

// API is the part of *s3.Client the S3 driver uses, with the SDK's signatures.
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

// Options configures an S3 Bucket. The zero value is usable.
type Options struct {
	// ExpectedOwner is the AWS account id that must own the bucket. When set
	// it is sent on every request, writers included; S3 refuses a request
	// to a bucket another account owns (ErrAccessDenied).
	ExpectedOwner string
	// Checksums is what NewWriter asks the store to verify; see
	// upload.ChecksumMode. The default sends per-part and full-object CRC32C.
	Checksums upload.ChecksumMode
	// Attributes are what every object is written with, by Put and by
	// NewWriter alike: encryption, ACL, tags.
	Attributes upload.S3Attributes
}

// s3Driver is the Driver of an S3 bucket (and of an S3-compatible store's).
type s3Driver struct {
	api   API
	name  string
	owner *string // nil when the owner is not known: an empty header is refused
	opts  Options
}

var _ Driver = (*s3Driver)(nil)

// New returns the S3 bucket name reached through api.
func New(api API, name string, opts Options) *Bucket {
	d := &s3Driver{api: api, name: name, opts: opts}
	if opts.ExpectedOwner != "" {
		d.owner = aws.String(opts.ExpectedOwner)
	}
	return Open(d)
}

func (d *s3Driver) Name() string          { return d.name }
func (d *s3Driver) URI(key string) string { return "s3://" + d.name + "/" + key }
func (d *s3Driver) Classify(err error) error {
	if err == nil {
		return nil
	}
	return classify(err)
}

func (d *s3Driver) Put(ctx context.Context, key string, body []byte, o PutOptions) error {
	a := d.opts.Attributes
	in := &s3.PutObjectInput{Bucket: &d.name, Key: &key, Body: bytes.NewReader(body), ExpectedBucketOwner: d.owner, Metadata: o.Metadata,
		ServerSideEncryption: a.ServerSideEncryption, ACL: a.ACL}
	if a.KMSKeyID != "" {
		in.SSEKMSKeyId = aws.String(a.KMSKeyID)
	}
	if a.ServerSideEncryption == types.ServerSideEncryptionAwsKms {
		in.BucketKeyEnabled = aws.Bool(true)
	}
	if a.Tagging != "" {
		in.Tagging = aws.String(a.Tagging)
	}
	if o.ContentType != "" {
		in.ContentType = &o.ContentType
	}
	if o.IfAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	_, err := d.api.PutObject(ctx, in)
	return err
}

func (d *s3Driver) Head(ctx context.Context, key string) (Info, error) {
	in := &s3.HeadObjectInput{Bucket: &d.name, Key: &key, ExpectedBucketOwner: d.owner}
	if d.opts.Checksums != upload.ChecksumNone { // a store that rejects checksum headers gets none
		in.ChecksumMode = types.ChecksumModeEnabled
	}
	out, err := d.api.HeadObject(ctx, in)
	if err != nil {
		return Info{}, err
	}
	md := make(map[string]string, len(out.Metadata))
	for k, v := range out.Metadata {
		md[strings.ToLower(k)] = v
	}
	info := Info{Size: aws.ToInt64(out.ContentLength), ContentType: aws.ToString(out.ContentType), Metadata: md}
	// A composite checksum (of the parts) is no whole-object CRC32C.
	if sum := aws.ToString(out.ChecksumCRC32C); out.ChecksumType != types.ChecksumTypeComposite && !strings.Contains(sum, "-") {
		info.CRC32C = sum
	}
	return info, nil
}

func (d *s3Driver) Get(ctx context.Context, key string, r Range) (io.ReadCloser, int64, error) {
	in := &s3.GetObjectInput{Bucket: &d.name, Key: &key, ExpectedBucketOwner: d.owner}
	switch {
	case r.Offset < 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d", r.Offset))
	case r.Length > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", r.Offset, r.Offset+r.Length-1))
	case r.Offset > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", r.Offset))
	}
	out, err := d.api.GetObject(ctx, in)
	if err != nil {
		return nil, 0, err
	}
	if r.Offset > 0 && aws.ToString(out.ContentRange) == "" {
		// A store that ignores Range sends the object from its start.
		out.Body.Close()
		return nil, 0, fmt.Errorf("%s: the store ignored the range %s", d.URI(key), aws.ToString(in.Range))
	}
	size := int64(-1)
	if out.ContentLength != nil {
		size = *out.ContentLength
	}
	return out.Body, size, nil
}

func (d *s3Driver) Delete(ctx context.Context, key string) error {
	_, err := d.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &d.name, Key: &key, ExpectedBucketOwner: d.owner})
	return err
}

func (d *s3Driver) List(ctx context.Context, prefix string, fn func(Object) error) error {
	p := s3.NewListObjectsV2Paginator(d.api, &s3.ListObjectsV2Input{Bucket: &d.name, Prefix: &prefix, ExpectedBucketOwner: d.owner})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			if err := fn(Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size)}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *s3Driver) Dirs(ctx context.Context, prefix string, fn func(string) error) error {
	p := s3.NewListObjectsV2Paginator(d.api, &s3.ListObjectsV2Input{Bucket: &d.name, Prefix: &prefix, Delimiter: aws.String("/"), ExpectedBucketOwner: d.owner})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, cp := range page.CommonPrefixes {
			if err := fn(strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), prefix), "/")); err != nil {
				return err
			}
		}
	}
	return nil
}

// DeleteKeys is one DeleteObjects request.
func (d *s3Driver) DeleteKeys(ctx context.Context, keys []string) error {
	ids := make([]types.ObjectIdentifier, len(keys))
	for i, k := range keys {
		ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
	}
	out, err := d.api.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: &d.name, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}, ExpectedBucketOwner: d.owner,
	})
	if err != nil {
		return err
	}
	if len(out.Errors) > 0 {
		e := out.Errors[0]
		return &KeyError{Key: aws.ToString(e.Key), Err: &smithy.GenericAPIError{Code: aws.ToString(e.Code), Message: aws.ToString(e.Message)}}
	}
	return nil
}

// AbortIncomplete aborts S3 multipart uploads: those found by prefix in
// listing order, then those found by key in the order of keys. An upload
// that is gone by the time it is aborted (completed or aborted meanwhile)
// is skipped.
//
// S3-compatible stores differ in how they list uploads, so it looks two
// ways. It lists the uploads whose key starts with prefix, following every
// page: S3 (and moto) list every upload under it so. Then it lists the
// uploads of each of keys, up to KeyListings at a time: MinIO lists uploads
// only by object name, and a prefix that is no object's finds none, so
// there only the uploads at keys are found. On S3 these listings find
// nothing more; they cost one request each.
func (d *s3Driver) AbortIncomplete(ctx context.Context, prefix string, keys []string) ([]string, error) {
	aborted, err := d.abortListed(ctx, prefix, func(key string) bool {
		return strings.HasPrefix(key, prefix) // a store that ignores the prefix must not make us abort outside it
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
			found[i], errs[i] = d.abortListed(ctx, k, func(key string) bool { return key == k })
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

// MaxUploadsListed is the most incomplete uploads one listing of
// AbortIncomplete reads under a prefix: a killed run leaves a few, one per
// data file it was writing; more were started by someone else (anyone who
// may write the bucket can start uploads without end), and the cleanup
// stops with ErrTooMany, naming the prefix, rather than follow them.
const MaxUploadsListed = 10_000

// abortListed aborts every upload ListMultipartUploads lists for prefix
// whose key match accepts, following every page up to MaxUploadsListed
// uploads, and returns their keys.
func (d *s3Driver) abortListed(ctx context.Context, prefix string, match func(key string) bool) ([]string, error) {
	in := &s3.ListMultipartUploadsInput{Bucket: &d.name, Prefix: &prefix, ExpectedBucketOwner: d.owner}
	var aborted []string
	listed := 0
	for {
		page, err := d.api.ListMultipartUploads(ctx, in)
		if err != nil {
			return aborted, fmt.Errorf("list multipart uploads under %s: %w", d.URI(prefix), err)
		}
		if listed += len(page.Uploads); listed > MaxUploadsListed {
			return aborted, fmt.Errorf("list multipart uploads under %s: %w: more than the %d incomplete uploads this cleanup follows", d.URI(prefix), ErrTooMany, MaxUploadsListed)
		}
		for _, u := range page.Uploads {
			key := aws.ToString(u.Key)
			if !match(key) {
				continue
			}
			_, err := d.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: &d.name, Key: u.Key, UploadId: u.UploadId, ExpectedBucketOwner: d.owner,
			})
			var gone *types.NoSuchUpload
			var api smithy.APIError
			switch {
			case errors.As(err, &gone), errors.As(err, &api) && api.ErrorCode() == "NoSuchUpload":
				continue
			case err != nil:
				return aborted, fmt.Errorf("abort multipart upload %s of %s: %w", aws.ToString(u.UploadId), d.URI(key), err)
			}
			aborted = append(aborted, key)
		}
		if !aws.ToBool(page.IsTruncated) {
			return aborted, nil
		}
		if aws.ToString(page.NextKeyMarker) == "" && aws.ToString(page.NextUploadIdMarker) == "" {
			return aborted, fmt.Errorf("list multipart uploads under %s: truncated page without a next marker", d.URI(prefix))
		}
		// MinIO pages one key's uploads by upload id alone.
		in.KeyMarker, in.UploadIdMarker = nil, page.NextUploadIdMarker
		if aws.ToString(page.NextKeyMarker) != "" {
			in.KeyMarker = page.NextKeyMarker
		}
	}
}

func (d *s3Driver) Protocol(key string, opts upload.Options) (upload.Protocol, upload.Options) {
	opts.ExpectedBucketOwner = d.opts.ExpectedOwner
	opts.Checksums = d.opts.Checksums
	opts.S3 = d.opts.Attributes
	return upload.S3Protocol(d.api, d.name, key, opts), opts
}

// Classify returns err wrapped so that errors.Is matches ErrNotFound,
// ErrNoSuchBucket, ErrAccessDenied or ErrExists when an AWS error in its
// chain stands for one; err itself otherwise. A Bucket's own methods
// already return classified errors; this is for errors of a Writer it made,
// which come from package upload unclassified. (The GCS and Azure drivers'
// writers classify their errors themselves.)
func Classify(err error) error {
	if err == nil {
		return nil
	}
	return classify(err)
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
	return &KindError{Kind: kind, Err: err}
}
