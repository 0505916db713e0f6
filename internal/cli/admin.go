package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/config"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// storeUse says whether an admin command may create or migrate the
// database it opens.
type storeUse int

const (
	// mayCreate: the command makes something (a key, an account), so a
	// new database is a database it can use, and it migrates one it has
	// just created.
	mayCreate storeUse = iota
	// mustExist: the command reads or deletes; in a new, empty database it
	// could only fail, and would leave that database behind for a later
	// serve from the same directory to adopt.
	mustExist
	// migrates: the command is migrate, the one that upgrades a database.
	migrates
)

// withStore runs fn with the configured store open, then names on stderr
// the database it used. The default DOCJOBS_DATA_DIR is ./data of the
// working directory, and opening a SQLite database creates it: run from
// elsewhere, an admin command would otherwise make a key in a new
// database the server never reads, and say nothing. With mustExist a
// missing SQLite database is refused before anything is created.
//
// Only migrate upgrades a database that exists: the others check its
// schema and refuse one behind this binary, writing nothing. A newer
// binary's apikey list migrated the database it read, and the older
// servers on it then refused it at their next start (audit-readme F2); an
// upgrade is a step of its own, taken after a backup. A database the
// command has just created, or one that holds no migration at all, is
// migrated by mayCreate: nothing can be running on it yet.
func (e *environment) withStore(cmd *cobra.Command, use storeUse, fn func(store.Store, config.Config) error) error {
	ctx := cmd.Context()
	flags := adminFlags(cmd)
	cfg, err := e.config(flags)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, fromFlag(err, flags))
	}
	created := false
	if path, ok := cfg.SQLitePath(); ok {
		_, err := os.Stat(path)
		created = errors.Is(err, fs.ErrNotExist)
		if created && use == mustExist {
			return fmt.Errorf("no database at %s, and this command makes none: set DOCJOBS_DATA_DIR (--data-dir) or DOCJOBS_DATABASE_URL to the server's", path)
		}
	}
	log := e.adminLogger(cfg)
	st, err := openStore(ctx, cfg, log, checkSchema)
	var behind *store.SchemaBehindError
	switch {
	case errors.As(err, &behind) && (use == migrates || use == mayCreate && behind.Empty()):
		st, err = openStore(ctx, cfg, log, migrateSchema)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "docjobs: %s\n", appliedMigrations(behind))
	case errors.As(err, &behind) && behind.Empty():
		return fmt.Errorf("database %s holds no docjobs tables, and this command makes none: set DOCJOBS_DATA_DIR (--data-dir) or DOCJOBS_DATABASE_URL to the server's", cfg.Database())
	case errors.As(err, &behind):
		return fmt.Errorf("database %s %s: run `docjobs migrate` first, after a backup (servers of the older release then refuse it), or run this command with the docjobs release its servers run; nothing was changed",
			cfg.Database(), schemaGap(behind))
	case err != nil:
		return err
	case use == migrates:
		fmt.Fprintln(e.stderr, "docjobs: no migration to apply")
	}
	defer st.Close()
	if err := fn(st, cfg); err != nil {
		if created {
			// Said on failure too: the database stays, and a serve started
			// from here would adopt it.
			fmt.Fprintf(e.stderr, "docjobs: database %s was created by this command\n", cfg.Database())
		}
		return err
	}
	if created {
		fmt.Fprintf(e.stderr, "docjobs: database %s, created by this command: a server reads it only with the same DOCJOBS_DATA_DIR or DOCJOBS_DATABASE_URL\n", cfg.Database())
	} else {
		fmt.Fprintf(e.stderr, "docjobs: database %s\n", cfg.Database())
	}
	return nil
}

// adminFlags are the variables the admin commands' flags set (--data-dir,
// as serve's), for environment.config and fromFlag.
func adminFlags(cmd *cobra.Command) map[string]string {
	flags := map[string]string{}
	if f := cmd.Flags().Lookup("data-dir"); f != nil {
		flags["DOCJOBS_DATA_DIR"] = f.Value.String()
	}
	return flags
}

// addDataDirFlag gives an admin command serve's --data-dir: a user who
// started serve --data-dir /srv/dj types the same here.
func addDataDirFlag(flags *pflag.FlagSet) {
	flags.String("data-dir", "", "the server's data directory (DOCJOBS_DATA_DIR; default ./data)")
}

// schemaGap says how far a database is behind this binary.
func schemaGap(b *store.SchemaBehindError) string {
	var parts []string
	if b.Applied < b.Known {
		parts = append(parts, fmt.Sprintf("is at migration %d, this docjobs knows %d", b.Applied, b.Known))
	}
	if b.RiverApplied < b.RiverKnown {
		parts = append(parts, fmt.Sprintf("is at River's migration %d, this docjobs knows %d", b.RiverApplied, b.RiverKnown))
	}
	if len(parts) == 0 { // a migration missing below the highest applied
		parts = append(parts, "lacks migrations this docjobs has")
	}
	return strings.Join(parts, " and ")
}

// appliedMigrations is the one line an admin command writes after
// migrating (River's and migrator's own log lines stay below WARN).
func appliedMigrations(b *store.SchemaBehindError) string {
	var parts []string
	if b.Applied < b.Known {
		parts = append(parts, versionRange(b.Applied+1, b.Known))
	}
	if b.RiverApplied < b.RiverKnown {
		parts = append(parts, "River's "+versionRange(b.RiverApplied+1, b.RiverKnown))
	}
	if len(parts) == 0 {
		return "applied the missing migrations"
	}
	return "applied migrations " + strings.Join(parts, " and ")
}

func versionRange(from, to int) string {
	if from == to {
		return strconv.Itoa(from)
	}
	return fmt.Sprintf("%d–%d", from, to)
}

func migrateCommand(env *environment) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations (serve also does this at start)",
		Long: `Apply the database migrations this docjobs has and the database lacks (serve
also does this at start). It is the only admin command that upgrades an
existing database: servers of an older release refuse a database migrated by a
newer one, so take a backup first. The other admin commands refuse a database
behind this binary and say to run migrate.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return env.withStore(cmd, migrates, func(store.Store, config.Config) error {
				_, err := fmt.Fprintln(env.stdout, "migrations applied")
				return err
			})
		},
	}
	addDataDirFlag(cmd.Flags())
	return cmd
}

func apikeyCommand(env *environment) *cobra.Command {
	cmd := &cobra.Command{Use: "apikey", Short: "Manage API keys"} // closeGroups refuses unknown subcommands
	addDataDirFlag(cmd.PersistentFlags())
	cmd.AddCommand(apikeyCreateCommand(env), apikeyListCommand(env), apikeyRevokeCommand(env))
	return cmd
}

func apikeyCreateCommand(env *environment) *cobra.Command {
	var account string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API key for an account; prints it once, stores only its hash",
		Long: `Create an API key for an account (making the account if it is new). The key is
printed once, alone on stdout; stderr names its id, which apikey list shows
and apikey revoke takes. Only the key's SHA-256 hash is stored.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if account == "" {
				return fmt.Errorf("%w: --account is required", errUsage)
			}
			if err := checkAccountName(account); err != nil {
				return err
			}
			return env.withStore(cmd, mayCreate, func(st store.Store, _ config.Config) error {
				// Printed before it is stored: a key stored but not printed
				// (stdout full or closed) would open the account for nobody
				// until revoked, and nobody would know its id.
				key := auth.NewKey()
				if _, err := fmt.Fprintln(env.stdout, key); err != nil {
					return fmt.Errorf("write the key: %w; nothing was stored", err)
				}
				hash := auth.HashKey(key)
				if err := st.PutAPIKey(cmd.Context(), account, hash); err != nil {
					return fmt.Errorf("store the key: %w; the key printed does not open the account", err)
				}
				// On stderr: scripts read the key as stdout's only line.
				fmt.Fprintf(env.stderr, "docjobs: key %s for account %s (its id in apikey list and apikey revoke)\n", auth.KeyID(hash), account)
				return nil
			})
		},
	}
	create.Flags().StringVar(&account, "account", "", "account the key belongs to")
	return create
}

// listedKey is a key apikey list shows and apikey revoke finds: one stored,
// or one of DOCJOBS_API_KEYS (static), or both.
type listedKey struct {
	hash    []byte
	account string
	created time.Time // zero for a static key
	stored  bool
	static  bool
}

// knownKeys returns the stored keys of account ("" = every account) and
// the keys DOCJOBS_API_KEYS gives in this command's environment, by
// account, then creation (static keys last), then hash. A stored key the
// environment also lists is one entry, marked both.
func knownKeys(ctx context.Context, st store.Store, cfg config.Config, account string) ([]listedKey, error) {
	static, err := auth.ParseStatic(cfg.APIKeys)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	stored, err := st.ListAPIKeys(ctx, account)
	if err != nil {
		return nil, err
	}
	byHash := map[string]*listedKey{}
	keys := make([]*listedKey, 0, len(stored)+len(static))
	for _, k := range stored {
		lk := &listedKey{hash: k.Hash, account: k.AccountID, created: k.Created, stored: true}
		byHash[string(k.Hash)] = lk
		keys = append(keys, lk)
	}
	for key, acct := range static {
		if account != "" && acct != account {
			continue
		}
		hash := auth.HashKey(key)
		if lk, ok := byHash[string(hash)]; ok {
			// The environment's account is the one the server answers with.
			lk.static, lk.account = true, acct
			continue
		}
		keys = append(keys, &listedKey{hash: hash, account: acct, static: true})
	}
	slices.SortStableFunc(keys, func(a, b *listedKey) int {
		if c := strings.Compare(a.account, b.account); c != 0 {
			return c
		}
		if a.created.IsZero() != b.created.IsZero() {
			if a.created.IsZero() {
				return 1
			}
			return -1
		}
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return bytes.Compare(a.hash, b.hash)
	})
	out := make([]listedKey, len(keys))
	for i, k := range keys {
		out[i] = *k
	}
	return out, nil
}

func apikeyListCommand(env *environment) *cobra.Command {
	var account string
	list := &cobra.Command{
		Use:   "list",
		Short: "List API keys by account: id, creation time, where the key comes from; never the key",
		Long: `List the API keys: the stored ones, and those DOCJOBS_API_KEYS gives in this
command's environment (a server reads its own). One line per key, by account
then creation: the account, the key's id (the first 12 hex digits of its
SHA-256 hash; apikey revoke takes it), when it was created (RFC 3339, UTC;
"-" for DOCJOBS_API_KEYS) and where it comes from (database, DOCJOBS_API_KEYS).
Keys themselves are never shown: they are not stored.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if account != "" {
				if err := checkAccountName(account); err != nil {
					return err
				}
			}
			return env.withStore(cmd, mustExist, func(st store.Store, cfg config.Config) error {
				keys, err := knownKeys(cmd.Context(), st, cfg, account)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ACCOUNT\tID\tCREATED\tSOURCE")
				for _, k := range keys {
					created, source := "-", "DOCJOBS_API_KEYS"
					if k.stored {
						created = k.created.UTC().Format(time.RFC3339)
						source = "database"
						if k.static {
							source = "database,DOCJOBS_API_KEYS"
						}
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", oneLine(k.account), auth.KeyID(k.hash), created, source)
				}
				if err := tw.Flush(); err != nil {
					return fmt.Errorf("write the list: %w", err)
				}
				if len(keys) == 0 {
					fmt.Fprintln(env.stderr, "docjobs: no API keys")
				}
				return nil
			})
		},
	}
	list.Flags().StringVar(&account, "account", "", "list only this account's keys")
	return list
}

// minKeyIDDigits is the shortest id apikey revoke takes: a shorter one
// would too easily name one key while meaning another.
const minKeyIDDigits = 8

// maxKeyBytes bounds what --key-stdin reads: a key is 46 bytes.
const maxKeyBytes = 4096

func apikeyRevokeCommand(env *environment) *cobra.Command {
	var fromStdin bool
	revoke := &cobra.Command{
		Use:   "revoke ID | --key-stdin",
		Short: "Revoke a stored API key by its id (apikey list) or by the key itself on stdin",
		Long: `Revoke a stored API key: its hash is deleted, and every server reading this
database refuses the key (401) from its next request on. Requests and event
streams already under way go on to their end. The account keeps its jobs,
uploads and settings.

ID is the key's id as apikey list and apikey create show it, or at least its
first 8 hex digits; an id that starts the ids of two keys is refused. With
--key-stdin the key is read from stdin instead (never from the command line,
which shell history keeps); from a terminal it is asked for, and not shown
as it is typed.

A key of DOCJOBS_API_KEYS is not stored: every server start reads it again.
Revoking one is refused; remove its entry from DOCJOBS_API_KEYS and restart
the servers.`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var (
				want []byte // the exact hash (--key-stdin)
				id   string // or the id's digits
				arg  string // as given, which may be a key itself
			)
			switch {
			case fromStdin && len(args) == 1:
				return fmt.Errorf("%w: give ID or --key-stdin, not both", errUsage)
			case fromStdin:
				key, err := readKey(cmd.Context(), env.stdin, env.stderr)
				if err != nil {
					return err
				}
				want = auth.HashKey(key)
			case len(args) == 1:
				arg = strings.TrimSpace(args[0])
				id = strings.ToLower(arg)
				if err := checkKeyID(id); err != nil {
					return err
				}
			default:
				return fmt.Errorf("%w: give the key's ID (apikey list shows it) or --key-stdin", errUsage)
			}
			return env.withStore(cmd, mustExist, func(st store.Store, cfg config.Config) error {
				keys, err := knownKeys(cmd.Context(), st, cfg, "")
				if err != nil {
					return err
				}
				var found []listedKey
				argHash := auth.HashKey(arg)
				for _, k := range keys {
					if want == nil && bytes.Equal(k.hash, argHash) {
						// A key of DOCJOBS_API_KEYS may be all hex digits
						// (openssl rand -hex): given as the id, it is one.
						return fmt.Errorf("%w: %s; nothing was changed", errUsage, keyNotID)
					}
					if (want != nil && bytes.Equal(k.hash, want)) || (want == nil && strings.HasPrefix(hex.EncodeToString(k.hash), id)) {
						found = append(found, k)
					}
				}
				what := "key " + id
				switch {
				case want != nil:
					what = "the key given on stdin"
				case len(id) > maxShownIDDigits:
					// Not quoted: it matched no key's id, and so could be
					// a key of all hex digits of a server's own
					// DOCJOBS_API_KEYS.
					what = fmt.Sprintf("the key id given (%d digits)", len(id))
				}
				switch {
				case len(found) == 0:
					return fmt.Errorf("%s: no such key in database %s (apikey list shows its keys; a key of a server's own DOCJOBS_API_KEYS is revoked by removing it there)",
						what, cfg.Database())
				case len(found) > 1:
					return fmt.Errorf("%s: ambiguous, it starts the ids of %d keys (%s): give more of its digits",
						what, len(found), describeKeys(found))
				case found[0].static:
					// Deleting a stored copy would change nothing: the
					// server checks DOCJOBS_API_KEYS first, and reads it at
					// every start.
					return fmt.Errorf("%s opens account %s through DOCJOBS_API_KEYS, which every server start reads again: remove its entry from DOCJOBS_API_KEYS and restart the servers to revoke it; nothing was changed",
						what, found[0].account)
				}
				account, err := st.DeleteAPIKey(cmd.Context(), found[0].hash)
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("%s: revoked meanwhile by another command", what)
				}
				if err != nil {
					return fmt.Errorf("revoke %s: %w", what, err)
				}
				if _, err := fmt.Fprintf(env.stdout, "revoked key %s of account %s\n", auth.KeyID(found[0].hash), oneLine(account)); err != nil {
					return fmt.Errorf("write the outcome: %w (the key was revoked)", err)
				}
				left, err := knownKeys(cmd.Context(), st, cfg, account)
				if err == nil && len(left) == 0 {
					fmt.Fprintf(env.stderr, "docjobs: account %s has no key left: apikey create --account %s makes one; its jobs stay\n", oneLine(account), oneLine(account))
				}
				// serve makes and prints a key for account default when it
				// finds none at all (a new database): say so, as that key
				// would open the service again.
				if has, err := st.HasAPIKeys(cmd.Context()); err == nil && !has && cfg.APIKeys == "" {
					fmt.Fprintln(env.stderr, "docjobs: no key is left in the database: a server started on it without DOCJOBS_API_KEYS makes a key for account default and prints it")
				}
				return nil
			})
		},
	}
	revoke.Flags().BoolVar(&fromStdin, "key-stdin", false, "read the key to revoke from stdin instead of taking an ID")
	return revoke
}

// maxShownIDDigits is the longest id a message quotes: the ids apikey
// list shows have 12 digits, those an ambiguous id lists 16. What is
// longer and names no key is described, not quoted (see the revoke).
const maxShownIDDigits = 16

// keyNotID is what revoke says of an argument that is a key: the key
// belongs on stdin, where neither shell history nor the process list
// keeps it.
const keyNotID = "the argument is an API key, not its id (it is not shown): pipe the key to `docjobs apikey revoke --key-stdin`, or give the id apikey list shows"

// checkKeyID refuses what is not the start of a key id. It never quotes
// id: what is not an id is often the key itself, pasted, and a message
// lands in terminal scrollback and CI logs.
func checkKeyID(id string) error {
	want := fmt.Sprintf("want %d to %d hex digits of the id apikey list shows", minKeyIDDigits, 2*sha256.Size)
	ifKey := "; if it is the key itself, pipe it to `docjobs apikey revoke --key-stdin`"
	switch {
	case looksLikeKey(id):
		return fmt.Errorf("%w: %s", errUsage, keyNotID)
	case strings.Trim(id, "0123456789abcdef") != "":
		return fmt.Errorf("%w: the argument is not a key id (it is not shown): %s%s", errUsage, want, ifKey)
	case len(id) < minKeyIDDigits:
		return fmt.Errorf("%w: the key id has %d digits: %s", errUsage, len(id), want)
	case len(id) > 2*sha256.Size:
		return fmt.Errorf("%w: the key id has %d digits (it is not shown): %s%s", errUsage, len(id), want, ifKey)
	}
	return nil
}

// keyPrompt asks for the key on a terminal.
const keyPrompt = "docjobs: the key to revoke (it is not shown as you type it), then Enter: "

// readKey reads one key from r (the rest of a line break trimmed); it is
// never echoed. From a terminal it prompts on w and reads one line with
// the terminal's echo off; from a pipe or a file it reads to the end.
func readKey(ctx context.Context, r io.Reader, w io.Writer) (string, error) {
	if r == nil {
		return "", fmt.Errorf("%w: --key-stdin: no stdin", errUsage)
	}
	var (
		b   []byte
		err error
	)
	if f, ok := r.(*os.File); ok && isTerminal(f) {
		b, err = readTerminalLine(ctx, f, w, keyPrompt)
	} else {
		b, err = io.ReadAll(io.LimitReader(r, maxKeyBytes+1))
		if err != nil {
			err = fmt.Errorf("--key-stdin: read the key: %w", err)
		}
	}
	if err != nil {
		return "", err
	}
	key := strings.TrimSpace(string(b))
	switch {
	case len(b) > maxKeyBytes:
		return "", fmt.Errorf("%w: --key-stdin: more than %d bytes; want one key", errUsage, maxKeyBytes)
	case key == "":
		return "", fmt.Errorf("%w: --key-stdin: stdin is empty; want the key", errUsage)
	case strings.ContainsAny(key, "\r\n"):
		return "", fmt.Errorf("%w: --key-stdin: more than one line; want one key", errUsage)
	}
	return key, nil
}

// describeKeys names keys that share an id's start by ids long enough to
// tell them apart, with their accounts.
func describeKeys(keys []listedKey) string {
	digits := auth.KeyIDDigits
	ids := func() []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			h := hex.EncodeToString(k.hash)
			out[i] = h[:min(digits, len(h))]
		}
		return out
	}
	for digits < 2*sha256.Size {
		seen := map[string]bool{}
		clash := false
		for _, id := range ids() {
			clash = clash || seen[id]
			seen[id] = true
		}
		if !clash {
			break
		}
		digits += 2
	}
	parts := make([]string, len(keys))
	for i, id := range ids() {
		parts[i] = id + " of " + oneLine(keys[i].account)
	}
	return strings.Join(parts, ", ")
}

// oneLine makes a name safe for one line of a table: a control character
// (DOCJOBS_API_KEYS takes any name) would break the rows.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func accountCommand(env *environment) *cobra.Command {
	cmd := &cobra.Command{Use: "account", Short: "Manage account settings"} // closeGroups refuses unknown subcommands
	addDataDirFlag(cmd.PersistentFlags())
	var account, mode string
	var create bool
	set := &cobra.Command{
		Use:   "set",
		Short: "Set an account's default extraction mode",
		Long: `Set an account's default extraction mode, the one its jobs without
extractionMode get. The account must exist (a key was made for it, its mode
set, or it made a job or an upload, or DOCJOBS_API_KEYS names it): a
mistyped name is refused, not made into a new account. --create sets the
mode of an account that has none of these yet.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			full := "EXTRACTION_MODE_" + strings.ToUpper(strings.TrimPrefix(mode, "EXTRACTION_MODE_"))
			if account == "" || (full != job.ExtractionHybrid && full != job.ExtractionOCRAlways) {
				return fmt.Errorf("%w: want --account NAME --extraction-mode HYBRID|OCR_ALWAYS", errUsage)
			}
			if err := checkAccountName(account); err != nil {
				return err
			}
			use := mustExist
			if create {
				use = mayCreate
			}
			return env.withStore(cmd, use, func(st store.Store, cfg config.Config) error {
				if !create {
					exists, err := accountKnown(cmd.Context(), st, cfg, account)
					if err != nil {
						return err
					}
					if !exists {
						return fmt.Errorf("account %s does not exist in database %s (no key, job or upload): make it with `docjobs apikey create --account %s`, or give --create to set its mode first; nothing was changed",
							account, cfg.Database(), account)
					}
				}
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
	set.Flags().BoolVar(&create, "create", false, "make the account if it does not exist")
	cmd.AddCommand(set)
	return cmd
}

// accountKnown reports whether the store knows the account or this
// command's DOCJOBS_API_KEYS names it (such an account has no row until it
// makes a job or an upload).
func accountKnown(ctx context.Context, st store.Store, cfg config.Config, account string) (bool, error) {
	static, err := auth.ParseStatic(cfg.APIKeys)
	if err != nil {
		return false, fmt.Errorf("%w: %w", errUsage, err)
	}
	for _, a := range static {
		if a == account {
			return true, nil
		}
	}
	return st.AccountExists(ctx, account)
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
