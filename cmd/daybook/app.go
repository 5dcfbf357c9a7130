package main

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"os"
	"os/user"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/logging"
	"golang.org/x/term"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/cli"
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
	// localDir is where `daybook-dev local up` keeps its state (.local): its
	// env.json is the default deployment.
	localDir string
	// demoDir is where `daybook-dev demo` (make demo) keeps its run (.demo).
	demoDir string

	// catalog is the deployment's dataset catalog (DAYBOOK_CATALOG): the
	// shipped example until main loads it.
	catalog *dataset.Set
	// catalogErr is why this process's catalog (DAYBOOK_CATALOG) did not
	// load: every command that reads it fails with it, but the catalog
	// commands that read a file of their own (ownCatalog) still run, so a
	// missing or broken catalog can be written again.
	catalogErr error

	target targetFlags
	ops    *opsEnv // opened once per run, on first use
}

// ownCatalog marks a command that reads its catalog from a file of its own
// (or none), not the process's (DAYBOOK_CATALOG).
const ownCatalog = "daybook/own-catalog"

func newApp(stdout, stderr io.Writer) *app {
	ex, err := dataset.Example()
	if err != nil {
		panic(err) // the embedded example is checked by its package's tests
	}
	return &app{
		catalog: ex,
		stdout:  stdout, stderr: stderr,
		getenv:    os.Getenv,
		now:       time.Now,
		rand:      rand.Reader,
		terminal:  isTerminal,
		osUser:    osUserName,
		awsConfig: loadAWSConfig,
		dial:      (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		localDir:  ".local",
		demoDir:   ".demo",
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

// execute runs one command line and returns the process exit code. Help and
// command output go to stdout; errors, progress and the deployment line go
// to stderr.
func (a *app) execute(ctx context.Context, args []string) int {
	return cli.Execute(ctx, a.rootCommand(), args, a.stderr)
}
