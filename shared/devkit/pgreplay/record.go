package pgreplay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Recorder is a proxy that forwards each connection to the upstream server
// and records what the server sends on it (see the package comment).
type Recorder struct {
	socketServer // DSN connects through the proxy

	network, addr string
	reported      atomic.Bool // Stop has returned the errors once

	connsMu sync.Mutex
	conns   []*recordConn // in accept order
}

// recordConn is one proxied connection and its recording.
type recordConn struct {
	client, server net.Conn
	sent           atomic.Int64 // client bytes read so far, counted before they are forwarded
	rec            Conn         // written by the server-to-client goroutine only until both end
}

// StartRecorder starts a proxy in front of the server the keyword/value
// DSN upstreamDSN names. Stop must be called to end it.
func StartRecorder(upstreamDSN string) (*Recorder, error) {
	network, addr, err := upstream(upstreamDSN)
	if err != nil {
		return nil, err
	}
	r := &Recorder{network: network, addr: addr}
	if err := r.start("recorder", upstreamDSN, r.proxy); err != nil {
		return nil, err
	}
	return r, nil
}

// NewRecorder starts a Recorder for one test and stops it when the test
// ends, failing the test on an error Stop returns.
func NewRecorder(tb testing.TB, upstreamDSN string) *Recorder {
	tb.Helper()
	r, err := StartRecorder(upstreamDSN)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if _, err := r.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return r
}

// proxy connects client connection i to the upstream server and copies
// both ways, recording what the server sends.
func (r *Recorder) proxy(i int, c net.Conn) {
	s, err := net.Dial(r.network, r.addr)
	if err != nil {
		c.Close()
		r.fail(fmt.Errorf("pgreplay: recorder: dial upstream %s %s: %w", r.network, r.addr, err))
		return
	}
	r.track(s)
	rc := &recordConn{client: c, server: s}
	r.connsMu.Lock()
	r.conns = append(r.conns, rc)
	r.connsMu.Unlock()
	var both sync.WaitGroup
	both.Add(2)
	r.handlers.Add(3)
	// The client's bytes are counted before they are forwarded: a chunk
	// the server sends after the count was read cannot be an answer to
	// bytes the count leaves out.
	toServer := leg{from: "client", to: "server", src: c, dst: s, buf: 64 << 10, seen: func(b []byte) { rc.sent.Add(int64(len(b))) }}
	toClient := leg{from: "server", to: "client", src: s, dst: c, buf: 256 << 10, seen: func(b []byte) { rc.rec.add(rc.sent.Load(), b) }}
	go func() { defer r.handlers.Done(); defer both.Done(); r.pump(i, toServer) }()
	go func() { defer r.handlers.Done(); defer both.Done(); r.pump(i, toClient) }()
	go func() { defer r.handlers.Done(); both.Wait(); c.Close(); s.Close() }()
}

// leg is one direction of a proxied connection: seen is called with each
// read before it is written on.
type leg struct {
	from, to string
	src, dst net.Conn
	buf      int
	seen     func([]byte)
}

// pump copies l.src to l.dst until either fails or l.src ends, which it
// passes on.
func (r *Recorder) pump(i int, l leg) {
	buf := make([]byte, l.buf)
	for {
		n, err := l.src.Read(buf)
		if n > 0 {
			l.seen(buf[:n])
			if _, werr := l.dst.Write(buf[:n]); werr != nil {
				r.connErr(i, "write to "+l.to, werr)
				l.src.Close()
				return
			}
		}
		if err != nil {
			r.connErr(i, "read from "+l.from, err)
			closeWrite(l.dst)
			return
		}
	}
}

// closeWrite passes an end of stream on.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// connErr records an error of connection i unless it is the end of the
// stream or comes from Stop closing the connection.
func (r *Recorder) connErr(i int, op string, err error) {
	if errors.Is(err, io.EOF) || r.closedByStop(err) {
		return
	}
	r.fail(fmt.Errorf("pgreplay: recorder connection %d: %s: %w", i, op, err))
}

// Stop closes the listener, waits for the clients to close their
// connections (for closeWait at most: then it closes them, an error) and
// for the proxy's goroutines, and returns the recording and the errors the
// proxy met. Safe to call more than once; later calls return the same
// recording and no error.
func (r *Recorder) Stop() (*Recording, error) {
	err := r.stop("Stop")
	if r.reported.Swap(true) {
		err = nil
	}
	rec := &Recording{dsn: r.DSN}
	r.connsMu.Lock()
	defer r.connsMu.Unlock()
	for _, rc := range r.conns {
		c := rc.rec
		c.ClientBytes = rc.sent.Load()
		rec.Conns = append(rec.Conns, c)
	}
	return rec, err
}
