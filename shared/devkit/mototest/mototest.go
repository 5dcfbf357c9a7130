// Package mototest runs a package's tests against one moto_server. It is
// its own package so that testing is linked only into test binaries
// (package motoserver is also used by cmd/daybook-dev).
package mototest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
)

// RunTests starts one moto_server for a package's tests, stores it in *srv,
// runs m (through iamcheck.Main) and stops the server. A missing moto_server fails the run with the
// install hint; it never skips.
func RunTests(m *testing.M, srv **motoserver.Server) int {
	dir, err := os.MkdirTemp("", "daybook-moto-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := motoserver.Start(context.Background(), filepath.Join(dir, "moto.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	*srv = s
	// Every call a test made through a function's clients was checked
	// against the function's policy (package iamcheck): the tally is
	// written for `make test`'s summary.
	code := iamcheck.Main(m.Run)
	if code != 0 {
		if b, err := os.ReadFile(filepath.Join(dir, "moto.log")); err == nil && len(b) > 0 {
			tail := b[max(0, len(b)-4000):]
			fmt.Fprintf(os.Stderr, "--- moto_server log tail ---\n%s\n", tail)
		}
	}
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}
