// Command daybook is the operator and local-development CLI.
//
//	daybook version
//	daybook local up|down|invoke        local AWS (moto) deployed from template.yaml
//	daybook account put|get|list|test   account records
//	daybook requeue|reexport|status     ledger operations
//	daybook verify|sql                  a delivered partition: check it, print its load SQL
//	daybook demo                        the whole pipeline locally on the demo source
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
)

// version is set with -ldflags "-X main.version=..." on release builds.
var version = "dev"

type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout io.Writer) error
}

func commands() map[string]command {
	return map[string]command{
		"version":      {"print the version", runVersion},
		"local up":     {"start moto on 127.0.0.1 and deploy template.yaml into it", runLocalUp},
		"local down":   {"stop what `local up` started", runLocalDown},
		"local invoke": {"run a function's bootstrap under the runtime emulator with .local/env.json", runLocalInvoke},
		"account put":  {"register or update an account from a JSON file", runAccountPut},
		"account get":  {"print one account", runAccountGet},
		"account list": {"list accounts", runAccountList},
		"account test": {"test an account's destination by writing (C2)", runAccountTest},
		"requeue":      {"mark a day range queued (backfill / re-export entry point)", runRequeue},
		"reexport":     {"send a manual re-export request for a day or range to the queue", runReexport},
		"status":       {"print an account's partitions by state", runStatus},
		"verify":       {"check a delivered partition against its manifest", runVerify},
		"sql":          {"print the load SQL of a dataset for an engine", runSQL},
		"demo":         {"run the whole pipeline locally on the embedded demo source", runDemo},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "daybook:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cmds := commands()
	for n := min(2, len(args)); n >= 1; n-- {
		if c, ok := cmds[strings.Join(args[:n], " ")]; ok {
			err := c.run(ctx, args[n:], stdout)
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return err
		}
	}
	usage(os.Stderr)
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		return nil
	}
	return fmt.Errorf("unknown command %q", strings.Join(args, " "))
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: daybook <command> [flags]")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-15s %s\n", n, cmds[n].summary)
	}
}

func runVersion(_ context.Context, _ []string, stdout io.Writer) error {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok && v == "dev" {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v += "+" + s.Value[:min(12, len(s.Value))]
			}
		}
	}
	_, err := fmt.Fprintln(stdout, "daybook", v)
	return err
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("daybook "+name, flag.ContinueOnError)
	return fs
}
