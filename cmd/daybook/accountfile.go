package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/daybook-dev/daybook/shared/account"
)

// readAccountFile reads the `account put` JSON (path "-" is stdin). Errors
// name the file, line and column, and list the valid fields.
func readAccountFile(path string, stdin io.Reader) (account.Account, []byte, error) {
	var (
		b   []byte
		err error
	)
	if path == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return account.Account{}, nil, fmt.Errorf("account file: %w", err)
	}
	var a account.Account
	name := path
	if path == "-" {
		name = "stdin"
	}
	if err := decodeJSON(name, b, &a, true); err != nil {
		return account.Account{}, nil, fmt.Errorf("account file %w", err)
	}
	return a, b, nil
}

// writeBackID adds "id": "<id>" as the first field of the JSON object in
// the file, keeping the rest of the file byte for byte, and replaces the
// file atomically (a temporary file renamed over it, same mode). The result
// is decoded again before it replaces anything.
func writeBackID(path string, orig []byte, id string) error {
	if path == "-" {
		return errors.New("the account came from stdin")
	}
	i := bytes.IndexByte(orig, '{')
	if i < 0 {
		return errors.New("no JSON object in the file")
	}
	rest := orig[i+1:]
	trimmed := bytes.TrimLeft(rest, " \t\r\n")
	field := `"id": ` + strconv.Quote(id) + ","
	var ins string
	lead := rest[:len(rest)-len(trimmed)]
	if nl := bytes.LastIndexByte(lead, '\n'); nl >= 0 {
		// Pretty-printed: the same indentation as the next field.
		ins = "\n" + string(lead[nl+1:]) + field
	} else {
		ins = " " + field
	}
	out := make([]byte, 0, len(orig)+len(ins))
	out = append(out, orig[:i+1]...)
	out = append(out, ins...)
	out = append(out, rest...)
	var check account.Account
	if err := decodeJSON(path, out, &check, true); err != nil || check.ID != id {
		return fmt.Errorf("could not add the id without breaking the file (%v)", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), st.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// checkPatterns refuses a destination the deployment's exporter may not
// reach: a role outside CustomerRolePattern, or, without a role, a bucket
// outside DirectBucketPattern (both stack outputs; unknown means unchecked).
func checkPatterns(a account.Account, bucketPattern, rolePattern string) error {
	d := a.Destination
	if d.RoleARN != "" {
		if _, name, ok := strings.Cut(d.RoleARN, ":role/"); ok && rolePattern != "" && !wildcard(rolePattern, name) {
			return fmt.Errorf("destination.role_arn %q: this deployment's exporter may only assume roles named like %s (the stack's CustomerRolePattern)", d.RoleARN, rolePattern)
		}
		return nil
	}
	if bucketPattern != "" && !wildcard(bucketPattern, d.Bucket) {
		return fmt.Errorf("destination.bucket %q: without a role_arn the exporter writes with its own role, which may only write buckets named like %s (the stack's DirectBucketPattern); give the account a role_arn and external_id, or use such a bucket", d.Bucket, bucketPattern)
	}
	return nil
}

// wildcard matches s against an IAM-style pattern: * is any run of
// characters (slashes too), ? is one character.
func wildcard(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if wildcard(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && wildcard(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && wildcard(pattern[1:], s[1:])
}
