// Package config reads docjobs' configuration from the environment (flags
// mirror it). Every field states its default; String redacts secrets.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/outbound"
)

// Roles of `docjobs serve`.
const (
	RoleAll    = "all"
	RoleAPI    = "api"
	RoleWorker = "worker"
)

// Config is the whole configuration of one process.
type Config struct {
	Addr string // DOCJOBS_ADDR, default ":8080"
	// AddrSet says DOCJOBS_ADDR (or serve --addr) was given. A worker-role
	// process listens (health and metrics only) only then: two processes
	// on one host would both want the default port.
	AddrSet bool
	// PublicURL is DOCJOBS_PUBLIC_URL, the base of the URLs handed out
	// (uploads, files[], a webhook's result_url). Unset, it is the address
	// the process listens on as a local client reaches it: localhost and
	// DOCJOBS_ADDR's port (BindPublicURL puts in the port actually bound,
	// for :0), or the host DOCJOBS_ADDR names when that is neither a
	// wildcard nor 127.0.0.1 or ::1. A worker-role process serves no
	// API, so unset it is the API's default address, http://localhost:8080.
	PublicURL string
	// PublicURLSet says DOCJOBS_PUBLIC_URL was given: it is kept as it is.
	PublicURLSet  bool
	DataDir       string // DOCJOBS_DATA_DIR, default "./data"
	DatabaseURL   string // DOCJOBS_DATABASE_URL, default "sqlite://$DATA_DIR/docjobs.db"
	StorageURL    string // DOCJOBS_STORAGE_URL, default "file://$DATA_DIR/files?…" (defaultStorageURL)
	MasterKeyFile string // DOCJOBS_MASTER_KEY_FILE, default "$DATA_DIR/master.keyset"
	// DatabaseURLFromDataDir, StorageURLFromDataDir and
	// MasterKeyFileFromDataDir say the value is the default under DataDir:
	// a message about it names DOCJOBS_DATA_DIR, the variable the operator
	// set (StorageVar, MasterKeyVar).
	DatabaseURLFromDataDir   bool
	StorageURLFromDataDir    bool
	MasterKeyFileFromDataDir bool
	// APIKeys is DOCJOBS_API_KEYS ("account:key,…"); never logged.
	APIKeys        string
	UploadMaxBytes int64 // DOCJOBS_UPLOAD_MAX_BYTES, default 20 MiB
	FetchMaxBytes  int64 // DOCJOBS_FETCH_MAX_BYTES, default 100 MiB
	// FetchTimeout bounds one download attempt, request to last byte
	// (DOCJOBS_FETCH_TIMEOUT, default 2m).
	FetchTimeout time.Duration
	// FetchTotalTimeout bounds a file's downloads with their retries, from
	// the start of the first (DOCJOBS_FETCH_TOTAL_TIMEOUT, default 10m).
	FetchTotalTimeout time.Duration
	// FetchWorkers is the number of sources one worker process downloads at
	// once (DOCJOBS_FETCH_WORKERS, default 16), apart from RecognizeWorkers.
	FetchWorkers     int
	AllowPrivateURLs bool // DOCJOBS_ALLOW_PRIVATE_URLS, default false
	// ProviderBaseURLs[n] overrides slot n's base URL (DOCJOBS_PROVIDER_<N>_BASE_URL).
	ProviderBaseURLs     map[int]string
	WebhookRetrySchedule []time.Duration // DOCJOBS_WEBHOOK_RETRY_SCHEDULE, at most 20 entries
	// Retention deletes finished jobs (rows, secrets, files) this long after
	// they ended, and uploads this long after they were uploaded
	// (DOCJOBS_RETENTION, default 0: keep them).
	Retention   time.Duration
	JobDeadline time.Duration // DOCJOBS_JOB_DEADLINE, default 2h
	// PDFMaxPages caps the pages of one PDF (DOCJOBS_PDF_MAX_PAGES, default 1000).
	PDFMaxPages int
	// FileTimeout bounds the recognition of one file once it is downloaded
	// (DOCJOBS_FILE_TIMEOUT, default 10m).
	FileTimeout time.Duration
	// ProviderConcurrency is the number of calls in flight per provider slot
	// in this process (DOCJOBS_PROVIDER_CONCURRENCY, default 8).
	ProviderConcurrency int
	// ProviderTimeout bounds one provider call, recognition or chat, each
	// retry anew (DOCJOBS_PROVIDER_TIMEOUT, default 120s, at most
	// MaxProviderTimeout).
	ProviderTimeout time.Duration
	// ModelWorkers is the number of model-stage calls one worker process
	// runs at once (DOCJOBS_MODEL_WORKERS, default 32).
	ModelWorkers int
	// MaxChunksPerFile is the number of model rows one file may make
	// (DOCJOBS_MAX_CHUNKS_PER_FILE, default 1000); a file whose text
	// makes more gets one FAILED model row and no provider call.
	MaxChunksPerFile int
	// RecognizeWorkers is the number of files one worker process recognizes
	// at once (DOCJOBS_RECOGNIZE_WORKERS, default 16). Most of a file's time
	// is spent waiting on fetches and OCR providers; local engines have
	// their own per-CPU bounds.
	RecognizeWorkers int
	// MaxConnections bounds the client connections the port holds open at
	// once (DOCJOBS_MAX_CONNECTIONS, default 4096), so hostile clients
	// cannot take every file descriptor the database and storage need; at
	// the cap the connection doing nothing longest is closed to make room,
	// and a new one waits only while every open one serves a request.
	MaxConnections int
	// AccountMaxActiveJobs bounds the jobs of one account that have not
	// ended (DOCJOBS_ACCOUNT_MAX_ACTIVE_JOBS, default 1000, 0 = no limit).
	AccountMaxActiveJobs int
	// AccountMaxUploadBytes bounds the bytes of one account's uploads
	// (DOCJOBS_ACCOUNT_MAX_UPLOAD_BYTES, default 1 GiB, 0 = no limit).
	AccountMaxUploadBytes int64
	// AccountRate is the requests a second one account may make to one
	// process (DOCJOBS_ACCOUNT_RATE, default 50, 0 = no limit); each api
	// process counts on its own.
	AccountRate float64
	// AccountBurst is how many requests an account may make at once above
	// AccountRate (DOCJOBS_ACCOUNT_BURST, default 100).
	AccountBurst int
	Role         string // --role, default "all"
	// NodeID is the stable River client id of this node (DOCJOBS_NODE_ID,
	// default the host name), so a restarted node reclaims its own jobs.
	// A live process holds it exclusively.
	NodeID string
	// NodeIDFromHost says NodeID is the host name, not DOCJOBS_NODE_ID:
	// nobody chose it, so a second process on the host may work under a
	// derived id rather than be refused.
	NodeIDFromHost bool
	LogLevel       string // DOCJOBS_LOG_LEVEL, default "info"
	// ShutdownTimeout bounds the graceful stop after a signal
	// (DOCJOBS_SHUTDOWN_TIMEOUT, default 30s): requests in flight and the
	// workers' jobs get this long together; jobs still running then are
	// cancelled, back on the queue for the next process, and given up to
	// 10 s more to return. Set it under a supervisor's grace period (a
	// Kubernetes pod's 30 s), so that files are handed back rather than
	// held by a killed process until it restarts.
	ShutdownTimeout time.Duration
}

// DefaultAPIURL is where a local client reaches an API process started
// with the default DOCJOBS_ADDR, and a worker's PublicURL by default.
const DefaultAPIURL = "http://localhost:8080"

// Slots is the number of provider slots, PROVIDER_1 to PROVIDER_8 (DESIGN
// §4); DOCJOBS_PROVIDER_<N>_BASE_URL is read for these.
const Slots = 8

// MaxProviderTimeout bounds DOCJOBS_PROVIDER_TIMEOUT: a call that has not
// answered in an hour is hung, and a file's River job would have ended it
// long before (DOCJOBS_FETCH_TIMEOUT plus DOCJOBS_FILE_TIMEOUT plus 11
// minutes).
const MaxProviderTimeout = time.Hour

// defaultStorageURL is the file:// bucket under dataDir. Content types live
// in the database (metadata=skip). no_tmp_dir makes fileblob write each
// object to a temporary file next to it rather than in os.TempDir: the
// rename that puts it in place fails across filesystems (a tmpfs /tmp, as
// Debian 13 mounts it, or a container volume), and a partial upload
// must not sit readable by every local user in /tmp. dir_file_mode keeps
// the folders it creates to the service's user whatever the umask, as the
// files are (fetch.PrivateFile): they hold documents.
//
// The path is escaped as a URL's: a data dir with a "%", "?" or "#" in its
// name made a URL that did not parse or named another directory.
func defaultStorageURL(dataDir string) string {
	path := filepath.ToSlash(filepath.Join(dataDir, "files"))
	if !strings.HasPrefix(path, "/") {
		path = "/" + path // C:/…: fileblob takes the leading "/" off again
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: "create_dir=true&dir_file_mode=0700&metadata=skip&no_tmp_dir=true"}
	return u.String()
}

// Load reads the configuration through getenv (os.Getenv in production).
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		Addr:                or(getenv("DOCJOBS_ADDR"), ":8080"),
		AddrSet:             getenv("DOCJOBS_ADDR") != "",
		PublicURL:           strings.TrimRight(getenv("DOCJOBS_PUBLIC_URL"), "/"),
		PublicURLSet:        getenv("DOCJOBS_PUBLIC_URL") != "",
		DataDir:             or(getenv("DOCJOBS_DATA_DIR"), "./data"),
		APIKeys:             getenv("DOCJOBS_API_KEYS"),
		Role:                or(getenv("DOCJOBS_ROLE"), RoleAll),
		NodeID:              getenv("DOCJOBS_NODE_ID"),
		LogLevel:            or(getenv("DOCJOBS_LOG_LEVEL"), "info"),
		UploadMaxBytes:      20 << 20,
		FetchMaxBytes:       100 << 20,
		FetchTimeout:        2 * time.Minute,
		FetchTotalTimeout:   10 * time.Minute,
		FetchWorkers:        16,
		JobDeadline:         2 * time.Hour,
		PDFMaxPages:         1000,
		FileTimeout:         10 * time.Minute,
		ShutdownTimeout:     30 * time.Second,
		ProviderConcurrency: 8,
		ProviderTimeout:     120 * time.Second,
		ModelWorkers:        32,
		MaxChunksPerFile:    1000,
		RecognizeWorkers:    16,
		MaxConnections:      4096,
		// A thousand jobs in progress is far more than one client's
		// honest backlog and small enough that one account cannot fill
		// the queue for all the others; 1 GiB of uploads is fifty files
		// at the default upload limit, and uploads are kept until
		// deleted unless DOCJOBS_RETENTION is set.
		AccountMaxActiveJobs:  1000,
		AccountMaxUploadBytes: 1 << 30,
		// An honest client polls a few jobs a second; fifty a second with
		// a hundred at once lets a script list, upload and create in bursts
		// and still keeps one account to a small share of what the port
		// answers (a bare handler here takes ~97,000 requests a second).
		AccountRate:  50,
		AccountBurst: 100,
		WebhookRetrySchedule: []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
			2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour},
		ProviderBaseURLs: map[int]string{},
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return c, fmt.Errorf("DOCJOBS_DATA_DIR: %w", err)
	}
	c.DataDir = abs
	c.DatabaseURL = or(getenv("DOCJOBS_DATABASE_URL"), "sqlite://"+filepath.Join(abs, "docjobs.db"))
	c.StorageURL = or(getenv("DOCJOBS_STORAGE_URL"), defaultStorageURL(abs))
	c.MasterKeyFile = or(getenv("DOCJOBS_MASTER_KEY_FILE"), filepath.Join(abs, "master.keyset"))
	c.DatabaseURLFromDataDir = getenv("DOCJOBS_DATABASE_URL") == ""
	c.StorageURLFromDataDir = getenv("DOCJOBS_STORAGE_URL") == ""
	c.MasterKeyFileFromDataDir = getenv("DOCJOBS_MASTER_KEY_FILE") == ""
	if !c.PublicURLSet {
		c.PublicURL = DefaultAPIURL
		if c.Role != RoleWorker {
			if u, ok := PublicURLFor(c.Addr); ok {
				c.PublicURL = u
			}
		}
	}
	if c.NodeID == "" {
		c.NodeID, _ = os.Hostname()
		c.NodeIDFromHost = c.NodeID != ""
	}

	for name, dst := range map[string]*int64{
		"DOCJOBS_UPLOAD_MAX_BYTES": &c.UploadMaxBytes,
		"DOCJOBS_FETCH_MAX_BYTES":  &c.FetchMaxBytes,
	} {
		if v := getenv(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return c, fmt.Errorf("%s: want a positive number of bytes, got %q", name, v)
			}
			*dst = n
		}
	}
	for name, dst := range map[string]*time.Duration{
		"DOCJOBS_FETCH_TIMEOUT":       &c.FetchTimeout,
		"DOCJOBS_FETCH_TOTAL_TIMEOUT": &c.FetchTotalTimeout,
		"DOCJOBS_JOB_DEADLINE":        &c.JobDeadline,
		"DOCJOBS_FILE_TIMEOUT":        &c.FileTimeout,
		"DOCJOBS_SHUTDOWN_TIMEOUT":    &c.ShutdownTimeout,
		// A vision model takes tens of seconds on a dense page, a reasoning
		// model may take minutes: the operator knows which they use.
		"DOCJOBS_PROVIDER_TIMEOUT": &c.ProviderTimeout,
	} {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("%s: want a positive duration like 90s, got %q", name, v)
			}
			*dst = d
		}
	}
	if c.ProviderTimeout > MaxProviderTimeout {
		return c, fmt.Errorf("DOCJOBS_PROVIDER_TIMEOUT: at most %s, got %s", MaxProviderTimeout, c.ProviderTimeout)
	}
	for name, dst := range map[string]*int{
		"DOCJOBS_PDF_MAX_PAGES":        &c.PDFMaxPages,
		"DOCJOBS_PROVIDER_CONCURRENCY": &c.ProviderConcurrency,
		"DOCJOBS_MODEL_WORKERS":        &c.ModelWorkers,
		"DOCJOBS_MAX_CHUNKS_PER_FILE":  &c.MaxChunksPerFile,
		"DOCJOBS_RECOGNIZE_WORKERS":    &c.RecognizeWorkers,
		"DOCJOBS_FETCH_WORKERS":        &c.FetchWorkers,
		"DOCJOBS_MAX_CONNECTIONS":      &c.MaxConnections,
		"DOCJOBS_ACCOUNT_BURST":        &c.AccountBurst,
	} {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return c, fmt.Errorf("%s: want a positive number, got %q", name, v)
			}
			*dst = n
		}
	}
	// Account limits take 0 for "no limit", so they are read apart from
	// the positive numbers above.
	if v := getenv("DOCJOBS_ACCOUNT_MAX_ACTIVE_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return c, fmt.Errorf("DOCJOBS_ACCOUNT_MAX_ACTIVE_JOBS: want a number of jobs (0 for no limit), got %q", v)
		}
		c.AccountMaxActiveJobs = n
	}
	if v := getenv("DOCJOBS_ACCOUNT_MAX_UPLOAD_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return c, fmt.Errorf("DOCJOBS_ACCOUNT_MAX_UPLOAD_BYTES: want a number of bytes (0 for no limit), got %q", v)
		}
		c.AccountMaxUploadBytes = n
	}
	if v := getenv("DOCJOBS_ACCOUNT_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 || math.IsInf(r, 0) || math.IsNaN(r) {
			return c, fmt.Errorf("DOCJOBS_ACCOUNT_RATE: want requests a second like 50 or 0.5 (0 for no limit), got %q", v)
		}
		c.AccountRate = r
	}
	if v := getenv("DOCJOBS_ALLOW_PRIVATE_URLS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("DOCJOBS_ALLOW_PRIVATE_URLS: want true or false, got %q", v)
		}
		c.AllowPrivateURLs = b
	}
	if v := getenv("DOCJOBS_WEBHOOK_RETRY_SCHEDULE"); v != "" {
		c.WebhookRetrySchedule = nil
		for part := range strings.SplitSeq(v, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(part))
			if err != nil || d < 0 {
				return c, fmt.Errorf("DOCJOBS_WEBHOOK_RETRY_SCHEDULE: %q is not a duration", part)
			}
			c.WebhookRetrySchedule = append(c.WebhookRetrySchedule, d)
		}
		if len(c.WebhookRetrySchedule) > 20 {
			return c, fmt.Errorf("DOCJOBS_WEBHOOK_RETRY_SCHEDULE: at most 20 retries, got %d", len(c.WebhookRetrySchedule))
		}
	}
	if v := getenv("DOCJOBS_RETENTION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("DOCJOBS_RETENTION: want a duration like 720h (0 keeps jobs and uploads), got %q", v)
		}
		c.Retention = d
	}
	for n := 1; n <= Slots; n++ {
		name := fmt.Sprintf("DOCJOBS_PROVIDER_%d_BASE_URL", n)
		if v := getenv(name); v != "" {
			if err := checkBaseURL(v); err != nil {
				return c, fmt.Errorf("%s: %w", name, err)
			}
			c.ProviderBaseURLs[n] = strings.TrimRight(v, "/")
		}
	}
	// getenv cannot list the environment, so the numbers an operator may
	// mistype for a slot are asked by name: a base URL for a slot that
	// does not exist was ignored, and jobs went to the vendor's endpoint.
	for n := 0; n <= 99; n++ {
		name := fmt.Sprintf("DOCJOBS_PROVIDER_%d_BASE_URL", n)
		if (n < 1 || n > Slots) && getenv(name) != "" {
			return c, fmt.Errorf("%s: there is no slot %d; the slots are PROVIDER_1 to PROVIDER_%d", name, n, Slots)
		}
	}
	err = c.validate()
	return c, err
}

// validate refuses, naming the variable, what would otherwise fail only
// once the database is migrated and the workers run, or pass silently.
func (c *Config) validate() error {
	switch c.Role {
	case RoleAll, RoleAPI, RoleWorker:
	default:
		return fmt.Errorf("DOCJOBS_ROLE: want all, api or worker, got %q", c.Role)
	}
	// The file URLs handed out are fetched back over HTTP (fetch.New
	// checks it too, but only after the database is open).
	switch u, err := url.Parse(c.PublicURL); {
	case err == nil && u.User != nil:
		// Every upload URL, files[] entry and result_url would carry it,
		// and the start prints it.
		return errors.New("DOCJOBS_PUBLIC_URL: no user or password in the URL (not shown): it is the base of every URL the service hands out")
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return fmt.Errorf("DOCJOBS_PUBLIC_URL: want an absolute http(s) URL, got %q", ShowURL(c.PublicURL))
	case u.RawQuery != "" || u.ForceQuery || strings.Contains(c.PublicURL, "#"):
		// Paths are appended to it: http://h/?a=b made upload URLs
		// http://h/?a=b/v1/files/ID, which the service did not take back
		// as its own (a source "must not point to a private or local
		// address") and the client could not delete.
		return fmt.Errorf("DOCJOBS_PUBLIC_URL: want the base URL clients reach the service at, without a query or fragment, got %q", ShowURL(c.PublicURL))
	}
	// A job reads at most FetchMaxBytes of a stored file, uploads
	// included: a larger upload was taken (and counted against the
	// account's quota) and then failed every job that read it ("the file
	// is larger than the … limit"). In a split deployment the api and the
	// workers each read one of the two; only a process that is both can
	// tell.
	if c.Role == RoleAll && c.UploadMaxBytes > c.FetchMaxBytes {
		return fmt.Errorf("DOCJOBS_UPLOAD_MAX_BYTES: %d is above DOCJOBS_FETCH_MAX_BYTES, %d, the most a job reads of a stored file: an upload that large would be taken and fail every job; raise DOCJOBS_FETCH_MAX_BYTES too", c.UploadMaxBytes, c.FetchMaxBytes)
	}
	if err := checkAddr(c.Addr); err != nil {
		return fmt.Errorf("DOCJOBS_ADDR: want host:port like :8080 or 127.0.0.1:8080, got %q: %w", c.Addr, err)
	}
	// Both URLs are checked here, so that a mistyped one is a usage error
	// naming its variable before the database is created or migrated:
	// opened, a bucket URL of an unknown scheme failed only after the
	// database was made ("no driver registered for gs"), exit 1.
	if err := checkDatabaseURL(c.DatabaseURL); err != nil && c.DatabaseURLFromDataDir {
		return fmt.Errorf("DOCJOBS_DATA_DIR: the database in it: %w", err)
	} else if err != nil {
		return fmt.Errorf("DOCJOBS_DATABASE_URL: %w", err)
	}
	if err := checkStorageURL(c.StorageURL); err != nil {
		return fmt.Errorf("%s: %w", c.StorageVar(), err)
	}
	if err := checkKeyFile(c.MasterKeyFile); err != nil && c.MasterKeyFileFromDataDir {
		return fmt.Errorf("DOCJOBS_DATA_DIR: the master key file in it: %w", err)
	} else if err != nil {
		return fmt.Errorf("DOCJOBS_MASTER_KEY_FILE: %w", err)
	}
	// A malformed entry stopped the start only once the database was made
	// or migrated, and a worker, which serves no API, never read it; its
	// errors name the variable and never a key.
	if _, err := auth.ParseStatic(c.APIKeys); err != nil {
		return err
	}
	// slog takes more spellings (info+2); the documented four, in any case,
	// are what an operator means.
	switch level := strings.ToLower(c.LogLevel); level {
	case "debug", "info", "warn", "error":
		c.LogLevel = level
	default:
		return fmt.Errorf("DOCJOBS_LOG_LEVEL: want debug, info, warn or error, got %q", c.LogLevel)
	}
	return nil
}

// checkDatabaseURL accepts the databases openStore opens.
func checkDatabaseURL(raw string) error {
	const want = "want sqlite://PATH or postgres://…"
	if path, ok := strings.CutPrefix(raw, "sqlite://"); ok {
		if path == "" {
			return fmt.Errorf("%s, got sqlite:// without a path", want)
		}
		// The store takes everything after sqlite:// as the file's path and
		// refuses a '?': a DSN's parameters (?_pragma=…, ?cache=shared)
		// stopped serve only once it had bound its port and made the data
		// directory and the master key, with exit code 1 and no variable
		// named. Not quoted: what follows '?' is the operator's, unchecked.
		if strings.Contains(path, "?") {
			return errors.New("sqlite://PATH takes a file's path and no parameters, and the path has a '?': the service sets the connection's pragmas itself")
		}
		return nil
	}
	if strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") {
		// Parsed as the store will parse it, so that a malformed URL is
		// refused here rather than once serve has started.
		if _, err := pgxpool.ParseConfig(raw); err != nil {
			return errors.New(pgxParseError(raw, err))
		}
		return nil
	}
	return fmt.Errorf("%s, got %s", want, describeScheme(raw, "a SQLite file is sqlite:///path/docjobs.db"))
}

// pgxParseError is what is wrong with a connection URL pgx refused,
// without the URL: pgx quotes it with the user information's password
// hidden but not a ?password= or ?sslpassword= (the store's own
// withoutConnString cuts the same way). Whatever follows the quoted URL
// says what is wrong; should a password show there anyway, it goes.
func pgxParseError(raw string, err error) string {
	msg := err.Error()
	var pce *pgconn.ParseConfigError
	if errors.As(err, &pce) {
		if i := strings.LastIndex(msg, "`: "); i >= 0 {
			msg = msg[i+len("`: "):]
		} else {
			msg = "it does not parse"
		}
	}
	if u, err := url.Parse(raw); err == nil {
		var secrets []string
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
		for name, values := range u.Query() {
			if secretParam(name) {
				secrets = append(secrets, values...)
			}
		}
		for _, s := range secrets {
			if s != "" {
				msg = strings.ReplaceAll(msg, s, "xxxxx")
			}
		}
	}
	return msg
}

// Query parameters gocloud's drivers take (gocloud.dev v0.47: blob's
// URLMux, fileblob.URLOpener, s3blob.URLOpener and aws.V2ConfigFromURLParams).
// Anything else the driver refuses at open, quoting the whole URL; here
// it is refused naming the parameter and not its value, which may be a
// secret put where it does not belong. "key" (one object as the bucket)
// is left out: the service stores many.
var (
	fileParams = []string{"prefix", "create_dir", "dir_file_mode", "metadata", "no_tmp_dir", "base_url", "secret_key_path"}
	s3Params   = []string{"prefix", "region", "endpoint", "use_path_style", "s3ForcePathStyle", "disable_https",
		"profile", "role", "anonymous", "hostname_immutable", "dualstack", "fips", "accelerate", "rate_limiter_capacity",
		"ssetype", "kmskeyid", "request_checksum_calculation", "response_checksum_validation", "awssdk"}
)

// checkStorageURL accepts the buckets the binary has drivers for, with the
// parameters their drivers take. Its messages quote no value of the URL.
func checkStorageURL(raw string) error {
	var known []string
	switch {
	case strings.HasPrefix(raw, "file://"):
		known = fileParams
	case strings.HasPrefix(raw, "s3://"):
		known = s3Params
	default:
		return fmt.Errorf("want file:///DIR or s3://BUCKET (S3, MinIO, R2), got %s", describeScheme(raw, "a directory is file:///path/files"))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("the %s URL does not parse (not shown: it may hold a secret): %s", schemeOf(raw), parseProblem(err))
	}
	if u.User != nil {
		return fmt.Errorf("no user or password in the URL (not shown): %s", noCredentials)
	}
	// fileblob ignores any other host and writes under the path alone:
	// file://data/files, meant relative, wrote to /files. A directory on
	// this machine needs no host.
	if u.Scheme == "file" && u.Host != "" && u.Host != "." && u.Host != "localhost" {
		return fmt.Errorf("a file:// URL names a directory on this machine, not a host: file:///abs/path for an absolute one, file://./rel/path for one under the working directory (the part after file:// up to the next / was taken as a host and would have been ignored)")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fmt.Errorf("the query does not parse (not shown: it may hold a secret): %s", parseProblem(err))
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch {
		case !slices.Contains(known, name) && !named(name, u.RawQuery):
			return fmt.Errorf("the query holds a word without \"=\" (not shown: it may be a token); %s:// buckets take %s",
				u.Scheme, strings.Join(known, ", "))
		case !slices.Contains(known, name):
			return fmt.Errorf("%s:// buckets take no parameter %q (its value is not shown); they take %s",
				u.Scheme, name, strings.Join(known, ", "))
		}
		// endpoint= and base_url= are URLs of their own: credentials in
		// them would be printed wherever the storage URL is.
		for _, v := range q[name] {
			if inner, err := url.Parse(v); err == nil && inner.User != nil {
				return fmt.Errorf("parameter %s holds a user or password (not shown): %s", name, noCredentials)
			}
		}
	}
	return nil
}

// noCredentials says where a bucket's credentials go instead.
const noCredentials = "the URL carries no credentials; S3's come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile or the machine's role"

// schemeOf is the scheme of a URL that did not parse, for a message.
func schemeOf(raw string) string {
	scheme, _, _ := strings.Cut(raw, "://")
	return scheme + "://"
}

// parseProblem is what url.Parse or url.ParseQuery found wrong, without
// the text it quotes whole (url.Error's URL).
func parseProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var esc url.EscapeError
	if errors.As(err, &esc) {
		return "a % not followed by two hex digits"
	}
	return err.Error()
}

// named says whether the query parameter name was given with "=": a bare
// word in a query may be a token, and its name is then not shown.
func named(name, rawQuery string) bool {
	for p := range strings.SplitSeq(rawQuery, "&") {
		n, _, hasValue := strings.Cut(p, "=")
		if un, err := url.QueryUnescape(n); err == nil && un == name && hasValue {
			return true
		}
	}
	return false
}

// checkKeyFile refuses a master key file path serve could not read or
// create, as far as looking tells without creating anything: a directory,
// or a path under a file. What only creating it shows (a folder it may not
// write) stops serve before the bucket and the database are opened.
func checkKeyFile(path string) error {
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		return fmt.Errorf("%s is a directory; want the keyset file's path (it is created on first start)", path)
	case err == nil && !info.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s cannot be used: %w", path, err)
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		info, err := os.Stat(dir)
		switch {
		case err == nil && !info.IsDir():
			return fmt.Errorf("%s cannot be created: %s is not a directory", path, dir)
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s cannot be created: %w", path, err)
		}
		if filepath.Dir(dir) == dir {
			return nil
		}
	}
}

// checkBaseURL accepts a provider slot's base URL: absolute http(s), and
// nothing a client would send as a credential or that is not a URL.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err == nil && u.User != nil:
		// The key goes in a header; a password here would only be printed.
		return errors.New("no user or password in the URL (not shown): the slot's key comes with each job")
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return fmt.Errorf("want an absolute http(s) URL, got %q", ShowURL(raw))
	case strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return errors.New("white space or a control character in the URL (not shown)")
	case strings.ContainsAny(raw, "?#"):
		// Each adapter puts its vendor's path under the base URL: the
		// SDKs (OpenAI's, Anthropic's, Gemini's) dropped a query, and
		// Mistral's path went into it, so every call was a 404. Refused
		// rather than kept, as no slot's vendor takes one; not shown, as
		// a query may hold a token.
		return errors.New("no query or fragment in the URL (not shown): the vendor's path goes under it, and a query would not reach the vendor")
	}
	return nil
}

// describeScheme names what a URL of an unknown kind was, for a message:
// its scheme, or that it has none (then the value itself, which is a path,
// unless it could be a key=value connection string holding a password).
func describeScheme(raw, noSchemeHint string) string {
	if scheme, _, ok := strings.Cut(raw, "://"); ok {
		return fmt.Sprintf("scheme %q", scheme)
	}
	if strings.ContainsAny(raw, "=@") {
		return "a value with no scheme (not shown: it may hold a password)"
	}
	return fmt.Sprintf("%q, which has no scheme (%s)", raw, noSchemeHint)
}

// PublicURLFor is the base URL a local client reaches a process listening
// on addr (host:port) at: localhost and the port when the host is empty,
// a wildcard, 127.0.0.1 or ::1, else that host and the port. ok is
// false when addr is no host:port (validate says so, naming DOCJOBS_ADDR).
func PublicURLFor(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false
	}
	n, err := net.LookupPort("tcp", port)
	if err != nil {
		return "", false
	}
	port = strconv.Itoa(n)
	// localhost is 127.0.0.1 or ::1 to a client; another loopback address
	// (127.0.0.2) is reached only by its own number.
	if ip := net.ParseIP(host); host == "" || host == "localhost" ||
		ip != nil && (ip.IsUnspecified() || ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback)) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port), true
}

// BindPublicURL sets PublicURL from the address the process is listening
// on, bound (a net.Listener's Addr), unless DOCJOBS_PUBLIC_URL was given
// or the process serves no API: with DOCJOBS_ADDR=:0 only the bound port
// says where clients reach it.
func (c *Config) BindPublicURL(bound string) {
	if c.PublicURLSet || c.Role == RoleWorker {
		return
	}
	if u, ok := PublicURLFor(bound); ok {
		c.PublicURL = u
	}
}

// checkAddr checks a listen address as net.Listen("tcp", …) reads it,
// without listening: a host and a port number or service name.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return err
	}
	return nil
}

// String describes the configuration for logs with secrets redacted.
func (c Config) String() string {
	keys := "unset"
	if c.APIKeys != "" {
		keys = "[redacted]"
	}
	return fmt.Sprintf("addr=%s public_url=%s role=%s database=%s storage=%s master_key_file=%s api_keys=%s node=%s",
		c.Addr, c.PublicURL, c.Role, redactURL(c.DatabaseURL), c.Storage(), c.MasterKeyFile, keys, c.NodeID)
}

// Storage names the bucket StorageURL opens, for logs and messages: its
// scheme, host, path and parameter names, no user information and no
// parameter's value (outbound.Display's rule for source URLs). Values are
// not secret by name here: an endpoint= may carry a user and password,
// and any parameter a driver does not know may carry anything.
func (c Config) Storage() string {
	return ShowURL(c.StorageURL)
}

// ShowURL is a URL as a message or log line may show it (outbound.Display),
// or its scheme alone when it does not parse, since where its secrets sit
// is then unknown.
func ShowURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if scheme, _, ok := strings.Cut(raw, "://"); ok {
			return scheme + "://…"
		}
		return "…"
	}
	return outbound.Display(u)
}

// StorageVar is the variable that gave StorageURL: DOCJOBS_STORAGE_URL,
// or DOCJOBS_DATA_DIR for the default bucket under it.
func (c Config) StorageVar() string {
	if c.StorageURLFromDataDir {
		return "DOCJOBS_DATA_DIR"
	}
	return "DOCJOBS_STORAGE_URL"
}

// MasterKeyVar is the variable that gave MasterKeyFile, as StorageVar.
func (c Config) MasterKeyVar() string {
	if c.MasterKeyFileFromDataDir {
		return "DOCJOBS_DATA_DIR"
	}
	return "DOCJOBS_MASTER_KEY_FILE"
}

// Database names the database DatabaseURL opens, for messages: a SQLite
// file by its absolute path (a relative one depends on the working
// directory), any other by its URL with the password hidden.
func (c Config) Database() string {
	if path, ok := c.SQLitePath(); ok {
		if abs, err := filepath.Abs(path); err == nil {
			return "sqlite://" + abs
		}
	}
	return redactURL(c.DatabaseURL)
}

// SQLitePath is the file a sqlite:// DatabaseURL names; ok is false for
// any other database.
func (c Config) SQLitePath() (path string, ok bool) {
	return strings.CutPrefix(c.DatabaseURL, "sqlite://")
}

// redactURL hides the secrets of a database URL: the userinfo password
// and every query parameter whose name says it carries one. pgx takes the
// password as ?password= (and ?sslpassword=) as readily as in the
// userinfo; the other parameters (sslmode, search_path) say which
// database, and pgx knows them all. A URL that does not parse is shown by
// its scheme alone, since where its secret sits is unknown. A bucket URL
// is shown without any value (Storage).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if scheme, _, ok := strings.Cut(raw, "://"); ok {
			return scheme + "://…"
		}
		return "…"
	}
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		for i, p := range params {
			name, _, _ := strings.Cut(p, "=")
			if n, err := url.QueryUnescape(name); err == nil {
				name = n
			}
			if secretParam(name) {
				params[i] = url.QueryEscape(name) + "=xxxxx"
			}
		}
		u.RawQuery = strings.Join(params, "&")
	}
	return u.Redacted()
}

// secretParam says whether a URL query parameter of this name may carry a
// secret. It matches by part of the name so that spellings a driver adds
// later (sslpassword, access_token, …) are hidden too; hiding a parameter
// that only names a key file costs a log line some detail, nothing more.
func secretParam(name string) bool {
	name = strings.ToLower(name)
	for _, part := range []string{"pass", "secret", "token", "key", "signature", "credential"} {
		if strings.Contains(name, part) {
			return true
		}
	}
	return false
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
