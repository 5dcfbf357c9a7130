// Package pgreplay records what a PostgreSQL server sends a client and
// serves it back from memory, so a benchmark can read a large result from a
// source that costs (almost) no CPU on the machine under test. It is test
// support for tests and benchmarks only.
//
// A Recorder is a proxy between pgx and a real server. For every
// connection, in the order it accepted them, it keeps the server's bytes as
// chunks, each tagged with how many bytes the client had sent before the
// chunk arrived. A Replayer serves a Recording: for its i-th connection it
// reads what the client sends and writes chunk k once the client has sent
// at least chunk k's tag of bytes. It never looks at the bytes, so a
// client that sends the same number of bytes per connection as in the
// recording gets the same answers, and it cannot deadlock: in the
// recording the client sent those bytes before it saw the chunk.
//
// Both listen on a unix socket (.s.PGSQL.5432 in a short private temporary
// directory), as shared/devkit/pgserver does: no TCP port is taken, so
// parallel packages cannot collide, a DSN names it with the same keywords
// as pgserver's, and a local socket costs the client less than loopback
// TCP would.
package pgreplay

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// port is the port number in the socket's name (.s.PGSQL.<port>) and DSN.
const port = 5432

// chunkMax is the most bytes one recorded chunk holds: chunks with the same
// tag are coalesced up to it, so a replay writes large blocks.
const chunkMax = 1 << 20

// closeWait is how long Stop and Close wait for the clients to close their
// connections before they close them (an error: the session had not ended).
const closeWait = 10 * time.Second

// drain waits for conns; when that takes longer than closeWait it calls
// closeAll and waits again, and reports that it had to.
func drain(conns *sync.WaitGroup, closeAll func()) bool {
	done := make(chan struct{})
	go func() { conns.Wait(); close(done) }()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
	}
	closeAll()
	<-done
	return true
}

// Chunk is bytes the server sent on one connection, and After, the number
// of bytes the client had sent on it before they arrived.
type Chunk struct {
	After int64
	Data  []byte
}

// Conn is the recording of one connection.
type Conn struct {
	// Chunks are the server's bytes in order; their After never decreases.
	Chunks []Chunk
	// ClientBytes is how many bytes the client sent in all.
	ClientBytes int64
}

// ServerBytes is the number of bytes the server sent.
func (c *Conn) ServerBytes() int64 {
	var n int64
	for _, ch := range c.Chunks {
		n += int64(len(ch.Data))
	}
	return n
}

// add appends server bytes that arrived after the client had sent after
// bytes, in the last chunk when its tag is the same and it has room.
func (c *Conn) add(after int64, b []byte) {
	if n := len(c.Chunks); n > 0 && c.Chunks[n-1].After == after && len(c.Chunks[n-1].Data)+len(b) <= chunkMax {
		c.Chunks[n-1].Data = append(c.Chunks[n-1].Data, b...)
		return
	}
	c.Chunks = append(c.Chunks, Chunk{After: after, Data: append(make([]byte, 0, max(len(b), 64<<10)), b...)})
}

// Recording is a session's connections in the order they were accepted.
// It is not changed once the Recorder has stopped, so several Replayers
// may serve it at once.
type Recording struct {
	Conns []Conn
	// dsn is the upstream DSN: a replay's DSN is it with host and port
	// replaced, so the client's start-up message is the same.
	dsn string
}

// released returns the index past the last chunk from next on that a
// client which has sent sent bytes may have: chunks are released in order,
// each once sent reaches its After.
func released(chunks []Chunk, next int, sent int64) int {
	for next < len(chunks) && chunks[next].After <= sent {
		next++
	}
	return next
}

// listen makes a private directory and listens on the PostgreSQL socket in
// it.
func listen(prefix string) (dir string, ln net.Listener, err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, fmt.Errorf("pgreplay: socket dir: %w", err)
	}
	ln, err = net.Listen("unix", filepath.Join(dir, fmt.Sprintf(".s.PGSQL.%d", port)))
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("pgreplay: listen: %w", err)
	}
	return dir, ln, nil
}

// withHost returns the keyword/value DSN dsn with its host and port
// replaced by the socket directory dir (added when missing).
func withHost(dsn, dir string) (string, error) {
	if strings.ContainsAny(dsn, `'\`) || strings.Contains(dsn, "://") {
		return "", fmt.Errorf("pgreplay: dsn %q: only unquoted keyword=value pairs are supported", dsn)
	}
	out := []string{"host=" + dir, fmt.Sprintf("port=%d", port)}
	for _, kv := range strings.Fields(dsn) {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			return "", fmt.Errorf("pgreplay: dsn %q: %q is not keyword=value", dsn, kv)
		}
		if k != "host" && k != "port" {
			out = append(out, kv)
		}
	}
	return strings.Join(out, " "), nil
}

// upstream returns the network and address of the server dsn names.
func upstream(dsn string) (network, addr string, err error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", "", fmt.Errorf("pgreplay: upstream dsn: %w", err)
	}
	network, addr = pgconn.NetworkAddress(cfg.Host, cfg.Port)
	return network, addr, nil
}
