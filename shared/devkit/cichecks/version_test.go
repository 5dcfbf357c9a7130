package cichecks

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCLIVersionIsStamped: every build of the CLIs the Makefile makes
// (build, release) stamps the version through -ldflags, and a CLI built
// that way with -buildvcs=false (as CI builds) prints it; without the stamp
// `daybook --version` said "(devel) (no VCS revision recorded)" in every
// build from a checkout.
func TestCLIVersionIsStamped(t *testing.T) {
	dry, err := exec.Command("make", "-n", "-C", root, "build", "release", "VERSION=v9.9.9-stamp").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build release: %v\n%s", err, dry)
	}
	var flags string
	builds := 0
	for _, line := range strings.Split(string(dry), "\n") {
		if !strings.Contains(line, "go build") || !regexp.MustCompile(`\./cmd/daybook(-dev)?\b`).MatchString(line) {
			continue
		}
		builds++
		m := regexp.MustCompile(`-ldflags "([^"]*)"`).FindStringSubmatch(line)
		if m == nil || !strings.Contains(m[1], "-X github.com/daybook-dev/daybook/shared/cli.stamped=v9.9.9-stamp") {
			t.Errorf("a CLI build without the version stamp: %s", strings.TrimSpace(line))
			continue
		}
		flags = m[1]
	}
	if builds < 3 || flags == "" {
		t.Fatalf("%d CLI builds found in make -n build release:\n%s", builds, dry)
	}
	bin := filepath.Join(t.TempDir(), "daybook")
	cmd := exec.Command("go", "build", "-buildvcs=false", "-trimpath", "-ldflags", flags, "-o", bin, "./cmd/daybook")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil || string(out) != "daybook v9.9.9-stamp\n" {
			t.Errorf("daybook %s: %v %q", args[0], err, out)
		}
	}
	// Without an override the Makefile describes the checkout.
	v, err := exec.Command("make", "-s", "-C", root, "--eval", "print-version: ; @echo $(VERSION)", "print-version").CombinedOutput()
	if want, _ := exec.Command("git", "-C", root, "describe", "--tags", "--always", "--dirty").Output(); err != nil || strings.TrimSpace(string(v)) != strings.TrimSpace(string(want)) {
		t.Errorf("the Makefile's VERSION %q (%v), git describe says %q", v, err, want)
	}
}
