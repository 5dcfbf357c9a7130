package pgreplay

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
)

// socketServer is what a Recorder and a Replayer share: a PostgreSQL
// socket in a private directory, the loop accepting its connections, the
// goroutines serving them, the errors they met, and the stop that waits for
// the clients to hang up (for closeWait at most, then closes their
// connections: an error).
type socketServer struct {
	// DSN is a pgx keyword/value DSN that connects to the socket: the
	// DSN the server was started with, its host and port replaced.
	DSN string

	name     string // "recorder" or "replayer", in errors
	dir      string
	ln       net.Listener
	accepted chan struct{}  // closed when the accept loop has ended
	handlers sync.WaitGroup // the goroutines serving connections
	stopping atomic.Bool    // stop has closed the listener
	forced   atomic.Bool    // stop has closed the connections
	once     sync.Once
	stopErr  error

	mu     sync.Mutex
	open   []net.Conn // every connection stop may have to close
	n      int        // connections accepted
	errs   []error
	handle func(i int, c net.Conn) // serves connection i, its goroutines counted in handlers
}

// start listens on a fresh socket for a server whose clients use baseDSN's
// keywords, and accepts connections for handle until stop.
func (s *socketServer) start(name, baseDSN string, handle func(i int, c net.Conn)) error {
	dir, ln, err := listen("pg" + name[:3] + "-")
	if err != nil {
		return err
	}
	dsn, err := withHost(baseDSN, dir)
	if err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return err
	}
	s.DSN, s.name, s.dir, s.ln, s.handle = dsn, name, dir, ln, handle
	s.accepted = make(chan struct{})
	go s.accept()
	return nil
}

func (s *socketServer) accept() {
	defer close(s.accepted)
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if !s.stopping.Load() {
				s.fail(fmt.Errorf("pgreplay: %s accept: %w", s.name, err))
			}
			return
		}
		s.mu.Lock()
		i := s.n
		s.n++
		s.open = append(s.open, c)
		s.mu.Unlock()
		s.handle(i, c)
	}
}

// track adds connections stop closes when the clients do not hang up.
func (s *socketServer) track(c net.Conn) {
	s.mu.Lock()
	s.open = append(s.open, c)
	s.mu.Unlock()
}

// closedByStop reports whether err is a connection closed by stop.
func (s *socketServer) closedByStop(err error) bool {
	return s.forced.Load() && errors.Is(err, net.ErrClosed)
}

func (s *socketServer) fail(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

// connections is the number of connections accepted so far.
func (s *socketServer) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// stop closes the listener, waits for the clients to close their
// connections (closeWait at most: then it closes them, an error) and for
// the handlers, and returns every error met. Later calls return the same.
func (s *socketServer) stop(verb string) error {
	s.once.Do(func() {
		s.stopping.Store(true)
		s.ln.Close()
		<-s.accepted
		if drain(&s.handlers, func() {
			s.forced.Store(true)
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, c := range s.open {
				c.Close()
			}
		}) {
			s.fail(fmt.Errorf("pgreplay: %s: connections still open %s after %s: closed them", s.name, closeWait, verb))
		}
		os.RemoveAll(s.dir)
		s.mu.Lock()
		s.stopErr = errors.Join(s.errs...)
		s.mu.Unlock()
	})
	return s.stopErr
}
