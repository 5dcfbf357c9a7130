// Command daybook is the operator CLI: accounts, the ledger (status,
// history, requeue, re-export), the dead-letter queue, delivered partitions
// (verify, load SQL) and the web console. It links no development tooling:
// the local stack and the demo are cmd/daybook-dev's. `daybook --help`
// lists the commands. This file only wires.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/daybook-dev/daybook/shared/dataset"
)

func main() {
	cat, err := dataset.FromEnv(os.LookupEnv) // DAYBOOK_CATALOG, or the shipped example
	if err != nil {
		fmt.Fprintf(os.Stderr, "daybook: %v\n", err)
		os.Exit(1)
	}
	dataset.Use(cat)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := newApp(os.Stdout, os.Stderr).execute(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
