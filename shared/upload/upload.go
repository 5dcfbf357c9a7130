// Package upload streams one object into a store without staging it on
// disk.
//
// A Writer buffers bytes into part-sized buffers taken from a process-wide
// arena, sends full parts through the store's [Protocol] (S3's multipart
// upload, Azure's staged blocks, GCS's resumable upload) with at most
// Options.Concurrency parts in flight, and blocks Write when that limit is
// reached, so memory is bounded by (Concurrency+1) × PartSize whatever the
// object size. On Linux the buffers live outside the Go heap, so they cost
// that and no more (see buffers.go). An object smaller than one part is sent
// with a single request at Close and never starts a multipart upload.
//
// The model is go-cloud's blob.Writer: Close commits, anything else aborts.
// Every failure (a failed part, a failed complete, a cancelled context or an
// explicit Abort) aborts the upload with a fresh context, so a cancelled
// Lambda context still cleans up, and no partial object is ever visible.
// Each part carries its checksum so the store verifies it on arrival where
// it can, and on S3 by default the whole object is verified at completion
// with a full-object CRC32C (E2, E4, C1).
package upload

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"hash/crc32"
	"sync"
	"sync/atomic"
)

// Writer streams one object to a store. Its methods must not be called
// concurrently with each other, except Written. The caller must end every
// Writer with Close or Abort; `defer w.Abort(ctx)` followed by
// `return w.Close()` is safe, since Abort after a successful Close does
// nothing.
type Writer struct {
	parent   context.Context // caller's context, for the detached abort
	ctx      context.Context // cancelled on the first error
	cancel   context.CancelCauseFunc
	proto    Protocol
	opts     Options
	partSize int64
	arena    *arena

	// Owned by the calling goroutine.
	buf      *partBuffer   // current part, nil until the first Write
	fill     int           // bytes used in buf
	partCRC  uint32        // CRC32C of buf[:fill]
	crc      uint32        // CRC32C of the parts already handed off
	hashed   chan struct{} // closed once sha has every part handed off; nil before the first
	written  atomic.Int64
	started  bool // proto.Start succeeded
	nextPart int32
	closed   bool
	done     bool // Close or fail has finished; result/err final
	released bool // buffers handed back to the arena
	result   Result

	// The object's SHA-256: written by the parts' goroutines in turn
	// (startPart), or by the calling goroutine for a single-part object
	// (putObject, when no part was handed off); read after they are done.
	sha hash.Hash

	sem  chan struct{}    // one token per UploadPart in flight
	free chan *partBuffer // this writer's idle buffers
	wg   sync.WaitGroup   // UploadPart goroutines

	mu       sync.Mutex
	err      error // first error
	aborted  bool
	abortErr error
}

// NewWriterFor returns a Writer sending the object through proto, a store's
// Protocol for one object. ctx governs every request but the cleanup
// abort; cancelling it fails the upload. opts.Concurrency 1 sends the parts
// one at a time, in order (what a sequential protocol needs).
func NewWriterFor(ctx context.Context, proto Protocol, opts Options) *Writer {
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
		proto:    proto,
		opts:     opts,
		partSize: ps,
		arena:    arenaFor(ps),
		sha:      sha256.New(),
		nextPart: 1,
		sem:      make(chan struct{}, opts.Concurrency),
		free:     make(chan *partBuffer, opts.Concurrency+1),
	}
	w.arena.acquire()
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
		b := w.buf.b
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
	if !w.started {
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
	return fmt.Errorf("upload: %s: %w", w.proto.Where(), context.Cause(w.ctx))
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

// fail records err, waits for in-flight parts, aborts the upload and
// returns the first error. It runs on the caller's goroutine.
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
	if w.aborted || !w.started {
		return
	}
	w.aborted = true
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AbortTimeout)
	defer cancel()
	if err := w.proto.Abort(actx); err != nil {
		w.abortErr = fmt.Errorf("upload: abort the upload of %s: %w", w.proto.Where(), err)
	}
}

// flush starts the upload if needed and hands the current buffer to a part
// goroutine, blocking while Concurrency parts are in flight.
func (w *Writer) flush() error {
	if w.nextPart >= MaxParts {
		// This part would not be the last one.
		return ErrTooManyParts
	}
	if !w.started {
		if err := w.proto.Start(w.ctx); err != nil {
			return fmt.Errorf("upload: start the upload of %s: %w", w.proto.Where(), err)
		}
		w.mu.Lock()
		w.started = true
		w.mu.Unlock()
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
	// The part's goroutine adds it to the object's SHA-256 once the part
	// before it has been added, so the hash follows the object's order and
	// leaves the writing goroutine: hashing the parts is off the
	// encoder's path and runs on a CPU the encoder leaves idle. A part's
	// UploadPart therefore starts once the parts before it are hashed, and
	// after a failure the parts queued still hash before they see it.
	prev, hashed := w.hashed, make(chan struct{})
	w.hashed = hashed
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.sem }()
		if prev != nil {
			<-prev
		}
		w.sha.Write(buf.b[:size])
		close(hashed)
		body := newPartBody(buf, size)
		if err := w.uploadPart(body, size, crc, num); err != nil {
			// The transport may still read a failed request's body after
			// the call returns: the buffer goes back once it cannot.
			body.abandon(w.arena)
			w.setErr(err)
			return
		}
		w.putBuf(buf)
	}()
}

func (w *Writer) uploadPart(body *partBody, size int, crc uint32, num int32) error {
	if err := w.proto.Part(w.ctx, num, body, int64(size), crc); err != nil {
		return fmt.Errorf("upload: part %d of %s: %w", num, w.proto.Where(), err)
	}
	return nil
}

// Buffers: each Writer keeps its idle buffers in w.free, so it takes at
// most Concurrency+1 from the arena whatever happens; the arena carries them
// from one Writer to the next (the exporter rolls files).

func (w *Writer) getBuf() *partBuffer {
	select {
	case b := <-w.free:
		return b
	default:
		return w.arena.get()
	}
}

func (w *Writer) putBuf(b *partBuffer) {
	select {
	case w.free <- b:
	default:
		w.arena.put(b)
	}
}

// release returns idle buffers to the arena once no part is in flight and
// ends the Writer's context. It runs once, whichever of Close, Abort or a
// failure ends the Writer first.
func (w *Writer) release() {
	w.wg.Wait()
	w.cancel(context.Canceled)
	if w.released {
		return
	}
	w.released = true
	if w.buf != nil {
		w.arena.put(w.buf)
		w.buf = nil
	}
	for {
		select {
		case b := <-w.free:
			w.arena.put(b)
		default:
			w.arena.release()
			return
		}
	}
}
