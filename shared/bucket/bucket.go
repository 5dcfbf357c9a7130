// Package bucket is daybook's one adapter to a customer's bucket, on any of
// the stores it writes to: S3 (and S3-compatible stores), Google Cloud
// Storage and Azure Blob Storage. A [Bucket] owns a store's [Driver], the
// bucket's name and a key prefix; what the exporter, the console, `daybook
// verify` and `daybook sql` read and write in a customer's bucket goes
// through it. This package holds the S3 driver ([New]); shared/bucket/gcs
// and shared/bucket/azure hold the others.
//
// Five places build S3 requests without it, each for a reason of its own:
// shared/upload (the S3 multipart protocol this package's writer runs),
// shared/destination's connection test (`daybook account test`: a write,
// read, list, delete and conditional write that each name the IAM action
// refused), cmd/daybook's HeadBucket in that test (the bucket's region),
// cmd/daybook-dev's local stack and demo (creating buckets in moto and
// mirroring them to disk) and the exporter's benchmark child (an S3 that
// holds uploads, to measure memory).
//
// The model is go-cloud's *blob.Bucket and thanos' objstore.Bucket:
//   - store errors become the few named errors callers branch on ([ErrNotFound],
//     [ErrNoSuchBucket], [ErrAccessDenied], [ErrExists], [ErrTooLarge]),
//     wrapped with %w and the operation and the object's URI, and still
//     wrapping the store's own error;
//   - every read is bounded: [Bucket.Get] takes the most bytes the caller will hold,
//     and a larger object is [ErrTooLarge], never a large allocation;
//     [Bucket.List] and [Bucket.Dirs] take the most entries the caller will
//     hold, and a longer listing is [ErrTooMany], stopped at the first page
//     past the limit (a customer can plant any number of keys);
//   - large objects are streamed with [Bucket.NewWriter] (an [upload.Writer]
//     over the store's upload protocol): Close commits the object, Abort (or
//     any failure) aborts it, and nothing partial is ever visible;
//   - [Bucket.PutIfAbsent] is the store's create-if-absent (S3 If-None-Match: *,
//     GCS ifGenerationMatch=0, Azure If-None-Match: *), the commit primitive
//     of an Iceberg table;
//   - [Bucket.AbortIncomplete] cleans up the uploads nobody will finish (a
//     killed run's) where the store keeps and lists them.
//
// On S3 the expected bucket owner, when known, is sent on every request, so
// daybook never writes into a bucket another account took over.
package bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/daybook-dev/daybook/shared/upload"
)

// The errors a Bucket's methods wrap, whatever the store's error type for
// the operation. Test them with errors.Is (or IsNotFound).
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
	// ErrTooMany: a listing holds more entries than the caller allows (List's
	// and Dirs' limit).
	ErrTooMany = errors.New("bucket: too many objects")
	// ErrExists: a conditional write found the object already there
	// (PutIfAbsent: S3's 412 PreconditionFailed, or 409
	// ConditionalRequestConflict while another such write is in flight;
	// GCS's and Azure's 412).
	ErrExists = errors.New("bucket: object already exists")
)

// IsNotFound reports whether err says an object does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// MaxDeleteBatch is the most keys one Driver.DeleteKeys call is given (S3's
// DeleteObjects limit).
const MaxDeleteBatch = 1000

// Driver is one store's side of a Bucket: the calls a Bucket makes, on full
// keys (the Bucket adds its prefix). Errors are the store's own; the Bucket
// names the operation and the URI, and classifies them with Classify.
type Driver interface {
	// Name is the bucket's name (the container's, on Azure).
	Name() string
	// URI is key's location as the store's readers name it
	// (s3://bucket/key, gs://bucket/key, az://account.blob.core.windows.net/container/key).
	URI(key string) string
	// Put stores body at key in one request, replacing what was there
	// unless o.IfAbsent.
	Put(ctx context.Context, key string, body []byte, o PutOptions) error
	// Get opens the object at key, or the part of it r names. size is the
	// length of the body as the store declared it, -1 when it declared
	// none; the Bucket bounds the read whatever it says. A store that
	// ignores a range is an error.
	Get(ctx context.Context, key string, r Range) (body io.ReadCloser, size int64, err error)
	// Head returns an object's attributes without its bytes.
	Head(ctx context.Context, key string) (Info, error)
	// Delete removes the object at key; an absent object is no error.
	Delete(ctx context.Context, key string) error
	// List calls fn for every object whose key starts with prefix, in key
	// order, following every page; an error from fn stops it.
	List(ctx context.Context, prefix string, fn func(Object) error) error
	// Dirs calls fn with the name of every folder directly under prefix
	// (the next segment of the keys below it that go on with a "/"), in
	// order, following every page; an error from fn stops it.
	Dirs(ctx context.Context, prefix string, fn func(string) error) error
	// DeleteKeys deletes at most MaxDeleteBatch objects (absent ones are no
	// error); the first key it could not delete fails it with an error
	// naming that key (a *KeyError).
	DeleteKeys(ctx context.Context, keys []string) error
	// AbortIncomplete aborts the incomplete uploads under prefix, and those
	// at keys (each under prefix), that the store keeps and lists, and
	// returns their keys. A store whose incomplete uploads are invisible
	// and expire by themselves returns none.
	AbortIncomplete(ctx context.Context, prefix string, keys []string) ([]string, error)
	// Protocol is the store's upload protocol for one object at key, and
	// the options the Writer is to run with (the store may bound its
	// concurrency or part size).
	Protocol(key string, opts upload.Options) (upload.Protocol, upload.Options)
	// Classify returns err wrapped so that errors.Is matches the named error
	// it stands for (ErrNotFound, ...), err itself otherwise.
	Classify(err error) error
}

// Range is a part of an object: Length bytes from Offset; Length 0 is to
// the end. A negative Offset is the last -Offset bytes (all of a shorter
// object), Length then 0.
type Range struct {
	Offset, Length int64
}

// KeyError is a Driver's failure to delete one key of a batch.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// DeleteEach deletes keys with del, at most n at once, for a store whose
// API deletes one object per request (GCS's JSON API, Azure's blob
// service). The first key, in keys' order, whose delete failed is named in
// a *KeyError.
func DeleteEach(ctx context.Context, keys []string, n int, del func(context.Context, string) error) error {
	errs := make([]error, len(keys))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = del(ctx, k)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return &KeyError{Key: keys[i], Err: err}
		}
	}
	return nil
}

// Bucket is one bucket of a store, optionally scoped to a key prefix: every
// key its methods take or return is relative to that prefix, while error
// messages name the full key. A Bucket holds no per-call state; one value
// may be used from several goroutines.
type Bucket struct {
	drv    Driver
	prefix string
}

// Open returns the bucket drv reaches.
func Open(drv Driver) *Bucket { return &Bucket{drv: drv} }

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.drv.Name() }

// URI is the location of key (relative to the Bucket's prefix) as the
// store's readers name it.
func (b *Bucket) URI(key string) string { return b.drv.URI(b.prefix + key) }

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

// Put stores body at key in one request with contentType (none when
// empty), replacing what was there.
func (b *Bucket) Put(ctx context.Context, key string, body []byte, contentType string) error {
	return b.PutWith(ctx, key, body, PutOptions{ContentType: contentType})
}

// PutOptions are the attributes PutWith stores with an object.
type PutOptions struct {
	ContentType string // none when empty
	// Metadata is the object's user metadata (x-amz-meta-*, GCS metadata,
	// Azure metadata). Use lower-case keys of letters, digits and
	// underscores or hyphens: S3 returns them lower-cased, and Azure takes
	// C# identifiers (the Azure driver writes a hyphen as an underscore and
	// reads it back as one).
	Metadata map[string]string
	// IfAbsent writes only where no object is; one there is ErrExists.
	IfAbsent bool
}

// PutWith is Put with the object's attributes.
func (b *Bucket) PutWith(ctx context.Context, key string, body []byte, o PutOptions) error {
	full := b.prefix + key
	if err := b.drv.Put(ctx, full, body, o); err != nil {
		op := "put"
		if o.IfAbsent {
			op = "put if absent"
		}
		return b.fail(op, full, err)
	}
	return nil
}

// PutIfAbsent is Put only when no object is at key (S3 and Azure
// If-None-Match: *, GCS ifGenerationMatch=0), the commit primitive of a
// writer that has no other lock: of two writers of one key exactly one
// succeeds, the other gets ErrExists.
func (b *Bucket) PutIfAbsent(ctx context.Context, key string, body []byte, contentType string) error {
	return b.PutWith(ctx, key, body, PutOptions{ContentType: contentType, IfAbsent: true})
}

// Info is what Head returns about an object.
type Info struct {
	Size        int64
	ContentType string
	// Metadata is the object's user metadata, keys lower-cased.
	Metadata map[string]string
	// CRC32C is the whole object's CRC32C the store keeps (base64 of its
	// big-endian bytes), "" when it keeps none: S3 keeps one when the
	// upload sent it (a multipart upload's only with a full-object
	// checksum), GCS always, Azure never (its Content-MD5 instead).
	CRC32C string
}

// Head returns the size and attributes of the object at key without its
// bytes; an absent object is an error for which IsNotFound is true.
func (b *Bucket) Head(ctx context.Context, key string) (Info, error) {
	full := b.prefix + key
	info, err := b.drv.Head(ctx, full)
	if err != nil {
		return Info{}, b.fail("head", full, err)
	}
	return info, nil
}

// Get returns the bytes of the object at key, at most limit of them; an
// absent object is an error for which IsNotFound is true, and a larger one
// an error matching ErrTooLarge that names the key and the limit. Every
// object daybook reads back may have been written by someone else (the
// bucket is the customer's), so every read says how much it will hold.
func (b *Bucket) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	return b.read(ctx, key, Range{}, limit)
}

// GetTail reads the last n bytes of the object at key (all of it when it
// is shorter), with a suffix range: what a reader of a file's trailer, a
// Parquet footer, needs without downloading the file.
func (b *Bucket) GetTail(ctx context.Context, key string, n int64) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("get the last %d bytes of %s: want a positive length", n, b.URI(key))
	}
	return b.read(ctx, key, Range{Offset: -n}, n)
}

// GetRange reads n bytes of the object at key from offset off (fewer at
// its end).
func (b *Bucket) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if off < 0 || n <= 0 {
		return nil, fmt.Errorf("get %d bytes at %d of %s: want a positive length at a non-negative offset", n, off, b.URI(key))
	}
	return b.read(ctx, key, Range{Offset: off, Length: n}, n)
}

func (b *Bucket) read(ctx context.Context, key string, r Range, limit int64) ([]byte, error) {
	full := b.prefix + key
	where := "get " + b.drv.URI(full)
	if limit < 0 {
		return nil, fmt.Errorf("%s: negative limit %d", where, limit)
	}
	body, size, err := b.drv.Get(ctx, full, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, b.drv.Classify(err))
	}
	defer body.Close()
	return ReadBounded(where, body, size, limit, b.drv.Classify)
}

// ReadBounded reads body, which the store said is size bytes (-1: it said
// nothing), holding at most limit: a declared size above limit is refused
// before the body is read, and the body is read through a limit of limit+1
// bytes too, so a store whose length is missing or wrong cannot get more
// through. Both refusals match ErrTooLarge; where names the read.
func ReadBounded(where string, body io.Reader, size, limit int64, classify func(error) error) ([]byte, error) {
	if size > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than the %d this read allows", where, ErrTooLarge, size, limit)
	}
	got, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, classify(err))
	}
	if int64(len(got)) > limit {
		return nil, fmt.Errorf("%s: %w: more than the %d bytes this read allows (the store said %d)", where, ErrTooLarge, limit, size)
	}
	return got, nil
}

// Delete removes the object at key. Deleting an absent object succeeds, as
// in S3.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	full := b.prefix + key
	if err := b.drv.Delete(ctx, full); err != nil {
		return b.fail("delete", full, err)
	}
	return nil
}

// Object is one listed object.
type Object struct {
	Key  string // relative to the Bucket's prefix
	Size int64
}

// List returns every object whose key starts with prefix, in key order,
// following every page. A prefix holding more than limit objects is an
// error matching ErrTooMany that names the prefix and the limit: the
// listing stops there, so a planted flood of keys costs one page past the
// limit, never its whole length.
func (b *Bucket) List(ctx context.Context, prefix string, limit int) ([]Object, error) {
	full := b.prefix + prefix
	var out []Object
	err := b.drv.List(ctx, full, func(o Object) error {
		if len(out) == limit {
			return errTooMany
		}
		out = append(out, Object{Key: strings.TrimPrefix(o.Key, b.prefix), Size: o.Size})
		return nil
	})
	if errors.Is(err, errTooMany) {
		return nil, fmt.Errorf("list %s: %w: more than the %d objects this listing allows", b.drv.URI(full), ErrTooMany, limit)
	}
	if err != nil {
		return nil, b.fail("list", full, err)
	}
	return out, nil
}

// errTooMany stops a driver's listing at the caller's limit.
var errTooMany = errors.New("listing limit reached")

// Dirs lists the names of the folders directly under prefix (a prefix
// ending in "/"), in order: the listing of a bucket's tree one level at a
// time, which reads no object below it. More than limit folders is an
// error matching ErrTooMany that names the prefix and the limit.
func (b *Bucket) Dirs(ctx context.Context, prefix string, limit int) ([]string, error) {
	full := b.prefix + prefix
	var dirs []string
	err := b.drv.Dirs(ctx, full, func(name string) error {
		if len(dirs) == limit {
			return errTooMany
		}
		dirs = append(dirs, name)
		return nil
	})
	if errors.Is(err, errTooMany) {
		return nil, fmt.Errorf("list the folders under %s: %w: more than the %d this listing allows", b.drv.URI(full), ErrTooMany, limit)
	}
	if err != nil {
		return nil, b.fail("list the folders under", full, err)
	}
	return dirs, nil
}

// MaxStaleListed is the most objects DeleteStale lists under one prefix: a
// partition's folder holds a day's files, one per slice and part, of at
// most two generations; more is planted, and the cleanup refuses it
// (ErrTooMany) rather than hold it.
const MaxStaleListed = 100_000

// DeleteStale deletes every object under prefix whose key is not in keep
// (keys relative to the Bucket's prefix, as List returns them). It lists
// the whole prefix first (at most MaxStaleListed objects), then deletes in batches of at most
// MaxDeleteBatch keys, in key order; the first key the store could not
// delete stops it with an error naming that key.
func (b *Bucket) DeleteStale(ctx context.Context, prefix string, keep map[string]bool) error {
	objs, err := b.List(ctx, prefix, MaxStaleListed)
	if err != nil {
		return err
	}
	var stale []string
	for _, o := range objs {
		if !keep[o.Key] {
			stale = append(stale, b.prefix+o.Key)
		}
	}
	for len(stale) > 0 {
		n := min(len(stale), MaxDeleteBatch)
		if err := b.drv.DeleteKeys(ctx, stale[:n]); err != nil {
			var ke *KeyError
			if errors.As(err, &ke) {
				return fmt.Errorf("delete stale object %s: %w", b.drv.URI(ke.Key), b.drv.Classify(ke.Err))
			}
			return b.fail("delete stale objects under", b.prefix+prefix, err)
		}
		stale = stale[n:]
	}
	return nil
}

// AbortIncomplete aborts the incomplete uploads under prefix and returns
// the keys whose uploads it aborted. It is for uploads nobody will finish:
// those of a run that was killed, or the first of two CreateMultipartUpload
// calls when the response to the first was lost and the SDK retried. The
// caller must know that no upload under prefix is still being written.
// keys (relative to the Bucket's prefix, each under prefix) are the keys
// the caller knows were being written: a store that lists uploads only by
// key (MinIO) finds those. A key outside prefix is an error, before any
// call. What each store keeps of an incomplete upload, and so what there is
// to abort, is its driver's to say: S3 keeps multipart uploads until they
// are aborted; GCS's resumable sessions and Azure's uncommitted blocks are
// invisible and expire by themselves.
func (b *Bucket) AbortIncomplete(ctx context.Context, prefix string, keys []string) ([]string, error) {
	full := b.prefix + prefix
	fullKeys := make([]string, len(keys))
	for i, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			return nil, fmt.Errorf("abort incomplete uploads under %s: key %q is not under that prefix", b.drv.URI(full), k)
		}
		fullKeys[i] = b.prefix + k
	}
	aborted, err := b.drv.AbortIncomplete(ctx, full, fullKeys)
	for i, k := range aborted {
		aborted[i] = strings.TrimPrefix(k, b.prefix)
	}
	if err != nil {
		return aborted, fmt.Errorf("abort incomplete uploads under %s: %w", b.drv.URI(full), b.drv.Classify(err))
	}
	return aborted, nil
}

// NewWriter returns a Writer streaming the object at key: Close commits it,
// Abort (or any failure) aborts it with a fresh context, and until Close
// returns nil nothing is visible at key. The store's attributes of every
// object (S3: the expected bucket owner, checksums, encryption, ACL, tags)
// are the Bucket's, whatever opts says; the rest (part size, concurrency,
// content type, metadata) is the caller's, within what the store allows.
func (b *Bucket) NewWriter(ctx context.Context, key string, opts upload.Options) *upload.Writer {
	proto, opts := b.drv.Protocol(b.prefix+key, opts)
	return upload.NewWriterFor(ctx, proto, opts)
}

// fail wraps err with the operation, the object's URI and the named error
// it stands for.
func (b *Bucket) fail(op, key string, err error) error {
	return fmt.Errorf("%s %s: %w", op, b.drv.URI(key), b.drv.Classify(err))
}

// KindError reads as a store's error and matches both it and its kind, one
// of the named errors: what a Driver's Classify returns.
type KindError struct {
	Kind, Err error
}

func (e *KindError) Error() string   { return e.Err.Error() }
func (e *KindError) Unwrap() []error { return []error{e.Kind, e.Err} }
