package motoserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// RunTests starts one moto_server for a package's tests, stores it in *srv,
// runs m and stops the server. A missing moto_server fails the run with the
// install hint; it never skips.
func RunTests(m *testing.M, srv **Server) int {
	dir, err := os.MkdirTemp("", "daybook-moto-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := Start(context.Background(), filepath.Join(dir, "moto.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	*srv = s
	code := m.Run()
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
