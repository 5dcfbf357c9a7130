package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/daybook-dev/daybook/shared/cli"
	"github.com/daybook-dev/daybook/shared/devkit/tracetally"
)

// traceCommand sums up a Go execution trace (shared/devkit/tracetally).
func (a *app) traceCommand() *cobra.Command {
	groups, waits := 8, 3
	c := &cobra.Command{
		Use:   "trace FILE",
		Short: "Sum up a Go execution trace: how long each goroutine ran, ran alone, and waited where",
		Long: `Sum up a Go execution trace (runtime/trace; the export benchmark writes one per child with
DAYBOOK_BENCH_TRACE=dir): the time with no goroutine, one, two... running at once, and for the
goroutines grouped by the function they were started with, how long they ran and where they
waited longest (the reason and the innermost frame outside the runtime and sync). A goroutine
in a system call is not counted as running. What a CPU profile cannot say: who waited for whom
while a CPU stood idle.`,
		Args: cobra.ExactArgs(1),
	}
	c.Flags().IntVar(&groups, "groups", groups, "goroutine groups to print, the longest running first")
	c.Flags().IntVar(&waits, "waits", waits, "waits to print per group, the longest first")
	c.RunE = func(c *cobra.Command, args []string) error {
		if groups < 1 || waits < 0 {
			return cli.Usagef(c, "--groups %d, --waits %d: want at least 1 group and 0 or more waits", groups, waits)
		}
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		t, err := tracetally.Read(f)
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		return t.Write(a.stdout, groups, waits)
	}
	return c
}
