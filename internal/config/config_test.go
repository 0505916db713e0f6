package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultsFollowTheDataDir(t *testing.T) {
	c, err := Load(env(map[string]string{"DOCJOBS_DATA_DIR": "/srv/dj"}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Addr":          ":8080",
		"PublicURL":     "http://localhost:8080",
		"DatabaseURL":   "sqlite:///srv/dj/docjobs.db",
		"StorageURL":    "file:///srv/dj/files?create_dir=true&dir_file_mode=0700&metadata=skip&no_tmp_dir=true",
		"MasterKeyFile": "/srv/dj/master.keyset",
		"Role":          RoleAll,
	}
	got := map[string]string{"Addr": c.Addr, "PublicURL": c.PublicURL, "DatabaseURL": c.DatabaseURL,
		"StorageURL": c.StorageURL, "MasterKeyFile": c.MasterKeyFile, "Role": c.Role}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if c.UploadMaxBytes != 20<<20 || c.AllowPrivateURLs || c.JobDeadline != 2*time.Hour || len(c.WebhookRetrySchedule) != 7 ||
		c.Retention != 0 || c.RecognizeWorkers != 16 || c.ProviderTimeout != 120*time.Second || c.MaxConnections != 4096 ||
		c.AccountMaxActiveJobs != 1000 || c.AccountMaxUploadBytes != 1<<30 || c.AccountRate != 50 || c.AccountBurst != 100 ||
		c.FetchWorkers != 16 || c.FetchTimeout != 2*time.Minute || c.FetchTotalTimeout != 10*time.Minute || c.MaxChunksPerFile != 1000 ||
		c.ShutdownTimeout != 30*time.Second {
		t.Errorf("defaults: %+v", c)
	}
}

func TestBadValuesAreRejectedNamingTheVariable(t *testing.T) {
	tests := []struct{ name, value string }{
		{"DOCJOBS_UPLOAD_MAX_BYTES", "lots"},
		{"DOCJOBS_ALLOW_PRIVATE_URLS", "sometimes"},
		{"DOCJOBS_WEBHOOK_RETRY_SCHEDULE", "5s,soon"},
		{"DOCJOBS_PROVIDER_3_BASE_URL", "api.anthropic.com"},
		{"DOCJOBS_JOB_DEADLINE", "-1h"},
		{"DOCJOBS_ROLE", "janitor"},
		{"DOCJOBS_RETENTION", "-1h"},
		{"DOCJOBS_RECOGNIZE_WORKERS", "0"},
		{"DOCJOBS_MAX_CONNECTIONS", "-5"},
		{"DOCJOBS_PROVIDER_TIMEOUT", "0s"},
		{"DOCJOBS_ACCOUNT_MAX_ACTIVE_JOBS", "-1"},
		{"DOCJOBS_ACCOUNT_MAX_UPLOAD_BYTES", "1GiB"},
		{"DOCJOBS_FETCH_WORKERS", "none"},
		{"DOCJOBS_FETCH_TOTAL_TIMEOUT", "0"},
		{"DOCJOBS_MAX_CHUNKS_PER_FILE", "0"},
		{"DOCJOBS_ACCOUNT_RATE", "-1"},
		{"DOCJOBS_ACCOUNT_BURST", "0"},
		{"DOCJOBS_SHUTDOWN_TIMEOUT", "0s"},
		{"DOCJOBS_LOG_LEVEL", "verbose"},
		{"DOCJOBS_PUBLIC_URL", "ftp://x"},
		{"DOCJOBS_PUBLIC_URL", "localhost:8080"},
		{"DOCJOBS_ADDR", "notanaddr"},
		{"DOCJOBS_ADDR", ":99999"},
		{"DOCJOBS_ADDR", ":nosuchservice"},
		{"DOCJOBS_DATABASE_URL", "mysql://db/docjobs"},
		{"DOCJOBS_DATABASE_URL", "/srv/dj/docjobs.db"},
		{"DOCJOBS_DATABASE_URL", "sqlite://"},
		{"DOCJOBS_STORAGE_URL", "gs://bucket"},
		{"DOCJOBS_STORAGE_URL", "/srv/dj/files"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			_, err := Load(env(map[string]string{tt.name: tt.value}))
			if err == nil || !strings.HasPrefix(err.Error(), tt.name+": ") {
				t.Fatalf("err = %v, want it to start with %s", err, tt.name)
			}
		})
	}
}

func TestTheLogLevelTakesTheFourLevelsInAnyCase(t *testing.T) {
	for value, want := range map[string]string{"": "info", "DEBUG": "debug", "Warn": "warn", "error": "error"} {
		c, err := Load(env(map[string]string{"DOCJOBS_LOG_LEVEL": value}))
		if err != nil || c.LogLevel != want {
			t.Errorf("DOCJOBS_LOG_LEVEL=%q: %q, %v; want %q", value, c.LogLevel, err, want)
		}
	}
}

func TestAddrSetSaysTheAddressWasGiven(t *testing.T) {
	if c, err := Load(env(nil)); err != nil || c.AddrSet || c.Addr != ":8080" {
		t.Errorf("default: addr %q set %v (%v); want :8080 not set", c.Addr, c.AddrSet, err)
	}
	if c, err := Load(env(map[string]string{"DOCJOBS_ADDR": "127.0.0.1:9090"})); err != nil || !c.AddrSet {
		t.Errorf("given: set %v (%v); want set", c.AddrSet, err)
	}
}

func TestAWebhookRetryScheduleHasAtMostTwentyRetries(t *testing.T) {
	_, err := Load(env(map[string]string{"DOCJOBS_WEBHOOK_RETRY_SCHEDULE": strings.Repeat("1s,", 20) + "1s"}))
	if err == nil || !strings.Contains(err.Error(), "at most 20") {
		t.Fatalf("21 retries: err = %v", err)
	}
	c, err := Load(env(map[string]string{"DOCJOBS_RETENTION": "720h"}))
	if err != nil || c.Retention != 720*time.Hour {
		t.Fatalf("retention: %v, %v", c.Retention, err)
	}
}

func TestTheChunkCapPerFileIsRead(t *testing.T) {
	c, err := Load(env(map[string]string{"DOCJOBS_MAX_CHUNKS_PER_FILE": "50"}))
	if err != nil || c.MaxChunksPerFile != 50 {
		t.Fatalf("cap %d, err %v; want 50", c.MaxChunksPerFile, err)
	}
}

func TestTheProviderTimeoutIsPositiveAndAtMostAnHour(t *testing.T) {
	tests := []struct {
		value string
		want  time.Duration // 0: refused
	}{
		{"90s", 90 * time.Second},
		{"1h", time.Hour},
		{"1h0m1s", 0},
		{"-5s", 0},
		{"soon", 0},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			c, err := Load(env(map[string]string{"DOCJOBS_PROVIDER_TIMEOUT": tt.value}))
			switch {
			case tt.want == 0 && (err == nil || !strings.Contains(err.Error(), "DOCJOBS_PROVIDER_TIMEOUT")):
				t.Fatalf("err = %v, want it refused naming the variable", err)
			case tt.want != 0 && (err != nil || c.ProviderTimeout != tt.want):
				t.Fatalf("timeout %v, err %v; want %v", c.ProviderTimeout, err, tt.want)
			}
		})
	}
}

func TestAccountLimitsTakeZeroForNoLimit(t *testing.T) {
	c, err := Load(env(map[string]string{"DOCJOBS_ACCOUNT_MAX_ACTIVE_JOBS": "0", "DOCJOBS_ACCOUNT_MAX_UPLOAD_BYTES": "0"}))
	if err != nil || c.AccountMaxActiveJobs != 0 || c.AccountMaxUploadBytes != 0 {
		t.Fatalf("limits %d and %d, err %v; want 0 and 0", c.AccountMaxActiveJobs, c.AccountMaxUploadBytes, err)
	}
	c, err = Load(env(map[string]string{"DOCJOBS_ACCOUNT_MAX_ACTIVE_JOBS": "25", "DOCJOBS_ACCOUNT_MAX_UPLOAD_BYTES": "5000000000"}))
	if err != nil || c.AccountMaxActiveJobs != 25 || c.AccountMaxUploadBytes != 5_000_000_000 {
		t.Fatalf("limits %d and %d, err %v; want 25 and 5000000000", c.AccountMaxActiveJobs, c.AccountMaxUploadBytes, err)
	}
}

func TestTheAccountRateTakesFractionsAndZeroForNoLimit(t *testing.T) {
	tests := []struct {
		rate, burst string
		wantRate    float64 // -1: refused
		wantBurst   int
	}{
		{"0", "", 0, 100},
		{"0.5", "3", 0.5, 3},
		{"200", "400", 200, 400},
		{"fast", "", -1, 0},
		{"Inf", "", -1, 0},
		{"NaN", "", -1, 0},
		{"10", "-3", -1, 0},
		{"10", "1.5", -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.rate+"/"+tt.burst, func(t *testing.T) {
			c, err := Load(env(map[string]string{"DOCJOBS_ACCOUNT_RATE": tt.rate, "DOCJOBS_ACCOUNT_BURST": tt.burst}))
			switch {
			case tt.wantRate < 0 && (err == nil || !strings.Contains(err.Error(), "DOCJOBS_ACCOUNT_")):
				t.Fatalf("err = %v, want it refused naming the variable", err)
			case tt.wantRate >= 0 && (err != nil || c.AccountRate != tt.wantRate || c.AccountBurst != tt.wantBurst):
				t.Fatalf("rate %v burst %d, err %v; want %v and %d", c.AccountRate, c.AccountBurst, err, tt.wantRate, tt.wantBurst)
			}
		})
	}
}

func TestStringRedactsSecrets(t *testing.T) {
	c, err := Load(env(map[string]string{
		"DOCJOBS_API_KEYS":     "a:topsecretkey",
		"DOCJOBS_DATABASE_URL": "postgres://user:hunter2@db:5432/docjobs",
	}))
	if err != nil {
		t.Fatal(err)
	}
	s := c.String()
	if strings.Contains(s, "topsecretkey") || strings.Contains(s, "hunter2") {
		t.Fatalf("String() leaks a secret: %s", s)
	}
}

func TestConfiguredURLsAreLoggedWithoutTheirSecrets(t *testing.T) {
	tests := []struct {
		name, db, storage string
		want              []string // pieces the String() and Database() show
	}{
		{"password in the userinfo", "postgres://dj:SECRET1@db:5432/x", "",
			[]string{"postgres://dj:xxxxx@db:5432/x"}},
		{"password as a query parameter", "postgres://dj@db/x?sslmode=disable&password=SECRET1", "",
			[]string{"postgres://dj@db/x?sslmode=disable&password=xxxxx"}},
		{"ssl key password as a query parameter", "postgres://dj@db/x?sslpassword=SECRET1&sslmode=verify-full", "",
			[]string{"?sslpassword=xxxxx&sslmode=verify-full"}},
		{"both spellings at once", "postgresql://dj:SECRET1@db/x?password=SECRET1", "",
			[]string{"postgresql://dj:xxxxx@db/x?password=xxxxx"}},
		{"percent-encoded parameter name", "postgres://db/x?pass%77ord=SECRET1", "",
			[]string{"?password=xxxxx"}},
		// A bucket URL shows no value at all (audit-ops3 F5): parameters
		// whose names say secret are refused at load.
		{"a bucket URL's values", "postgres://db/x",
			"s3://bucket?region=eu-west-1&endpoint=https://SECRET1.example&use_path_style=true",
			[]string{"storage=s3://bucket?region=…&endpoint=…&use_path_style=…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(env(map[string]string{"DOCJOBS_DATABASE_URL": tt.db, "DOCJOBS_STORAGE_URL": tt.storage}))
			if err != nil {
				t.Fatal(err)
			}
			for _, shown := range []string{c.String(), c.Database()} {
				if strings.Contains(shown, "SECRET1") {
					t.Fatalf("leaks the secret: %s", shown)
				}
			}
			for _, w := range tt.want {
				if s := c.String(); !strings.Contains(s, w) {
					t.Errorf("String() = %s, want it to contain %s", s, w)
				}
			}
		})
	}
}

func TestDatabaseIsNamedWithoutItsPassword(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for url, want := range map[string]string{
		"":                               "sqlite://" + filepath.Join(wd, "data", "docjobs.db"),
		"sqlite://rel/dj.db":             "sqlite://" + filepath.Join(wd, "rel", "dj.db"),
		"postgres://dj:s3cret@db:5432/x": "postgres://dj:xxxxx@db:5432/x",
	} {
		c, err := Load(env(map[string]string{"DOCJOBS_DATABASE_URL": url}))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Database(); got != want {
			t.Errorf("DOCJOBS_DATABASE_URL %q: Database() = %q, want %q", url, got, want)
		}
	}
}

// The URLs handed out name the port the API listens on, unless
// DOCJOBS_PUBLIC_URL says otherwise (audit-readme F1: they named 8080
// whatever DOCJOBS_ADDR was).
func TestThePublicURLFollowsTheListenAddressUnlessGiven(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"the default address", nil, "http://localhost:8080"},
		{"a port of all interfaces", map[string]string{"DOCJOBS_ADDR": ":18199"}, "http://localhost:18199"},
		{"a loopback address", map[string]string{"DOCJOBS_ADDR": "127.0.0.1:18199"}, "http://localhost:18199"},
		{"the IPv6 wildcard", map[string]string{"DOCJOBS_ADDR": "[::]:9000"}, "http://localhost:9000"},
		{"the IPv6 loopback", map[string]string{"DOCJOBS_ADDR": "[::1]:9000"}, "http://localhost:9000"},
		{"a service name", map[string]string{"DOCJOBS_ADDR": "localhost:http"}, "http://localhost:80"},
		{"one interface's address", map[string]string{"DOCJOBS_ADDR": "192.0.2.7:9000"}, "http://192.0.2.7:9000"},
		{"a host name", map[string]string{"DOCJOBS_ADDR": "docs.internal:9000"}, "http://docs.internal:9000"},
		{"an explicit URL is kept", map[string]string{"DOCJOBS_ADDR": ":9000", "DOCJOBS_PUBLIC_URL": "https://docs.example.com/"},
			"https://docs.example.com"},
		// A worker serves no API: its files[] and result_url name the
		// API's, which it cannot learn from its own health port.
		{"a worker takes the API's default", map[string]string{"DOCJOBS_ROLE": RoleWorker, "DOCJOBS_ADDR": ":9101"},
			"http://localhost:8080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.PublicURL != tt.want {
				t.Errorf("PublicURL = %q, want %q", c.PublicURL, tt.want)
			}
		})
	}
}

// With DOCJOBS_ADDR=:0 only the listener knows the port.
func TestBindPublicURLTakesTheBoundPortUnlessTheURLWasGiven(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unset", map[string]string{"DOCJOBS_ADDR": ":0"}, "http://localhost:43210"},
		{"given", map[string]string{"DOCJOBS_ADDR": ":0", "DOCJOBS_PUBLIC_URL": "http://proxy:80"}, "http://proxy:80"},
		{"a worker", map[string]string{"DOCJOBS_ADDR": ":0", "DOCJOBS_ROLE": RoleWorker}, "http://localhost:8080"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			c.BindPublicURL("[::]:43210")
			if c.PublicURL != tt.want {
				t.Errorf("PublicURL = %q, want %q", c.PublicURL, tt.want)
			}
		})
	}
}

// A URL of no known kind is refused by its scheme; one without a scheme is
// quoted when it is a path, never when it could be a connection string
// holding a password.
func TestAnUnknownDatabaseOrStorageURLSaysWhatWasWrong(t *testing.T) {
	for _, tt := range []struct{ name, value, want, notWant string }{
		{"DOCJOBS_DATABASE_URL", "mysql://u:secret@db/x", `DOCJOBS_DATABASE_URL: want sqlite://PATH or postgres://…, got scheme "mysql"`, "secret"},
		{"DOCJOBS_DATABASE_URL", "/srv/dj/docjobs.db", `got "/srv/dj/docjobs.db", which has no scheme (a SQLite file is sqlite:///path/docjobs.db)`, ""},
		{"DOCJOBS_DATABASE_URL", "host=db password=secret", "not shown: it may hold a password", "secret"},
		{"DOCJOBS_DATABASE_URL", "sqlite:///srv/dj/docjobs.db?_pragma=busy_timeout(5000)", "DOCJOBS_DATABASE_URL: sqlite://PATH takes a file's path and no parameters", "busy_timeout"},
		{"DOCJOBS_DATA_DIR", "/srv/dj?1", "DOCJOBS_DATA_DIR: the database in it: sqlite://PATH takes a file's path and no parameters", ""},
		{"DOCJOBS_STORAGE_URL", "gs://bucket", `DOCJOBS_STORAGE_URL: want file:///DIR or s3://BUCKET (S3, MinIO, R2), got scheme "gs"`, ""},
		{"DOCJOBS_STORAGE_URL", "file://data/files", "DOCJOBS_STORAGE_URL: a file:// URL names a directory on this machine, not a host", ""},
		{"DOCJOBS_STORAGE_URL", "file://nas.example/srv/files?prefix=a/", "file:///abs/path for an absolute one, file://./rel/path", "nas.example"},
	} {
		t.Run(tt.value, func(t *testing.T) {
			_, err := Load(env(map[string]string{tt.name: tt.value}))
			if err == nil || !strings.Contains(err.Error(), tt.want) || tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// An upload above what a job reads of a stored file was taken, counted
// against the quota, and failed every job that read it; a process that
// both takes uploads and works jobs refuses the pair. Split, each process
// reads only one of the two, and both are taken.
func TestAnUploadLimitAboveTheFetchLimitIsRefusedWhereBothApply(t *testing.T) {
	for _, tt := range []struct {
		role string
		want string
	}{
		{"", "DOCJOBS_UPLOAD_MAX_BYTES: 2000 is above DOCJOBS_FETCH_MAX_BYTES, 1000"},
		{"all", "DOCJOBS_UPLOAD_MAX_BYTES: 2000 is above DOCJOBS_FETCH_MAX_BYTES, 1000"},
		{"api", ""},
		{"worker", ""},
	} {
		t.Run("role "+tt.role, func(t *testing.T) {
			_, err := Load(env(map[string]string{"DOCJOBS_ROLE": tt.role,
				"DOCJOBS_UPLOAD_MAX_BYTES": "2000", "DOCJOBS_FETCH_MAX_BYTES": "1000"}))
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := Load(env(map[string]string{"DOCJOBS_UPLOAD_MAX_BYTES": "1000", "DOCJOBS_FETCH_MAX_BYTES": "1000"})); err != nil {
		t.Errorf("equal limits: %v", err)
	}
}
