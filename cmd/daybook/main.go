// Command daybook is the operator and local-development CLI: accounts, the
// ledger (status, history, requeue, re-export), the dead-letter queue,
// delivered partitions (verify, load SQL), the local stack and the demo.
// `daybook --help` lists the commands. This file only wires.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := newApp(os.Stdout, os.Stderr).execute(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
