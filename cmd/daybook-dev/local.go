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
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/awsclient"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/devkit/motoserver"
	"github.com/daybook-dev/daybook/shared/devkit/runtimeemulator"
	"github.com/daybook-dev/daybook/shared/devkit/samstack"
	"github.com/daybook-dev/daybook/shared/envvar"
)

// Functions are the template's Lambda logical ids.
var Functions = []string{"SweeperFunction", "ExporterFunction"}

type localDir string

func (d localDir) pidFile() string     { return filepath.Join(string(d), "moto.pid") }
func (d localDir) urlFile() string     { return filepath.Join(string(d), "moto.url") }
func (d localDir) envFile() string     { return filepath.Join(string(d), "env.json") }
func (d localDir) logFile() string     { return filepath.Join(string(d), "moto.log") }
func (d localDir) sourceDB() string    { return filepath.Join(string(d), "demo.db") }
func (d localDir) accountFile() string { return filepath.Join(string(d), "account.json") }

// samEnvFile is env.json for `sam local invoke`'s containers: see
// containerEnv.
func (d localDir) samEnvFile() string { return filepath.Join(string(d), "sam-env.json") }
func (d localDir) binDir() string     { return filepath.Join(string(d), "bin") }
func (d localDir) bootstrap(fn string) string {
	return filepath.Join(d.binDir(), fn, "bootstrap")
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

// named has each local function name itself in the User-Agent of its
// AWS calls (the SDK's AWS_SDK_UA_APP_ID: app/<logical id>), so moto's log
// and recording tell the sweeper's calls from the exporter's and from the
// operator CLI's (the tests check the recorded calls against each
// function's policy: package iamcheck).
func named(env map[string]map[string]string) {
	for fn, vars := range env {
		vars["AWS_SDK_UA_APP_ID"] = fn
	}
}

func (a *app) localCommand() *cobra.Command {
	return cli.Group("local", "Run daybook on this machine: moto with template.yaml deployed, the functions under the Lambda runtime emulator",
		a.localUpCommand(), a.localDownCommand(), a.localInvokeCommand(), a.localDrainCommand())
}

// localOptions configure `local up`.
type localOptions struct {
	dir, template, stage, sourceDSN string
	// catalog is the deployment's catalog file (DAYBOOK_CATALOG), empty
	// for the shipped example; sourceDriver is SOURCE_DRIVER.
	catalog, sourceDriver string
	noDemo                bool
}

func (a *app) localUpCommand() *cobra.Command {
	o := localOptions{dir: a.localDir}
	c := &cobra.Command{
		Use:   "up",
		Short: "Start moto on 127.0.0.1, deploy template.yaml, create a demo source and the local account",
		Long: fmt.Sprintf(`Start moto_server on 127.0.0.1 (or redeploy into the one already running), deploy template.yaml
into it through the SAM translator, and write the functions' environment to <dir>/env.json (the
sam local invoke --env-vars format), which the other commands read by default.

Unless --no-demo: generate a small demo SQLite source (<dir>/demo.db, %d days of data), create
the bucket %s and register the local account %s (its file is <dir>/account.json; the sample
events in events/ use this id) with %d closed days to export, with the operator CLI
<dir>/bin/daybook (make build).

With --catalog FILE the functions read your catalog instead of the example and --source-dsn
your database (--source-driver pgx for PostgreSQL): no demo source or account is made, only the
bucket %[2]s; register your accounts with daybook account put.`, localDemoDays, localBucket, LocalAccountID, localBackfillDays),
	}
	c.Flags().StringVar(&o.dir, "dir", o.dir, "state directory (pid, log, env.json, demo source)")
	c.Flags().StringVar(&o.template, "template", "template.yaml", "SAM template to deploy")
	c.Flags().StringVar(&o.stage, "stage", "local", "Stage parameter")
	c.Flags().StringVar(&o.sourceDSN, "source-dsn", "", "SOURCE_DSN for the exporter (default: the demo SQLite file in the state directory)")
	c.Flags().StringVar(&o.catalog, "catalog", "", "the deployment's catalog file (DAYBOOK_CATALOG; default: the shipped example)")
	c.Flags().StringVar(&o.sourceDriver, "source-driver", "sqlite", "SOURCE_DRIVER: sqlite or pgx (PostgreSQL)")
	c.Flags().BoolVar(&o.noDemo, "no-demo", false, "deploy only: no demo source, bucket or account")
	_ = c.MarkFlagFilename("catalog", "yaml", "yml", "json")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if o.sourceDriver != "sqlite" && o.sourceDriver != "pgx" {
			return cli.Usagef(c, "--source-driver %q: want sqlite or pgx", o.sourceDriver)
		}
		if o.catalog != "" {
			if o.sourceDSN == "" {
				return cli.Usagef(c, "--catalog %s needs --source-dsn: the demo source holds the example's tables only", o.catalog)
			}
			abs, err := filepath.Abs(o.catalog)
			if err != nil {
				return err
			}
			if _, err := dataset.Load(abs); err != nil {
				return fmt.Errorf("--catalog %s: %w", o.catalog, err)
			}
			o.catalog = abs
		}
		return a.localUp(c.Context(), o)
	}
	return c
}

func (a *app) localUp(ctx context.Context, o localOptions) error {
	d := localDir(o.dir)
	if !o.noDemo && o.catalog == "" {
		// Before anything starts: the account is registered with it.
		if _, err := operatorIn(d.binDir()); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	if url, ok := running(d); ok {
		fmt.Fprintf(a.stdout, "moto_server already running at %s (pid file %s); redeploying\n", url, d.pidFile())
		return a.deployLocal(ctx, d, url, o)
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
	fmt.Fprintf(a.stdout, "moto_server %s (pid %d, log %s)\n", srv.URL, srv.Pid, d.logFile())
	if err := a.deployLocal(ctx, d, srv.URL, o); err != nil {
		_ = motoserver.StopPid(srv.Pid)
		_ = os.Remove(d.pidFile())
		return err
	}
	return nil
}

func (a *app) deployLocal(ctx context.Context, d localDir, url string, o localOptions) error {
	cfg, err := motoserver.ConfigFor(ctx, url)
	if err != nil {
		return err
	}
	st, err := samstack.Up(ctx, cfg, o.template, o.stage, map[string]string{"SourceDriver": o.sourceDriver})
	if err != nil {
		return err
	}
	dsn := o.sourceDSN
	if dsn == "" {
		abs, err := filepath.Abs(d.sourceDB())
		if err != nil {
			return err
		}
		dsn = "file:" + abs + "?mode=ro"
	}
	start, drain := selfCommand()+" local up --dir "+string(d), selfCommand()+" local drain --dir "+string(d)
	if filepath.Clean(string(d)) == ".local" {
		start, drain = "make local-up", "make local-drain"
	}
	extra := cliVars(st, map[string]string{"SOURCE_DSN": dsn, envLocalStart: start, envLocalDrain: drain})
	if o.catalog != "" {
		extra[dataset.EnvCatalog] = o.catalog
	}
	env, err := samstack.FunctionEnv(ctx, cfg, st, Functions, localEnv(url, extra))
	if err != nil {
		return err
	}
	named(env)
	if err := samstack.WriteEnvFile(d.envFile(), env); err != nil {
		return err
	}
	if o.sourceDSN == "" {
		if err := samstack.WriteEnvFile(d.samEnvFile(), containerEnv(env)); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.stdout, "stack %s deployed: table %s, queue %s\nenv file %s (sam local invoke --env-vars format)\n",
		st.Name, st.Outputs["LedgerTableName"], st.Outputs["JobsQueueUrl"], d.envFile())
	if o.noDemo {
		return nil
	}
	if o.catalog != "" {
		return a.localBucketFor(ctx, d, cfg, o.catalog)
	}
	return a.seedLocal(ctx, d, cfg, o.sourceDSN == "", envvar.From(env["ExporterFunction"]).SettleDelay())
}

// containerSourceDB is where `make invoke-*` puts the demo source for `sam
// local invoke`: SAM mounts the function's build directory at /var/task
// and nothing else of the host.
const containerSourceDB = "/var/task/demo.db"

// containerEnv is env for `sam local invoke` (make invoke-sweeper and
// invoke-exporter where sam and Docker exist): the same, except that the
// exporter reads the demo source at containerSourceDB, which the Makefile
// copies into the build directory SAM mounts. The endpoint stays
// 127.0.0.1: the Makefile runs the container with --docker-network host,
// where the host's loopback is the container's.
func containerEnv(env map[string]map[string]string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for fn, vars := range env {
		out[fn] = map[string]string{}
		for k, v := range vars {
			out[fn][k] = v
		}
		if _, ok := vars["SOURCE_DSN"]; ok {
			out[fn]["SOURCE_DSN"] = "file:" + containerSourceDB + "?mode=ro"
		}
	}
	return out
}

// cliVars adds to vars what the operator CLI reads from an env file besides
// the functions' own environment (which the functions ignore): the sweeper's
// dead-letter queue, the direct-bucket and direct-Glue-database patterns, the
// exporter's role (the principal customers' roles trust) and, on a stack that
// deploys the web console, the console's role (which a GCS or Azure
// customer's federation trusts too), from the stack's outputs. The account
// rules are in the functions' environment already.
func cliVars(st *samstack.Stack, vars map[string]string) map[string]string {
	for out, v := range map[string]string{"SweeperDLQUrl": "SWEEPER_DLQ_URL", "DirectBucketPattern": "DIRECT_BUCKET_PATTERN", "ExporterRoleArn": "EXPORTER_ROLE_ARN",
		"ConsoleRoleArn": "CONSOLE_ROLE_ARN", "DirectGlueDatabasePattern": "DIRECT_GLUE_DATABASE_PATTERN"} {
		if st.Outputs[out] != "" {
			vars[v] = st.Outputs[out]
		}
	}
	return vars
}

// Variables of the env file the operator CLI reads for its hints (the
// functions ignore them): the command that starts this stack again, and the
// one that feeds its queues to the functions.
const (
	envLocalStart = "DAYBOOK_LOCAL_START"
	envLocalDrain = "DAYBOOK_LOCAL_DRAIN"
)

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
	if err != nil || p.Signal(syscall.Signal(0)) != nil {
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

func (a *app) localDownCommand() *cobra.Command {
	dir := a.localDir
	c := &cobra.Command{Use: "down", Short: "Stop what `local up` started (by its pid)"}
	c.Flags().StringVar(&dir, "dir", dir, "state directory")
	c.RunE = func(c *cobra.Command, _ []string) error {
		d := localDir(dir)
		if pids, err := stopKeptStores(d); err != nil {
			return err
		} else if len(pids) > 0 {
			fmt.Fprintf(a.stdout, "stopped the store emulators (pids %v)\n", pids)
		}
		pid, err := readPid(d)
		if errors.Is(err, os.ErrNotExist) {
			_, err := fmt.Fprintln(a.stdout, "nothing to stop")
			return err
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
		if alive(pid) {
			// Not gone 5 s after SIGTERM (a loaded machine): its group is killed.
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			for i := 0; i < 100 && alive(pid); i++ {
				time.Sleep(50 * time.Millisecond)
			}
		}
		_ = os.Remove(d.pidFile())
		_ = os.Remove(d.urlFile())
		_, err = fmt.Fprintf(a.stdout, "stopped moto_server (pid %d)\n", pid)
		return err
	}
	return c
}

// readLocalEnv reads <dir>/env.json and checks that its endpoint answers.
func (a *app) readLocalEnv(ctx context.Context, d localDir) (map[string]map[string]string, error) {
	env, err := samstack.ReadEnvFile(d.envFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: %w", d.envFile(), awsclient.ErrLocalDown)
	}
	if err != nil {
		return nil, err
	}
	if err := a.probe(ctx, env["ExporterFunction"]["AWS_ENDPOINT_URL"]); err != nil {
		return nil, err
	}
	return env, nil
}

func (a *app) localInvokeCommand() *cobra.Command {
	dir, event, bin := a.localDir, "", ""
	c := &cobra.Command{
		Use:   "invoke SweeperFunction|ExporterFunction [--event FILE] [--dir DIR] [--bin DIR]",
		Short: "Run a function's bootstrap once under the runtime emulator with <dir>/env.json",
		Long: `Run a function's bootstrap once under the runtime emulator with <dir>/env.json, the event as its
payload. The bootstraps are read from <dir>/bin (make build writes .local/bin) unless --bin names
another directory: a kept demo's state is in .demo and its bootstraps in .local/bin, so
daybook-dev local invoke ExporterFunction --dir .demo --bin .local/bin --event FILE.`,
		Args:      cli.ExactArgs("FUNCTION"),
		ValidArgs: Functions,
	}
	c.Flags().StringVar(&dir, "dir", dir, "state directory")
	c.Flags().StringVar(&bin, "bin", "", "directory of the functions' bootstraps (<Function>/bootstrap; default <dir>/bin)")
	c.Flags().StringVar(&event, "event", "", "event JSON file (default {})")
	_ = c.MarkFlagFilename("event", "json")
	c.RunE = func(c *cobra.Command, args []string) error {
		fn := args[0]
		if fn != Functions[0] && fn != Functions[1] {
			return cli.Usagef(c, "function %q: want %s", fn, strings.Join(Functions, " or "))
		}
		ctx := c.Context()
		d := localDir(dir)
		env, err := a.readLocalEnv(ctx, d)
		if err != nil {
			return err
		}
		payload := []byte("{}")
		if event != "" {
			if payload, err = os.ReadFile(event); err != nil {
				return err
			}
		}
		logf, err := os.OpenFile(filepath.Join(dir, fn+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer logf.Close()
		bootstrap := d.bootstrap(fn)
		if bin != "" {
			bootstrap = filepath.Join(bin, fn, "bootstrap")
		}
		if _, err := os.Stat(bootstrap); err != nil {
			return fmt.Errorf("no %s bootstrap at %s (make build writes .local/bin; name another directory with --bin): %w", fn, bootstrap, err)
		}
		f, err := runtimeemulator.Start(ctx, bootstrap, runtimeemulator.Options{Name: fn, Env: env[fn], Log: io.MultiWriter(logf, a.stderr)})
		if err != nil {
			return err
		}
		defer f.Stop()
		out, err := f.Invoke(ctx, payload)
		if len(out) > 0 {
			fmt.Fprintln(a.stdout, string(out))
		}
		return err
	}
	return c
}
