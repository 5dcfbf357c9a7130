package main

import (
	"context"
	"io"
)

// run is execute for tests: the error instead of an exit code, stderr
// discarded.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	return runWith(newApp(stdout, io.Discard), ctx, args)
}

// runWith runs one command line on a, as execute does, and returns its
// error.
func runWith(a *app, ctx context.Context, args []string) error {
	root := a.rootCommand()
	if args == nil {
		args = []string{} // nil makes cobra read os.Args
	}
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}
