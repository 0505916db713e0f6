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
// finish and drains the workers for up to 30 s). A second signal does not
// wait for that: it logs and calls exit(ExitForced), as an operator's
// second Ctrl-C means; one within repeatWindow of the first is the same stop. stop ends the watch; signals after it are ignored.
func StopOnSignal(parent context.Context, sigs <-chan os.Signal, stderr io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	go func() {
		var first time.Time
		select {
		case sig := <-sigs:
			first = time.Now()
			log.Info("stopping: signal received; a second signal stops at once without waiting for work in flight", "signal", sig.String())
			cancel()
		case <-done:
			return
		}
		for {
			select {
			case sig := <-sigs:
				if time.Since(first) < repeatWindow {
					continue // the same stop, delivered to the process group too
				}
				log.Warn("second signal: stopping at once; work in flight is cut off", "signal", sig.String(), "exit_code", ExitForced)
				exit(ExitForced)
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

// InterruptOnSignal is StopOnSignal for the client and admin commands:
// the first signal ends the context, without a log line (the command says
// what it stopped: submit that the job goes on); a second, more than
// repeatWindow later, calls exit(ExitInterrupted) at once, cutting short
// what the command does after an interrupt (submit's removal of the
// uploads of a job it did not create). ExitForced is the server's: for
// submit --wait, 3 means that the job FAILED. stop ends the watch.
func InterruptOnSignal(parent context.Context, sigs <-chan os.Signal, stderr io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		var first time.Time
		select {
		case <-sigs:
			first = time.Now()
			cancel()
		case <-done:
			return
		}
		for {
			select {
			case <-sigs:
				if time.Since(first) < repeatWindow {
					continue // the same interrupt, delivered to the process group too
				}
				fmt.Fprintln(stderr, "docjobs: interrupted again: stopping at once")
				exit(ExitInterrupted)
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
