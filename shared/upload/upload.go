// Package upload streams one object into S3 without staging it on disk.
//
// A Writer buffers bytes into part-sized buffers taken from a pool, sends full
// parts as a multipart upload with at most Options.Concurrency UploadPart
// calls in flight, and blocks Write when that limit is reached, so memory is
// bounded by (Concurrency+1) × PartSize whatever the object size. An object
// smaller than one part is sent with a single PutObject at Close and never
// starts a multipart upload.
//
// The model is go-cloud's blob.Writer: Close commits, anything else aborts.
// Every failure (a failed part, a failed complete, a cancelled context or an
// explicit Abort) aborts the multipart upload with a fresh context, so a
// cancelled Lambda context still cleans up, and no partial object is ever
// visible. Each part carries its CRC32C so S3 verifies it on arrival, and by
// default the whole object is verified at completion with a full-object
// CRC32C (E2, E4, C1).
package upload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// S3API is the subset of *s3.Client a Writer uses.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, optFns ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// S3 multipart limits.
const (
	MiB = 1 << 20

	// MinPartSize is the smallest part S3 accepts for every part but the last.
	MinPartSize int64 = 5 * MiB
	// MaxPartSize is the largest part S3 accepts.
	MaxPartSize int64 = 5 << 30
	// MaxParts is the largest part number S3 accepts.
	MaxParts = 10000
	// DefaultPartSize is used when Options.PartSize is zero.
	DefaultPartSize int64 = 16 * MiB
	// DefaultConcurrency is used when Options.Concurrency is zero.
	DefaultConcurrency = 4
)

// AbortTimeout bounds the AbortMultipartUpload call made after a failure. It
// runs on a context detached from the caller's, which may already be done.
const AbortTimeout = 30 * time.Second

// ChecksumMode selects which CRC32C checksums are sent to the store. The
// Writer always computes CRC32C and SHA-256 of the stream for Result; the
// mode only changes what the store is asked to verify.
type ChecksumMode int

const (
	// ChecksumFullObject (the default) sends each part's CRC32C on
	// UploadPart and in CompleteMultipartUpload, creates the upload with
	// ChecksumType FULL_OBJECT and sends the whole object's CRC32C and size
	// on CompleteMultipartUpload, so S3 verifies every part and the
	// assembled object, and stores the object's plain CRC32C (the same value
	// a PutObject of the same bytes would show). PutObject carries the
	// object's CRC32C.
	ChecksumFullObject ChecksumMode = iota
	// ChecksumComposite sends per-part CRC32C only: S3 verifies each part and
	// stores a checksum-of-checksums ("xxxx-N"). For S3-compatible stores that
	// accept x-amz-checksum-crc32c but not x-amz-checksum-type.
	ChecksumComposite
	// ChecksumNone sends no checksum headers at all, for stores that reject
	// them. Transport integrity then rests on SigV4 payload signing / TLS.
	ChecksumNone
)

// Options configures a Writer. The zero value is usable.
type Options struct {
	// PartSize is the size of every part but the last. Zero means
	// DefaultPartSize; values are clamped to [MinPartSize, MaxPartSize] and
	// raised so that MaxObjectSize fits in MaxParts parts.
	PartSize int64
	// Concurrency is the maximum number of UploadPart calls in flight; Write
	// blocks when it is reached. Zero means DefaultConcurrency.
	Concurrency int
	// MaxObjectSize is the largest object the caller will write; it only
	// sizes parts (see PartSizeFor). Zero means unknown: a stream that needs
	// more than MaxParts parts then fails with ErrTooManyParts.
	MaxObjectSize int64
	// ExpectedBucketOwner, when set, is sent on every request (C1).
	ExpectedBucketOwner string
	// ContentType, ContentEncoding and Metadata are stored on the object.
	ContentType     string
	ContentEncoding string
	Metadata        map[string]string
	// Checksums selects what the store is asked to verify; see ChecksumMode.
	Checksums ChecksumMode
}

// Result describes a committed object.
type Result struct {
	Key   string
	Bytes int64
	// CRC32C is the Castagnoli CRC of the whole object, base64 of its
	// big-endian bytes: the form S3 shows in x-amz-checksum-crc32c.
	CRC32C string
	// CRC32CValue is the same checksum as a number.
	CRC32CValue uint32
	// SHA256 is the hex SHA-256 of the whole object.
	SHA256 string
	// Parts is the number of multipart parts, 0 when the object was sent
	// with a single PutObject.
	Parts int
	// ETag and VersionID are as S3 returned them (ETag quoted; VersionID
	// empty on an unversioned bucket).
	ETag      string
	VersionID string
}

var (
	// ErrAborted is the error Write and Close return after Abort.
	ErrAborted = errors.New("upload: aborted")
	// ErrClosed is returned by Write after Close.
	ErrClosed = errors.New("upload: write after close")
	// ErrTooManyParts is returned when the stream needs more than MaxParts
	// parts; set Options.MaxObjectSize to size parts for it.
	ErrTooManyParts = errors.New("upload: object needs more than 10000 parts")
)

// PartSizeFor returns the part size a Writer uses for the requested part size
// and maximum object size: partSize (DefaultPartSize when <= 0) clamped to
// [MinPartSize, MaxPartSize], raised to a whole MiB so that maxObjectSize fits
// in MaxParts parts.
func PartSizeFor(partSize, maxObjectSize int64) int64 {
	if partSize <= 0 {
		partSize = DefaultPartSize
	}
	partSize = max(partSize, MinPartSize)
	if maxObjectSize > 0 {
		need := (maxObjectSize + MaxParts - 1) / MaxParts
		if need > partSize {
			partSize = (need + MiB - 1) / MiB * MiB
		}
	}
	return min(partSize, MaxPartSize)
}

// Writer streams one object to S3. Its methods must not be called
// concurrently with each other, except Written. The caller must end every
// Writer with Close or Abort; `defer w.Abort(ctx)` followed by
// `return w.Close()` is safe, since Abort after a successful Close does
// nothing.
type Writer struct {
	parent   context.Context // caller's context, for the detached abort
	ctx      context.Context // cancelled on the first error
	cancel   context.CancelCauseFunc
	api      S3API
	bucket   string
	key      string
	opts     Options
	partSize int64
	owner    *string
	pool     *sync.Pool

	// Owned by the calling goroutine.
	buf      *[]byte // current part, nil until the first Write
	fill     int     // bytes used in buf
	partCRC  uint32  // CRC32C of buf[:fill]
	crc      uint32  // CRC32C of the parts already handed off
	sha      hash.Hash
	written  atomic.Int64
	uploadID *string
	nextPart int32
	closed   bool
	done     bool // Close or fail has finished; result/err final
	result   Result

	sem  chan struct{}  // one token per UploadPart in flight
	free chan *[]byte   // this writer's idle buffers
	wg   sync.WaitGroup // UploadPart goroutines

	mu       sync.Mutex
	err      error                 // first error
	parts    []types.CompletedPart // index = part number - 1
	aborted  bool
	abortErr error
}

// NewWriter returns a Writer for s3://bucket/key. ctx governs every request
// but the cleanup abort; cancelling it fails the upload.
func NewWriter(ctx context.Context, api S3API, bucket, key string, opts Options) *Writer {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	ps := PartSizeFor(opts.PartSize, opts.MaxObjectSize)
	opts.PartSize = ps
	ictx, cancel := context.WithCancelCause(ctx)
	w := &Writer{
		parent:   ctx,
		ctx:      ictx,
		cancel:   cancel,
		api:      api,
		bucket:   bucket,
		key:      key,
		opts:     opts,
		partSize: ps,
		pool:     poolFor(ps),
		sha:      sha256.New(),
		nextPart: 1,
		sem:      make(chan struct{}, opts.Concurrency),
		free:     make(chan *[]byte, opts.Concurrency+1),
	}
	if opts.ExpectedBucketOwner != "" {
		w.owner = aws.String(opts.ExpectedBucketOwner)
	}
	return w
}

// Written returns the number of bytes accepted by Write so far. It is safe to
// call from any goroutine.
func (w *Writer) Written() int64 { return w.written.Load() }

// PartSize returns the part size in use after defaults and sizing.
func (w *Writer) PartSize() int64 { return w.partSize }

// Write buffers p, sending each full part as it is followed by more data. It
// blocks while Concurrency parts are in flight. After any failure it returns
// the first error, having aborted the upload.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		if err := w.firstErr(); err != nil {
			return 0, err
		}
		return 0, ErrClosed
	}
	if err := w.check(); err != nil {
		return 0, w.fail(err)
	}
	n := 0
	for len(p) > 0 {
		if w.buf == nil {
			w.buf = w.getBuf()
		}
		b := *w.buf
		if w.fill == len(b) {
			// A full part followed by more data: send it.
			if err := w.flush(); err != nil {
				return n, w.fail(err)
			}
			continue
		}
		c := copy(b[w.fill:], p)
		chunk := b[w.fill : w.fill+c]
		w.partCRC = crc32.Update(w.partCRC, castagnoli, chunk)
		w.sha.Write(chunk)
		w.fill += c
		w.written.Add(int64(c))
		n += c
		p = p[c:]
	}
	return n, nil
}

// Close sends what remains and commits the object: CompleteMultipartUpload,
// or a single PutObject when the object is smaller than one part (including
// an empty object). On failure the multipart upload is aborted and the first
// error is returned. Calling Close again returns the same error.
func (w *Writer) Close() error {
	if w.closed {
		return w.firstErr()
	}
	w.closed = true
	if err := w.check(); err != nil {
		return w.fail(err)
	}
	var err error
	if w.uploadID == nil {
		err = w.putObject()
	} else {
		err = w.complete()
	}
	if err != nil {
		return w.fail(err)
	}
	w.done = true
	w.release()
	return nil
}

// Result describes the object after a successful Close; before that, or
// after a failure, it is the zero Result.
func (w *Writer) Result() Result {
	if !w.done || w.firstErr() != nil {
		return Result{}
	}
	return w.result
}

// Abort abandons the upload: in-flight parts are cancelled and the multipart
// upload, if one was started, is aborted with a context detached from ctx
// (and from the Writer's), bounded by AbortTimeout. It returns the abort
// call's error. After a successful Close it does nothing and returns nil; it
// is idempotent.
func (w *Writer) Abort(ctx context.Context) error {
	if w.done && w.firstErr() == nil {
		return nil
	}
	w.closed = true
	if w.firstErr() == nil {
		w.setErr(ErrAborted)
	}
	w.abort(ctx)
	w.done = true
	w.release()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.abortErr
}

// check returns the first recorded error, or the context's.
// Every recorded error also cancels w.ctx, so the fast path is one check.
func (w *Writer) check() error {
	if w.ctx.Err() == nil {
		return nil
	}
	if err := w.firstErr(); err != nil {
		return err
	}
	return fmt.Errorf("upload: s3://%s/%s: %w", w.bucket, w.key, context.Cause(w.ctx))
}

func (w *Writer) firstErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// setErr records err if it is the first, and cancels in-flight requests.
func (w *Writer) setErr(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.cancel(err)
}

// fail records err, waits for in-flight parts, aborts the multipart upload
// and returns the first error. It runs on the caller's goroutine.
func (w *Writer) fail(err error) error {
	w.setErr(err)
	w.closed = true
	if !w.done {
		w.abort(w.parent)
		w.done = true
		w.release()
	}
	return w.firstErr()
}

// abort waits for in-flight parts, then aborts the upload once.
func (w *Writer) abort(ctx context.Context) {
	w.cancel(ErrAborted) // no-op if already cancelled with a cause
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.aborted || w.uploadID == nil {
		return
	}
	w.aborted = true
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AbortTimeout)
	defer cancel()
	_, err := w.api.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
		Bucket:              &w.bucket,
		Key:                 &w.key,
		UploadId:            w.uploadID,
		ExpectedBucketOwner: w.owner,
	})
	if err != nil {
		w.abortErr = fmt.Errorf("upload: abort multipart upload of s3://%s/%s: %w", w.bucket, w.key, err)
	}
}

// flush starts the multipart upload if needed and hands the current buffer
// to an UploadPart goroutine, blocking while Concurrency parts are in flight.
func (w *Writer) flush() error {
	if w.nextPart >= MaxParts {
		// This part would not be the last one.
		return ErrTooManyParts
	}
	if w.uploadID == nil {
		if err := w.create(); err != nil {
			return err
		}
	}
	select {
	case w.sem <- struct{}{}:
	case <-w.ctx.Done():
		return w.check()
	}
	if err := w.check(); err != nil {
		<-w.sem
		return err
	}
	w.startPart()
	return nil
}

// startPart sends the current buffer as part w.nextPart; the caller holds a
// semaphore token, which the goroutine releases.
func (w *Writer) startPart() {
	buf, size, crc, num := w.buf, w.fill, w.partCRC, w.nextPart
	w.crc = crc32cCombine(w.crc, crc, int64(size))
	w.buf, w.fill, w.partCRC = nil, 0, 0
	w.nextPart++
	w.mu.Lock()
	w.parts = append(w.parts, types.CompletedPart{PartNumber: aws.Int32(num)})
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.sem }()
		if err := w.uploadPart(buf, size, crc, num); err != nil {
			// The transport may still read a failed request's body after
			// the call returns, so this buffer is not reused.
			w.setErr(err)
			return
		}
		w.putBuf(buf)
	}()
}

func (w *Writer) uploadPart(buf *[]byte, size int, crc uint32, num int32) error {
	in := &s3.UploadPartInput{
		Bucket:              &w.bucket,
		Key:                 &w.key,
		UploadId:            w.uploadID,
		PartNumber:          aws.Int32(num),
		Body:                bytes.NewReader((*buf)[:size]),
		ContentLength:       aws.Int64(int64(size)),
		ExpectedBucketOwner: w.owner,
	}
	var sum *string
	if w.opts.Checksums != ChecksumNone {
		sum = aws.String(crcBase64(crc))
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
		in.ChecksumCRC32C = sum
	}
	out, err := w.api.UploadPart(w.ctx, in)
	if err != nil {
		return fmt.Errorf("upload: part %d of s3://%s/%s: %w", num, w.bucket, w.key, err)
	}
	w.mu.Lock()
	p := &w.parts[num-1]
	p.ETag = out.ETag
	p.ChecksumCRC32C = sum
	w.mu.Unlock()
	return nil
}

func (w *Writer) create() error {
	in := &s3.CreateMultipartUploadInput{
		Bucket:              &w.bucket,
		Key:                 &w.key,
		ExpectedBucketOwner: w.owner,
		Metadata:            w.opts.Metadata,
	}
	if w.opts.ContentType != "" {
		in.ContentType = &w.opts.ContentType
	}
	if w.opts.ContentEncoding != "" {
		in.ContentEncoding = &w.opts.ContentEncoding
	}
	switch w.opts.Checksums {
	case ChecksumFullObject:
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
		in.ChecksumType = types.ChecksumTypeFullObject
	case ChecksumComposite:
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
	}
	out, err := w.api.CreateMultipartUpload(w.ctx, in)
	if err != nil {
		return fmt.Errorf("upload: create multipart upload of s3://%s/%s: %w", w.bucket, w.key, err)
	}
	if out.UploadId == nil || *out.UploadId == "" {
		return fmt.Errorf("upload: create multipart upload of s3://%s/%s: no upload id", w.bucket, w.key)
	}
	w.mu.Lock()
	w.uploadID = out.UploadId
	w.mu.Unlock()
	return nil
}

func (w *Writer) putObject() error {
	var body []byte
	if w.buf != nil {
		body = (*w.buf)[:w.fill]
	}
	in := &s3.PutObjectInput{
		Bucket:              &w.bucket,
		Key:                 &w.key,
		Body:                bytes.NewReader(body),
		ContentLength:       aws.Int64(int64(len(body))),
		ExpectedBucketOwner: w.owner,
		Metadata:            w.opts.Metadata,
	}
	if w.opts.ContentType != "" {
		in.ContentType = &w.opts.ContentType
	}
	if w.opts.ContentEncoding != "" {
		in.ContentEncoding = &w.opts.ContentEncoding
	}
	w.crc = crc32cCombine(w.crc, w.partCRC, int64(w.fill)) // w.crc was 0
	if w.opts.Checksums != ChecksumNone {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
		in.ChecksumCRC32C = aws.String(crcBase64(w.crc))
	}
	out, err := w.api.PutObject(w.ctx, in)
	if err != nil {
		w.buf = nil // see startPart: not reused after a failed request
		return fmt.Errorf("upload: put s3://%s/%s: %w", w.bucket, w.key, err)
	}
	w.setResult(0, out.ETag, out.VersionId)
	return nil
}

// complete sends the last part, waits for all parts and completes.
func (w *Writer) complete() error {
	// The buffer is never empty here: a full part is only sent once more
	// data follows it.
	select {
	case w.sem <- struct{}{}:
	case <-w.ctx.Done():
		return w.check()
	}
	w.startPart()
	w.wg.Wait()
	if err := w.check(); err != nil {
		return err
	}
	w.mu.Lock()
	parts := w.parts
	w.mu.Unlock()
	in := &s3.CompleteMultipartUploadInput{
		Bucket:              &w.bucket,
		Key:                 &w.key,
		UploadId:            w.uploadID,
		MultipartUpload:     &types.CompletedMultipartUpload{Parts: parts},
		ExpectedBucketOwner: w.owner,
	}
	if w.opts.Checksums == ChecksumFullObject {
		in.ChecksumType = types.ChecksumTypeFullObject
		in.ChecksumCRC32C = aws.String(crcBase64(w.crc))
		in.MpuObjectSize = aws.Int64(w.written.Load())
	}
	out, err := w.api.CompleteMultipartUpload(w.ctx, in)
	if err != nil {
		return fmt.Errorf("upload: complete multipart upload of s3://%s/%s: %w", w.bucket, w.key, err)
	}
	w.setResult(len(parts), out.ETag, out.VersionId)
	return nil
}

func (w *Writer) setResult(parts int, etag, version *string) {
	w.result = Result{
		Key:         w.key,
		Bytes:       w.written.Load(),
		CRC32C:      crcBase64(w.crc),
		CRC32CValue: w.crc,
		SHA256:      hex.EncodeToString(w.sha.Sum(nil)),
		Parts:       parts,
		ETag:        aws.ToString(etag),
		VersionID:   aws.ToString(version),
	}
}

func crcBase64(v uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return base64.StdEncoding.EncodeToString(b[:])
}

// Buffers: each Writer keeps its idle buffers in w.free, so it allocates at
// most Concurrency+1 whatever the GC does; a process-wide sync.Pool per part
// size carries them from one Writer to the next (the exporter rolls files).

var pools sync.Map // int64 part size -> *sync.Pool of *[]byte

func poolFor(size int64) *sync.Pool {
	if p, ok := pools.Load(size); ok {
		return p.(*sync.Pool)
	}
	p, _ := pools.LoadOrStore(size, &sync.Pool{New: func() any {
		b := make([]byte, size)
		return &b
	}})
	return p.(*sync.Pool)
}

func (w *Writer) getBuf() *[]byte {
	select {
	case b := <-w.free:
		return b
	default:
		return w.pool.Get().(*[]byte)
	}
}

func (w *Writer) putBuf(b *[]byte) {
	select {
	case w.free <- b:
	default:
		w.pool.Put(b)
	}
}

// release returns idle buffers to the shared pool once no part is in flight
// and ends the Writer's context.
func (w *Writer) release() {
	w.wg.Wait()
	if w.buf != nil {
		w.pool.Put(w.buf)
		w.buf = nil
	}
	for {
		select {
		case b := <-w.free:
			w.pool.Put(b)
		default:
			w.cancel(context.Canceled)
			return
		}
	}
}
