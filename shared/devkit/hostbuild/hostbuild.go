// Package hostbuild builds the host binaries `make build` puts in
// .local/bin, in the same layout, for the tests that run them as a user
// would: the functions' bootstraps (<dir>/<LogicalId>/bootstrap), the
// operator CLI (<dir>/daybook) and the development CLI (<dir>/daybook-dev).
package hostbuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Tags and LDFlags are the build tags and linker flags of every Lambda
// bootstrap: the Makefile's LAMBDA_TAGS (which says why each tag is there)
// and LAMBDA_FLAGS, and a test holds them equal, so the binaries the tests
// run are the binaries that ship.
const (
	Tags    = "lambda.norpc,grpcnotrace"
	LDFlags = "-s -w"
)

// functions are the template's Lambda logical ids and their packages.
var functions = map[string]string{
	"SweeperFunction":  "./functions/sweeper",
	"ExporterFunction": "./functions/exporter",
	"ConsoleFunction":  "./functions/console",
}

// Bootstraps builds the named functions' bootstraps into
// dir/<LogicalId>/bootstrap.
func Bootstraps(t testing.TB, dir string, logicalIDs ...string) {
	t.Helper()
	for _, fn := range logicalIDs {
		pkg, ok := functions[fn]
		if !ok {
			t.Fatalf("hostbuild: no function %q", fn)
		}
		Lambda(t, filepath.Join(dir, fn, "bootstrap"), pkg)
	}
}

// Lambda builds pkg (a path from the module root) into out with the Lambda
// bootstraps' flags, extraTags added to Tags (the benchmark's child adds
// its hook's).
func Lambda(t testing.TB, out, pkg string, extraTags ...string) {
	t.Helper()
	build(t, out, pkg, "-tags", strings.Join(append([]string{Tags}, extraTags...), ","), "-ldflags", LDFlags)
}

// Command builds ./cmd/<name> into dir/<name>.
func Command(t testing.TB, dir, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	build(t, out, "./cmd/"+name)
	return out
}

func build(t testing.TB, out, pkg string, flags ...string) {
	t.Helper()
	out, err := filepath.Abs(out)
	if err != nil {
		t.Fatal(err)
	}
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(root)) == "" {
		t.Fatalf("hostbuild: no module: %v", err)
	}
	args := append(append([]string{"build"}, flags...), "-trimpath", "-o", out, pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}
