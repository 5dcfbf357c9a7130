package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalUpRefusesBadCatalogFlags: local up with the deployment's own
// catalog refuses, before anything starts, a driver it does not know, a
// catalog without the source it reads, and a catalog that does not load,
// naming the flag and value; nothing is written to the state directory.
func TestLocalUpRefusesBadCatalogFlags(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(bad, []byte("datasets:\n  - name: orders\n    colums: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown driver", []string{"--source-driver", "mysql"}, `--source-driver "mysql": want sqlite or pgx`},
		{"catalog without a source", []string{"--catalog", bad}, "--catalog " + bad + " needs --source-dsn"},
		{"catalog that does not load", []string{"--catalog", bad, "--source-driver", "pgx", "--source-dsn", "postgres://x"}, "--catalog " + bad + ": "},
		{"missing catalog", []string{"--catalog", bad + ".missing", "--source-dsn", "postgres://x"}, "--catalog " + bad + ".missing: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			var out, errw bytes.Buffer
			code := newApp(&out, &errw).execute(context.Background(), append([]string{"local", "up", "--dir", dir}, tc.args...))
			if code == 0 || !strings.Contains(errw.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want an error containing %q", code, errw.String(), tc.want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the state directory was made: %v", err)
			}
		})
	}
}
