package cichecks

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goPackages are the directories under root holding a Go file that is not
// a test, relative to root (node_modules and testdata left out).
func goPackages(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "node_modules" || n == "testdata" || (strings.HasPrefix(n, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			out[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArchitectureListsEveryPackage: every package of the module is a row
// of docs/architecture.md's "Packages" table (named in the first column),
// and every package the table names exists: a package added without a
// word of what it owns, or one removed and still described, fails.
func TestArchitectureListsEveryPackage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Packages\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Packages" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	named := map[string]bool{}
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`((?:functions|cmd|shared|bench)/[a-z0-9/_-]+)`").FindAllStringSubmatch(first, -1) {
			named[m[1]] = true
		}
	}
	pkgs := goPackages(t)
	if len(pkgs) < 60 || len(named) < 40 {
		t.Fatalf("%d packages, %d in the table: the scan is broken", len(pkgs), len(named))
	}
	for p := range pkgs {
		if !named[p] {
			t.Errorf("package %s is not in docs/architecture.md's Packages table", p)
		}
	}
	for p := range named {
		if !pkgs[p] {
			t.Errorf("docs/architecture.md's Packages table names %s, which is no package", p)
		}
	}
}
