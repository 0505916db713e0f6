package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// runStdin is run with stdin reading in.
func runStdin(t *testing.T, env map[string]string, in string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runWithInput(context.Background(), args, strings.NewReader(in), &out, &errb, func(k string) string { return env[k] })
	return code, out.String(), errb.String()
}

// createKey runs apikey create and returns the key and the id it named.
func createKey(t *testing.T, env map[string]string, account string) (key, id string) {
	t.Helper()
	code, out, stderr := run(t, env, "apikey", "create", "--account", account)
	if code != ExitOK {
		t.Fatalf("apikey create --account %s: exit %d: %s", account, code, stderr)
	}
	key = strings.TrimSuffix(out, "\n")
	m := regexp.MustCompile(`docjobs: key ([0-9a-f]{12}) for account ` + regexp.QuoteMeta(account) + ` `).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("apikey create: stderr names no key id:\n%s", stderr)
	}
	return key, m[1]
}

// authorized asks GET /v1/jobs with key and returns the status code.
func authorized(t *testing.T, addr, key string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/jobs", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/jobs: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// apikey create keeps stdout the key alone (scripts read it) and names the
// key's id on stderr: the first digits of its hash, never the key.
func TestAPIKeyCreateNamesTheKeysIDOnStderr(t *testing.T) {
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t)}
	code, out, stderr := run(t, env, "apikey", "create", "--account", "acme")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !regexp.MustCompile(`^dj_[A-Za-z0-9_-]{43}\n$`).MatchString(out) {
		t.Fatalf("stdout %q, want the key alone on one line", out)
	}
	key := strings.TrimSuffix(out, "\n")
	id := hex.EncodeToString(auth.HashKey(key))[:12]
	if want := "docjobs: key " + id + " for account acme "; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if strings.Contains(stderr, key) {
		t.Error("stderr carries the key")
	}
}

// apikey list shows every key by account then creation, with its id,
// creation time and source, and never a key: stored keys, and those
// DOCJOBS_API_KEYS gives in the command's environment.
func TestAPIKeyListShowsIDsByAccountNeverKeys(t *testing.T) {
	dir := migratedDataDir(t)
	env := map[string]string{"DOCJOBS_DATA_DIR": dir}
	bobKey, bobID := createKey(t, env, "bob")
	acme1, acme1ID := createKey(t, env, "acme")
	acme2, acme2ID := createKey(t, env, "acme")
	env["DOCJOBS_API_KEYS"] = "ops:dj_static-key-of-ops"
	opsID := auth.KeyID(auth.HashKey("dj_static-key-of-ops"))

	code, out, stderr := run(t, env, "apikey", "list")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rfc3339 := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`
	want := regexp.MustCompile(`^ACCOUNT +ID +CREATED +SOURCE\n` +
		`acme +` + acme1ID + ` +` + rfc3339 + ` +database\n` +
		`acme +` + acme2ID + ` +` + rfc3339 + ` +database\n` +
		`bob +` + bobID + ` +` + rfc3339 + ` +database\n` +
		`ops +` + opsID + ` +- +DOCJOBS_API_KEYS\n$`)
	if !want.MatchString(out) {
		t.Errorf("apikey list:\n%s\nwant acme's two keys (oldest first), bob's, then ops's of DOCJOBS_API_KEYS", out)
	}
	for _, key := range []string{bobKey, acme1, acme2, "dj_static-key-of-ops"} {
		if strings.Contains(out+stderr, key) {
			t.Errorf("apikey list shows a key")
		}
	}

	code, out, stderr = run(t, env, "apikey", "list", "--account", "bob")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "bob ") {
		t.Errorf("apikey list --account bob:\n%s\nwant the header and bob's key", out)
	}
}

// A revoked key answers 401 at the server's next request: the server
// reads the key's row for every request and caches nothing.
func TestARevokedKeyIsRefusedAtTheNextRequest(t *testing.T) {
	dir := migratedDataDir(t)
	env := map[string]string{"DOCJOBS_DATA_DIR": dir, "DOCJOBS_ADDR": "127.0.0.1:0", "DOCJOBS_NODE_ID": "n1"}
	key, id := createKey(t, env, "acme")
	other, _ := createKey(t, env, "acme")
	stdinKey, _ := createKey(t, env, "bob")
	logs, exit := startServe(t, env)
	addr := logged(t, logs, exit, "listening")["addr"].(string)
	for _, k := range []string{key, other, stdinKey} {
		if c := authorized(t, addr, k); c != http.StatusOK {
			t.Fatalf("a key before revoke: %d, want 200", c)
		}
	}

	code, out, stderr := run(t, env, "apikey", "revoke", id)
	if code != ExitOK || out != "revoked key "+id+" of account acme\n" {
		t.Fatalf("apikey revoke %s: exit %d, stdout %q: %s", id, code, out, stderr)
	}
	if c := authorized(t, addr, key); c != http.StatusUnauthorized {
		t.Errorf("the revoked key at the next request: %d, want 401", c)
	}
	if c := authorized(t, addr, other); c != http.StatusOK {
		t.Errorf("the account's other key: %d, want 200", c)
	}

	code, out, stderr = runStdin(t, env, stdinKey+"\n", "apikey", "revoke", "--key-stdin")
	if code != ExitOK || !strings.HasPrefix(out, "revoked key ") || !strings.HasSuffix(out, " of account bob\n") {
		t.Fatalf("apikey revoke --key-stdin: exit %d, stdout %q: %s", code, out, stderr)
	}
	if strings.Contains(out+stderr, stdinKey) {
		t.Error("revoke --key-stdin echoed the key")
	}
	if !strings.Contains(stderr, "account bob has no key left") {
		t.Errorf("revoking bob's last key: stderr %q, want it to say bob has no key left", stderr)
	}
	if c := authorized(t, addr, stdinKey); c != http.StatusUnauthorized {
		t.Errorf("the key revoked from stdin at the next request: %d, want 401", c)
	}
}

// A key of DOCJOBS_API_KEYS is not stored and every start reads it again:
// revoke refuses it, naming DOCJOBS_API_KEYS, rather than let the user
// believe it gone.
func TestRevokingAKeyOfDOCJOBSAPIKEYSIsRefused(t *testing.T) {
	const static = "dj_static-key-of-ops"
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t), "DOCJOBS_API_KEYS": "ops:" + static}
	id := auth.KeyID(auth.HashKey(static))
	if code, _, stderr := run(t, env, "migrate"); code != ExitOK { // the server's database; revoke makes none
		t.Fatalf("migrate: exit %d: %s", code, stderr)
	}
	for name, revoke := range map[string]func() (int, string, string){
		"by id":  func() (int, string, string) { return run(t, env, "apikey", "revoke", id) },
		"by key": func() (int, string, string) { return runStdin(t, env, static, "apikey", "revoke", "--key-stdin") },
	} {
		t.Run(name, func(t *testing.T) {
			code, out, stderr := revoke()
			if code != ExitError || out != "" ||
				!strings.Contains(stderr, "opens account ops through DOCJOBS_API_KEYS, which every server start reads again: remove its entry from DOCJOBS_API_KEYS and restart the servers") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d naming DOCJOBS_API_KEYS", code, out, stderr, ExitError)
			}
			if strings.Contains(stderr, static) {
				t.Error("the refusal shows the key")
			}
		})
	}
}

// revoke takes only an id that names one key: an unknown id, or one that
// starts two keys' ids, changes nothing and exits non-zero.
func TestRevokeRefusesAnUnknownOrAmbiguousID(t *testing.T) {
	dir := migratedDataDir(t)
	env := map[string]string{"DOCJOBS_DATA_DIR": dir}
	createKey(t, env, "acme") // makes the database
	// Two hashes whose first 14 hex digits agree: no key made by chance
	// does that, so they are stored as hashes.
	twin1, twin2 := sha256.Sum256([]byte("twin-1")), sha256.Sum256([]byte("twin-2"))
	copy(twin2[:7], twin1[:7])
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "docjobs.db")})
	if err != nil {
		t.Fatal(err)
	}
	for account, h := range map[string][32]byte{"alice": twin1, "bob": twin2} {
		if err := st.PutAPIKey(context.Background(), account, h[:]); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	twinID := hex.EncodeToString(twin1[:])[:12]
	long1, long2 := hex.EncodeToString(twin1[:])[:16], hex.EncodeToString(twin2[:])[:16]

	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stderr string
	}{
		{"an id no key has", []string{"0000000000ff"}, "", ExitError, "key 0000000000ff: no such key in database"},
		{"a key no one stored", []string{"--key-stdin"}, "dj_not-stored\n", ExitError, "the key given on stdin: no such key in database"},
		{"an id two keys start with", []string{twinID}, "", ExitError,
			"key " + twinID + ": ambiguous, it starts the ids of 2 keys (" + long1 + " of alice, " + long2 + " of bob): give more of its digits"},
		{"too few digits", []string{"abc"}, "", ExitUsage, `the key id has 3 digits: want 8 to 64 hex digits`},
		{"not hex", []string{"xyz12345"}, "", ExitUsage, `the argument is not a key id (it is not shown): want 8 to 64 hex digits`},
		{"no id", nil, "", ExitUsage, "give the key's ID (apikey list shows it) or --key-stdin"},
		{"an id and --key-stdin", []string{twinID, "--key-stdin"}, "dj_x", ExitUsage, "give ID or --key-stdin, not both"},
		{"an empty stdin", []string{"--key-stdin"}, "\n", ExitUsage, "--key-stdin: stdin is empty"},
		{"two lines on stdin", []string{"--key-stdin"}, "dj_a\ndj_b\n", ExitUsage, "--key-stdin: more than one line"},
		{"two ids", []string{twinID, twinID}, "", ExitUsage, "accepts at most 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runStdin(t, env, tt.stdin, append([]string{"apikey", "revoke"}, tt.args...)...)
			if code != tt.code || out != "" || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d with %q", code, out, stderr, tt.code, tt.stderr)
			}
		})
	}
	code, _, stderr := run(t, env, "apikey", "list")
	if code != ExitOK {
		t.Fatalf("apikey list: exit %d: %s", code, stderr)
	}

	// More digits name one of them.
	code, out, stderr := run(t, env, "apikey", "revoke", long2)
	if code != ExitOK || out != "revoked key "+hex.EncodeToString(twin2[:])[:12]+" of account bob\n" {
		t.Fatalf("apikey revoke %s: exit %d, stdout %q: %s", long2, code, out, stderr)
	}
	st, err = sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "docjobs.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys, err := st.ListAPIKeys(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var accounts []string
	for _, k := range keys {
		accounts = append(accounts, k.AccountID)
	}
	if strings.Join(accounts, ",") != "acme,alice" {
		t.Errorf("keys left belong to %v, want acme's and alice's: the refusals changed nothing", accounts)
	}
}

// account set refuses an account that does not exist (a typo would make
// a new one), naming it and how to make it; --create makes it, and an
// account with a key or named by DOCJOBS_API_KEYS exists.
func TestAccountSetRefusesAnAccountThatDoesNotExist(t *testing.T) {
	dir := migratedDataDir(t)
	env := map[string]string{"DOCJOBS_DATA_DIR": dir}
	createKey(t, env, "acme")
	set := func(env map[string]string, account string, more ...string) (int, string, string) {
		return run(t, env, append([]string{"account", "set", "--account", account, "--extraction-mode", "OCR_ALWAYS"}, more...)...)
	}

	code, out, stderr := set(env, "acmee")
	if code != ExitError || out != "" ||
		!strings.Contains(stderr, "account acmee does not exist in database sqlite://"+filepath.Join(dir, "docjobs.db")) ||
		!strings.Contains(stderr, "`docjobs apikey create --account acmee`, or give --create") {
		t.Fatalf("account set of a typo: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "docjobs.db")})
	if err != nil {
		t.Fatal(err)
	}
	if exists, err := st.AccountExists(context.Background(), "acmee"); err != nil || exists {
		t.Errorf("the refused account exists (%v, %v)", exists, err)
	}
	st.Close()

	static := map[string]string{"DOCJOBS_DATA_DIR": dir, "DOCJOBS_API_KEYS": "ops:dj_static-key-of-ops"}
	for _, tt := range []struct {
		name    string
		env     map[string]string
		account string
		more    []string
	}{
		{"an account with a key", env, "acme", nil},
		{"a new account with --create", env, "newco", []string{"--create"}},
		{"the account --create made", env, "newco", nil},
		{"an account of DOCJOBS_API_KEYS", static, "ops", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := set(tt.env, tt.account, tt.more...)
			if want := "account " + tt.account + ": default extraction mode EXTRACTION_MODE_OCR_ALWAYS\n"; code != ExitOK || out != want {
				t.Fatalf("exit %d, stdout %q: %s", code, out, stderr)
			}
		})
	}
}

// serve makes and prints a key for account default when the database has
// none: revoking the last key says so, as that key would open the service
// again.
func TestRevokingTheLastKeySaysTheNextStartMakesOne(t *testing.T) {
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t)}
	_, first := createKey(t, env, "acme")
	_, second := createKey(t, env, "bob")
	const note = "no key is left in the database: a server started on it without DOCJOBS_API_KEYS makes a key for account default"
	for _, tt := range []struct {
		id   string
		note bool
	}{{first, false}, {second, true}} {
		code, _, stderr := run(t, env, "apikey", "revoke", tt.id)
		if code != ExitOK || strings.Contains(stderr, note) != tt.note {
			t.Fatalf("revoke %s: exit %d, stderr %q; want the note about the next start: %v", tt.id, code, stderr, tt.note)
		}
	}
}

// A command that groups others (apikey, account, the root, completion)
// refuses an argument naming none of them, and so does help: a mistyped
// `apikey delete ID` exited 0, having revoked nothing, with the group's
// help on stdout.
func TestEveryGroupCommandRefusesAnUnknownSubcommand(t *testing.T) {
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t)}
	_, id := createKey(t, env, "acme")

	var groups [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.HasSubCommands() {
			groups = append(groups, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(slices.Clone(path), sub.Name()))
		}
	}
	walk(newRoot(&environment{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}), nil)
	for _, want := range []string{"", "apikey", "account", "completion"} {
		if !slices.ContainsFunc(groups, func(p []string) bool { return strings.Join(p, " ") == want }) {
			t.Fatalf("groups %v lack %q", groups, want)
		}
	}
	for _, path := range groups {
		args := append(slices.Clone(path), "delete", id)
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, stderr := run(t, env, args...)
			want := `unknown command "delete" for "` + strings.Join(append([]string{"docjobs"}, path...), " ") + `"`
			if code != ExitUsage || out != "" || !strings.Contains(stderr, want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d with %q", code, out, stderr, ExitUsage, want)
			}
		})
	}
	for _, args := range [][]string{{"help", "nosuch"}, {"help", "apikey", "delete"}} {
		if code, out, stderr := run(t, env, args...); code != ExitUsage || out != "" || !strings.Contains(stderr, "unknown command") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d", args, code, out, stderr, ExitUsage)
		}
	}
	// Bare, a group still shows its help; the key is still there.
	if code, out, _ := run(t, env, "apikey"); code != ExitOK || !strings.Contains(out, "revoke") {
		t.Errorf("apikey alone: exit %d, stdout %q; want its help", code, out)
	}
	if code, out, stderr := run(t, env, "apikey", "revoke", id); code != ExitOK {
		t.Errorf("the key after the refused commands: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// The key itself, given where an id or a subcommand goes, or as a flag's
// value, is refused without being shown: a message lands in terminal
// scrollback and CI logs. It says to pipe the key to --key-stdin. A key of
// DOCJOBS_API_KEYS may be all hex digits, and is recognized as a key.
func TestAKeyGivenOnTheCommandLineIsNeverShown(t *testing.T) {
	hexKey := strings.Repeat("0123456789abcdef", 4)     // openssl rand -hex 32
	foreignHex := strings.Repeat("fedcba9876543210", 3) // a key of another server's DOCJOBS_API_KEYS
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t), "DOCJOBS_API_KEYS": "ops:" + hexKey}
	key, _ := createKey(t, env, "acme")
	const toStdin = "`docjobs apikey revoke --key-stdin`"
	tests := []struct {
		name   string
		secret string
		args   []string
		code   int
		stderr string
	}{
		{"a generated key as the id", key, []string{"apikey", "revoke", key}, ExitUsage, "the argument is an API key, not its id (it is not shown): pipe the key to " + toStdin},
		{"a generated key lowercased", strings.ToLower(key), []string{"apikey", "revoke", strings.ToLower(key)}, ExitUsage, "the argument is an API key, not its id"},
		{"a key that is not hex", "sk_gamma_secret", []string{"apikey", "revoke", "sk_gamma_secret"}, ExitUsage, "if it is the key itself, pipe it to " + toStdin},
		{"a key of DOCJOBS_API_KEYS all of hex digits", hexKey, []string{"apikey", "revoke", hexKey}, ExitUsage, "the argument is an API key, not its id"},
		{"hex digits that name no key", foreignHex, []string{"apikey", "revoke", foreignHex}, ExitError, "the key id given (48 digits): no such key"},
		{"more hex digits than an id has", hexKey + "0", []string{"apikey", "revoke", hexKey + "0"}, ExitUsage, "the key id has 65 digits (it is not shown)"},
		{"a key as a subcommand", key, []string{"apikey", key}, ExitUsage, "unknown command (an API key, not shown)"},
		{"a key as a boolean flag's value", key, []string{"apikey", "revoke", "--key-stdin=" + key}, ExitUsage, `invalid argument "dj_…[hidden key]"`},
		{"a key as an argument of a command that takes none", key, []string{"jobs", key}, ExitUsage, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := run(t, env, tt.args...)
			if code != tt.code || out != "" || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d with %q", code, out, stderr, tt.code, tt.stderr)
			}
			if strings.Contains(strings.ToLower(stderr), strings.ToLower(tt.secret)) {
				t.Errorf("stderr shows the key: %q", stderr)
			}
		})
	}
}

// apikey list and revoke, and account set without --create, only read or
// delete: run from a directory without the server's database, they say so
// and create none (a later serve from there would adopt it). What makes
// something (apikey create, account set --create) may create it.
func TestReadingAdminCommandsCreateNoDatabase(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	path := filepath.Join(cwd, "data", "docjobs.db")
	for _, args := range [][]string{
		{"apikey", "list"},
		{"apikey", "revoke", "e85557c51b0a"},
		{"account", "set", "--account", "acme", "--extraction-mode", "OCR_ALWAYS"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, stderr := run(t, map[string]string{}, args...)
			want := "no database at " + path + ", and this command makes none: set DOCJOBS_DATA_DIR (--data-dir) or DOCJOBS_DATABASE_URL to the server's"
			if code != ExitError || out != "" || !strings.Contains(stderr, want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d with %q", code, out, stderr, ExitError, want)
			}
			if strings.Contains(stderr, `"level"`) {
				t.Errorf("stderr carries log lines (migrations?):\n%s", stderr)
			}
			if _, err := os.Stat(filepath.Join(cwd, "data")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s exists after the refusal (%v)", filepath.Join(cwd, "data"), err)
			}
		})
	}
	code, _, stderr := run(t, map[string]string{}, "account", "set", "--account", "acme", "--extraction-mode", "OCR_ALWAYS", "--create")
	if code != ExitOK || !strings.Contains(stderr, "created by this command") {
		t.Fatalf("account set --create: exit %d, stderr %q; want the database made", code, stderr)
	}
}

// A short key of DOCJOBS_API_KEYS can be found from its id (apikey list)
// by trying guesses offline: serve warns of it at start, naming its
// account, never the key or its id.
func TestServeWarnsOfAShortKeyOfDOCJOBSAPIKEYS(t *testing.T) {
	const weak, strong = "sk_gamma_secret", "dj_a-long-random-key-of-ops-0123456789"
	env := map[string]string{"DOCJOBS_DATA_DIR": t.TempDir(), "DOCJOBS_ADDR": "127.0.0.1:0", "DOCJOBS_NODE_ID": "n1",
		"DOCJOBS_API_KEYS": "gamma:" + weak + ",ops:" + strong}
	logs, exit := startServe(t, env)
	logged(t, logs, exit, "workers started") // the keys are read before
	const msg = "a key of DOCJOBS_API_KEYS is short: its id, which apikey list shows, lets guesses at it be checked offline; use a long random key (docjobs apikey create makes one)"
	var warnings []map[string]any
	for _, r := range logs.Records(t) {
		if r["msg"] == msg {
			warnings = append(warnings, r)
		}
	}
	if len(warnings) != 1 || warnings[0]["level"] != "WARN" || warnings[0]["account"] != "gamma" {
		t.Errorf("warnings %v; want one WARN, naming account gamma", warnings)
	}
	text := logs.String()
	for _, s := range []string{weak, strong, auth.KeyID(auth.HashKey(weak))} {
		if strings.Contains(text, s) {
			t.Errorf("the log shows a key or the weak key's id %q", s)
		}
	}
}
