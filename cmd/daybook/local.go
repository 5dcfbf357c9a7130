package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/runtimeemulator"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
)

// Functions are the template's Lambda logical ids.
var Functions = []string{"SweeperFunction", "ExporterFunction"}

type localDir string

func (d localDir) pidFile() string { return filepath.Join(string(d), "moto.pid") }
func (d localDir) urlFile() string { return filepath.Join(string(d), "moto.url") }
func (d localDir) envFile() string { return filepath.Join(string(d), "env.json") }
func (d localDir) logFile() string { return filepath.Join(string(d), "moto.log") }
func (d localDir) bootstrap(fn string) string {
	return filepath.Join(string(d), "bin", fn, "bootstrap")
}

// localEnv is what every local function gets besides the stack's values.
func localEnv(url string, extra map[string]string) map[string]string {
	env := map[string]string{
		"AWS_ENDPOINT_URL":      url,
		"AWS_REGION":            motoserver.Region,
		"AWS_DEFAULT_REGION":    motoserver.Region,
		"AWS_ACCESS_KEY_ID":     "testing",
		"AWS_SECRET_ACCESS_KEY": "testing",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func runLocalUp(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("local up")
	dir := fs.String("dir", ".local", "state directory (pid, log, env.json)")
	tmpl := fs.String("template", "template.yaml", "SAM template to deploy")
	stage := fs.String("stage", "local", "Stage parameter")
	sourceDSN := fs.String("source-dsn", "", "SOURCE_DSN for the exporter (default: the demo SQLite file in the state directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d := localDir(*dir)
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	if url, ok := running(d); ok {
		fmt.Fprintf(stdout, "moto_server already running at %s (pid file %s); redeploying\n", url, d.pidFile())
		return deploy(ctx, d, url, *tmpl, *stage, *sourceDSN, stdout)
	}
	srv, err := motoserver.Start(ctx, d.logFile())
	if err != nil {
		return err
	}
	if err := os.WriteFile(d.pidFile(), []byte(strconv.Itoa(srv.Pid)+"\n"), 0o644); err != nil {
		_ = srv.Stop()
		return err
	}
	if err := os.WriteFile(d.urlFile(), []byte(srv.URL+"\n"), 0o644); err != nil {
		_ = srv.Stop()
		return err
	}
	fmt.Fprintf(stdout, "moto_server %s (pid %d, log %s)\n", srv.URL, srv.Pid, d.logFile())
	if err := deploy(ctx, d, srv.URL, *tmpl, *stage, *sourceDSN, stdout); err != nil {
		_ = motoserver.StopPid(srv.Pid)
		_ = os.Remove(d.pidFile())
		return err
	}
	return nil
}

func deploy(ctx context.Context, d localDir, url, tmpl, stage, sourceDSN string, stdout io.Writer) error {
	cfg, err := motoserver.ConfigFor(ctx, url)
	if err != nil {
		return err
	}
	st, err := samstack.Up(ctx, cfg, tmpl, stage, map[string]string{"SourceDriver": "sqlite"})
	if err != nil {
		return err
	}
	if sourceDSN == "" {
		abs, _ := filepath.Abs(filepath.Join(string(d), "demo.db"))
		sourceDSN = "file:" + abs + "?mode=ro"
	}
	env, err := samstack.FunctionEnv(ctx, cfg, st, Functions, localEnv(url, map[string]string{"SOURCE_DSN": sourceDSN}))
	if err != nil {
		return err
	}
	if err := samstack.WriteEnvFile(d.envFile(), env); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stack %s deployed: table %s, queue %s\nenv file %s (sam local invoke --env-vars format)\n",
		st.Name, st.Outputs["LedgerTableName"], st.Outputs["JobsQueueUrl"], d.envFile())
	return nil
}

// running reports the URL of a moto_server a previous `local up` started
// that still answers.
func running(d localDir) (string, bool) {
	pid, err := readPid(d)
	if err != nil || !alive(pid) {
		return "", false
	}
	b, err := os.ReadFile(d.urlFile())
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func readPid(d localDir) (int, error) {
	b, err := os.ReadFile(d.pidFile())
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// alive reports whether pid is a running process. An exited child not yet
// reaped by its parent (a zombie, state Z in /proc) counts as gone.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil || p.Signal(syscallZero) != nil {
		return false
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Format: pid (comm) state ...; comm may contain spaces and parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return false
		}
	}
	return true
}

func runLocalDown(_ context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("local down")
	dir := fs.String("dir", ".local", "state directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d := localDir(*dir)
	pid, err := readPid(d)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(stdout, "nothing to stop")
		return nil
	}
	if err != nil {
		return fmt.Errorf("pid file %s: %w", d.pidFile(), err)
	}
	if err := motoserver.StopPid(pid); err != nil {
		return err
	}
	for i := 0; i < 100 && alive(pid); i++ {
		time.Sleep(50 * time.Millisecond) // waiting for another process to exit; nothing to select on
	}
	_ = os.Remove(d.pidFile())
	_ = os.Remove(d.urlFile())
	fmt.Fprintf(stdout, "stopped moto_server (pid %d)\n", pid)
	return nil
}

func runLocalInvoke(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("local invoke")
	dir := fs.String("dir", ".local", "state directory")
	event := fs.String("event", "", "event JSON file")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("usage: daybook local invoke SweeperFunction|ExporterFunction --event FILE")
	}
	fn := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	d := localDir(*dir)
	env, err := samstack.ReadEnvFile(d.envFile())
	if err != nil {
		return fmt.Errorf("%w (run `make local-up` first)", err)
	}
	vars, ok := env[fn]
	if !ok {
		return fmt.Errorf("function %q: not in %s (have %v)", fn, d.envFile(), Functions)
	}
	payload := []byte("{}")
	if *event != "" {
		if payload, err = os.ReadFile(*event); err != nil {
			return err
		}
	}
	logf, err := os.OpenFile(filepath.Join(*dir, fn+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	f, err := runtimeemulator.Start(ctx, d.bootstrap(fn), runtimeemulator.Options{Name: fn, Env: vars, Log: io.MultiWriter(logf, os.Stderr)})
	if err != nil {
		return err
	}
	defer f.Stop()
	out, err := f.Invoke(ctx, payload)
	if len(out) > 0 {
		fmt.Fprintln(stdout, string(out))
	}
	return err
}
