// Command daybook is the operator CLI: accounts, the ledger (status,
// history, retry, re-export), the dead-letter queue, delivered partitions
// (verify, load SQL) and the web console. It links no development tooling:
// the local stack and the demo are cmd/daybook-dev's. `daybook --help`
// lists the commands. This file only wires.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/daybook-dev/daybook/shared/dataset"
)

func main() {
	a := newApp(os.Stdout, os.Stderr)
	cat, err := dataset.FromEnv(os.LookupEnv) // DAYBOOK_CATALOG, or the shipped example
	if err != nil {
		// Refused by every command that reads the catalog; catalog init,
		// show, check and diff read their own.
		a.catalogErr = err
	} else {
		a.catalog = cat
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := a.execute(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
