package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"
)

// ExitForced is the exit code of a stop forced by a second signal: work in
// flight was cut off without the drain (a file's River job is worked again
// after a restart, as after a crash).
const ExitForced = 3

// repeatWindow is how soon after the first a signal counts as the same
// stop: `timeout`, a supervisor or a terminal may send SIGTERM to the
// process and to its group, two deliveries microseconds apart that Go does
// not always merge, and that must not cut work off.
const repeatWindow = time.Second

// StopOnSignal returns a context that ends at the first signal from sigs,
// which starts the graceful stop (serve stops accepting, lets requests
// finish and drains the workers for up to DOCJOBS_SHUTDOWN_TIMEOUT). A second signal does not
// wait for that: it logs and calls exit(ExitForced), as an operator's
// second Ctrl-C means; one within repeatWindow of the first is the same
// stop. stop ends the watch; signals after it are ignored.
func StopOnSignal(parent context.Context, sigs <-chan os.Signal, stderr io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	return onSignals(parent, sigs, func(sig os.Signal) {
		log.Info("stopping: signal received; a second signal stops at once without waiting for work in flight", "signal", sig.String())
	}, func(sig os.Signal) {
		log.Warn("second signal: stopping at once; work in flight is cut off", "signal", sig.String(), "exit_code", ExitForced)
		exit(ExitForced)
	})
}

// InterruptOnSignal is StopOnSignal for the client and admin commands:
// the first signal ends the context, without a log line (the command says
// what it stopped: submit that the job goes on); a second, more than
// repeatWindow later, calls exit(ExitInterrupted) at once, cutting short
// what the command does after an interrupt (submit's removal of the
// uploads of a job it did not create). ExitForced is the server's: for
// submit --wait, 3 means that the job FAILED. stop ends the watch.
func InterruptOnSignal(parent context.Context, sigs <-chan os.Signal, stderr io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	return onSignals(parent, sigs, func(os.Signal) {}, func(os.Signal) {
		fmt.Fprintln(stderr, "docjobs: interrupted again: stopping at once")
		exit(ExitInterrupted)
	})
}

// onSignals ends the returned context at the first signal, after first;
// calls second at the next signal more than repeatWindow later (an
// earlier one is the same stop, delivered to the process group too).
func onSignals(parent context.Context, sigs <-chan os.Signal, first, second func(os.Signal)) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		var at time.Time
		select {
		case sig := <-sigs:
			at = time.Now()
			first(sig)
			cancel()
		case <-done:
			return
		}
		for {
			select {
			case sig := <-sigs:
				if time.Since(at) < repeatWindow {
					continue
				}
				second(sig)
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		close(done)
		cancel()
	}
}
