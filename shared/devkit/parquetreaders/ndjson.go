package parquetreaders

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
)

// ReadNodeNDJSON decodes the gzip-compressed NDJSON files at paths with
// Node's zlib and JSON.parse (js/ndjson.mjs), all in one node process, and
// returns one Table per path in order: ds's columns (NDJSON carries no
// types; Physical and Logical are left empty) and every value as canonical
// text, from the NDJSON form docs/types.md gives each type. A row with a key
// ds does not declare, or without one it declares, is an error. An int64
// beyond 2^53 reads as JavaScript's nearest double, as any JavaScript
// reader's would.
func ReadNodeNDJSON(ds dataset.Dataset, paths ...string) ([]*Table, error) {
	dir, err := JSDir()
	if err != nil {
		return nil, err
	}
	node, err := checkInstall(dir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(dir, "ndjson.mjs")}, paths...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("node ndjson: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var files []struct {
		Path string
		Rows []map[string]string // each value JSON.stringify's text
	}
	if err := json.Unmarshal(stdout.Bytes(), &files); err != nil {
		return nil, fmt.Errorf("node ndjson: output: %w", err)
	}
	if len(files) != len(paths) {
		return nil, fmt.Errorf("node ndjson: %d files read, %d asked", len(files), len(paths))
	}
	out := make([]*Table, len(files))
	for i, f := range files {
		t := &Table{Reader: "node-ndjson"}
		for _, c := range ds.Columns {
			t.Columns = append(t.Columns, Column{Name: c.Name})
		}
		for r, row := range f.Rows {
			if len(row) != len(ds.Columns) {
				return nil, fmt.Errorf("node ndjson: %s row %d: %d keys, %s declares %d columns", f.Path, r+1, len(row), ds.Name, len(ds.Columns))
			}
			vals := make([]Value, len(ds.Columns))
			for c, col := range ds.Columns {
				raw, ok := row[col.Name]
				if !ok {
					return nil, fmt.Errorf("node ndjson: %s row %d: no key %s", f.Path, r+1, col.Name)
				}
				if vals[c], err = ndjsonValue(col.Type, json.RawMessage(raw)); err != nil {
					return nil, fmt.Errorf("node ndjson: %s row %d column %s: %w", f.Path, r+1, col.Name, err)
				}
			}
			t.Rows = append(t.Rows, vals)
		}
		out[i] = t
	}
	return out, nil
}

// ndjsonValue is the canonical text of raw, the NDJSON form of a value of
// type t.
func ndjsonValue(t dataset.Type, raw json.RawMessage) (Value, error) {
	if string(raw) == "null" {
		return Null, nil
	}
	switch t.Kind {
	case dataset.KindJSON:
		return Text(string(raw)), nil
	case dataset.KindList:
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return Null, err
		}
		vals := make([]Value, len(elems))
		for i, e := range elems {
			v, err := ndjsonValue(t.ElemType(), e)
			if err != nil {
				return Null, fmt.Errorf("element %d: %w", i, err)
			}
			vals[i] = v
		}
		return ListText(vals), nil
	case dataset.KindDouble:
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return Null, err
		}
		return Text(FormatDouble(f)), nil
	case dataset.KindInt64:
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return Null, err
		}
		return Text(strconv.FormatInt(n, 10)), nil
	case dataset.KindBoolean:
		b, err := strconv.ParseBool(string(raw))
		if err != nil {
			return Null, err
		}
		return Text(strconv.FormatBool(b)), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return Null, fmt.Errorf("%s is not a string: %w", raw, err)
	}
	switch t.Kind {
	case dataset.KindDate:
		d, err := civil.Parse(s)
		if err != nil {
			return Null, err
		}
		return Canonical(d), nil
	case dataset.KindTimestamp:
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return Null, err
		}
		return Canonical(ts), nil
	case dataset.KindBinary:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return Null, err
		}
		return Text(hex.EncodeToString(b)), nil
	}
	// string, decimal (exactly its scale's digits)
	return Text(s), nil
}
