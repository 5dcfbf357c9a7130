// Command daybook-dev runs daybook on this machine: the local stack (moto
// with template.yaml deployed, the functions under the Lambda runtime
// emulator) and the demo. It holds the development tooling the operator's
// CLI, cmd/daybook, does not link, and runs that CLI (from the directory of
// the host builds) for what an operator would do. `daybook-dev --help`
// lists the commands. This file only wires.
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
