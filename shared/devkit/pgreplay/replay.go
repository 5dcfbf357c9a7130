package pgreplay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
)

// Replayer serves a Recording from memory (see the package comment).
type Replayer struct {
	socketServer // DSN connects to the replay

	rec *Recording
}

// StartReplayer serves rec on a fresh socket. Close must be called to end
// it; it returns what went wrong with the replay.
func StartReplayer(rec *Recording) (*Replayer, error) {
	r := &Replayer{rec: rec}
	if err := r.start("replayer", rec.dsn, r.replay); err != nil {
		return nil, err
	}
	return r, nil
}

// NewReplayer serves rec for one test and closes the replay when the test
// ends, failing the test on an error Close returns.
func NewReplayer(tb testing.TB, rec *Recording) *Replayer {
	tb.Helper()
	r, err := StartReplayer(rec)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := r.Close(); err != nil {
			tb.Error(err)
		}
	})
	return r
}

// sendWindow is the send buffer the replayer asks for on each connection:
// the bytes a client finds waiting without the replaying process running,
// as a TCP connection to a database on other hardware has its receive
// window in flight. Linux caps the request at net.core.wmem_max, then
// doubles it: 8 MiB where wmem_max is 4 MiB, 416 KiB where it was left at
// the 208 KiB default. With the default send buffer a client reading
// faster than the replaying process is scheduled, on the same cores, waits
// for it every fifth of a megabyte.
const sendWindow = 4 << 20

// replay serves connection i its recording, if the recording has one.
func (r *Replayer) replay(i int, c net.Conn) {
	if i >= len(r.rec.Conns) {
		c.Close()
		r.fail(fmt.Errorf("pgreplay: replayer connection %d: the recording has %d connections", i, len(r.rec.Conns)))
		return
	}
	if uc, ok := c.(*net.UnixConn); ok {
		// Best effort: the kernel caps it (see sendWindow).
		_ = uc.SetWriteBuffer(sendWindow)
	}
	r.handlers.Add(1)
	go func() { defer r.handlers.Done(); r.serve(i, c, &r.rec.Conns[i]) }()
}

// progress is what the reading side of a replayed connection tells the
// writing side: bytes the client sent, and whether (and why) reading ended.
type progress struct {
	mu     sync.Mutex
	sent   int64
	ended  bool
	err    error         // the read error that ended it, io.EOF for a close
	notify chan struct{} // a token whenever sent or ended changed
}

func (p *progress) state() (int64, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent, p.ended, p.err
}

// read counts the client's bytes until the client closes or reading fails.
func (p *progress) read(c net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		p.mu.Lock()
		p.sent += int64(n)
		if err != nil {
			p.ended, p.err = true, err
		}
		p.mu.Unlock()
		select {
		case p.notify <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// serve replays rc on connection i: each chunk once the client has sent
// its After, then reads until the client closes, which must be after as
// many bytes as the recorded client sent.
func (r *Replayer) serve(i int, c net.Conn, rc *Conn) {
	defer c.Close()
	p := &progress{notify: make(chan struct{}, 1)}
	readDone := make(chan struct{})
	go func() { defer close(readDone); p.read(c) }()
	defer func() { <-readDone }()
	next := 0
	for next < len(rc.Chunks) {
		sent, ended, err := p.state()
		end := released(rc.Chunks, next, sent)
		if end == next {
			if ended {
				r.fail(fmt.Errorf("pgreplay: replayer connection %d: client sent %d bytes and stopped (%v); chunk %d of %d waits for %d",
					i, sent, readReason(err, r.forced.Load()), next, len(rc.Chunks), rc.Chunks[next].After))
				return
			}
			<-p.notify
			continue
		}
		bufs := make(net.Buffers, 0, end-next)
		for _, ch := range rc.Chunks[next:end] {
			bufs = append(bufs, ch.Data)
		}
		if _, err := bufs.WriteTo(c); err != nil {
			if !r.closedByStop(err) {
				r.fail(fmt.Errorf("pgreplay: replayer connection %d: write chunks %d-%d of %d: %w", i, next, end-1, len(rc.Chunks), err))
			} else {
				r.fail(fmt.Errorf("pgreplay: replayer connection %d: closed by Close with chunks %d-%d of %d unsent", i, next, end-1, len(rc.Chunks)))
			}
			return
		}
		next = end
	}
	<-readDone
	sent, _, err := p.state()
	if !errors.Is(err, io.EOF) && !r.closedByStop(err) {
		r.fail(fmt.Errorf("pgreplay: replayer connection %d: read after the last chunk: %w", i, err))
		return
	}
	if errors.Is(err, io.EOF) && sent != rc.ClientBytes {
		// A client that sent more than the recorded client did got
		// answers early: not the recorded session.
		r.fail(fmt.Errorf("pgreplay: replayer connection %d: client sent %d bytes in all, the recorded one %d", i, sent, rc.ClientBytes))
	}
}

// readReason says why a client's stream ended.
func readReason(err error, closing bool) string {
	switch {
	case errors.Is(err, io.EOF):
		return "closed"
	case closing && errors.Is(err, net.ErrClosed):
		return "the replay was closed"
	}
	return err.Error()
}

// Connections is the number of connections accepted so far.
func (r *Replayer) Connections() int { return r.connections() }

// Close stops listening, waits for the clients to close their connections
// (for closeWait at most: then it closes them, an error), waits for the
// replay's goroutines and returns every error the replay met: more
// connections than recorded, a client that stopped before its chunks were
// released or that sent another number of bytes than the recorded one, a
// failed read or write. Safe to call more than once.
func (r *Replayer) Close() error { return r.stop("Close") }
