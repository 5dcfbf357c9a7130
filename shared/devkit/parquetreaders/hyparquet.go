package parquetreaders

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// JSInstallHint says how to install the JavaScript reader.
const JSInstallHint = "run `make tools`, which runs `npm ci` in shared/devkit/parquetreaders/js (needs Node.js 20+ and npm on PATH)"

// ErrJSReaderMissing is returned when node or the pinned npm packages of the
// JavaScript reader are not installed; its message carries JSInstallHint.
var ErrJSReaderMissing = errors.New("javascript parquet reader not installed")

// ReadHyparquet decodes the files at paths with hyparquet under Node, all in
// one node process, and returns one Table per path in order.
func ReadHyparquet(paths ...string) ([]*Table, error) {
	dir, err := JSDir()
	if err != nil {
		return nil, err
	}
	return readJS(dir, paths)
}

// JSDir returns the directory of read.mjs and its package-lock.json: js/
// next to this file, found from the module root above the working
// directory (a test's working directory is its package).
func JSDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "shared", "devkit", "parquetreaders", "js"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("parquetreaders: no go.mod above %s", wd)
		}
	}
}

// checkInstall verifies that node is on PATH and that every package
// package-lock.json pins is installed at its pinned version.
func checkInstall(dir string) (node string, err error) {
	node, err = exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("%w: node not found on PATH: %s", ErrJSReaderMissing, JSInstallHint)
	}
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return "", fmt.Errorf("parquetreaders: %w", err)
	}
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		return "", fmt.Errorf("parquetreaders: package-lock.json: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(lock.Packages)) {
		if !strings.HasPrefix(name, "node_modules/") {
			continue
		}
		want := lock.Packages[name].Version
		var got struct{ Version string }
		b, err := os.ReadFile(filepath.Join(dir, name, "package.json"))
		if err == nil {
			err = json.Unmarshal(b, &got)
		}
		if err != nil || got.Version != want {
			found := "nothing"
			if got.Version != "" {
				found = got.Version
			}
			return "", fmt.Errorf("%w: %s %s is not installed in %s (found %s): %s",
				ErrJSReaderMissing, strings.TrimPrefix(name, "node_modules/"), want, dir, found, JSInstallHint)
		}
	}
	return node, nil
}

// jsValue is one value read.mjs printed: null, a string, or (a list) an
// array of strings and nulls. double says the text is JavaScript's text of a
// double; Go parses every form it prints ("Infinity", "-0", "1e+21").
func jsValue(raw json.RawMessage, double bool) (Value, error) {
	if len(raw) > 0 && raw[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return Null, err
		}
		vals := make([]Value, len(elems))
		for i, e := range elems {
			if len(e) > 0 && e[0] == '[' {
				return Null, fmt.Errorf("element %d: a list of lists", i)
			}
			v, err := jsValue(e, double)
			if err != nil {
				return Null, fmt.Errorf("element %d: %w", i, err)
			}
			vals[i] = v
		}
		return ListText(vals), nil
	}
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return Null, err
	}
	if s == nil {
		return Null, nil
	}
	if !double {
		return Text(*s), nil
	}
	d, err := strconv.ParseFloat(*s, 64)
	if err != nil {
		return Null, err
	}
	return Text(FormatDouble(d)), nil
}

func readJS(dir string, paths []string) ([]*Table, error) {
	node, err := checkInstall(dir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(dir, "read.mjs")}, paths...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("hyparquet: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var files []struct {
		Path    string
		Columns []struct{ Name, Physical, Logical, Repetition string }
		Rows    [][]json.RawMessage
	}
	if err := json.Unmarshal(stdout.Bytes(), &files); err != nil {
		return nil, fmt.Errorf("hyparquet: output: %w", err)
	}
	if len(files) != len(paths) {
		return nil, fmt.Errorf("hyparquet: %d files read, %d asked", len(files), len(paths))
	}
	out := make([]*Table, len(files))
	for i, f := range files {
		t := &Table{Reader: "hyparquet"}
		for _, c := range f.Columns {
			t.Columns = append(t.Columns, Column{Name: c.Name, Physical: c.Physical, Logical: c.Logical, Repetition: c.Repetition})
		}
		for r, row := range f.Rows {
			vals := make([]Value, len(row))
			for c, raw := range row {
				v, err := jsValue(raw, t.Columns[c].Physical == "DOUBLE")
				if err != nil {
					return nil, fmt.Errorf("hyparquet: %s row %d column %s: %w", f.Path, r+1, t.Columns[c].Name, err)
				}
				vals[c] = v
			}
			t.Rows = append(t.Rows, vals)
		}
		out[i] = t
	}
	return out, nil
}
