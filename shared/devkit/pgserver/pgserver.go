// Package pgserver starts and stops a throwaway PostgreSQL server for tests:
// a fresh cluster (initdb) served on a unix socket only, so no TCP port is
// taken and parallel packages cannot collide. It never skips: missing server
// binaries are an error carrying the install hint.
//
// The server runs as the "postgres" OS user when the tests run as root
// (initdb and postgres refuse root), otherwise as the current user. The
// cluster lives in a short private directory under os.TempDir, because a
// unix socket path is limited to ~100 bytes and because a root-owned
// t.TempDir (mode 0700 parents) is not reachable by the postgres user.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// InstallHint is part of every error about missing server binaries.
const InstallHint = "PostgreSQL server binaries (initdb, postgres) not found: install them with `apt-get install postgresql` " +
	"(they land in /usr/lib/postgresql/<version>/bin), or point PGTEST_BIN at the directory holding them"

// User is the OS user the server runs as when the tests run as root.
const User = "postgres"

// Database and Role are what DSN connects to.
const (
	Database = "postgres"
	Role     = "postgres"
)

// Server is one running PostgreSQL cluster.
type Server struct {
	// DSN is a pgx keyword/value connection string for the superuser
	// (trust authentication, no password). More keywords may be appended,
	// e.g. DSN + " search_path=s1 timezone=Asia/Tokyo".
	DSN string
	// Pid is the postmaster's process id.
	Pid int
	// Root is the cluster directory: data/ and the socket live here.
	Root string
	// Log is the server's log file.
	Log string
	// InitDuration and StartDuration are how long initdb and start-up
	// (until a connection succeeded) took.
	InitDuration, StartDuration time.Duration

	cmd      *exec.Cmd
	exited   chan struct{} // closed when the postmaster has exited
	waitErr  error
	stopOnce sync.Once
	stopErr  error
}

// BinDir returns the directory holding initdb and postgres: $PGTEST_BIN,
// the newest /usr/lib/postgresql/<version>/bin, or the one on PATH.
func BinDir() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv("PGTEST_BIN"); dir != "" {
		if !has(dir) {
			return "", fmt.Errorf("PGTEST_BIN=%s: %s", dir, InstallHint)
		}
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		// Resolve a symlink (e.g. /usr/local/bin/initdb) so postgres is
		// looked for beside the real initdb.
		if real, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
		if has(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	return "", errors.New(InstallHint)
}

func pgVersion(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start creates a cluster and starts its server, returning once it accepts
// connections. dir receives the logs (initdb.log, postgres.log); it may be a
// t.TempDir. Stop must be called to end the server and delete the cluster.
func Start(ctx context.Context, dir string) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "pgserver-")
	if err != nil {
		return nil, fmt.Errorf("pgserver: cluster dir: %w", err)
	}
	if cred != nil {
		if err := os.Chown(root, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(root)
			return nil, fmt.Errorf("pgserver: chown cluster dir to %s: %w", User, err)
		}
	}
	if dir == "" {
		dir = root
	}
	data := filepath.Join(root, "data")
	env := []string{
		"PATH=" + bin + ":/usr/bin:/bin",
		"LC_ALL=C", "LANG=C", "TZ=UTC",
		"HOME=" + root,
	}

	t0 := time.Now()
	initLog := filepath.Join(dir, "initdb.log")
	if err := run(ctx, cred, env, root, initLog, filepath.Join(bin, "initdb"),
		"-D", data, "-U", Role, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("pgserver: initdb (log %s): %w%s", initLog, err, tail(initLog))
	}
	s := &Server{
		Root:         root,
		Log:          filepath.Join(dir, "postgres.log"),
		InitDuration: time.Since(t0),
		exited:       make(chan struct{}),
		DSN: fmt.Sprintf("host=%s port=5432 user=%s dbname=%s sslmode=disable connect_timeout=5",
			root, Role, Database),
	}

	t1 := time.Now()
	logf, err := os.Create(s.Log)
	if err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	defer logf.Close()
	// A throwaway cluster: durability is worth nothing, speed is.
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-k", root, "-p", "5432", "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=50", "-c", "shared_buffers=32MB")
	cmd.Env = env
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: cred,
		// If the test binary dies (e.g. -timeout panic), take the server
		// down with it rather than leaking it.
		Pdeathsig: syscall.SIGQUIT,
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("pgserver: start postgres: %w", err)
	}
	s.cmd, s.Pid = cmd, cmd.Process.Pid
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx, 30*time.Second); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("pgserver: postgres pid %d (log %s): %w%s", s.Pid, s.Log, err, tail(s.Log))
	}
	s.StartDuration = time.Since(t1)
	return s, nil
}

// New starts a server for one test (logs in a t.TempDir) and stops it when
// the test ends. It fails the test, never skips it, when the server cannot
// start.
func New(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start(context.Background(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// credential returns the identity to run the server as: the postgres user
// when we are root, nil (ourselves) otherwise.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(User)
	if err != nil {
		return nil, fmt.Errorf("pgserver: running as root, and PostgreSQL refuses root; OS user %q: %w (%s)", User, err, InstallHint)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgserver: OS user %q has non-numeric uid/gid %s/%s", User, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

func run(ctx context.Context, cred *syscall.Credential, env []string, workDir, logPath, bin string, args ...string) error {
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Dir = workDir // somewhere the server's user may stand
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	return cmd.Run()
}

// waitReady polls a connection until the server accepts one, the server
// exits, or the limit passes.
func (s *Server) waitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		conn, err := pgconn.Connect(ctx, s.DSN)
		if err == nil {
			return conn.Close(ctx)
		}
		last = err
		select {
		case <-s.exited:
			return fmt.Errorf("exited during start-up: %v", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not accepting connections after %s: %v", limit, last)
		case <-tick.C:
		}
	}
}

// Stop shuts the server down (SIGINT, PostgreSQL's "fast" mode, the same as
// pg_ctl stop -m fast, sent to its pid), waits for it and deletes the
// cluster. The logs in Start's dir are kept. Safe to call more than once.
func (s *Server) Stop() error {
	if s == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		defer os.RemoveAll(s.Root)
		if s.cmd == nil {
			return
		}
		if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
			s.stopErr = fmt.Errorf("pgserver: stop postgres pid %d: %w", s.Pid, err)
		}
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Signal(syscall.SIGQUIT) // immediate shutdown
			<-s.exited
			s.stopErr = fmt.Errorf("pgserver: postgres pid %d ignored fast shutdown for 30s", s.Pid)
		}
	})
	return s.stopErr
}

// tail returns the end of a log file for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	b = b[max(0, len(b)-2000):]
	return "\n--- " + filepath.Base(path) + " tail ---\n" + strings.TrimRight(string(b), "\n")
}
