package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/console"
	"github.com/daybook-dev/daybook/shared/ops"
)

// defaultListen is where `daybook console` listens unless --listen.
const defaultListen = "127.0.0.1:8080"

func (a *app) consoleCommand() *cobra.Command {
	var listen string
	var readOnly bool
	c := &cobra.Command{
		Use:   "console [--listen 127.0.0.1:8080] [--read-only]",
		Short: "Serve the web console on this machine: the fleet, each account by day, partitions, and the actions",
		Long: `Serve the web console from this machine, reading the same deployment the other commands read:
the fleet (worst first, sortable), each account's datasets by day as a heatmap, and each
partition's attempts, manifest and delivery manifest. Its actions (re-export, retry of failed
and stopped partitions, enable or disable an account) ask for confirmation, run the same checks
as daybook reexport and retry, and are recorded as requested by your AWS identity; --read-only
leaves them out.

The console has no login of its own, so it listens on a loopback address only; to share it,
deploy it behind IAM (the template's DeployConsole parameter). Ctrl-C stops it.`,
		Example: "  daybook console\n  daybook console --read-only --listen 127.0.0.1:9000\n  daybook console --stack daybook-prod --region eu-west-1 --read-only",
	}
	a.deploymentFlags(c)
	c.Flags().StringVar(&listen, "listen", defaultListen, "loopback address and port to serve on (port 0 picks a free one)")
	c.Flags().BoolVar(&readOnly, "read-only", false, "show the ledger only: no re-export, retry, enable or disable")
	c.RunE = func(c *cobra.Command, _ []string) error {
		host, _, err := net.SplitHostPort(listen)
		if err != nil {
			return cli.Usagef(c, "--listen %q: want HOST:PORT, e.g. %s", listen, defaultListen)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return cli.Usagef(c, "--listen %s: the console listens on a loopback address only (127.0.0.1, ::1 or localhost): it has no login, and its actions act as your AWS identity; to share it, deploy it behind IAM (template parameter DeployConsole)", listen)
		}
		return a.serveConsole(c.Context(), listen, readOnly)
	}
	return c
}

// serveConsole serves the console on listen until ctx ends, then shuts it
// down.
func (a *app) serveConsole(ctx context.Context, listen string, readOnly bool) error {
	e, err := a.open(ctx)
	if err != nil {
		return err
	}
	who := a.requestedBy(ctx, e.sts, "")
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", listen, err)
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	cfg := console.Config{
		Catalog: a.catalog, Ledger: ops.LedgerOf(e.ledger), Buckets: consoleBuckets(ctx, e), Stage: e.stage, SettleDelay: e.settle, Deployment: e.dep.desc,
		ReadOnly: readOnly, Identity: console.FixedIdentity(who), Now: a.now,
		// A page from another site that points its name at this address
		// sends its own Host: refused.
		Hosts: []string{addr, net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("localhost", port), net.JoinHostPort("::1", port)},
		Log:   slog.New(slog.NewTextHandler(a.stderr, nil)),
	}
	if e.queueURL != "" {
		cfg.Queue, cfg.QueueURL = e.sqs, e.queueURL
	}
	if e.dep.local() {
		cfg.QueueNote = localQueueNote(a.target.envFile)
	}
	srv, err := console.New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	mode := "actions recorded as requested by " + who
	if readOnly {
		mode = "read-only"
	}
	fmt.Fprintf(a.stdout, "daybook console on http://%s/ (%s); Ctrl-C stops it\n", addr, mode)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("console: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shut); err != nil {
		return fmt.Errorf("console: shutting down: %w", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("console: %w", err)
	}
	fmt.Fprintln(a.stdout, "daybook console stopped")
	return nil
}

// consoleBuckets opens an account's bucket for the console's partition page
// the way verify does: the account's role or daybook's own, and the
// expected bucket owner.
func consoleBuckets(ctx context.Context, e *opsEnv) console.Buckets {
	return console.BucketsFunc(func(acct account.Account) (console.ObjectReader, error) {
		return e.bucket(ctx, acct)
	})
}

// localQueueNote is what the console says after an action on a local stack:
// nothing takes its queue by itself, so it names the command that does.
func localQueueNote(envFile string) string {
	dir := filepath.Dir(cmp.Or(envFile, filepath.Join(".local", "env.json")))
	return "This is a local stack: no event source or scheduler runs here. To export what was queued, run: " +
		".local/bin/daybook-dev local drain --dir " + dir + " --bin .local/bin --sweep"
}
