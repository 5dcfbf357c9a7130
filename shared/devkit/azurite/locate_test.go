package azurite

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLocate: main.js is found beside the package's source (go test, go
// run) and, for a binary built with -trimpath, whose source path is a module
// path, in the checkout holding the working directory, from any folder of
// it; nowhere else.
func TestLocate(t *testing.T) {
	checkout := t.TempDir()
	want := filepath.Join(checkout, "shared", "devkit", "azurite", entry)
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, []byte("// azurite"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"cmd/daybook-dev", "shared/devkit/azurite/js", "."} {
		if err := os.MkdirAll(filepath.Join(checkout, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	trimmed := "github.com/daybook-dev/daybook/shared/devkit/azurite/azurite.go"
	for _, tc := range []struct {
		name, source, dir string
		want              string
	}{
		{"beside the source", filepath.Join(checkout, "shared", "devkit", "azurite", "azurite.go"), t.TempDir(), want},
		{"a trimmed binary at the checkout's root", trimmed, checkout, want},
		{"a trimmed binary in a folder of it", trimmed, filepath.Join(checkout, "cmd", "daybook-dev"), want},
		{"a trimmed binary outside any checkout", trimmed, t.TempDir(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := locate(tc.source, tc.dir)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("locate(%s, %s) = %q, %v; want %q", tc.source, tc.dir, got, ok, tc.want)
			}
		})
	}
}
