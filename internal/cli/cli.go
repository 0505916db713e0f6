// Package cli is the one place docjobs is wired together: configuration,
// the serve, migrate, apikey and account commands, the REST client
// commands submit, jobs and get, signals and exit codes.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/docjobs/docjobs/internal/config"
)

// Exit codes. The client's `submit --wait` adds the job's outcome, so that
// a script can tell a job that failed from a command that did.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
	// ExitJobFailed and ExitJobCancelled: submit --wait saw the job end
	// JOB_STATUS_FAILED or JOB_STATUS_CANCELLED (its result is printed).
	ExitJobFailed    = 3
	ExitJobCancelled = 4
	// ExitRowsFailed: submit --wait saw the job end JOB_STATUS_COMPLETE,
	// but some of its files or model rows FAILED (a wrong model key, a
	// file the provider refused): a job is COMPLETE when any file could be
	// recognized, so its status alone does not say that all went well.
	ExitRowsFailed = 5
	// ExitInterrupted: a client or admin command was interrupted (Ctrl-C,
	// SIGTERM); a job being waited for goes on. 128 + SIGINT, as shells
	// report it.
	ExitInterrupted = 130
)

// exitError ends the command with its own exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

var errUsage = errors.New("usage")

// Main runs the command line args as the docjobs binary does, with sigs
// (SIGINT, SIGTERM) stopping it: the server commands, serve and bench,
// stop gracefully and a second signal forces them (StopOnSignal); the
// client and admin commands stop what they do at the first, quietly, and
// a second exits with ExitInterrupted at once (InterruptOnSignal).
func Main(args []string, sigs <-chan os.Signal, stdout, stderr io.Writer, getenv func(string) string, exit func(int)) int {
	var ctx context.Context
	var stop func()
	if isServerCommand(args) {
		ctx, stop = StopOnSignal(context.Background(), sigs, stderr, exit)
	} else {
		ctx, stop = InterruptOnSignal(context.Background(), sigs, stderr, exit)
	}
	defer stop()
	return Run(ctx, args, stdout, stderr, getenv)
}

// isServerCommand reports whether args run serve or bench, the commands
// that serve requests and drain work on a signal.
func isServerCommand(args []string) bool {
	cmd, _, err := newRoot(&environment{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}).Find(args)
	return err == nil && serverCommands[cmd.Name()]
}

var serverCommands = map[string]bool{"serve": true, "bench": true}

func newRoot(env *environment) *cobra.Command {
	root := &cobra.Command{
		Use:           "docjobs",
		Short:         "Document recognition and extraction jobs",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serveCommand(env), migrateCommand(env), apikeyCommand(env), accountCommand(env), benchCommand(env),
		submitCommand(env), jobsCommand(env), getCommand(env))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	return root
}

// Run executes the command line args and returns the process exit code.
// ctx ending is an interrupt: a client or admin command it stops exits
// with ExitInterrupted.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return runWithInput(ctx, args, os.Stdin, stdout, stderr, getenv)
}

// runWithInput is Run reading stdin from in (apikey revoke --key-stdin).
func runWithInput(ctx context.Context, args []string, in io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	env := &environment{stdin: in, stdout: stdout, stderr: stderr, getenv: getenv}
	root := newRoot(env)
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetContext(ctx)

	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	var exit *exitError
	switch {
	case errors.As(err, &exit):
		fmt.Fprintln(stderr, "docjobs:", err)
		return exit.code
	case ctx.Err() != nil && errors.Is(err, context.Canceled) && (cmd == nil || !serverCommands[cmd.Name()]):
		// Ctrl-C during an upload, a list or a get: 128 + SIGINT, as the
		// wait of submit reports it, not a failure of the command.
		fmt.Fprintln(stderr, "docjobs: interrupted:", err)
		return ExitInterrupted
	}
	fmt.Fprintln(stderr, "docjobs:", err)
	if errors.Is(err, errUsage) || strings.HasPrefix(err.Error(), "unknown command") {
		return ExitUsage
	}
	return ExitError
}

// usageArgs makes a wrong number of arguments a usage error, as an
// unknown flag is.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		return nil
	}
}

// environment is what every command reads: the process streams and env.
type environment struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// config loads the configuration, letting flags that were set win over env.
func (e *environment) config(overrides map[string]string) (config.Config, error) {
	return config.Load(func(name string) string {
		if v, ok := overrides[name]; ok && v != "" {
			return v
		}
		return e.getenv(name)
	})
}

func (e *environment) logger(cfg config.Config) *slog.Logger {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	return slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}
