// Package dynalite starts and stops a dynalite server (an in-memory
// DynamoDB written for Node.js, installed from npm into bench/fleet by `make
// bench`) on 127.0.0.1, for the fleet benchmark: moto scans its whole table
// on every query, dynalite answers a key-condition query in well under a
// millisecond at a million items.
//
// Known differences from DynamoDB the benchmark lives with: it ignores
// ReturnValuesOnConditionCheckFailure (dynamometer.Client.ReadBack fills the
// item in), it exits when a client aborts a request in flight, its indexes
// are updated with the write (DynamoDB's are eventually consistent), and it
// has no throughput limits.
package dynalite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
)

// InstallHint says how to install dynalite where Bin looks.
const InstallHint = "dynalite is not installed: run `make bench` (or `npm ci --prefix bench/fleet`), or set DYNALITE to its cli.js"

// Server is one running dynalite.
type Server struct {
	URL string
	Pid int
	cmd *exec.Cmd
}

// Bin returns dynalite's cli.js: $DYNALITE, or bench/fleet/node_modules
// under the module root root.
func Bin(root string) (string, error) {
	if p := os.Getenv("DYNALITE"); p != "" {
		return p, nil
	}
	p := filepath.Join(root, "bench", "fleet", "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(p); err != nil {
		return "", errors.New(InstallHint)
	}
	return p, nil
}

// Start runs dynalite (in memory, tables ACTIVE at once) on a free loopback
// port, its output in logPath, and returns once it accepts connections.
func Start(ctx context.Context, root, logPath string) (*Server, error) {
	cli, err := Bin(root)
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node not found: dynalite needs Node.js (`apt-get install nodejs npm`)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(node, cli, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start dynalite: %w", err)
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Pid: cmd.Process.Pid, cmd: cmd}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("dynalite on %s not ready (log %s)", s.URL, logPath)
		}
		time.Sleep(50 * time.Millisecond) // polling a port that gives no other signal
	}
}

// Config returns an SDK configuration pointed at the server.
func (s *Server) Config(ctx context.Context) (aws.Config, error) {
	return motoserver.ConfigFor(ctx, s.URL)
}

// Stop ends the server's process group and waits for it.
func (s *Server) Stop() error {
	if s == nil || s.Pid == 0 {
		return nil
	}
	err := syscall.Kill(-s.Pid, syscall.SIGTERM)
	if errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	if s.cmd != nil {
		_ = s.cmd.Wait()
	}
	return err
}
