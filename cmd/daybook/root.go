package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// deploymentAnnotation marks the flags that say which deployment a command
// talks to; help lists them apart.
const deploymentAnnotation = "daybook_deployment"

func init() {
	cobra.AddTemplateFunc("flagUsages", func(fs *pflag.FlagSet, deployment bool) string {
		sub := pflag.NewFlagSet("", pflag.ContinueOnError)
		fs.VisitAll(func(f *pflag.Flag) {
			if _, ok := f.Annotations[deploymentAnnotation]; ok == deployment {
				sub.AddFlag(f)
			}
		})
		return sub.FlagUsages()
	})
	cobra.AddTemplateFunc("hasDeploymentFlags", func(fs *pflag.FlagSet) bool {
		return fs.Lookup("stack") != nil
	})
}

// rootCommand builds the command tree. Every command: help on stdout with
// exit 0 for -h/--help, extra arguments refused, flag and argument errors
// are usage errors (exit 2).
func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "daybook",
		Short: "Operate daybook: accounts, the export ledger, the dead-letter queue, and the local stack",
		Long: `daybook exports each account's data one day at a time into the account's own S3 bucket,
through a ledger of (account, dataset, day) partitions. This CLI registers accounts, shows the
ledger, asks for re-exports and backfills, checks delivered partitions, empties the dead-letter
queue, and runs the whole pipeline locally.

Where it points: --stack NAME [--region R] [--profile P] reads the deployed CloudFormation
stack's outputs; otherwise --env-file FILE, then .local/env.json (written by make local-up) when
LEDGER_TABLE is not set, then the environment (LEDGER_TABLE, JOBS_QUEUE_URL, ...). Each command
that talks to a deployment says which one on stderr.`,
		Version:       versionString(debug.ReadBuildInfo()),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE:          groupRun,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetVersionTemplate("daybook {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &usageError{cmd: c, err: err} })
	root.SetUsageTemplate(usageTemplate)
	root.AddGroup(
		&cobra.Group{ID: "ledger", Title: "The export ledger:"},
		&cobra.Group{ID: "accounts", Title: "Accounts:"},
		&cobra.Group{ID: "delivery", Title: "Delivered partitions:"},
		&cobra.Group{ID: "local", Title: "On this machine:"},
	)
	add := func(group string, cs ...*cobra.Command) {
		for _, c := range cs {
			c.GroupID = group
			root.AddCommand(c)
		}
	}
	add("ledger", a.statusCommand(), a.historyCommand(), a.requeueCommand(), a.reexportCommand(), a.reseedCommand(), a.dlqCommand(), a.consoleCommand())
	add("accounts", a.accountCommand())
	add("delivery", a.verifyCommand(), a.sqlCommand())
	add("local", a.localCommand(), a.demoCommand())
	root.AddCommand(a.versionCommand())
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	strictArgs(root)
	return root
}

// group returns a command that only holds subcommands.
func group(use, short string, children ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs, RunE: groupRun}
	c.AddCommand(children...)
	return c
}

// groupRun refuses a group called without, or with an unknown, subcommand.
func groupRun(c *cobra.Command, args []string) error {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	valid := strings.Join(names, ", ")
	c.SuggestionsMinimumDistance = 2
	if len(args) == 0 {
		return usagef(c, "%s needs a command: %s", c.CommandPath(), valid)
	}
	msg := fmt.Sprintf("unknown command %q for %s; valid: %s", args[0], c.CommandPath(), valid)
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return &usageError{cmd: c, err: fmt.Errorf("%s", msg)}
}

// usageLine is the command's synopsis: "daybook account COMMAND" for a
// group.
func usageLine(c *cobra.Command) string {
	if c.HasAvailableSubCommands() {
		return c.CommandPath() + " COMMAND"
	}
	return c.UseLine()
}

// usageTemplate is cobra's, with one synopsis line: groups take a COMMAND.
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

// strictArgs makes every command refuse arguments it does not take, and
// turns argument errors into usage errors.
func strictArgs(c *cobra.Command) {
	if c.Name() != "help" {
		check := c.Args
		if check == nil {
			check = noArgs
		}
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &usageError{cmd: cmd, err: err}
			}
			return nil
		}
	}
	for _, s := range c.Commands() {
		strictArgs(s)
	}
}

func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q: this command takes flags only", args[0])
	}
	return nil
}

// exactArgs wants n arguments, named in the error.
func exactArgs(names ...string) cobra.PositionalArgs {
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

// versionString is the module version and the VCS revision the binary was
// built from, when the build recorded them.
func versionString(bi *debug.BuildInfo, ok bool) string {
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

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version and the VCS revision (same as --version)",
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(a.stdout, "daybook %s\n", c.Root().Version)
			return err
		},
	}
}
