// Package samstacktest is test support: the real template.yaml deployed into
// a test's moto_server once per stage, shared by every test of the process.
package samstacktest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
)

type deployment struct {
	once    sync.Once
	cfg     aws.Config
	outputs map[string]string
	stack   *samstack.Stack
	err     error
}

var (
	mu     sync.Mutex
	stacks = map[string]*deployment{}
)

// Stack deploys the module's template.yaml into srv as stage (once per
// process, with samstack.Up) and returns the SDK configuration and the
// stack's outputs.
func Stack(t testing.TB, srv *motoserver.Server, stage string) (aws.Config, map[string]string) {
	t.Helper()
	return StackWith(t, srv, stage, nil)
}

// StackWith is Stack with parameter overrides (DeployConsole, ...): the
// first call of a stage deploys it with its params.
func StackWith(t testing.TB, srv *motoserver.Server, stage string, params map[string]string) (aws.Config, map[string]string) {
	t.Helper()
	mu.Lock()
	d, ok := stacks[stage]
	if !ok {
		d = &deployment{}
		stacks[stage] = d
	}
	mu.Unlock()
	d.once.Do(func() {
		ctx := context.Background()
		if d.cfg, d.err = srv.Config(ctx); d.err != nil {
			return
		}
		tmpl, err := Template()
		if err != nil {
			d.err = err
			return
		}
		st, err := samstack.Up(ctx, d.cfg, tmpl, stage, params)
		if err != nil {
			d.err = err
			return
		}
		d.outputs, d.stack = st.Outputs, st
	})
	if d.err != nil {
		t.Fatal(d.err)
	}
	return d.cfg, d.outputs
}

// FunctionEnv is the environment of the function fn (a logical id) of the
// stack Stack (or StackWith) deployed as stage, read back from the
// emulator's Lambda API:
// the template's variables with the stack's resolved values (table, queue
// and bus names), as the deployed function gets them.
func FunctionEnv(t testing.TB, srv *motoserver.Server, stage, fn string) map[string]string {
	t.Helper()
	cfg, _ := Stack(t, srv, stage)
	mu.Lock()
	st := stacks[stage].stack
	mu.Unlock()
	env, err := samstack.FunctionEnv(context.Background(), cfg, st, []string{fn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return env[fn]
}

// Template finds template.yaml at the module root, above the test's directory.
func Template() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "template.yaml"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("template.yaml: no go.mod above the working directory")
		}
		dir = parent
	}
}
