package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/logging"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/daybook-dev/daybook/shared/awsclient"
)

// Exit codes.
const (
	exitOK          = 0   // done
	exitError       = 1   // the command ran and failed, or refused (nothing was changed)
	exitUsage       = 2   // the command line is wrong: unknown command or flag, missing or bad value, extra arguments
	exitInterrupted = 130 // interrupted (Ctrl-C)
)

// app is the CLI with everything it reads from outside injected, so command
// tests run it in-process with their own clock, randomness and terminals.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	rand           io.Reader
	// terminal reports whether w is an interactive terminal (progress bars,
	// colours).
	terminal func(w io.Writer) bool
	// osUser names the local user, the fallback of requested_by.
	osUser func() string
	// awsConfig loads the SDK configuration for a region and profile (both
	// optional), as the AWS CLI would.
	awsConfig func(ctx context.Context, region, profile string) (aws.Config, error)
	// dial probes a local endpoint before it is used.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// localDir is where `local up` keeps its state (.local).
	localDir string

	target targetFlags
	ops    *opsEnv // opened once per run, on first use
}

func newApp(stdout, stderr io.Writer) *app {
	return &app{
		stdout: stdout, stderr: stderr,
		getenv:    os.Getenv,
		now:       time.Now,
		rand:      rand.Reader,
		terminal:  isTerminal,
		osUser:    osUserName,
		awsConfig: loadAWSConfig,
		dial:      (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		localDir:  ".local",
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func osUserName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return ""
}

func loadAWSConfig(ctx context.Context, region, profile string) (aws.Config, error) {
	// The SDK's own log lines (an IMDS fallback on a laptop) are noise for
	// an operator; its errors still reach them.
	opts := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{})}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(profile))
	}
	return awsclient.Load(ctx, opts...)
}

// usageError is a wrong command line: exit 2, with the command's usage line.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(c *cobra.Command, format string, args ...any) error {
	return &usageError{cmd: c, err: fmt.Errorf(format, args...)}
}

// execute runs one command line and returns the process exit code. Help and
// command output go to stdout; errors, progress and the deployment line go
// to stderr.
func (a *app) execute(ctx context.Context, args []string) int {
	if args == nil {
		args = []string{} // nil makes cobra read os.Args
	}
	root := a.rootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		c := ue.cmd
		if c == nil {
			c = cmd
		}
		fmt.Fprintf(a.stderr, "daybook: %v\nusage: %s\nrun '%s --help' for more\n", ue.err, usageLine(c), c.CommandPath())
		return exitUsage
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		fmt.Fprintln(a.stderr, "daybook: interrupted")
		return exitInterrupted
	}
	fmt.Fprintf(a.stderr, "daybook: %v\n", err)
	return exitError
}

// run is execute for tests and the demo: the error instead of an exit code,
// stderr discarded.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	return runWith(newApp(stdout, io.Discard), ctx, args)
}

func runWith(a *app, ctx context.Context, args []string) error {
	if args == nil {
		args = []string{}
	}
	root := a.rootCommand()
	root.SetArgs(args)
	_, err := root.ExecuteContextC(ctx)
	return err
}
