package cli

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/config"
)

// refusal is the line a refused serve ends its stderr with (its log lines
// come before it).
func refusal(stderr string) string {
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	return lines[len(lines)-1]
}

// refusedServe runs serve as run does, but stops it after a while: a
// refusal comes in milliseconds, and a serve that was not refused must
// fail the test rather than run until the test binary's timeout.
func refusedServe(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := Run(ctx, append([]string{"serve"}, args...), &out, &errb, func(k string) string { return env[k] })
	return code, out.String(), errb.String()
}

// notMade fails the test if path exists: a refusal came after serve made
// it.
func notMade(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s was made before the refusal (%v)", path, err)
	}
}

// A storage URL's values never reach the terminal: gocloud's refusals
// quoted the whole URL (a token=, a secret_access_key=) and exited 1, and
// a password inside endpoint= was in the start-up line (audit-ops3 F5).
// Refused at load, nothing is made; refused by the driver at open, the
// database is not.
func TestStorageURLSecretsAreNeverPrintedAndTheirRefusalIsExit2(t *testing.T) {
	for _, tt := range []struct {
		name, url  string
		atLoad     bool
		wantInText string
	}{
		{"a secret the S3 driver does not take", "s3://bucket?region=us-east-1&endpoint=http://127.0.0.1:1&secret_access_key=s3cr3tPW", true,
			`DOCJOBS_STORAGE_URL: s3:// buckets take no parameter "secret_access_key"`},
		{"a token beside awssdk", "s3://bucket?region=us-east-1&endpoint=http://127.0.0.1:1&awssdk=v9&token=s3cr3tPW", true, `no parameter "token"`},
		{"an unknown file parameter", "file:///tmp/x?bogus=s3cr3tPW", true, `no parameter "bogus"`},
		{"a URL that does not parse", "s3://bu%zzcket?token=s3cr3tPW", true, "the s3:// URL does not parse"},
		{"a password in the endpoint", "s3://bucket?region=us-east-1&endpoint=http://AKIA:s3cr3tPW@127.0.0.1:1", true,
			"parameter endpoint holds a user or password"},
		{"a value the file driver refuses, quoted with the URL", "file://DIR/files?create_dir=s3cr3tPW&dir_file_mode=abc", false,
			"DOCJOBS_STORAGE_URL: open file://DIR/files?create_dir=…&dir_file_mode=…: open bucket file://DIR/files?create_dir=…&dir_file_mode=…: fileblob.OpenBucket: invalid dir_file_mode \"…\""},
		{"a value the S3 driver quotes", "s3://bucket?region=us-east-1&endpoint=http://127.0.0.1:1&use_path_style=s3cr3tPW", false,
			`DOCJOBS_STORAGE_URL: open s3://bucket?region=…&endpoint=…&use_path_style=…: invalid value for "use_path_style": strconv.ParseBool: parsing "…": invalid syntax`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			url := strings.ReplaceAll(tt.url, "DIR", dir)
			code, stdout, stderr := refusedServe(t, map[string]string{"DOCJOBS_DATA_DIR": dir, "DOCJOBS_ADDR": "127.0.0.1:0",
				"DOCJOBS_STORAGE_URL": url})
			if code != ExitUsage || !strings.HasPrefix(refusal(stderr), "docjobs: usage: DOCJOBS_STORAGE_URL: ") {
				t.Fatalf("exit %d %q; want %d naming DOCJOBS_STORAGE_URL", code, stderr, ExitUsage)
			}
			if want := strings.ReplaceAll(tt.wantInText, "DIR", dir); !strings.Contains(stderr, want) {
				t.Errorf("stderr %q, want it to say %q", stderr, want)
			}
			if out := stdout + stderr; strings.Contains(out, "s3cr3t") || strings.Contains(out, "AKIA") {
				t.Errorf("a secret of the URL is shown:\n%s", out)
			}
			if tt.atLoad {
				notMade(t, dir)
			}
			notMade(t, filepath.Join(dir, "docjobs.db"))
		})
	}
}

// Every configuration refusal is exit 2 naming the variable, before
// anything is made, in every role: malformed static keys were found after
// the database was made and never by a worker, a key file path and a
// postgres URL pgx refused exited 1 naming no variable, a base URL for
// slot 9 was ignored and a public URL's password printed (audit-ops3 F6).
func TestConfigurationRefusalsAreExit2BeforeAnythingIsMade(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		variable, value string
		role            string
	}{
		{"DOCJOBS_API_KEYS", "s3cr3tKEYnoaccount", "all"},
		{"DOCJOBS_API_KEYS", "acct:", "worker"},
		{"DOCJOBS_API_KEYS", ":s3cr3tKEY", "api"},
		{"DOCJOBS_MASTER_KEY_FILE", filepath.Join(file, "k"), "all"},
		{"DOCJOBS_DATABASE_URL", "postgres://u:s3cr3tPW@127.0.0.1:5432/db?sslmode=bogus", "all"},
		{"DOCJOBS_DATABASE_URL", "postgres://u@127.0.0.1:5432/db?password=s3cr3tPW&connect_timeout=abc", "worker"},
		{"DOCJOBS_DATABASE_URL", "postgres://u:s3cr3tPW@[::1/db", "all"},
		{"DOCJOBS_PROVIDER_9_BASE_URL", "http://127.0.0.1:11434/v1", "worker"},
		{"DOCJOBS_PROVIDER_0_BASE_URL", "http://127.0.0.1:11434/v1", "all"},
		{"DOCJOBS_PROVIDER_2_BASE_URL", "https://u:s3cr3tPW@h/v1 x", "all"},
		{"DOCJOBS_PUBLIC_URL", "http://user:s3cr3tPW@host", "api"},
	} {
		t.Run(tt.variable+"/"+tt.role, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			code, stdout, stderr := refusedServe(t, map[string]string{"DOCJOBS_DATA_DIR": dir, "DOCJOBS_ADDR": "127.0.0.1:0",
				"DOCJOBS_NODE_ID": "n1", tt.variable: tt.value}, "--role="+tt.role)
			if code != ExitUsage || !strings.HasPrefix(refusal(stderr), "docjobs: usage: "+tt.variable+": ") {
				t.Fatalf("exit %d %q; want %d naming %s", code, stderr, ExitUsage, tt.variable)
			}
			if strings.Contains(stdout+stderr, "s3cr3t") {
				t.Errorf("the value is shown:\n%s%s", stdout, stderr)
			}
			notMade(t, dir)
		})
	}
}

// What only making the key file shows (a folder it cannot be made in)
// stops serve naming the variable set, exit 2, before the bucket and the
// database are made: it was exit 1 naming no variable, after the database
// was migrated (audit-ops3 F6).
func TestAKeyFileThatCannotBeMadeIsExit2BeforeTheDatabase(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses /proc, where no folder can be made")
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"the key file's variable", map[string]string{"DOCJOBS_MASTER_KEY_FILE": "/proc/nope/k"}, nil,
			"docjobs: usage: DOCJOBS_MASTER_KEY_FILE: "},
		{"the data dir holding it", map[string]string{"DOCJOBS_DATA_DIR": "/proc/nope/x"}, nil,
			"docjobs: usage: DOCJOBS_DATA_DIR: "},
		{"the flag giving the data dir", nil, []string{"--data-dir", "/proc/nope/x"},
			"docjobs: usage: --data-dir: DOCJOBS_DATA_DIR: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			env := map[string]string{"DOCJOBS_DATA_DIR": dir, "DOCJOBS_ADDR": "127.0.0.1:0"}
			for k, v := range tt.env {
				env[k] = v
			}
			code, _, stderr := refusedServe(t, env, tt.args...)
			if code != ExitUsage || !strings.HasPrefix(refusal(stderr), tt.want) {
				t.Fatalf("exit %d %q; want %d starting %q", code, stderr, ExitUsage, tt.want)
			}
			notMade(t, filepath.Join(dir, "docjobs.db"))
			notMade(t, filepath.Join(dir, "files"))
		})
	}
}

// A process on a loopback address other than 127.0.0.1 hands out URLs
// naming that address: localhost, where nothing listened, made every
// upload URL, files[] and result_url unreachable (audit-ops3 F7).
func TestAServerOnAnotherLoopbackAddressIsReachedAtTheURLsItHandsOut(t *testing.T) {
	if ln, err := net.Listen("tcp", "127.0.0.2:0"); err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	} else {
		ln.Close()
	}
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t), "DOCJOBS_ADDR": "127.0.0.2:0", "DOCJOBS_API_KEYS": "a:" + strings.Repeat("k", 32)}
	logs, code := startServe(t, env, "--role=api")
	line := logged(t, logs, code, "listening")
	addr, public := line["addr"].(string), line["public_url"].(string)
	if public != "http://"+addr {
		t.Fatalf("public_url %q, want http://%s", public, addr)
	}
	if c, body := get(t, public+"/healthz"); c != http.StatusOK {
		t.Errorf("GET %s/healthz = %d %q", public, c, body)
	}
}

// gocloud calls a file:// bucket accessible whatever became of its
// directory, so /readyz said ok with the directory moved away (audit-ops3
// F8).
func TestReadyzFailsWhenTheFileBucketsDirectoryIsGone(t *testing.T) {
	dir := migratedDataDir(t)
	env := map[string]string{"DOCJOBS_DATA_DIR": dir, "DOCJOBS_ADDR": "127.0.0.1:0", "DOCJOBS_API_KEYS": "a:" + strings.Repeat("k", 32)}
	logs, code := startServe(t, env, "--role=api")
	base := "http://" + logged(t, logs, code, "listening")["addr"].(string)
	if err := waitReady(context.Background(), base, nil); err != nil {
		t.Fatal(err)
	}
	files := filepath.Join(dir, "files")
	if err := os.Rename(files, files+".gone"); err != nil {
		t.Fatal(err)
	}
	if c, body := get(t, base+"/readyz"); c != http.StatusServiceUnavailable {
		t.Errorf("moved away: GET /readyz = %d %q, want 503", c, body)
	}
	if err := os.Rename(files+".gone", files); err != nil {
		t.Fatal(err)
	}
	if c, body := get(t, base+"/readyz"); c != http.StatusOK {
		t.Errorf("moved back: GET /readyz = %d %q, want 200", c, body)
	}
}

func TestTheFileBucketsDirectoryMustBeAWritableDirectory(t *testing.T) {
	ctx := context.Background()
	dir := migratedDataDir(t)
	cfg, err := config.Load(func(k string) string { return map[string]string{"DOCJOBS_DATA_DIR": dir}[k] })
	if err != nil {
		t.Fatal(err)
	}
	st, err := openStore(ctx, cfg, slog.New(slog.DiscardHandler), migrateSchema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b, err := openBucket(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	files := filepath.Join(dir, "files")
	ready := readiness(st, b, files)
	if err := ready(ctx); err != nil {
		t.Fatalf("in place: %v", err)
	}
	if err := os.Rename(files, files+".gone"); err != nil {
		t.Fatal(err)
	}
	if err := ready(ctx); err == nil || err.Error() != "storage: the bucket's directory "+files+" does not exist" {
		t.Errorf("gone: %v", err)
	}
	if err := os.WriteFile(files, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ready(ctx); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("a file in its place: %v", err)
	}
	if os.Geteuid() == 0 {
		t.Skip("root may write in a folder of mode 0500")
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	cfg.StorageURL = "file://" + ro
	if b, err := openBucket(ctx, cfg); err == nil || !strings.Contains(err.Error(), "cannot be written") {
		if b != nil {
			b.Close()
		}
		t.Errorf("a read-only folder at start: %v", err)
	}
	if err := readiness(st, b, ro)(ctx); err == nil || !strings.Contains(err.Error(), "cannot be written") {
		t.Errorf("a read-only folder: %v", err)
	}
}
