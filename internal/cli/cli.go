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
	// ExitInterrupted: the wait was interrupted (Ctrl-C, SIGTERM); the job
	// goes on. 128 + SIGINT, as shells report it.
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

// Run executes the command line args and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	root := &cobra.Command{
		Use:           "docjobs",
		Short:         "Document recognition and extraction jobs",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetContext(ctx)
	env := &environment{stdout: stdout, stderr: stderr, getenv: getenv}
	root.AddCommand(serveCommand(env), migrateCommand(env), apikeyCommand(env), accountCommand(env), benchCommand(env),
		submitCommand(env), jobsCommand(env), getCommand(env))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })

	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, "docjobs:", err)
		var exit *exitError
		if errors.As(err, &exit) {
			return exit.code
		}
		if errors.Is(err, errUsage) || strings.HasPrefix(err.Error(), "unknown command") {
			return ExitUsage
		}
		return ExitError
	}
	return ExitOK
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
