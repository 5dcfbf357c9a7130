package upload

import (
	"errors"
	"io"
	"runtime"
	"sync"
)

// Part buffers.
//
// A Writer holds at most Concurrency+1 part buffers: the one it fills and one
// per UploadPart in flight. They are the largest thing an export holds, and
// they stay in use for as long as it uploads. On the Go heap they would cost
// twice their size: the GC lets the heap grow to twice what is live before
// it collects (GOGC=100), so live buffers make room for as much garbage
// again. Where the platform allows (see newPartBuffer) they are anonymous
// mappings outside the Go heap instead, which the GC neither scans nor
// counts: they cost their size, no more.
//
// The buffers of one part size live in a process-wide arena and go from
// Writer to Writer (the exporter rolls files). When no Writer of that size is
// open, the arena gives the idle buffers' memory back (the pages of a
// mapping to the OS, keeping the mapping; Go memory to the GC), so an idle
// process holds no part memory. A mapping is never unmapped: a late reader of
// a buffer can read stale bytes or zeros, never fault.
//
// A part whose request failed is not reused at once, since the HTTP
// transport may still read the body of an abandoned request: its body
// (partBody) returns the buffer to the arena once the body is unreachable.

// partBuffer is the memory of one part.
type partBuffer struct {
	b      []byte
	mapped bool // b is an anonymous mapping, not Go memory
}

// arena holds the idle part buffers of one size.
type arena struct {
	size int64

	mu   sync.Mutex
	idle []*partBuffer
	open int // Writers of this size not yet released
}

// allocBuffer makes a new part buffer (newPartBuffer); the tests count
// through it.
var allocBuffer = newPartBuffer

var arenas sync.Map // int64 part size -> *arena

func arenaFor(size int64) *arena {
	if a, ok := arenas.Load(size); ok {
		return a.(*arena)
	}
	a, _ := arenas.LoadOrStore(size, &arena{size: size})
	return a.(*arena)
}

// acquire records a Writer that will take buffers; release ends it.
func (a *arena) acquire() {
	a.mu.Lock()
	a.open++
	a.mu.Unlock()
}

// release records that a Writer gave its buffers back; with no Writer left
// open, the idle buffers' memory is given back too.
func (a *arena) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.open--
	if a.open > 0 {
		return
	}
	kept := a.idle[:0]
	for _, b := range a.idle {
		if b.mapped {
			releasePages(b.b)
			kept = append(kept, b)
		}
		// Go memory is left to the GC.
	}
	clear(a.idle[len(kept):])
	a.idle = kept
}

// get returns an idle buffer, or a new one.
func (a *arena) get() *partBuffer {
	a.mu.Lock()
	if n := len(a.idle); n > 0 {
		b := a.idle[n-1]
		a.idle = a.idle[:n-1]
		a.mu.Unlock()
		return b
	}
	a.mu.Unlock()
	return allocBuffer(a.size)
}

// put makes b idle. A buffer coming back while no Writer is open (a failed
// part's, see partBody) has its memory given back at once.
func (a *arena) put(b *partBuffer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open == 0 {
		if !b.mapped {
			return
		}
		releasePages(b.b)
	}
	a.idle = append(a.idle, b)
}

// partBody is the request body of one part: the first n bytes of a buffer,
// offered only through its methods, each of which keeps the body reachable
// until it returns. So once the body is unreachable nothing reads the
// buffer any more, and abandon can hand it back to the arena then.
type partBody struct {
	buf *partBuffer
	n   int64
	off int64
}

func newPartBody(buf *partBuffer, n int) *partBody { return &partBody{buf: buf, n: int64(n)} }

func (r *partBody) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	c := copy(p, r.buf.b[r.off:r.n])
	r.off += int64(c)
	runtime.KeepAlive(r)
	return c, nil
}

// WriteTo writes the unread bytes to w with no copy of its own, as
// bytes.Reader does (the HTTP transport and io.Copy prefer it).
func (r *partBody) WriteTo(w io.Writer) (int64, error) {
	if r.off >= r.n {
		return 0, nil
	}
	c, err := w.Write(r.buf.b[r.off:r.n])
	r.off += int64(c)
	runtime.KeepAlive(r)
	if err == nil && r.off < r.n {
		err = io.ErrShortWrite
	}
	return int64(c), err
}

var errSeek = errors.New("upload: part body: seek out of range")

func (r *partBody) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.n
	case io.SeekStart:
	default:
		return 0, errSeek
	}
	if offset < 0 {
		return 0, errSeek
	}
	r.off = offset
	return offset, nil
}

// Len returns the number of unread bytes (as bytes.Reader.Len: the SDK sizes
// a stream with it).
func (r *partBody) Len() int { return int(max(0, r.n-r.off)) }

// abandon hands the buffer back to a once the body is unreachable: the
// request it was sent with failed, and the transport may still read it.
func (r *partBody) abandon(a *arena) {
	runtime.AddCleanup(r, a.put, r.buf)
}
