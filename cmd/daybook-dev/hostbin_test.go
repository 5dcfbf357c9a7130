package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/hostbuild"
	"github.com/daybook-dev/daybook/shared/devkit/iamcheck"
)

// hostBinaries are the host builds, made once per test process: each build
// links three binaries (about 50 s on a loaded machine), and three tests
// run them.
var hostBinaries struct {
	once sync.Once
	dir  string
	ok   bool
}

func TestMain(m *testing.M) {
	code := iamcheck.Main(m.Run) // the functions' calls were checked: write the tally
	if hostBinaries.dir != "" {
		_ = os.RemoveAll(hostBinaries.dir)
	}
	os.Exit(code)
}

// buildBinaries puts both functions' host bootstraps and the operator CLI
// into dir, the layout `make build` uses (hard links to the process's one
// build).
func buildBinaries(t *testing.T, dir string) {
	t.Helper()
	hostBinaries.once.Do(func() {
		d, err := os.MkdirTemp("", "daybook-dev-bin-")
		if err != nil {
			t.Fatal(err)
		}
		hostBinaries.dir = d
		hostbuild.Bootstraps(t, d, Functions...)
		hostbuild.Command(t, d, operatorName)
		hostBinaries.ok = true
	})
	if !hostBinaries.ok {
		t.Fatal("the host builds failed: see the first test that made them")
	}
	names := []string{operatorName}
	for _, fn := range Functions {
		names = append(names, filepath.Join(fn, "bootstrap"))
	}
	for _, n := range names {
		dst := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(hostBinaries.dir, n), dst); err != nil {
			t.Fatal(err)
		}
	}
}
