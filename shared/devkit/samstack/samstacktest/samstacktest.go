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
		st, err := samstack.Up(ctx, d.cfg, tmpl, stage, nil)
		if err != nil {
			d.err = err
			return
		}
		d.outputs = st.Outputs
	})
	if d.err != nil {
		t.Fatal(d.err)
	}
	return d.cfg, d.outputs
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
