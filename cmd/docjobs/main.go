// Command docjobs is the document job service and its command-line client.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/docjobs/docjobs/internal/cli"
)

func main() {
	// Registered for the whole run: what a signal does depends on the
	// command (cli.Main): serve drains, a client command stops at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	os.Exit(cli.Main(os.Args[1:], sigs, os.Stdout, os.Stderr, os.Getenv, os.Exit))
}
