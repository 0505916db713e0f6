// Package cli is the one place docjobs is wired together: configuration,
// the serve, migrate, apikey and account commands, signals and exit codes.
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

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

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
	root.AddCommand(serveCommand(env), migrateCommand(env), apikeyCommand(env), accountCommand(env), benchCommand(env))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })

	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, "docjobs:", err)
		if errors.Is(err, errUsage) || strings.HasPrefix(err.Error(), "unknown command") {
			return ExitUsage
		}
		return ExitError
	}
	return ExitOK
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
