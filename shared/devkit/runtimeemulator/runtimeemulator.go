// Package runtimeemulator runs a Lambda bootstrap binary under the AWS Lambda
// Runtime Interface Emulator (the program `sam local invoke` runs inside its
// container) and invokes it over HTTP. Used by `make invoke-*`, the demo
// driver and the end-to-end tests.
package runtimeemulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"
)

// InstallHint says how to get the emulator.
var InstallHint = "aws-lambda-rie not found: run `make tools` (it installs the version pinned in the Makefile with go install)"

// Bin finds aws-lambda-rie: $AWS_LAMBDA_RIE, PATH, then $GOPATH/bin.
func Bin() (string, error) {
	if p := os.Getenv("AWS_LAMBDA_RIE"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = home + "/go"
		}
	}
	if p := gopath + "/bin/aws-lambda-rie"; gopath != "" {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New(InstallHint)
}

// Function is one bootstrap binary running under its own emulator instance.
type Function struct {
	Name   string
	URL    string
	Pid    int
	cmd    *exec.Cmd
	exited chan struct{} // closed once the emulator process has exited (its Wait returned)
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
		if !errors.Is(err, errExited) || attempt == 3 {
			return f, err
		}
	}
}

// errExited is an emulator that exited before it listened.
var errExited = errors.New("exited before it listened")

func start(ctx context.Context, rie, bootstrap string, opts Options) (*Function, error) {
	invokePort, err := freePort()
	if err != nil {
		return nil, err
	}
	apiPort, err := freePort()
	if err != nil {
		return nil, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = 300 * time.Second
	}
	if opts.MemoryMB == 0 {
		opts.MemoryMB = 1024
	}
	cmd := exec.Command(rie,
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", invokePort),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", apiPort),
		bootstrap)
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
	cmd.Env = env
	if opts.Log != nil {
		cmd.Stdout, cmd.Stderr = opts.Log, opts.Log
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", rie, err)
	}
	f := &Function{Name: opts.Name, URL: fmt.Sprintf("http://127.0.0.1:%d/2015-03-31/functions/function/invocations", invokePort), Pid: cmd.Process.Pid, cmd: cmd,
		exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(f.exited) }()
	if err := waitListening(ctx, fmt.Sprintf("127.0.0.1:%d", invokePort), 60*time.Second, f.exited); err != nil {
		_ = f.Stop()
		return nil, fmt.Errorf("emulator for %s: %w", opts.Name, err)
	}
	return f, nil
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
	if f == nil || f.Pid == 0 {
		return nil
	}
	err := syscall.Kill(-f.Pid, syscall.SIGTERM)
	if errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	select {
	case <-f.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-f.Pid, syscall.SIGKILL)
		<-f.exited
	}
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitListening polls the emulator's port (it gives no other readiness
// signal) until it answers, the process exits (errExited), or limit.
func waitListening(ctx context.Context, addr string, limit time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s: %w", addr, errExited)
		case <-ctx.Done():
			return fmt.Errorf("not listening on %s after %s", addr, limit)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
