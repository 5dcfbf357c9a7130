// Package runtimeemulator runs a Lambda bootstrap binary under the AWS Lambda
// Runtime Interface Emulator (the program `sam local invoke` runs inside its
// container) and invokes it over HTTP. Used by `make invoke-*`, the demo
// driver and the end-to-end tests.
package runtimeemulator

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// InstallHint says how to get the emulator.
var InstallHint = "aws-lambda-rie not found: run `make tools` (it installs the version pinned in the Makefile with go install)"

// Bin finds aws-lambda-rie: $AWS_LAMBDA_RIE, $GOBIN or $GOPATH/bin (where
// `make tools` installs it), then PATH.
func Bin() (string, error) {
	return serverproc.GoBin("aws-lambda-rie", "AWS_LAMBDA_RIE", InstallHint)
}

// Function is one bootstrap binary running under its own emulator instance.
type Function struct {
	Name string
	URL  string
	Pid  int
	proc *serverproc.Process
}

// Options configure a Function.
type Options struct {
	Name       string            // AWS_LAMBDA_FUNCTION_NAME
	Timeout    time.Duration     // AWS_LAMBDA_FUNCTION_TIMEOUT (default 300s)
	Env        map[string]string // the function's environment (e.g. from .local/env.json)
	Log        io.Writer         // emulator and function output
	MemoryMB   int
	HandlerArg string
}

// Start launches bootstrap under the emulator on free loopback ports. Each
// instance gets its own --runtime-api-address so several can run at once.
// A port found free can be taken by another process before the emulator
// binds it, and the emulator then exits: Start tries again on new ports,
// three times at most.
func Start(ctx context.Context, bootstrap string, opts Options) (*Function, error) {
	rie, err := Bin()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bootstrap); err != nil {
		return nil, fmt.Errorf("bootstrap %s: %w", bootstrap, err)
	}
	for attempt := 1; ; attempt++ {
		f, err := start(ctx, rie, bootstrap, opts)
		if !errors.Is(err, serverproc.ErrExited) || attempt == 3 {
			return f, err
		}
	}
}

func start(ctx context.Context, rie, bootstrap string, opts Options) (*Function, error) {
	apiPort, err := serverproc.FreePort()
	if err != nil {
		return nil, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = 300 * time.Second
	}
	if opts.MemoryMB == 0 {
		opts.MemoryMB = 1024
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"AWS_LAMBDA_FUNCTION_NAME=" + opts.Name,
		fmt.Sprintf("AWS_LAMBDA_FUNCTION_TIMEOUT=%d", int(opts.Timeout.Seconds())),
		fmt.Sprintf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%d", opts.MemoryMB),
	}
	keys := make([]string, 0, len(opts.Env))
	for k := range opts.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+opts.Env[k])
	}
	p, err := serverproc.Start(ctx, serverproc.Spec{
		Name: "emulator for " + opts.Name,
		Path: rie,
		Args: func(invokePort int) []string {
			return []string{
				"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", invokePort),
				"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", apiPort),
				bootstrap}
		},
		Env:    env,
		Output: cmp.Or[io.Writer](opts.Log, io.Discard),
		Ready:  serverproc.Listening, // it gives no other readiness signal
		Grace:  5 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return &Function{Name: opts.Name, URL: p.URL + "/2015-03-31/functions/function/invocations", Pid: p.Pid, proc: p}, nil
}

// FunctionError is a handler error: the emulator answers HTTP 200 with
// errorMessage/errorType in the body, as Lambda does.
type FunctionError struct {
	Message string `json:"errorMessage"`
	Type    string `json:"errorType"`
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// Invoke sends payload and returns the function's response. A handler error
// is returned as *FunctionError.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", f.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: read response: %w", f.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("invoke %s: HTTP %d: %s", f.Name, resp.StatusCode, body)
	}
	var fe FunctionError
	if json.Unmarshal(body, &fe) == nil && fe.Message != "" {
		return body, &fe
	}
	return body, nil
}

// Stop ends the emulator and the function's process group.
func (f *Function) Stop() error {
	if f == nil || f.proc == nil {
		return nil
	}
	return f.proc.Stop()
}
