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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// InstallHint says how to install dynalite where Bin looks.
const InstallHint = "dynalite is not installed: run `make bench` (or `npm ci --prefix bench/fleet`), or set DYNALITE to its cli.js"

// Server is one running dynalite.
type Server struct {
	*serverproc.Process
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
	p, err := serverproc.Start(ctx, serverproc.Spec{
		Name: "dynalite",
		Path: node,
		Args: func(port int) []string {
			return []string{cli, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
				"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"}
		},
		Log:     logPath,
		Ready:   serverproc.Listening, // it gives no other readiness signal
		Timeout: 30 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return &Server{p}, nil
}

// Config returns an SDK configuration pointed at the server.
func (s *Server) Config(ctx context.Context) (aws.Config, error) {
	return motoserver.ConfigFor(ctx, s.URL)
}
