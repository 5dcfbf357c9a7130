package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// operatorName is the operator CLI's binary, which make build puts beside
// the functions' bootstraps.
const operatorName = "daybook"

// operatorCLI is the path of the operator's daybook binary. The dev
// commands run it for what an operator does on the local stack (account put,
// reexport, status), so that daybook-dev holds no copy of those commands
// and the operator's binary none of the development tooling.
type operatorCLI string

// operatorIn is the operator CLI in binDir, the directory of the host
// builds; its absence is an error that says how to build it.
func operatorIn(binDir string) (operatorCLI, error) {
	p := filepath.Join(binDir, operatorName)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("the operator CLI %s is missing: make build puts it there (or go build -o %s ./cmd/daybook)", p, p)
		}
		return "", err
	}
	return operatorCLI(p), nil
}

// run runs the operator CLI with args, its output to stdout; a failure
// names the command line and carries what it said on stderr.
func (o operatorCLI) run(ctx context.Context, stdout io.Writer, args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, string(o), args...)
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s %s: %w: %s", o, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
