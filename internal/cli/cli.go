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
	"regexp"
	"strings"
	"time"

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
// a second exits with ExitInterrupted at once (InterruptOnSignal). The
// server commands run with more Go processors than cores (widenProcs).
func Main(args []string, sigs <-chan os.Signal, stdout, stderr io.Writer, getenv func(string) string, exit func(int)) int {
	var ctx context.Context
	var stop func()
	if isServerCommand(args) {
		widenProcs(getenv)
		ctx, stop = StopOnSignal(context.Background(), sigs, stderr, exit)
	} else {
		ctx, stop = InterruptOnSignal(context.Background(), sigs, stderr, exit)
	}
	defer stop()
	return runIn(ctx, &environment{stdin: os.Stdin, stdout: stdout, stderr: stderr, getenv: getenv, exit: exit}, args)
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
		Use:   "docjobs",
		Short: "Document recognition and extraction jobs",
		Long: `docjobs is a document recognition and extraction job service and its
command-line client, in one binary.

The service: serve runs it; migrate, apikey and account administer its
database (give them the server's DOCJOBS_DATA_DIR or DOCJOBS_DATABASE_URL).
serve --help lists the configuration variables.

The client: submit, jobs, get and files talk to a running service over its
REST API (DOCJOBS_URL, default http://localhost:8080, and DOCJOBS_API_KEY).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(),
	}
	root.SetVersionTemplate("docjobs {{.Version}}\n")
	root.AddCommand(serveCommand(env), migrateCommand(env), apikeyCommand(env), accountCommand(env), benchCommand(env),
		submitCommand(env), jobsCommand(env), getCommand(env), filesCommand(env), versionCommand(env))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %w", errUsage, err) })
	// Made now rather than at Execute, so that closeGroups sees them.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	closeGroups(root)
	return root
}

// closeGroups makes every command of the tree that only groups others
// (the root, apikey, account, completion) refuse an unknown subcommand,
// and help refuse an unknown topic, as usage errors; see groupArgs.
func closeGroups(cmd *cobra.Command) {
	if cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.Args, cmd.RunE = groupArgs, groupRun
	}
	for _, c := range cmd.Commands() {
		closeGroups(c)
	}
	if cmd.Name() == "help" && cmd.HasParent() {
		// RunE wins over the Run cobra gave it, which prints "Unknown
		// help topic" and succeeds.
		cmd.RunE = func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			if len(rest) > 0 && target.HasSubCommands() {
				return groupArgs(target, rest)
			}
			return target.Help()
		}
	}
}

// Run executes the command line args and returns the process exit code.
// ctx ending is an interrupt: a client or admin command it stops exits
// with ExitInterrupted.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return runWithInput(ctx, args, os.Stdin, stdout, stderr, getenv)
}

// runWithInput is Run reading stdin from in (apikey revoke --key-stdin).
func runWithInput(ctx context.Context, args []string, in io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return runIn(ctx, &environment{stdin: in, stdout: stdout, stderr: stderr, getenv: getenv, exit: os.Exit}, args)
}

// runIn is Run in env.
func runIn(ctx context.Context, env *environment, args []string) int {
	in, stdout, stderr := env.stdin, env.stdout, env.stderr
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
	// Every message printed last passes shownLines: it may quote the
	// service's text (a job's error, a proxy's page), which must not drive
	// the terminal.
	var exit *exitError
	switch {
	case errors.As(err, &exit):
		fmt.Fprintln(stderr, "docjobs:", shownLines(redactKeys(err.Error())))
		return exit.code
	case ctx.Err() != nil && errors.Is(err, context.Canceled) && (cmd == nil || !serverCommands[cmd.Name()]):
		// Ctrl-C during an upload, a list or a get: 128 + SIGINT, as the
		// wait of submit reports it, not a failure of the command.
		fmt.Fprintln(stderr, "docjobs: interrupted:", shownLines(redactKeys(err.Error())))
		return ExitInterrupted
	}
	fmt.Fprintln(stderr, "docjobs:", shownLines(redactKeys(err.Error())))
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

// groupArgs and groupRun make a command that only groups others (the
// root, apikey, account) refuse an argument naming none of them as a
// usage error. Cobra would print the group's help for it and succeed, so
// a mistyped `apikey delete ID` exited 0 having revoked nothing. Called
// bare, the group prints its help, as before.
func groupArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	msg := fmt.Sprintf("unknown command %s for %q; its commands: %s", shownArg(args[0]), cmd.CommandPath(), strings.Join(names, ", "))
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return fmt.Errorf("%w: %s", errUsage, msg)
}

func groupRun(cmd *cobra.Command, _ []string) error { return cmd.Help() }

// shownArg quotes a command-line argument for a message, unless it could
// be an API key pasted in the wrong place: a key in a message ends up in
// CI logs and terminal scrollback.
func shownArg(arg string) string {
	if looksLikeKey(arg) {
		return "(an API key, not shown)"
	}
	return fmt.Sprintf("%q", arg)
}

// looksLikeKey reports whether s starts like a key apikey create makes
// (dj_, in any case: F3 of the audit saw it lowercased).
func looksLikeKey(s string) bool {
	return len(s) >= len("dj_") && strings.EqualFold(s[:len("dj_")], "dj_")
}

// keyWords finds what looks like a generated key inside a message.
var keyWords = regexp.MustCompile(`(?i)\bdj_[A-Za-z0-9_-]+`)

// redactKeys hides the generated keys a message carries. Messages cobra
// and pflag make quote the arguments (`--key-stdin=dj_…` is an invalid
// argument of a boolean flag, `docjobs dj_…` an unknown command); every
// message docjobs prints passes here.
func redactKeys(msg string) string {
	return keyWords.ReplaceAllString(msg, "dj_…[hidden key]")
}

// environment is what every command reads: the process streams and env.
type environment struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// exit ends the process at once (os.Exit; tests record it), for what
	// must not wait for a graceful stop: a serve whose node id was taken.
	exit func(int)
	// storageCheckEvery is how often serve checks that its database still
	// owns the storage; zero is worker.StorageCheckEvery (tests shorten it).
	storageCheckEvery time.Duration
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

// adminLogger is the admin commands' logger: WARN unless
// DOCJOBS_LOG_LEVEL asks for more, so that the line naming the database,
// which the user must read, is not buried under thirty lines of
// migrations (audit-readme F10); withStore says in one line what it
// migrated.
func (e *environment) adminLogger(cfg config.Config) *slog.Logger {
	if e.getenv("DOCJOBS_LOG_LEVEL") == "" {
		cfg.LogLevel = "warn"
	}
	return e.logger(cfg)
}

func (e *environment) logger(cfg config.Config) *slog.Logger {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	return slog.New(slog.NewJSONHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}
