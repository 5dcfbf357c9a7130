// Package motoserver starts and stops a moto_server process on 127.0.0.1 for
// integration tests and local development. It owns nothing else: resources are
// created by deploying template.yaml (package samstack) or by the test.
package motoserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// InstallHint is printed whenever moto_server cannot be found.
const InstallHint = "moto_server not found on PATH: install it with `python3 -m pip install 'moto[server]==5.2.1'` (or run `make tools`, which puts it in .local/venv)"

// Region is the region every local resource lives in.
const Region = "us-east-1"

// AccountID is the AWS account every local resource lives in: moto's
// default account (its MOTO_ACCOUNT_ID, which nothing here sets), the one
// the operator CLI assumes for a local stack that names none.
const AccountID = awsclient.LocalAccountID

// Server is one running moto_server. A Server with no process (only URL
// and Pid, as a kept run records them) is stopped by its pid.
type Server struct {
	URL  string
	Pid  int
	proc *serverproc.Process
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
	p, err := serverproc.Start(ctx, serverproc.Spec{
		Name:  "moto_server",
		Path:  bin,
		Args:  func(port int) []string { return []string{"-H", "127.0.0.1", "-p", strconv.Itoa(port)} },
		Log:   logPath,
		Ready: serverproc.AnswerAt("/moto-api/data.json"), // it gives no other readiness signal
	})
	if err != nil {
		return nil, err
	}
	return &Server{URL: p.URL, Pid: p.Pid, proc: p}, nil
}

// Stop ends the server's process group and waits for it (a Server with no
// process: ends its pid's group, StopPid).
func (s *Server) Stop() error {
	if s == nil || s.Pid == 0 {
		return nil
	}
	if s.proc == nil {
		return StopPid(s.Pid)
	}
	return s.proc.Stop()
}

// StopPid ends a moto_server started earlier (perhaps by another process)
// by its pid, which was also its process group id.
func StopPid(pid int) error {
	if err := serverproc.StopPid(pid); err != nil {
		return fmt.Errorf("moto_server: %w", err)
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
