package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/cli"
)

// app is the CLI with what it reads from outside injected, so command tests
// run it in-process with their own clock.
type app struct {
	stdout, stderr io.Writer
	now            func() time.Time
	// dial probes a local endpoint before it is used.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// localDir is where `local up` keeps its state (.local).
	localDir string
	// catalog is the demo's and the local stack's dataset catalog: the
	// shipped example, which the demo source fills.
	catalog *dataset.Set
}

func newApp(stdout, stderr io.Writer) *app {
	ex, err := dataset.Example()
	if err != nil {
		panic(err) // the embedded example is checked by its package's tests
	}
	return &app{
		catalog: ex,
		stdout:  stdout, stderr: stderr,
		now:      time.Now,
		dial:     (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		localDir: ".local",
	}
}

// rootCommand builds the command tree, with the conventions of the
// operator's CLI (shared/cli).
func (a *app) rootCommand() *cobra.Command {
	root := cli.Root("daybook-dev", "Run daybook on this machine: the local stack and the demo",
		`daybook-dev runs daybook on this machine with nothing but moto and the Lambda runtime emulator:
the local stack (template.yaml deployed into moto_server on 127.0.0.1, the functions' host
bootstraps run under the runtime emulator) and the demo. What an operator does on it (account
put, status, reexport, console) is the daybook CLI's, built beside the bootstraps by make build;
daybook-dev runs that binary where it needs it.`, a.stdout, a.stderr)
	root.AddCommand(a.localCommand(), a.demoCommand(), a.traceCommand())
	cli.Finish(root, a.stdout)
	return root
}

// execute runs one command line and returns the process exit code.
func (a *app) execute(ctx context.Context, args []string) int {
	return cli.Execute(ctx, a.rootCommand(), args, a.stderr)
}

// probe fails fast with awsclient.ErrLocalDown when a loopback endpoint
// does not answer.
func (a *app) probe(ctx context.Context, endpoint string) error {
	return awsclient.Probe(ctx, a.dial, endpoint)
}

// selfCommand is how to run this program again from where it was started:
// its path when it is the daybook-dev binary (make demo runs
// .local/bin/daybook-dev), else go run.
func selfCommand() string {
	if len(os.Args) > 0 && filepath.Base(os.Args[0]) == "daybook-dev" {
		return os.Args[0]
	}
	return "go run ./cmd/daybook-dev"
}
