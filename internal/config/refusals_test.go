package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/fetch"
)

// refused loads env and wants an error that starts with the variable's
// name and does not contain secret.
func refused(t *testing.T, env map[string]string, variable, secret string) error {
	t.Helper()
	_, err := Load(func(k string) string { return env[k] })
	if err == nil || !strings.HasPrefix(err.Error(), variable+": ") {
		t.Fatalf("err = %v, want it to start with %s", err, variable)
	}
	if secret != "" && strings.Contains(err.Error(), secret) {
		t.Fatalf("the message shows the secret: %v", err)
	}
	return err
}

// A storage URL is refused at load, naming the parameter and never a
// value: the driver's own refusals quoted the whole URL, a token= or
// secret_access_key= included, and exited 1 (audit-ops3 F5).
func TestAStorageURLTheDriversWouldRefuseIsRefusedWithoutItsValues(t *testing.T) {
	tests := []struct{ name, url, want string }{
		{"an S3 secret as a parameter", "s3://bucket?region=us-east-1&endpoint=http://127.0.0.1:1&secret_access_key=s3cr3tPW",
			`s3:// buckets take no parameter "secret_access_key" (its value is not shown)`},
		{"a token beside a known parameter", "s3://bucket?region=us-east-1&awssdk=v2&token=s3cr3tPW", `no parameter "token"`},
		{"an unknown file parameter", "file:///tmp/x?create_dir=true&x-token=s3cr3tPW", `file:// buckets take no parameter "x-token"`},
		{"a bare word as the query", "file:///tmp/x?s3cr3tPW", `the query holds a word without "=" (not shown: it may be a token)`},
		{"a URL that does not parse", "s3://bu%zzcket?token=s3cr3tPW", "the s3:// URL does not parse (not shown: it may hold a secret)"},
		{"a file URL that does not parse", "file:///tmp/a%zz?token=s3cr3tPW", "the file:// URL does not parse"},
		{"a query that does not parse", "s3://bucket?region=us-east-1&endpoint=s3cr3tPW%zz", "the query does not parse"},
		{"credentials in the endpoint", "s3://bucket?region=us-east-1&endpoint=http://AKIA:s3cr3tPW@127.0.0.1:1",
			"parameter endpoint holds a user or password (not shown)"},
		{"credentials in the URL", "s3://AKIA:s3cr3tPW@bucket?region=us-east-1", "no user or password in the URL (not shown)"},
		{"one object as the bucket", "s3://bucket?key=s3cr3tPW", `no parameter "key"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := refused(t, map[string]string{"DOCJOBS_STORAGE_URL": tt.url}, "DOCJOBS_STORAGE_URL", "s3cr3t")
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to say %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "AKIA") {
				t.Errorf("the message shows the access key id: %v", err)
			}
		})
	}
}

func TestTheStorageURLsTheDriversTakeAreAccepted(t *testing.T) {
	for _, u := range []string{
		"s3://bucket?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=us-east-1&use_path_style=true",
		"s3://bucket?region=auto&endpoint=https://acct.r2.cloudflarestorage.com&prefix=jobs-a/&awssdk=v2",
		"s3://bucket",
		"file:///srv/dj/files?create_dir=true&dir_file_mode=0700&metadata=skip&no_tmp_dir=true&prefix=a/",
		"file://./data/files",
		"file://localhost/srv/dj/files",
	} {
		if _, err := Load(env(map[string]string{"DOCJOBS_STORAGE_URL": u})); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// The start-up line shows the storage URL without any value or user
// information: a URL inside endpoint= carried a password to the log.
func TestShowURLShowsNoValueAndNoUserInformation(t *testing.T) {
	for raw, want := range map[string]string{
		"s3://bucket?region=us-east-1&endpoint=http://AKIA:s3cr3tPW@127.0.0.1:1": "s3://bucket?region=…&endpoint=…",
		"s3://AKIA:s3cr3tPW@bucket?s3cr3tPW":                                     "s3://bucket?…",
		"file:///srv/dj/files?create_dir=true":                                   "file:///srv/dj/files?create_dir=…",
		"s3://bu%zzcket?token=s3cr3tPW":                                          "s3://…",
	} {
		if got := ShowURL(raw); got != want {
			t.Errorf("ShowURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// Malformed static keys were found only once the database was made, and
// never by a worker (audit-ops3 F6).
func TestMalformedAPIKeysAreRefusedAtLoad(t *testing.T) {
	for _, keys := range []string{"s3cr3tKEYnoaccount", "acct:", ":s3cr3tKEY", "a:s3cr3tKEY,b:s3cr3tKEY"} {
		for _, role := range []string{RoleAll, RoleWorker} {
			t.Run(role+"/"+keys, func(t *testing.T) {
				refused(t, map[string]string{"DOCJOBS_API_KEYS": keys, "DOCJOBS_ROLE": role}, "DOCJOBS_API_KEYS", "s3cr3t")
			})
		}
	}
	if _, err := Load(env(map[string]string{"DOCJOBS_API_KEYS": "a:k1, b:k2,"})); err != nil {
		t.Errorf("well-formed keys: %v", err)
	}
}

// A postgres URL pgx cannot parse said "postgres: parse url: …" with exit
// 1, naming no variable (audit-ops3 F6).
func TestAPostgresURLPgxCannotParseIsRefusedAtLoad(t *testing.T) {
	for _, u := range []string{
		"postgres://u:s3cr3tPW@h:xx/db",
		"postgres://u@127.0.0.1:5432/db?password=s3cr3tPW&sslmode=bogus",
		"postgres://u@127.0.0.1:5432/db?password=s3cr3tPW&connect_timeout=abc",
		"postgres://u:s3cr3tPW@127.0.0.1:5432/db?pool_max_conns=abc",
		"postgres://u:s3cr3t%zzPW@127.0.0.1:5432/db",
		"postgresql://u:s3cr3tPW@[::1/db",
		"postgres://u@h/db?sslpassword=s3cr3tPW&sslkey=/nope",
	} {
		t.Run(u, func(t *testing.T) {
			refused(t, map[string]string{"DOCJOBS_DATABASE_URL": u}, "DOCJOBS_DATABASE_URL", "s3cr3t")
		})
	}
	if _, err := Load(env(map[string]string{"DOCJOBS_DATABASE_URL": "postgres://u:pw@db:5432/x?sslmode=disable&search_path=dj&pool_max_conns=4"})); err != nil {
		t.Errorf("a good URL: %v", err)
	}
}

// A master key file path serve cannot use was found after the database
// was migrated, naming no variable (audit-ops3 F6). What looking tells is
// refused at load; a default path names the data dir, the variable set.
func TestAMasterKeyFileThatCannotBeUsedIsRefusedAtLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		env      map[string]string
		variable string
	}{
		{"a directory", map[string]string{"DOCJOBS_MASTER_KEY_FILE": dir}, "DOCJOBS_MASTER_KEY_FILE"},
		{"a path under a file", map[string]string{"DOCJOBS_MASTER_KEY_FILE": filepath.Join(file, "a", "k")}, "DOCJOBS_MASTER_KEY_FILE"},
		{"a data dir under a file", map[string]string{"DOCJOBS_DATA_DIR": filepath.Join(file, "data")}, "DOCJOBS_DATA_DIR"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refused(t, tt.env, tt.variable, "")
		})
	}
	for _, ok := range []string{file, filepath.Join(dir, "new", "dirs", "k")} {
		if _, err := Load(env(map[string]string{"DOCJOBS_MASTER_KEY_FILE": ok})); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// Slots are PROVIDER_1 to PROVIDER_8: a base URL for another number was
// ignored (audit-ops3 F6), and jobs went to the vendor's own endpoint.
func TestABaseURLForASlotThatDoesNotExistIsRefused(t *testing.T) {
	for _, n := range []string{"0", "9", "10", "99"} {
		name := "DOCJOBS_PROVIDER_" + n + "_BASE_URL"
		t.Run(name, func(t *testing.T) {
			err := refused(t, map[string]string{name: "http://127.0.0.1:11434/v1"}, name, "")
			if !strings.Contains(err.Error(), "there is no slot "+n) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestABaseURLWithCredentialsOrSpacesIsRefused(t *testing.T) {
	for _, v := range []string{"https://u:s3cr3tPW@h/v1", "https://u:s3cr3tPW@h/v1 x", "https://h/v1 x", "https://h/v1\t"} {
		t.Run(v, func(t *testing.T) {
			refused(t, map[string]string{"DOCJOBS_PROVIDER_2_BASE_URL": v}, "DOCJOBS_PROVIDER_2_BASE_URL", "s3cr3t")
		})
	}
}

// A query in a base URL was accepted, then dropped by the SDK slots and
// taken for the path's start by Mistral's (every OCR call went to
// "/?x=1/v1/ocr", a 404): refused for every slot, the query not shown.
func TestABaseURLWithAQueryOrFragmentIsRefused(t *testing.T) {
	for _, v := range []string{"http://h?x=1", "https://h/v1?api-version=s3cr3t", "https://h/v1?", "https://h/v1#s3cr3t", "https://h/v1/?x=s3cr3t/"} {
		for _, n := range []string{"1", "2", "4"} {
			name := "DOCJOBS_PROVIDER_" + n + "_BASE_URL"
			t.Run(name+"="+v, func(t *testing.T) {
				err := refused(t, map[string]string{name: v}, name, "s3cr3t")
				if !strings.Contains(err.Error(), "no query or fragment") {
					t.Errorf("err = %v", err)
				}
			})
		}
	}
	if _, err := Load(env(map[string]string{"DOCJOBS_PROVIDER_1_BASE_URL": "https://mistral.internal/proxy/"})); err != nil {
		t.Errorf("a base URL with a path: %v", err)
	}
}

// A public URL with a user and password was printed at start and in
// every URL handed out (audit-ops3 F6).
func TestAPublicURLWithAUserOrPasswordIsRefused(t *testing.T) {
	for _, v := range []string{"http://user:s3cr3tPW@host", "https://s3cr3tPW@host/base", "ftp://u:s3cr3tPW@host"} {
		t.Run(v, func(t *testing.T) {
			refused(t, map[string]string{"DOCJOBS_PUBLIC_URL": v}, "DOCJOBS_PUBLIC_URL", "s3cr3t")
		})
	}
}

// Paths are appended to the public URL: with a query or fragment the
// upload URLs it made were not the service's own any more.
func TestAPublicURLWithAQueryOrFragmentIsRefused(t *testing.T) {
	for _, v := range []string{"http://localhost:8080/?a=b", "https://docs.example/base?", "http://localhost:8080/#frag", "http://h/base#"} {
		t.Run(v, func(t *testing.T) {
			err := refused(t, map[string]string{"DOCJOBS_PUBLIC_URL": v}, "DOCJOBS_PUBLIC_URL", "")
			if !strings.Contains(err.Error(), "without a query or fragment") {
				t.Errorf("err = %v, want it to say why", err)
			}
		})
	}
	if _, err := Load(env(map[string]string{"DOCJOBS_PUBLIC_URL": "https://docs.example/base/"})); err != nil {
		t.Errorf("a base path: %v", err)
	}
}

// localhost is 127.0.0.1 or ::1: a process listening on another loopback
// address was advertised at localhost, where nothing listens (audit-ops3
// F7).
func TestThePublicURLKeepsALoopbackAddressOtherThanLocalhosts(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.2:9000":          "http://127.0.0.2:9000",
		"127.1.2.3:9000":          "http://127.1.2.3:9000",
		"127.0.0.1:9000":          "http://localhost:9000",
		"[::1]:9000":              "http://localhost:9000",
		"[::ffff:127.0.0.1]:9000": "http://localhost:9000",
		"0.0.0.0:9000":            "http://localhost:9000",
	} {
		if got, ok := PublicURLFor(addr); !ok || got != want {
			t.Errorf("PublicURLFor(%q) = %q, %v; want %q", addr, got, ok, want)
		}
	}
	c, err := Load(env(map[string]string{"DOCJOBS_ADDR": "127.0.0.2:0"}))
	if err != nil {
		t.Fatal(err)
	}
	c.BindPublicURL("127.0.0.2:43210")
	if c.PublicURL != "http://127.0.0.2:43210" {
		t.Errorf("bound: %q, want http://127.0.0.2:43210", c.PublicURL)
	}
}

// The default bucket's URL escapes the data dir's path: a "%", "?" or "#"
// in it made a URL that did not parse or named another directory. (The
// database is elsewhere: SQLite takes no '?' in its path.)
func TestTheDefaultBucketNamesADataDirOfAnyName(t *testing.T) {
	dir := "/srv/a?b#c%d e"
	c, err := Load(env(map[string]string{"DOCJOBS_DATA_DIR": dir, "DOCJOBS_DATABASE_URL": "sqlite:///srv/db/docjobs.db"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := fetch.BucketDir(c.StorageURL); got != filepath.Join(dir, "files") {
		t.Errorf("the default bucket is %q (%s), want %q", got, c.StorageURL, filepath.Join(dir, "files"))
	}
}
