package pgreplay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
)

// Recorder is a proxy that forwards each connection to the upstream server
// and records what the server sends on it (see the package comment).
type Recorder struct {
	// DSN is a pgx keyword/value DSN that connects through the proxy: the
	// upstream DSN with its host and port replaced.
	DSN string

	network, addr string
	dir           string
	ln            net.Listener
	accepted      chan struct{}  // closed when the accept loop has ended
	proxying      sync.WaitGroup // a connection's goroutines
	stopping      atomic.Bool    // Stop has closed the listener
	forced        atomic.Bool    // Stop has closed the connections
	stopOnce      sync.Once

	mu    sync.Mutex
	conns []*recordConn // in accept order
	errs  []error
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
	dir, ln, err := listen("pgrec-")
	if err != nil {
		return nil, err
	}
	dsn, err := withHost(upstreamDSN, dir)
	if err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	r := &Recorder{DSN: dsn, network: network, addr: addr, dir: dir, ln: ln, accepted: make(chan struct{})}
	go r.accept()
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

func (r *Recorder) accept() {
	defer close(r.accepted)
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if !r.stopping.Load() {
				r.fail(fmt.Errorf("pgreplay: recorder accept: %w", err))
			}
			return
		}
		s, err := net.Dial(r.network, r.addr)
		if err != nil {
			c.Close()
			r.fail(fmt.Errorf("pgreplay: recorder: dial upstream %s %s: %w", r.network, r.addr, err))
			continue
		}
		rc := &recordConn{client: c, server: s}
		r.mu.Lock()
		i := len(r.conns)
		r.conns = append(r.conns, rc)
		r.mu.Unlock()
		var both sync.WaitGroup
		both.Add(2)
		r.proxying.Add(3)
		go func() { defer r.proxying.Done(); defer both.Done(); r.forward(i, rc) }()
		go func() { defer r.proxying.Done(); defer both.Done(); r.record(i, rc) }()
		go func() { defer r.proxying.Done(); both.Wait(); c.Close(); s.Close() }()
	}
}

// forward copies the client's bytes to the server, counting each read
// before it is forwarded: a chunk the server sends after the count was
// read cannot be an answer to bytes the count leaves out.
func (r *Recorder) forward(i int, rc *recordConn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := rc.client.Read(buf)
		if n > 0 {
			rc.sent.Add(int64(n))
			if _, werr := rc.server.Write(buf[:n]); werr != nil {
				r.connErr(i, "write to server", werr)
				rc.client.Close()
				return
			}
		}
		if err != nil {
			r.connErr(i, "read from client", err)
			closeWrite(rc.server)
			return
		}
	}
}

// record copies the server's bytes to the client and records them.
func (r *Recorder) record(i int, rc *recordConn) {
	buf := make([]byte, 256<<10)
	for {
		n, err := rc.server.Read(buf)
		if n > 0 {
			rc.rec.add(rc.sent.Load(), buf[:n])
			if _, werr := rc.client.Write(buf[:n]); werr != nil {
				r.connErr(i, "write to client", werr)
				rc.server.Close()
				return
			}
		}
		if err != nil {
			r.connErr(i, "read from server", err)
			closeWrite(rc.client)
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
	if errors.Is(err, io.EOF) || (r.forced.Load() && errors.Is(err, net.ErrClosed)) {
		return
	}
	r.fail(fmt.Errorf("pgreplay: recorder connection %d: %s: %w", i, op, err))
}

func (r *Recorder) fail(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

// Stop closes the listener, waits for the clients to close their
// connections (for closeWait at most: then it closes them, an error) and
// for the proxy's goroutines, and returns the recording and the errors the
// proxy met. Safe to call more than once; later calls return the same
// recording and no error.
func (r *Recorder) Stop() (*Recording, error) {
	var err error
	r.stopOnce.Do(func() {
		r.stopping.Store(true)
		r.ln.Close()
		<-r.accepted
		if drain(&r.proxying, func() {
			r.forced.Store(true)
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, rc := range r.conns {
				rc.client.Close()
				rc.server.Close()
			}
		}) {
			r.fail(fmt.Errorf("pgreplay: recorder: connections still open %s after Stop: closed them", closeWait))
		}
		os.RemoveAll(r.dir)
		err = errors.Join(r.errs...)
	})
	rec := &Recording{dsn: r.DSN}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rc := range r.conns {
		c := rc.rec
		c.ClientBytes = rc.sent.Load()
		rec.Conns = append(rec.Conns, c)
	}
	return rec, err
}
