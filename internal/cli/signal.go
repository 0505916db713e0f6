package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
)

// ExitForced is the exit code of a stop forced by a second signal: work in
// flight was cut off without the drain (a file's River job is worked again
// after a restart, as after a crash).
const ExitForced = 3

// StopOnSignal returns a context that ends at the first signal from sigs,
// which starts the graceful stop (serve stops accepting, lets requests
// finish and drains the workers for up to 30 s). A second signal does not
// wait for that: it logs and calls exit(ExitForced), as an operator's
// second Ctrl-C means. stop ends the watch; signals after it are ignored.
func StopOnSignal(parent context.Context, sigs <-chan os.Signal, stderr io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	go func() {
		select {
		case sig := <-sigs:
			log.Info("stopping: signal received; a second signal stops at once without waiting for work in flight", "signal", sig.String())
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			log.Warn("second signal: stopping at once; work in flight is cut off", "signal", sig.String(), "exit_code", ExitForced)
			exit(ExitForced)
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		cancel()
	}
}
