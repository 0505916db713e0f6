// Command docjobs is the document job service and its command-line client.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/docjobs/docjobs/internal/cli"
)

func main() {
	// Registered for the whole run: the first signal starts the graceful
	// stop, a second forces it (cli.StopOnSignal).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := cli.StopOnSignal(context.Background(), sigs, os.Stderr, os.Exit)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
