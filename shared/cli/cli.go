// Package cli holds the command-line conventions both daybook programs
// follow, the operator's (cmd/daybook) and the local-development one
// (cmd/daybook-dev): help on stdout with exit 0, usage errors on stderr with
// the usage line and exit 2, extra arguments refused, groups that only hold
// subcommands, and the version string.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes.
const (
	ExitOK          = 0   // done
	ExitError       = 1   // the command ran and failed, or refused (nothing was changed)
	ExitUsage       = 2   // the command line is wrong: unknown command or flag, missing or bad value, extra arguments
	ExitInterrupted = 130 // interrupted (Ctrl-C)
)

// DeploymentAnnotation marks the flags that say which deployment a command
// talks to; help lists them apart.
const DeploymentAnnotation = "daybook_deployment"

func init() {
	cobra.AddTemplateFunc("flagUsages", func(fs *pflag.FlagSet, deployment bool) string {
		sub := pflag.NewFlagSet("", pflag.ContinueOnError)
		fs.VisitAll(func(f *pflag.Flag) {
			if _, ok := f.Annotations[DeploymentAnnotation]; ok == deployment {
				sub.AddFlag(f)
			}
		})
		return sub.FlagUsages()
	})
	cobra.AddTemplateFunc("hasDeploymentFlags", func(fs *pflag.FlagSet) bool {
		return fs.Lookup("stack") != nil
	})
}

// UsageError is a wrong command line: exit 2, with the command's usage line.
type UsageError struct {
	cmd *cobra.Command
	err error
}

func (e *UsageError) Error() string { return e.err.Error() }
func (e *UsageError) Unwrap() error { return e.err }

// Usage makes err a usage error of c.
func Usage(c *cobra.Command, err error) error { return &UsageError{cmd: c, err: err} }

// Usagef is a usage error of c with a formatted message.
func Usagef(c *cobra.Command, format string, args ...any) error {
	return &UsageError{cmd: c, err: fmt.Errorf(format, args...)}
}

// Root is a program's root command, the conventions set: its version, help
// and usage on stdout, errors left to Execute, flag errors usage errors.
// Add the subcommands, then call Finish.
func Root(name, short, long string, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           name,
		Short:         short,
		Long:          long,
		Version:       VersionString(stamped, debug.ReadBuildInfo),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE:          GroupRun,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate(name + " {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return Usage(c, err) })
	root.SetUsageTemplate(usageTemplate)
	return root
}

// Finish adds the version, completion and help commands to root and makes
// every command refuse arguments it does not take.
func Finish(root *cobra.Command, stdout io.Writer) {
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the module version and the VCS revision (same as --version)",
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(stdout, "%s %s\n", c.Root().Name(), c.Root().Version)
			return err
		},
	})
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	StrictArgs(root)
}

// Execute runs one command line and returns the process exit code. Help and
// command output go to stdout; errors go to stderr, after the program's
// name.
func Execute(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	cmd, err := execute(ctx, root, args)
	if err == nil {
		return ExitOK
	}
	name := root.Name()
	var ue *UsageError
	switch {
	case errors.As(err, &ue):
		c := ue.cmd
		if c == nil {
			c = cmd
		}
		fmt.Fprintf(stderr, "%s: %v\nusage: %s\nrun '%s --help' for more\n", name, ue.err, UsageLine(c), c.CommandPath())
		return ExitUsage
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		fmt.Fprintf(stderr, "%s: interrupted\n", name)
		return ExitInterrupted
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return ExitError
}

func execute(ctx context.Context, root *cobra.Command, args []string) (*cobra.Command, error) {
	if args == nil {
		args = []string{} // nil makes cobra read os.Args
	}
	root.SetArgs(args)
	return root.ExecuteContextC(ctx)
}

// Group returns a command that only holds subcommands.
func Group(use, short string, children ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs, RunE: GroupRun}
	c.AddCommand(children...)
	return c
}

// GroupRun refuses a group called without, or with an unknown, subcommand.
func GroupRun(c *cobra.Command, args []string) error {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	valid := strings.Join(names, ", ")
	c.SuggestionsMinimumDistance = 2
	if len(args) == 0 {
		return Usagef(c, "%s needs a command: %s", c.CommandPath(), valid)
	}
	msg := fmt.Sprintf("unknown command %q for %s; valid: %s", args[0], c.CommandPath(), valid)
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return Usage(c, errors.New(msg))
}

// UsageLine is the command's synopsis: "daybook account COMMAND" for a
// group.
func UsageLine(c *cobra.Command) string {
	if c.HasAvailableSubCommands() {
		return c.CommandPath() + " COMMAND"
	}
	return c.UseLine()
}

// usageTemplate is cobra's, with one synopsis line (groups take a COMMAND)
// and the deployment flags listed apart.
const usageTemplate = `Usage:{{if .HasAvailableSubCommands}}
  {{.CommandPath}} COMMAND{{else}}
  {{.UseLine}}{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}{{if eq (len .Groups) 0}}

Commands:{{range $cmds}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{else}}{{range $group := .Groups}}

{{.Title}}{{range $cmds}}{{if (and (eq .GroupID $group.ID) (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if not .AllChildCommandsHaveGroup}}

Other commands:{{range $cmds}}{{if (and (eq .GroupID "") (or .IsAvailableCommand (eq .Name "help")))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{flagUsages .LocalFlags false | trimTrailingWhitespaces}}{{if hasDeploymentFlags .LocalFlags}}

Where it points (default: .local/env.json when it exists and LEDGER_TABLE is unset, else the environment):
{{flagUsages .LocalFlags true | trimTrailingWhitespaces}}{{end}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} COMMAND --help" for more information about a command.{{end}}
`

// StrictArgs makes every command refuse arguments it does not take, and
// turns argument errors into usage errors.
func StrictArgs(c *cobra.Command) {
	if c.Name() != "help" {
		check := c.Args
		if check == nil {
			check = noArgs
		}
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return Usage(cmd, err)
			}
			return nil
		}
	}
	for _, s := range c.Commands() {
		StrictArgs(s)
	}
}

func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q: this command takes flags only", args[0])
	}
	return nil
}

// ExactArgs wants n arguments, named in the error.
func ExactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return fmt.Errorf("%s is required", strings.Join(names[len(args):], " and "))
		case len(args) > len(names):
			return fmt.Errorf("unexpected argument %q: this command takes %s", args[len(names)], strings.Join(names, " "))
		}
		return nil
	}
}

// stamped is the version the build stamped into the binary, set only by
// the linker (the Makefile's builds and release: -ldflags "-X
// github.com/daybook-dev/daybook/shared/cli.stamped=$(VERSION)", from git
// describe or the VERSION file): a build from a checkout with
// -buildvcs=false (CI) records no VCS revision, and a module built from a
// checkout has no version of its own.
var stamped string

// VersionString is the version the build stamped (stamp), else the module
// version and the VCS revision the binary was built from, when the build
// recorded them (buildInfo is debug.ReadBuildInfo).
func VersionString(stamp string, buildInfo func() (*debug.BuildInfo, bool)) string {
	if stamp != "" {
		return stamp
	}
	bi, ok := buildInfo()
	if !ok || bi == nil {
		return "(unknown: built without module information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return v + " (no VCS revision recorded)"
	}
	if modified {
		rev += "+dirty"
	}
	if at != "" {
		return fmt.Sprintf("%s (revision %s, %s)", v, rev, at)
	}
	return fmt.Sprintf("%s (revision %s)", v, rev)
}
