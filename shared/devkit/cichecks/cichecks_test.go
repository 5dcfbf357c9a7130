package cichecks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/hostbuild"
	"github.com/daybook-dev/daybook/shared/ledger"
)

const root = "../../.."

var pins = []string{"moto[server]==5.2.1", "aws-sam-translator==1.110.0", "cfn-lint==1.51.0"}

// fakeBin writes executable shell scripts into a new directory.
func fakeBin(t *testing.T, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// python is a fake python3 whose moto and samtranslator have these
// versions; `-m venv DIR` runs venv (a shell snippet with $3 = DIR).
func python(moto, sam, venv string) string {
	return `case "$1" in
-c) case "$2" in *samtranslator*) echo ` + sam + `;; *moto*) echo ` + moto + `;; esac;;
-m) ` + venv + `;;
esac`
}

const cfnlint151 = `echo "cfn-lint 1.51.0"`

// goodVenv creates a venv whose tools are at the pins.
const goodVenv = `mkdir -p "$3/bin"
printf '#!/bin/bash\nexit 0\n' > "$3/bin/pip"
printf '#!/bin/bash\ncase "$2" in *samtranslator*) echo 1.110.0;; *) echo 5.2.1;; esac\n' > "$3/bin/python3"
printf '#!/bin/bash\necho cfn-lint 1.51.0\n' > "$3/bin/cfn-lint"
printf '#!/bin/bash\n' > "$3/bin/moto_server"
chmod +x "$3"/bin/*`

func runTools(t *testing.T, bin, venv string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, ".ci/tools"), append([]string{"python", venv}, pins...)...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestPythonTools(t *testing.T) {
	tests := []struct {
		name      string
		scripts   map[string]string
		leftover  bool // an unfinished venv from an earlier run
		ok        bool
		venv      bool // a finished venv afterwards
		output    string
		noInstall bool
	}{
		{"everything at its pin", map[string]string{"python3": python("5.2.1", "1.110.0", "exit 1"), "cfn-lint": cfnlint151, "moto_server": ""},
			false, true, false, "", true},
		{"an unfinished venv is removed", map[string]string{"python3": python("5.2.1", "1.110.0", "exit 1"), "cfn-lint": cfnlint151, "moto_server": ""},
			true, true, false, "an earlier install did not finish", true},
		{"a wrong version is replaced by the pinned one", map[string]string{"python3": python("5.2.1", "1.110.0", goodVenv), "cfn-lint": `echo "cfn-lint 1.40.0"`, "moto_server": ""},
			false, true, true, "cfn-lint: 1.40.0, want 1.51.0", false},
		{"missing tools are installed", map[string]string{"python3": python("", "", goodVenv)},
			false, true, true, "moto_server: not found", false},
		{"a failed install leaves nothing", map[string]string{"python3": python("", "", `mkdir -p "$3/bin"; printf '#!/bin/bash\nexit 1\n' > "$3/bin/pip"; chmod +x "$3/bin/pip"`)},
			false, false, false, "could not install the Python tools; nothing was left", false},
		{"an install with the wrong versions leaves nothing", map[string]string{"python3": python("", "", strings.Replace(goodVenv, "echo 5.2.1", "echo 5.0.0", 1))},
			false, false, false, "moto: 5.0.0, want 5.2.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			venv := filepath.Join(t.TempDir(), "venv")
			if tt.leftover {
				os.MkdirAll(filepath.Join(venv, "bin"), 0o755)
			}
			out, err := runTools(t, fakeBin(t, tt.scripts), venv)
			if (err == nil) != tt.ok || !strings.Contains(out, tt.output) {
				t.Errorf("error %v (want ok %v), output lacks %q:\n%s", err, tt.ok, tt.output, out)
			}
			_, statErr := os.Stat(venv)
			_, doneErr := os.Stat(filepath.Join(venv, ".complete"))
			switch {
			case tt.venv && doneErr != nil:
				t.Errorf("no finished venv: %v", doneErr)
			case !tt.venv && statErr == nil:
				t.Errorf("a venv was left at %s", venv)
			}
			if tt.noInstall && strings.Contains(out, "installing") {
				t.Errorf("installed although every tool is at its pin:\n%s", out)
			}
		})
	}
}

// TestMakePathSkipsAnUnfinishedVenv: a venv without .complete never goes
// on PATH, so it cannot hide tools installed afterwards.
func TestMakePathSkipsAnUnfinishedVenv(t *testing.T) {
	makefile, err := filepath.Abs(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		setup  func(dir string)
		onPath bool
	}{
		{"no venv yet (make tools may create it)", func(string) {}, true},
		{"unfinished venv", func(dir string) { os.MkdirAll(filepath.Join(dir, ".local/venv/bin"), 0o755) }, false},
		{"finished venv", func(dir string) {
			os.MkdirAll(filepath.Join(dir, ".local/venv/bin"), 0o755)
			os.WriteFile(filepath.Join(dir, ".local/venv/.complete"), nil, 0o644)
		}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(dir)
			out, err := exec.Command("make", "-s", "-C", dir, "-f", makefile, "--eval", "print-path: ; @echo \"$$PATH\"", "print-path").CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if got := strings.Contains(string(out), filepath.Join(dir, ".local/venv/bin")); got != tt.onPath {
				t.Errorf("venv on PATH %v, want %v: %s", got, tt.onPath, out)
			}
		})
	}
}

func TestBuildTargetsNeedArtifactsDir(t *testing.T) {
	for _, target := range []string{"build-SweeperFunction", "build-ExporterFunction", "build-ConsoleFunction"} {
		t.Run(target, func(t *testing.T) {
			cmd := exec.Command("make", "-s", "-C", root, target)
			cmd.Env = append(os.Environ(), "ARTIFACTS_DIR=")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "ARTIFACTS_DIR is not set") {
				t.Errorf("%s without ARTIFACTS_DIR: %v\n%s", target, err, out)
			}
			dry, err := exec.Command("make", "-n", "-C", root, target, "ARTIFACTS_DIR=/tmp/artifacts").CombinedOutput()
			if err != nil || !strings.Contains(string(dry), "-o /tmp/artifacts/bootstrap") {
				t.Errorf("%s with ARTIFACTS_DIR: %v\n%s", target, err, dry)
			}
		})
	}
}

// TestChromiumTool: `.ci/tools chromium` leaves a working chromium alone,
// installs a missing one with apt-get, and fails with the command to run
// when it cannot.
func TestChromiumTool(t *testing.T) {
	const works = `echo "Chromium 156.0.0.0"`
	// apt-get "installs" by writing a chromium next to itself.
	aptInstalls := func(chromium string) string {
		return `case "$1" in install) printf '#!/bin/bash\n%s\n' '` + chromium + `' > "$(dirname "$0")/chromium"; chmod +x "$(dirname "$0")/chromium";; esac`
	}
	tests := []struct {
		name    string
		scripts map[string]string
		root    bool
		ok      bool
		output  string
	}{
		{"a working chromium is left alone", map[string]string{"chromium": works, "apt-get": "echo apt-get ran; exit 1"}, true, true, ""},
		{"a missing chromium is installed", map[string]string{"apt-get": aptInstalls(works)}, true, true, "installed Chromium 156"},
		{"a broken chromium is reinstalled", map[string]string{"chromium": "exit 1", "apt-get": aptInstalls(works)}, true, true, "installed Chromium 156"},
		{"apt-get fails", map[string]string{"apt-get": "echo E: no network >&2; exit 100"}, true, false, "could not install chromium; run: apt-get update && apt-get install -y chromium"},
		{"installed but still not working", map[string]string{"apt-get": aptInstalls("exit 1")}, true, false, "no working chromium is on PATH"},
		{"not root", map[string]string{"apt-get": aptInstalls(works)}, false, false, "chromium is missing: run as root: apt-get update && apt-get install -y chromium"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scripts := map[string]string{"id": map[bool]string{true: "echo 0", false: "echo 1000"}[tt.root]}
			for k, v := range tt.scripts {
				scripts[k] = v
			}
			bin := fakeBin(t, scripts)
			// PATH is this directory alone, so the machine's own chromium
			// stays out of sight: the few programs the script runs are
			// linked in.
			for _, prog := range []string{"bash", "env", "dirname", "chmod", "mktemp", "tail", "rm"} {
				p, err := exec.LookPath(prog)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(p, filepath.Join(bin, prog)); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(filepath.Join(root, ".ci/tools"), "chromium")
			cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			if (err == nil) != tt.ok || !strings.Contains(string(out), tt.output) {
				t.Errorf("error %v (want ok %v), output lacks %q:\n%s", err, tt.ok, tt.output, out)
			}
			if tt.name == "a working chromium is left alone" && strings.Contains(string(out), "apt-get ran") {
				t.Errorf("apt-get ran although chromium works:\n%s", out)
			}
		})
	}
}

// TestCIChecksEachTool: .ci/run names the tool that is missing after make
// tools (a single `command -v a b c` passes when one is missing).
func TestCIChecksEachTool(t *testing.T) {
	bin := fakeBin(t, map[string]string{
		"go":              `case "$1" in env) echo /nonexistent;; *) echo go version fake;; esac`,
		"make":            `exit 0`,
		"aws-lambda-rie":  "",
		"minio":           "",
		"fake-gcs-server": "",
		"moto_server":     "",
		"python3":         "",
	})
	cmd := exec.Command(filepath.Join(root, ".ci/run"))
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "missing after make tools: cfn-lint") || strings.Contains(string(out), "missing after make tools: moto_server") {
		t.Errorf(".ci/run with cfn-lint missing: %v\n%s", err, out)
	}
}

// TestDashboardUsesPublishedMetrics: every daybook metric on the template's
// dashboard is one the functions publish, and every published one is shown.
func TestDashboardUsesPublishedMetrics(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	onDashboard := map[string]bool{}
	for _, m := range regexp.MustCompile(`\["daybook", "(\w+)"`).FindAllStringSubmatch(string(tmpl), -1) {
		onDashboard[m[1]] = true
	}
	published := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(root, "functions/*/*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`Name: "(\w+)", Unit: metrics\.`).FindAllStringSubmatch(string(b), -1) {
			published[m[1]] = true
		}
	}
	if len(published) < 5 || len(onDashboard) == 0 {
		t.Fatalf("found %d published metrics and %d on the dashboard", len(published), len(onDashboard))
	}
	for m := range onDashboard {
		if !published[m] {
			t.Errorf("the dashboard shows %s, which no function publishes", m)
		}
	}
	for m := range published {
		if !onDashboard[m] {
			t.Errorf("%s is published but not on the dashboard", m)
		}
	}
}

// TestSliceHoldMatchesTheQueue: the exporter is told the jobs queue's
// visibility timeout (a sliced day is held that long after its last slice
// news, so a slice whose run died comes back in time), and the ledger's
// default is the same.
func TestSliceHoldMatchesTheQueue(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	queue := regexp.MustCompile(`QueueName: !Sub daybook-\$\{Stage\}-jobs\n(?:\s+#.*\n)*\s+VisibilityTimeout: (\d+)`).FindSubmatch(tmpl)
	env := regexp.MustCompile(`JOBS_VISIBILITY_TIMEOUT_SECONDS: "(\d+)"`).FindSubmatch(tmpl)
	if queue == nil || env == nil {
		t.Fatalf("template: jobs queue visibility timeout %q, exporter's JOBS_VISIBILITY_TIMEOUT_SECONDS %q", queue, env)
	}
	if string(queue[1]) != string(env[1]) || string(env[1]) != fmt.Sprint(int(ledger.DefaultRedelivery.Seconds())) {
		t.Errorf("jobs queue VisibilityTimeout %s, JOBS_VISIBILITY_TIMEOUT_SECONDS %s, ledger.DefaultRedelivery %s: want one value", queue[1], env[1], ledger.DefaultRedelivery)
	}
}

// devkit is the development tooling's import path prefix.
const devkit = "github.com/daybook-dev/daybook/shared/devkit"

// devkitDeps lists the shared/devkit packages the given packages link
// (go list -deps, test files not included), built with tags.
func devkitDeps(t *testing.T, tags string, pkgs ...string) []string {
	t.Helper()
	return linked(t, tags, func(p string) bool { return p == devkit || strings.HasPrefix(p, devkit+"/") }, pkgs...)
}

// linked lists the packages that pkgs link (go list -deps, test files not
// included), built with tags, for which keep is true.
func linked(t *testing.T, tags string, keep func(string) bool, pkgs ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-tags", tags}, pkgs...)...)
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -tags %q %s: %v\n%s", tags, strings.Join(pkgs, " "), err, stderr.String())
	}
	var found []string
	for _, p := range strings.Fields(string(out)) {
		if keep(p) {
			found = append(found, p)
		}
	}
	return found
}

// TestShippedBinariesLinkNoDevkit: the operator's CLI and the Lambda
// functions link none of the development tooling (moto control, the SAM
// translator runner, the runtime emulator, the demo source), which lives in
// shared/devkit for the tests and daybook-dev. The development CLI, which
// does link it, shows the check finds such an import.
func TestShippedBinariesLinkNoDevkit(t *testing.T) {
	for _, tags := range []string{"", hostbuild.Tags} {
		if found := devkitDeps(t, tags, "./cmd/daybook", "./functions/..."); len(found) > 0 {
			t.Errorf("with tags %q, ./cmd/daybook or ./functions/... links the development tooling: %s", tags, strings.Join(found, ", "))
		}
	}
	if found := devkitDeps(t, "", "./cmd/daybook-dev"); len(found) == 0 {
		t.Error("./cmd/daybook-dev links no shared/devkit package: the check cannot tell")
	}
}

// TestLocalTargetsRunTheDevCLI: make build builds both CLIs into
// .local/bin, and the local-stack and demo targets run daybook-dev (the
// operator's daybook has no such commands).
func TestLocalTargetsRunTheDevCLI(t *testing.T) {
	for _, tt := range []struct {
		target string
		want   []string
	}{
		{"build", []string{"-o .local/bin/daybook ./cmd/daybook\n", "-o .local/bin/daybook-dev ./cmd/daybook-dev\n"}},
		{"demo", []string{".local/bin/daybook-dev demo --dir .demo --bin .local/bin\n"}},
		{"local-up", []string{".local/bin/daybook-dev local up --dir .local --template template.yaml\n"}},
		{"local-drain", []string{".local/bin/daybook-dev local drain --dir .local\n"}},
		{"local-down", []string{".local/bin/daybook-dev local down --dir .local;"}},
		{"_invoke", []string{".local/bin/daybook-dev local invoke SweeperFunction --dir .local --event events/sweeper-schedule.json;"}},
	} {
		t.Run(tt.target, func(t *testing.T) {
			out, err := exec.Command("make", "-n", "-C", root, tt.target, "FN=SweeperFunction", "EVENT=events/sweeper-schedule.json").CombinedOutput()
			if err != nil {
				t.Fatalf("make -n %s: %v\n%s", tt.target, err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("make -n %s lacks %q:\n%s", tt.target, w, out)
				}
			}
			if regexp.MustCompile(`bin/daybook (demo|local)\b`).Match(out) {
				t.Errorf("make -n %s runs a dev command with the operator CLI:\n%s", tt.target, out)
			}
		})
	}
}

// TestVulncheck: `.ci/tools vulncheck` runs govulncheck on every binary in
// binary mode at symbol level against the local database, fails when one
// of them has a finding (govulncheck exits 3) and refuses a database too
// small to find anything, or a missing govulncheck.
func TestVulncheck(t *testing.T) {
	db := func(t *testing.T, n int) string {
		dir := t.TempDir()
		for i := range n {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("GO-2026-%04d.json", i)), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	tests := []struct {
		name    string
		entries int
		script  string // the fake govulncheck ("": none)
		ok      bool
		output  string
		scanned int
	}{
		{"no finding", 1200, `exit 0`, true, "--- govulncheck -mode=binary", 2},
		{"a finding in one binary", 1200, `case "${@: -1}" in *exporter*) echo "Vulnerability #1: GO-2026-6888"; exit 3;; esac`, false,
			"known vulnerabilities in functions called by: BIN/exporter", 2},
		{"an empty database", 0, `exit 0`, false, "has 0 entries, want 1000 or more: run make tools", 0},
		{"a database too small", 3, `exit 0`, false, "has 3 entries", 0},
		{"no govulncheck", 1200, "", false, "govulncheck is missing: run make tools", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, bins := db(t, tt.entries), t.TempDir()
			log := filepath.Join(t.TempDir(), "calls")
			tool := filepath.Join(t.TempDir(), "govulncheck")
			if tt.script != "" {
				body := "#!/bin/bash\necho \"$*\" >> " + log + "\n" + tt.script + "\n"
				if err := os.WriteFile(tool, []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(filepath.Join(root, ".ci/tools"), "vulncheck", tool, dir, filepath.Join(bins, "sweeper"), filepath.Join(bins, "exporter"))
			out, err := cmd.CombinedOutput()
			got := strings.ReplaceAll(string(out), bins, "BIN")
			if (err == nil) != tt.ok || !strings.Contains(got, tt.output) {
				t.Errorf("error %v (want ok %v), output lacks %q:\n%s", err, tt.ok, tt.output, got)
			}
			calls, _ := os.ReadFile(log)
			lines := strings.Fields(strings.TrimSpace(string(calls)))
			if n := strings.Count(string(calls), "\n"); n != tt.scanned {
				t.Fatalf("govulncheck ran %d times, want %d: %s", n, tt.scanned, calls)
			}
			if tt.scanned > 0 {
				want := "-db file://" + dir + " -mode=binary -scan symbol -show verbose " + filepath.Join(bins, "sweeper")
				if first := strings.SplitN(string(calls), "\n", 2)[0]; first != want {
					t.Errorf("govulncheck %s, want %s (%d words)", first, want, len(lines))
				}
			}
		})
	}
}

// TestGoToolchainPinned: go.mod's go line, the Makefile, .ci/run,
// .ci/tools and the README name one Go release for GOTOOLCHAIN, and `make
// test` runs the vulnerability scan on the four built binaries.
func TestGoToolchainPinned(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+\.\d+)$`).FindSubmatch(gomod)
	if m == nil {
		t.Fatalf("go.mod has no go line with a patch release:\n%s", gomod)
	}
	release := "go" + string(m[1])
	for file, want := range map[string]string{
		"Makefile":  "export GOTOOLCHAIN := " + release + "\n",
		".ci/run":   "export GOTOOLCHAIN=" + release + "\n",
		".ci/tools": "export GOTOOLCHAIN=" + release + "\n",
		"README.md": "`export GOTOOLCHAIN=" + release + "`",
	} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q (go.mod says %s)", file, want, m[1])
		}
	}
	dry, err := exec.Command("make", "-n", "-C", root, "test").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n test: %v\n%s", err, dry)
	}
	scan := regexp.MustCompile(`(?m)^\.ci/tools vulncheck "[^"]+/govulncheck" "[^"]+/golang.org/x/vulndb@v[^/]+/data/osv" (.*)$`).FindSubmatch(dry)
	if scan == nil {
		t.Fatalf("make test does not run .ci/tools vulncheck:\n%s", dry)
	}
	for _, bin := range []string{".local/bin/SweeperFunction/bootstrap", ".local/bin/ExporterFunction/bootstrap", ".local/bin/ConsoleFunction/bootstrap", ".local/bin/daybook"} {
		if !strings.Contains(string(scan[1]), bin) {
			t.Errorf("make test's scan %s leaves out %s", scan[1], bin)
		}
	}
}

// TestWireFormatsDoNotDependOnTheLedger: the queue's messages (shared/jobs)
// and the bus's events (shared/events) share the partition vocabulary with
// the ledger through shared/partition, below all three, and link no
// shared/ledger; the ledger links it too (the check can tell).
func TestWireFormatsDoNotDependOnTheLedger(t *testing.T) {
	deps := func(pkg string) []string {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	const mod = "github.com/daybook-dev/daybook/shared/"
	for _, pkg := range []string{"./shared/jobs", "./shared/events"} {
		if slices.Contains(deps(pkg), mod+"ledger") {
			t.Errorf("%s links shared/ledger: the wire format depends on the storage", pkg)
		}
	}
	if !slices.Contains(deps("./shared/ledger"), mod+"partition") {
		t.Error("shared/ledger does not link shared/partition: the check cannot tell")
	}
}
