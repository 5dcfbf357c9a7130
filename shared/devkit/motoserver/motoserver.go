// Package motoserver starts and stops a moto_server process on 127.0.0.1 for
// integration tests and local development. It owns nothing else: resources are
// created by deploying template.yaml (package samstack) or by the test.
package motoserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/daybook-dev/daybook/shared/awsclient"
)

// InstallHint is printed whenever moto_server cannot be found.
const InstallHint = "moto_server not found on PATH: install it with `python3 -m pip install 'moto[server]==5.2.1'` (or run `make tools`, which puts it in .local/venv)"

// Region is the region every local resource lives in.
const Region = "us-east-1"

// AccountID is the AWS account every local resource lives in: moto's
// default account (its MOTO_ACCOUNT_ID, which nothing here sets), the one
// the operator CLI assumes for a local stack that names none.
const AccountID = awsclient.LocalAccountID

// Server is one running moto_server.
type Server struct {
	URL string
	Pid int
	cmd *exec.Cmd
}

// Bin returns the moto_server executable: $MOTO_SERVER, .local/venv, or PATH.
func Bin() (string, error) {
	if p := os.Getenv("MOTO_SERVER"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("moto_server")
	if err != nil {
		return "", errors.New(InstallHint)
	}
	return p, nil
}

// Start launches moto_server on a free loopback port, writing its output to
// logPath, and returns once it answers HTTP.
func Start(ctx context.Context, logPath string) (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("moto log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group, so Stop also ends werkzeug's children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Pid: cmd.Process.Pid, cmd: cmd}
	if err := waitReady(ctx, s.URL, 60*time.Second); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("moto_server on %s (log %s): %w", s.URL, logPath, err)
	}
	return s, nil
}

// Stop ends the server's process group and waits for it.
func (s *Server) Stop() error {
	if s == nil || s.Pid == 0 {
		return nil
	}
	err := StopPid(s.Pid)
	if s.cmd != nil {
		_ = s.cmd.Wait()
	}
	return err
}

// StopPid ends a moto_server started earlier (perhaps by another process)
// by its pid, which was also its process group id.
func StopPid(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop moto_server pid %d: %w", pid, err)
	}
	return nil
}

// Config returns an SDK configuration pointed at the server with static test
// credentials, as a local user would set through AWS_ENDPOINT_URL.
func (s *Server) Config(ctx context.Context) (aws.Config, error) {
	return ConfigFor(ctx, s.URL)
}

// ConfigFor is Config for an endpoint URL.
func ConfigFor(ctx context.Context, url string) (aws.Config, error) {
	cfg, err := awsclient.Load(ctx)
	if err != nil {
		return aws.Config{}, err
	}
	cfg.Region = Region
	cfg.Credentials = credentials.NewStaticCredentialsProvider("testing", "testing", "")
	cfg.BaseEndpoint = aws.String(url)
	return cfg, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls until the server answers; the process gives no other
// readiness signal.
func waitReady(ctx context.Context, url string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/moto-api/data.json", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s", limit)
		case <-tick.C:
		}
	}
}
