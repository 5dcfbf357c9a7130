package upload

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
)

// made counts the part buffers allocated, by size, for the whole test
// binary (arenas are process wide).
var made struct {
	sync.Mutex
	n map[int64]int
}

func TestMain(m *testing.M) {
	alloc := allocBuffer
	made.n = map[int64]int{}
	allocBuffer = func(size int64) *partBuffer {
		made.Lock()
		made.n[size]++
		made.Unlock()
		return alloc(size)
	}
	os.Exit(m.Run())
}

// stats returns the number of the arena's idle buffers and of buffers ever
// allocated of its size.
func (a *arena) stats() (idle, allocated int) {
	a.mu.Lock()
	idle = len(a.idle)
	a.mu.Unlock()
	made.Lock()
	defer made.Unlock()
	return idle, made.n[a.size]
}

// Each test uses a part size of its own: arenas are per size and process
// wide.
const (
	sizeBounded  = MinPartSize + 1*64<<10
	sizeReleased = MinPartSize + 2*64<<10
	sizeFailed   = MinPartSize + 3*64<<10
)

// stream writes parts full parts (and one byte more) through a Writer on f.
func stream(t *testing.T, f *fakeS3, key string, partSize int64, conc, parts int) *Writer {
	t.Helper()
	w := NewWriter(t.Context(), f, "b", key, Options{PartSize: partSize, Concurrency: conc})
	chunk := randomBytes(64<<10, 12)
	for n := int64(0); n <= int64(parts)*partSize; n += int64(len(chunk)) {
		if _, err := w.Write(chunk); err != nil {
			break // the caller checks Close
		}
	}
	return w
}

// TestBuffersBounded: a Writer takes at most Concurrency+1 part buffers
// whatever the object size; on Linux they are not Go heap memory, and the
// next Writer of the same size reuses them, so two Writers one after the
// other make Concurrency+1 in all (elsewhere the GC frees idle ones).
func TestBuffersBounded(t *testing.T) {
	const conc, parts = 2, 24
	f := newFake()
	f.discard = true
	a := arenaFor(sizeBounded)
	linux := runtime.GOOS == "linux"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, key := range []string{"first", "second"} {
		_, madeBefore := a.stats()
		if err := stream(t, f, key, sizeBounded, conc, parts).Close(); err != nil {
			t.Fatal(err)
		}
		idle, made := a.stats()
		if made-madeBefore > conc+1 {
			t.Fatalf("%s Writer: %d buffers made, want at most %d", key, made-madeBefore, conc+1)
		}
		if linux && (made > conc+1 || idle != made) {
			t.Fatalf("after the %s Writer: %d buffers made in all, %d idle; want at most %d, all idle", key, made, idle, conc+1)
		}
	}
	runtime.ReadMemStats(&after)
	heap := after.TotalAlloc - before.TotalAlloc
	if linux && heap >= uint64(sizeBounded) {
		t.Errorf("streamed %d parts twice with %.1f MiB of Go heap allocated, want less than one part (%.1f MiB): buffers belong off the heap",
			parts, float64(heap)/MiB, float64(sizeBounded)/MiB)
	}
}

// TestIdlePagesReleased: while a Writer of a size is open the arena keeps
// its idle buffers' memory; once none is, it gives it back (a mapped
// buffer's pages read as zeros again).
func TestIdlePagesReleased(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("part buffers are Go memory here: the GC frees them")
	}
	f := newFake()
	f.discard = true
	a := arenaFor(sizeReleased)
	open := NewWriter(t.Context(), f, "b", "open", Options{PartSize: sizeReleased})
	if err := stream(t, f, "first", sizeReleased, 2, 4).Close(); err != nil {
		t.Fatal(err)
	}
	touched := func() (n int) {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, b := range a.idle {
			if !b.mapped {
				t.Fatal("a part buffer is Go memory on Linux")
			}
			if !bytes.Equal(b.b[:4096], make([]byte, 4096)) {
				n++
			}
		}
		return n
	}
	idle, _ := a.stats()
	if n := touched(); idle == 0 || n != idle {
		t.Fatalf("with a Writer open: %d of %d idle buffers hold data, want all kept", n, idle)
	}
	if err := open.Close(); err != nil {
		t.Fatal(err)
	}
	if idle, _ := a.stats(); idle == 0 {
		t.Fatal("no idle buffer kept for the next Writer")
	}
	if n := touched(); n != 0 {
		t.Fatalf("with no Writer open: %d idle buffers still hold data, want their pages released", n)
	}
}

// TestFailedPartBuffer: the buffer of a failed part is not reused while its
// request body may still be read, and comes back to the arena once the body
// is unreachable; the Writer, ended by the failure and by Abort, counts as
// released once.
func TestFailedPartBuffer(t *testing.T) {
	f := newFake()
	f.discard = true
	f.failPart = 2
	a := arenaFor(sizeFailed)
	w := stream(t, f, "failing", sizeFailed, 1, 6)
	if err := w.Close(); err == nil {
		t.Fatal("Close succeeded past a failed part")
	}
	_ = w.Abort(t.Context()) // after a failure: releases nothing twice
	a.mu.Lock()
	open := a.open
	a.mu.Unlock()
	if open != 0 {
		t.Fatalf("%d Writers open after Close and Abort, want 0", open)
	}
	idle, made := a.stats()
	if idle != made-1 {
		t.Fatalf("after the failure: %d of %d buffers idle, want all but the failed part's", idle, made)
	}
	for range 20 {
		runtime.GC()
		runtime.Gosched()
		if idle, _ = a.stats(); idle == made {
			return
		}
	}
	t.Fatalf("the failed part's buffer never came back: %d of %d idle", idle, made)
}

// TestPartBody: the request body reads, seeks and sizes like a
// bytes.Reader over the part's bytes.
func TestPartBody(t *testing.T) {
	data := randomBytes(10_000, 3)
	buf := &partBuffer{b: append(data, make([]byte, 500)...)} // a buffer larger than the part
	for _, c := range []struct {
		name string
		read func(r io.ReadSeeker) ([]byte, error)
		want []byte
	}{
		{"read all", func(r io.ReadSeeker) ([]byte, error) { return io.ReadAll(r) }, data},
		{"write to", func(r io.ReadSeeker) ([]byte, error) {
			var out bytes.Buffer
			_, err := r.(io.WriterTo).WriteTo(&out)
			return out.Bytes(), err
		}, data},
		{"seek then read", func(r io.ReadSeeker) ([]byte, error) {
			if _, err := r.Seek(-100, io.SeekEnd); err != nil {
				return nil, err
			}
			return io.ReadAll(r)
		}, data[len(data)-100:]},
		{"read, rewind, read", func(r io.ReadSeeker) ([]byte, error) {
			if _, err := io.ReadFull(r, make([]byte, 777)); err != nil {
				return nil, err
			}
			if n := r.(interface{ Len() int }).Len(); n != len(data)-777 {
				t.Errorf("Len after 777 bytes = %d", n)
			}
			if _, err := r.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
			return io.ReadAll(r)
		}, data},
		{"negative seek fails", func(r io.ReadSeeker) ([]byte, error) {
			if _, err := r.Seek(-1, io.SeekStart); err == nil {
				t.Error("seek to -1 succeeded")
			}
			return io.ReadAll(r)
		}, data},
	} {
		got, err := c.read(newPartBody(buf, len(data)))
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: %d bytes, %v; want %d bytes", c.name, len(got), err, len(c.want))
		}
	}
}
