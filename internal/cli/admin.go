package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// withStore runs fn with the configured store open (and migrated), then
// names on stderr the database it used. The default DOCJOBS_DATA_DIR is
// ./data of the working directory, and opening a SQLite database creates
// it: run from elsewhere, an admin command would otherwise make a key in a
// new database the server never reads, and say nothing.
func (e *environment) withStore(ctx context.Context, fn func(store.Store) error) error {
	cfg, err := e.config(nil)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	created := false
	if path, ok := cfg.SQLitePath(); ok {
		_, err := os.Stat(path)
		created = errors.Is(err, fs.ErrNotExist)
	}
	st, err := openStore(ctx, cfg, e.logger(cfg))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := fn(st); err != nil {
		return err
	}
	if created {
		fmt.Fprintf(e.stderr, "docjobs: database %s, created by this command: a server reads it only with the same DOCJOBS_DATA_DIR or DOCJOBS_DATABASE_URL\n", cfg.Database())
	} else {
		fmt.Fprintf(e.stderr, "docjobs: database %s\n", cfg.Database())
	}
	return nil
}

func migrateCommand(env *environment) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations (serve also does this at start)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return env.withStore(cmd.Context(), func(store.Store) error {
				_, err := fmt.Fprintln(env.stdout, "migrations applied")
				return err
			})
		},
	}
}

func apikeyCommand(env *environment) *cobra.Command {
	cmd := &cobra.Command{Use: "apikey", Short: "Manage API keys"}
	var account string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API key for an account; prints it once, stores only its hash",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if account == "" {
				return fmt.Errorf("%w: --account is required", errUsage)
			}
			if err := checkAccountName(account); err != nil {
				return err
			}
			return env.withStore(cmd.Context(), func(st store.Store) error {
				// Printed before it is stored: a key stored but not printed
				// (stdout full or closed) would open the account for nobody,
				// and only SQL removes a stored key.
				key := auth.NewKey()
				if _, err := fmt.Fprintln(env.stdout, key); err != nil {
					return fmt.Errorf("write the key: %w; nothing was stored", err)
				}
				if err := st.PutAPIKey(cmd.Context(), account, auth.HashKey(key)); err != nil {
					return fmt.Errorf("store the key: %w; the key printed does not open the account", err)
				}
				return nil
			})
		},
	}
	create.Flags().StringVar(&account, "account", "", "account the key belongs to")
	cmd.AddCommand(create)
	return cmd
}

func accountCommand(env *environment) *cobra.Command {
	cmd := &cobra.Command{Use: "account", Short: "Manage account settings"}
	var account, mode string
	set := &cobra.Command{
		Use:   "set",
		Short: "Set an account's default extraction mode",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			full := "EXTRACTION_MODE_" + strings.ToUpper(strings.TrimPrefix(mode, "EXTRACTION_MODE_"))
			if account == "" || (full != job.ExtractionHybrid && full != job.ExtractionOCRAlways) {
				return fmt.Errorf("%w: want --account NAME --extraction-mode HYBRID|OCR_ALWAYS", errUsage)
			}
			if err := checkAccountName(account); err != nil {
				return err
			}
			return env.withStore(cmd.Context(), func(st store.Store) error {
				if err := st.SetAccountExtractionMode(cmd.Context(), account, full); err != nil {
					return err
				}
				_, err := fmt.Fprintf(env.stdout, "account %s: default extraction mode %s\n", account, full)
				return err
			})
		},
	}
	set.Flags().StringVar(&account, "account", "", "account name")
	set.Flags().StringVar(&mode, "extraction-mode", "", "HYBRID or OCR_ALWAYS")
	cmd.AddCommand(set)
	return cmd
}

// maxAccountName bounds an account name: it is stored with every job and
// key, and shown in answers and logs.
const maxAccountName = 255

// checkAccountName refuses the account names that would silently make
// another account: "acme " is not "acme", and a pasted line break or a
// tab is invisible in a terminal. The name is refused rather than
// trimmed, so that a script's mistake shows.
func checkAccountName(name string) error {
	switch {
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%w: --account %q: white space around the name (did you mean %q?)", errUsage, name, strings.TrimSpace(name))
	case strings.TrimSpace(name) == "":
		return fmt.Errorf("%w: --account is required", errUsage)
	case strings.IndexFunc(name, isControl) >= 0:
		return fmt.Errorf("%w: --account %q: a control character (a line break, a tab) in the name", errUsage, name)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: --account: the name is not UTF-8", errUsage)
	case len(name) > maxAccountName:
		return fmt.Errorf("%w: --account: the name has %d bytes, at most %d", errUsage, len(name), maxAccountName)
	}
	return nil
}
