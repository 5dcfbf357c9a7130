// Package serverproc runs a server a test needs as a process of its own on
// loopback: a free port, its output in a log file, a readiness check, and a
// stop by pid (its process group), with the end of its log shown when
// something fails. Every server launcher of the development kit starts its
// process through it (motoserver, minioserver, runtimeemulator, dynalite,
// gcsserver, azurite; pgserver alone runs its cluster on a unix socket as
// another user). Only tests and the local development tools import it.
package serverproc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Spec says how to run one server.
type Spec struct {
	// Name names the server in errors and in its log file's name.
	Name string
	// Path is the executable; Args builds its arguments for the port it is
	// to listen on (on 127.0.0.1).
	Path string
	Args func(port int) []string
	// Env is the process's whole environment (nil: this process's).
	Env []string
	// Dir is its working directory ("": this process's), and where its
	// log goes unless Log names the file.
	Dir string
	// Log is the file its output goes to ("": Dir/Name.log).
	Log string
	// Output, when set, takes its output instead of a log file (LogTail
	// is then "").
	Output io.Writer
	// Ready answers nil once the server serves requests at url
	// (http://127.0.0.1:port). Nil: any HTTP answer to GET url/.
	Ready func(ctx context.Context, url string) error
	// Timeout bounds the wait for Ready (0: 60s).
	Timeout time.Duration
	// Grace is how long Stop waits after SIGTERM before it kills the
	// process group (0: 30s).
	Grace time.Duration
}

// Process is one running server.
type Process struct {
	Name string
	// URL is http://127.0.0.1:port.
	URL  string
	Port int
	Pid  int
	// Log is the file its output goes to ("" when Spec.Output took it).
	Log     string
	grace   time.Duration
	exited  chan struct{} // closed once the process has exited
	waitErr error         // its exit, once exited is closed
}

// ErrExited is a server that exited before it was ready (perhaps because
// another process took its port first).
var ErrExited = errors.New("exited before it was ready")

// Start launches the server on a free loopback port and returns once Ready
// says it serves requests. A server that exits or never gets ready is
// stopped, and the error carries the end of its log.
func Start(ctx context.Context, s Spec) (*Process, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.Path, s.Args(port)...)
	cmd.Env = s.Env
	cmd.Dir = s.Dir
	logPath := ""
	if s.Output != nil {
		cmd.Stdout, cmd.Stderr = s.Output, s.Output
	} else {
		logPath = cmp.Or(s.Log, filepath.Join(s.Dir, s.Name+".log"))
		logf, err := os.Create(logPath)
		if err != nil {
			return nil, fmt.Errorf("%s log: %w", s.Name, err)
		}
		defer logf.Close()
		cmd.Stdout, cmd.Stderr = logf, logf
	}
	// Its own process group, so Stop also ends the children it starts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", s.Name, s.Path, err)
	}
	p := &Process{Name: s.Name, URL: "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port,
		Pid: cmd.Process.Pid, Log: logPath, grace: cmp.Or(s.Grace, 30*time.Second), exited: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	ready := s.Ready
	if ready == nil {
		ready = AnyAnswer
	}
	if err := p.waitReady(ctx, ready, cmp.Or(s.Timeout, 60*time.Second)); err != nil {
		_ = p.Stop()
		if logPath == "" {
			return nil, fmt.Errorf("%s on %s: %w", s.Name, p.URL, err)
		}
		return nil, fmt.Errorf("%s on %s (log %s): %w\n%s", s.Name, p.URL, logPath, err, p.LogTail())
	}
	return p, nil
}

// AnyAnswer is the default readiness check: the server answers HTTP at
// all, whatever the status.
func AnyAnswer(ctx context.Context, url string) error { return AnswerAt("/")(ctx, url) }

// AnswerAt is a readiness check: the server answers GET url+path, whatever
// the status.
func AnswerAt(path string) func(ctx context.Context, url string) error {
	return func(ctx context.Context, url string) error {
		_, err := get(ctx, url+path)
		return err
	}
}

// OKAt is a readiness check: the server answers GET url+path with 200 OK.
func OKAt(path string) func(ctx context.Context, url string) error {
	return func(ctx context.Context, url string) error {
		status, err := get(ctx, url+path)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("GET %s: %d %s", path, status, http.StatusText(status))
		}
		return err
	}
}

func get(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, resp.Body.Close()
}

// Listening is the readiness check of a server that gives no other
// signal: its port accepts a TCP connection.
func Listening(ctx context.Context, url string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		return err
	}
	return c.Close()
}

// waitReady polls ready every 50ms; a server that exits meanwhile ends the
// wait at once.
func (p *Process) waitReady(ctx context.Context, ready func(context.Context, string) error, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := errors.New("no answer")
	for {
		if err := ready(ctx, p.URL); err == nil {
			return nil
		} else {
			last = err
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%w: %v", ErrExited, p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %v", limit, last)
		case <-tick.C:
		}
	}
}

// Stop ends the server's process group (SIGTERM, then SIGKILL after
// Spec.Grace) and waits for it to exit. Stopping a stopped Process does
// nothing.
func (p *Process) Stop() error {
	if p == nil || p.Pid == 0 {
		return nil
	}
	var err error
	if e := syscall.Kill(-p.Pid, syscall.SIGTERM); e != nil && !errors.Is(e, syscall.ESRCH) {
		err = fmt.Errorf("stop %s pid %d: %w", p.Name, p.Pid, e)
	}
	select {
	case <-p.exited:
	case <-time.After(p.grace):
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		<-p.exited
	}
	p.Pid = 0
	return err
}

// StopPid ends a server started earlier by its pid (its process group),
// one a kept run left: SIGTERM, and no wait.
func StopPid(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	return nil
}

// LogTail is the last 4000 bytes of the server's log ("" when unreadable
// or when Spec.Output took its output).
func (p *Process) LogTail() string {
	if p.Log == "" {
		return ""
	}
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return ""
	}
	return string(b[max(0, len(b)-4000):])
}

// FreePort returns a TCP port free on 127.0.0.1 a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// GoBin finds a program `go install` put in $GOBIN or $GOPATH/bin (where
// `make tools` installs it), after $env when set, then on PATH; hint says
// how to install it.
func GoBin(name, env, hint string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w; %s", env, p, err, hint)
		}
		return p, nil
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	gopath := filepath.SplitList(os.Getenv("GOPATH"))
	if len(gopath) > 0 && gopath[0] != "" {
		dirs = append(dirs, filepath.Join(gopath[0], "bin"))
	} else if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, dir := range dirs {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", errors.New(hint)
}
