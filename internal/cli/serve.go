package cli

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/spf13/cobra"
	"gocloud.dev/blob"
	"golang.org/x/sync/semaphore"

	"github.com/docjobs/docjobs/internal/api"
	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/config"
	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/convert/office"
	"github.com/docjobs/docjobs/internal/convert/pdf"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/outbound"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/slots"
	"github.com/docjobs/docjobs/internal/provider/tesseract"
	"github.com/docjobs/docjobs/internal/secret"
	"github.com/docjobs/docjobs/internal/server"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/webhook"
	"github.com/docjobs/docjobs/internal/worker"
)

func serveCommand(env *environment) *cobra.Command {
	var role, addr, dataDir, providerTimeout string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API and the workers (--role splits them for scale-out)",
		Long:  serveLong,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			flags := map[string]string{
				"DOCJOBS_ROLE": role, "DOCJOBS_ADDR": addr, "DOCJOBS_DATA_DIR": dataDir,
				"DOCJOBS_PROVIDER_TIMEOUT": providerTimeout,
			}
			cfg, err := env.config(flags)
			if err != nil {
				return fmt.Errorf("%w: %w", errUsage, fromFlag(err, flags))
			}
			err = serve(cmd.Context(), env, cfg)
			if ce := (*configError)(nil); errors.As(err, &ce) {
				return fmt.Errorf("%w: %w", errUsage, fromFlag(ce.err, flags))
			}
			return fromFlag(err, flags)
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "all, api or worker (DOCJOBS_ROLE; default all)")
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (DOCJOBS_ADDR; default :8080)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "data directory (DOCJOBS_DATA_DIR; default ./data)")
	cmd.Flags().StringVar(&providerTimeout, "provider-timeout", "",
		"bound on one provider call, like 90s (DOCJOBS_PROVIDER_TIMEOUT; default 120s, at most 1h)")
	return cmd
}

// serveLong lists every variable config.Load reads, with its default, so
// that the binary answers where its configuration goes; the README's table
// says what each does and refuses. TestEveryVariableServeReadsIsDocumented
// and TestServeHelpStatesTheDefaultsLoadApplies keep it in step with Load.
const serveLong = `Run the service: the REST and gRPC API on one port and the workers that
download, recognize and prompt (--role=api or --role=worker splits them, for
scale-out on PostgreSQL). It applies the database migrations first. On a
database without keys it makes one for account default and prints it once.

The configuration is the environment; a flag below wins over the variable it
names. README.md ("Running it for real") says what each variable does, what
it refuses and how a split deployment sets them. A malformed value stops the
start with exit code 2, naming the variable. It runs twice the Go processors
the runtime picks unless GOMAXPROCS is set.

  DOCJOBS_ADDR                      :8080 (REST, gRPC, /metrics, /healthz, /readyz)
  DOCJOBS_PUBLIC_URL                http://localhost:<port of DOCJOBS_ADDR>
  DOCJOBS_DATA_DIR                  ./data
  DOCJOBS_DATABASE_URL              sqlite://$DATA_DIR/docjobs.db, or postgres://…
  DOCJOBS_STORAGE_URL               file://$DATA_DIR/files?…, or s3://BUCKET?…
  DOCJOBS_MASTER_KEY_FILE           $DATA_DIR/master.keyset
  DOCJOBS_API_KEYS                  none; account:key,…
  DOCJOBS_ROLE                      all (api, worker)
  DOCJOBS_NODE_ID                   the host name
  DOCJOBS_LOG_LEVEL                 info (debug, warn, error)
  DOCJOBS_UPLOAD_MAX_BYTES          20971520
  DOCJOBS_FETCH_MAX_BYTES           104857600
  DOCJOBS_FETCH_TIMEOUT             2m
  DOCJOBS_FETCH_TOTAL_TIMEOUT       10m
  DOCJOBS_FETCH_WORKERS             16
  DOCJOBS_ALLOW_PRIVATE_URLS        false
  DOCJOBS_PROVIDER_<N>_BASE_URL     the vendor's endpoint of slot N (1 to 8)
  DOCJOBS_PROVIDER_CONCURRENCY      8
  DOCJOBS_PROVIDER_TIMEOUT          120s (at most 1h)
  DOCJOBS_PDF_MAX_PAGES             1000
  DOCJOBS_FILE_TIMEOUT              10m
  DOCJOBS_RECOGNIZE_WORKERS         16
  DOCJOBS_MODEL_WORKERS             32
  DOCJOBS_MAX_CHUNKS_PER_FILE       1000
  DOCJOBS_JOB_DEADLINE              2h
  DOCJOBS_RETENTION                 0 (keep jobs and uploads)
  DOCJOBS_WEBHOOK_RETRY_SCHEDULE    5s,5m,30m,2h,5h,10h,10h
  DOCJOBS_ACCOUNT_MAX_ACTIVE_JOBS   1000 (0: no limit)
  DOCJOBS_ACCOUNT_MAX_UPLOAD_BYTES  1073741824 (0: no limit)
  DOCJOBS_ACCOUNT_RATE              50 requests a second (0: no limit)
  DOCJOBS_ACCOUNT_BURST             100
  DOCJOBS_MAX_CONNECTIONS           4096
  DOCJOBS_SHUTDOWN_TIMEOUT          30s`

// serveFlags names the flag that sets each variable.
var serveFlags = map[string]string{
	"DOCJOBS_ROLE": "--role", "DOCJOBS_ADDR": "--addr", "DOCJOBS_DATA_DIR": "--data-dir",
	"DOCJOBS_PROVIDER_TIMEOUT": "--provider-timeout",
}

// fromFlag puts the flag's name before an error that names a variable the
// flag set: whoever typed --addr :80 looks for --addr, not for an
// environment variable they never set.
func fromFlag(err error, values map[string]string) error {
	if err == nil {
		return nil
	}
	for name, value := range values {
		if value != "" && strings.HasPrefix(err.Error(), name+":") {
			return fmt.Errorf("%s: %w", serveFlags[name], err)
		}
	}
	return err
}

func serve(ctx context.Context, env *environment, cfg config.Config) error {
	ctx, stopProcess := context.WithCancelCause(ctx)
	defer stopProcess(nil)
	log := env.logger(cfg)
	// The start line follows the bind, so that with port 0 it names the
	// port bound (it said addr=…:0, public_url=http://localhost:0).
	ln, err := listen(&cfg)
	log.Info("starting docjobs", "version", buildVersion(), "config", cfg.String())
	if err != nil {
		return err
	}
	logListen(cfg, ln, log)
	if ln != nil {
		defer ln.Close() // closed by serving already, unless start-up failed
	}

	// The keyset and the bucket first: opening them makes nothing but the
	// keyset file and the bucket's directory, and a path or bucket URL
	// that cannot be used then stops the start, as a configuration error
	// naming its variable, before the database is created or migrated.
	sealer, err := secret.Open(cfg.MasterKeyFile)
	if err != nil {
		return &configError{fmt.Errorf("%s: %w", cfg.MasterKeyVar(), err)}
	}
	bucket, err := openBucket(ctx, cfg)
	if err != nil {
		return err
	}
	defer bucket.Close()
	st, err := openStore(ctx, cfg, log, migrateSchema)
	if err != nil {
		return err
	}
	defer st.Close()
	guard, err := claimStorage(ctx, st, bucket, log, env.storageCheckEvery,
		func(err error) { exitStorageLost(env, log, err); stopProcess(err) })
	if err != nil {
		return err
	}
	// Every role writes to the storage (uploads, a job's copies): each
	// stops once another database owns it. The guard ends before the
	// bucket closes.
	guardCtx, stopGuard := context.WithCancel(ctx)
	guarded := make(chan struct{})
	go func() { defer close(guarded); guard.Run(guardCtx) }()
	defer func() { stopGuard(); <-guarded }()
	if err := checkKeyset(ctx, cfg, st, sealer); err != nil {
		return err
	}
	registry := server.NewRegistry()
	metrics := server.NewMetrics(registry)
	newID := func() string { return uuid.Must(uuid.NewV7()).String() }
	client := outbound.NewClient(outbound.Config{AllowPrivate: cfg.AllowPrivateURLs, Timeout: cfg.FetchTimeout,
		IdleConnsPerHost: cfg.FetchWorkers})
	fetcher, err := fetch.New(fetch.Config{PublicURL: cfg.PublicURL, MaxBytes: cfg.FetchMaxBytes, Timeout: cfg.FetchTimeout},
		fetch.Deps{Client: client, Bucket: bucket, Files: st, NewID: newID})
	if err != nil {
		return err
	}

	var stopWork func(context.Context) error
	node := cfg.NodeID // the id in use: cfg's or, on a shared host, a derived one
	if cfg.Role == config.RoleAll || cfg.Role == config.RoleWorker {
		workers := river.NewWorkers()
		wcfg := worker.Config{MaxFileBytes: cfg.FetchMaxBytes, FileTimeout: cfg.FileTimeout, JobDeadline: cfg.JobDeadline,
			ModelWorkers: cfg.ModelWorkers, MaxChunksPerFile: cfg.MaxChunksPerFile, RecognizeWorkers: cfg.RecognizeWorkers,
			FetchWorkers: cfg.FetchWorkers, FetchTimeout: cfg.FetchTimeout, FetchTotalTimeout: cfg.FetchTotalTimeout,
			WebhookRetrySchedule: cfg.WebhookRetrySchedule, PublicURL: cfg.PublicURL, Retention: cfg.Retention,
			StorageDir: fetch.BucketDir(cfg.StorageURL)}
		// Webhooks go through the same SSRF guard as downloads, and a
		// redirect is a failed attempt, never followed.
		sender, err := webhook.NewSender(webhook.Config{Client: outbound.NewClient(outbound.Config{
			AllowPrivate: cfg.AllowPrivateURLs, Timeout: -1, MaxRedirects: -1})})
		if err != nil {
			return err
		}
		temp := newConvertTemp(cfg.DataDir, log)
		// One bound on the image pages decoded at once, for the image
		// files' pages and for the pages the vision adapters fit to their
		// vendor's limits alike: each may take up to the decode limit.
		decodes := semaphore.NewWeighted(int64(runtime.NumCPU()))
		converter := convert.New(convert.Config{
			PDF:    pdf.Config{MaxPages: cfg.PDFMaxPages, Timeout: cfg.FileTimeout},
			Office: office.Config{TempDir: temp.Dir},
			Image:  image.Config{Decodes: decodes},
		})
		slotsCfg := slotsConfig(cfg, metrics)
		slotsCfg.ImageDecodes = decodes
		providers := slots.New(slotsCfg)
		queues, err := worker.Register(workers, wcfg, worker.Deps{
			Store: st, Fetcher: fetcher, Convert: converter.Convert, Providers: providers, Chats: providers, Chunker: chunker{}, Secrets: sealer,
			Webhooks: sender, Bucket: bucket, Observer: metrics, Logger: log,
		})
		if err != nil {
			return err
		}
		stopWork, err = st.Work(ctx, store.WorkConfig{
			Workers:              workers,
			Queues:               queues,
			PeriodicJobs:         worker.PeriodicJobs(wcfg),
			ClientID:             cfg.NodeID,
			DeriveClientID:       cfg.NodeIDFromHost,
			ClaimNode:            temp.claim,
			OnClientID:           func(id string) { node = id; temp.use(id) },
			OnNodeLost:           func(err error) { exitNodeLost(env, log, err); stopProcess(err) },
			RescueStuckJobsAfter: wcfg.LongestStageTimeout() + worker.RescueMargin,
			FetchPollInterval:    50 * time.Millisecond,
			FetchCooldown:        2 * time.Millisecond,
		})
		if folder := (*errFolderInUse)(nil); errors.As(err, &folder) && !cfg.NodeIDFromHost {
			return fmt.Errorf("DOCJOBS_NODE_ID %s: %w; give each process its own node id or data directory", cfg.NodeID, folder)
		}
		if errors.Is(err, store.ErrNodeHeld) && !cfg.NodeIDFromHost {
			return fmt.Errorf("DOCJOBS_NODE_ID %s is held by another running process; give each process its own", cfg.NodeID)
		}
		if err != nil {
			return fmt.Errorf("start workers: %w", err)
		}
		log.Info("workers started", "node", node)
	}
	// A worker serves no API: it neither makes nor announces keys (its
	// "docjobs at" line named an address it does not serve). Keys are made
	// and announced once the workers hold their node id: a start refused
	// for a held id printed "docjobs at URL", or made the first key and
	// printed it (shown once) for a process about to exit 1.
	var keys auth.KeyLookup
	if cfg.Role != config.RoleWorker {
		if keys, err = bootstrapKeys(ctx, env, log, cfg, st); err != nil {
			if stopWork != nil {
				stopCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
				defer cancel()
				if serr := stopWork(stopCtx); serr != nil {
					log.Warn("workers did not stop cleanly", "err", serr)
				}
			}
			return err
		}
	}

	// The workers drain from the signal on, beside the requests in flight:
	// one after the other, a stop took up to twice DOCJOBS_SHUTDOWN_TIMEOUT,
	// past a supervisor's grace period.
	drain, startDrain := context.WithCancel(ctx) // or when serving ends without a signal
	defer startDrain()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		if stopWork == nil {
			return
		}
		<-drain.Done()
		stopCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := stopWork(stopCtx); err != nil {
			log.Warn("workers did not stop cleanly", "err", err)
		}
	}()

	var serveErr error
	if cfg.Role == config.RoleAll || cfg.Role == config.RoleAPI {
		serveErr = serveAPI(ctx, ln, cfg, log, st, bucket, sealer, keys, registry, newID)
	} else {
		serveErr = serveHealth(ctx, ln, log, readiness(st, bucket, fetch.RootDir(cfg.StorageURL)), registry)
	}
	// A process that lost its node id or its storage exits with the
	// reason, so that a supervisor restarts it.
	if cause := context.Cause(ctx); errors.Is(cause, store.ErrNodeHeld) || errors.Is(cause, worker.ErrStorageOwned) {
		serveErr = errors.Join(serveErr, cause)
	}

	startDrain()
	<-drained
	log.Info("docjobs stopped")
	return serveErr
}

// claimStorage makes the database the storage's owner, or refuses a
// storage another database owns: the removal sweep deletes uploads and job
// copies no record of its database names, so two deployments sharing a
// storage (two serves started from one directory, sharing ./data, with
// different DOCJOBS_DATABASE_URLs) would delete each other's. A claim that
// cannot be made stops the start too: the bucket answered a moment before
// (openBucket), and a process serving without owning its storage would
// have nothing to tell it that another database took it. A database owns
// one storage: a process given another storage than the rest of its
// deployment is refused as well. The guard it
// returns ends the process once another database owns the storage.
func claimStorage(ctx context.Context, st worker.OwnerKeys, bucket *blob.Bucket, log *slog.Logger, every time.Duration,
	lost func(error),
) (*worker.StorageGuard, error) {
	guard, err := worker.GuardStorage(ctx, worker.StorageGuardConfig{Keys: st, Bucket: bucket, Every: every, Logger: log, Lost: lost})
	if errors.Is(err, worker.ErrStorageOwned) {
		return nil, fmt.Errorf("DOCJOBS_STORAGE_URL: %w; give each deployment (each database) storage of its own, or, once no other deployment writes to it, delete %s from the storage if this database is to own it (a deployment still writing there would lose its uploads)",
			err, worker.StorageOwnerKey)
	}
	if errors.Is(err, worker.ErrOwnsAnotherStorage) {
		return nil, fmt.Errorf("DOCJOBS_STORAGE_URL: %w; every process of a deployment needs the same DOCJOBS_STORAGE_URL; to move a deployment to a new storage, copy %s with its files (and if this is the deployment's storage and %s was deleted, write this database's id back into it)",
			err, worker.StorageOwnerKey, worker.StorageOwnerKey)
	}
	if err != nil {
		return nil, fmt.Errorf("DOCJOBS_STORAGE_URL: the storage's owner could not be checked: %w", err)
	}
	return guard, nil
}

// exitNodeLost ends a process whose node id another process took, at once:
// whoever holds the id now may have handed this process's running jobs
// back to the queue, and a graceful stop would write River's state for
// them over their new run (a stopped job made available again with its
// attempt undone, so that it runs twice at once; a returning one
// completed). Nothing of theirs is written after this; the new runner
// does their work, and a supervisor restarts the process.
func exitNodeLost(env *environment, log *slog.Logger, err error) {
	log.Error("node id taken by another process: exiting at once, leaving its jobs to whoever runs them now", "err", err, "exit_code", ExitError)
	fmt.Fprintln(env.stderr, "docjobs:", err)
	env.exit(ExitError)
}

// exitStorageLost ends a process whose storage another database claimed,
// at once: that database's sweep deletes, an hour on, every upload and
// job copy its records do not name, so whatever this process still wrote
// there would be lost while this database lists it. A graceful stop would
// let the uploads and copies in flight finish writing; cut off, they are
// partial writes the new owner's sweep removes, and their clients see the
// failure. A supervisor restarts the process, and the start refuses the
// storage, saying why.
func exitStorageLost(env *environment, log *slog.Logger, err error) {
	log.Error("the storage belongs to another database now: exiting at once, writing nothing more there", "err", err, "exit_code", ExitError)
	fmt.Fprintln(env.stderr, "docjobs: DOCJOBS_STORAGE_URL:", err)
	env.exit(ExitError)
}

// slotsConfig is the provider slot table's configuration from cfg.
func slotsConfig(cfg config.Config, obs slots.Observer) slots.Config {
	return slots.Config{
		BaseURLs:           cfg.ProviderBaseURLs,
		PerSlotConcurrency: cfg.ProviderConcurrency,
		Timeout:            cfg.ProviderTimeout,
		Observer:           obs,
		Tesseract:          func(c tesseract.Config) (provider.OCR, error) { return tesseract.New(c) },
	}
}

// listen binds the process's port before anything else starts, so that an
// address in use is refused before the database is migrated and before
// the workers take jobs that the process would then drop. Connections that
// arrive meanwhile wait in the listen queue. A worker-role process listens
// only when DOCJOBS_ADDR was given (it serves health and metrics, no
// API): by default an api and a worker on one host would both take :8080.
// ln is nil when the process listens on nothing.
//
// Without DOCJOBS_PUBLIC_URL, an API's public URL takes the port bound
// (config.BindPublicURL); a worker's stays the API's default address,
// which it says, since it cannot tell where the API listens.
//
// cfg.Addr becomes the address bound, so that what names it (the start
// line) names the port port 0 took.
func listen(cfg *config.Config) (net.Listener, error) {
	if cfg.Role == config.RoleWorker && !cfg.AddrSet {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("DOCJOBS_ADDR: listen %s: %w", cfg.Addr, err)
	}
	cfg.Addr = ln.Addr().String()
	cfg.BindPublicURL(cfg.Addr)
	return ln, nil
}

// logListen says what listen did: where the process listens, or why a
// worker does not, and what a public URL left unset means for the workers.
func logListen(cfg config.Config, ln net.Listener, log *slog.Logger) {
	if cfg.Role == config.RoleWorker && !cfg.PublicURLSet {
		log.Info("DOCJOBS_PUBLIC_URL is unset: this worker names the files it stores (files[], a webhook's result_url) under the API's default address; give it the api process's DOCJOBS_PUBLIC_URL if that listens elsewhere",
			"public_url", cfg.PublicURL)
	}
	if ln == nil {
		log.Info("no health or metrics port: set DOCJOBS_ADDR (or --addr) for this worker to serve /healthz, /readyz and /metrics")
		return
	}
	log.Info("listening", "addr", cfg.Addr, "public_url", cfg.PublicURL, "role", cfg.Role)
	if cfg.Role == config.RoleAPI && !cfg.PublicURLSet && cfg.PublicURL != config.DefaultAPIURL {
		// Workers read uploads straight from storage only when the URL
		// names this service as their own DOCJOBS_PUBLIC_URL does.
		log.Warn("DOCJOBS_PUBLIC_URL is unset: give the workers DOCJOBS_PUBLIC_URL="+cfg.PublicURL+" (or set it on every process), or they name files under "+config.DefaultAPIURL+" and take this API's upload URLs for other sites', which they may not download",
			"public_url", cfg.PublicURL)
	}
}

// serveHealth serves a worker-role process's port, /healthz, /readyz and
// /metrics only, until ctx ends; with no port it just waits for ctx.
func serveHealth(ctx context.Context, ln net.Listener, log *slog.Logger, ready func(context.Context) error, registry *prometheus.Registry) error {
	if ln == nil {
		<-ctx.Done()
		return nil
	}
	h, err := server.NewHealth(server.HealthDeps{Ready: ready, Registry: registry, Logger: log})
	if err != nil {
		return err
	}
	if err := h.Serve(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func serveAPI(ctx context.Context, ln net.Listener, cfg config.Config, log *slog.Logger, st store.Store, bucket *blob.Bucket,
	sealer *secret.Sealer, keys auth.KeyLookup, registry *prometheus.Registry, newID func() string,
) error {
	svc, err := api.New(api.Config{
		PublicURL:             cfg.PublicURL,
		UploadMaxBytes:        cfg.UploadMaxBytes,
		AllowPrivateURLs:      cfg.AllowPrivateURLs,
		StorageDir:            fetch.BucketDir(cfg.StorageURL),
		AccountMaxActiveJobs:  cfg.AccountMaxActiveJobs,
		AccountMaxUploadBytes: cfg.AccountMaxUploadBytes,
		// A gRPC result every default client can receive; larger ones are
		// refused with the pointer to the streamed REST result.
		MaxResultMessageBytes: server.GRPCMaxAnswerBytes,
		KeyRequired: func(slot string) bool {
			sl, ok := slots.Lookup(slot)
			return ok && sl.KeyRequired
		},
	}, api.Deps{Store: st, Sealer: sealer, Bucket: bucket, FirstStage: worker.FirstStage, Logger: log, NewID: newID})
	if err != nil {
		return err
	}
	registry.MustRegister(jobsCollector(st, log))
	srv, err := server.New(serverConfig(cfg), server.Deps{
		Service: svc, Files: svc, Results: svc, Auth: auth.NewAuthenticator(keys), Ready: readiness(st, bucket, fetch.RootDir(cfg.StorageURL)), Registry: registry, Logger: log,
		Progress: st,
	})
	if err != nil {
		return err
	}
	if err := srv.Serve(ctx, ln); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// serverConfig is the edge's part of cfg.
func serverConfig(cfg config.Config) server.Config {
	return server.Config{
		UploadMaxBytes:  cfg.UploadMaxBytes,
		MaxConnections:  cfg.MaxConnections,
		ShutdownTimeout: cfg.ShutdownTimeout,
		AccountRate:     cfg.AccountRate,
		AccountBurst:    cfg.AccountBurst,
	}
}

// minStaticKeyBytes is the length below which serve warns of a key of
// DOCJOBS_API_KEYS: a generated key has 46 bytes, 256 random bits.
const minStaticKeyBytes = 20

// bootstrapKeys makes sure some key opens the API: static keys from
// DOCJOBS_API_KEYS are checked in memory (never stored), and with no key
// anywhere a key for account "default" is created and printed once.
func bootstrapKeys(ctx context.Context, env *environment, log *slog.Logger, cfg config.Config, st store.Store) (auth.KeyLookup, error) {
	static, err := auth.ParseStatic(cfg.APIKeys)
	if err != nil {
		return nil, err
	}
	lookup := staticKeys{hashes: map[[sha256.Size]byte]string{}, next: st}
	for key, account := range static {
		lookup.hashes[[sha256.Size]byte(auth.HashKey(key))] = account
		if len(key) < minStaticKeyBytes {
			// Its id (apikey list) is its hash's start: anyone who sees
			// the id can test guesses at a short key offline. Named by
			// account alone: neither the key nor its id goes to the log.
			log.Warn("a key of DOCJOBS_API_KEYS is short: its id, which apikey list shows, lets guesses at it be checked offline; use a long random key (docjobs apikey create makes one)",
				"account", oneLine(account), "bytes", len(key), "want_bytes", minStaticKeyBytes)
		}
	}
	if len(static) > 0 {
		return lookup, nil
	}
	has, err := st.HasAPIKeys(ctx)
	if err != nil {
		return nil, err
	}
	if !has {
		key := auth.NewKey()
		if err := st.PutAPIKey(ctx, "default", auth.HashKey(key)); err != nil {
			return nil, err
		}
		fmt.Fprintf(env.stdout, "Created API key for account default (shown once, keep it):\n\n  %s\n\n", key)
		fmt.Fprintf(env.stdout, "Try:\n  curl -H 'Authorization: Bearer %s' %s/v1/jobs\n\n", key, cfg.PublicURL)
	} else {
		fmt.Fprintf(env.stdout, "docjobs at %s; keys were printed when they were made (`docjobs apikey create --account NAME` makes another; give it this server's database, %s)\n", cfg.PublicURL, cfg.Database())
	}
	return lookup, nil
}

// staticKeys resolves DOCJOBS_API_KEYS first, then the stored keys.
type staticKeys struct {
	hashes map[[sha256.Size]byte]string
	next   auth.KeyLookup
}

func (s staticKeys) AccountByKeyHash(ctx context.Context, hash []byte) (string, error) {
	if len(hash) == sha256.Size {
		if a, ok := s.hashes[[sha256.Size]byte(hash)]; ok {
			return a, nil
		}
	}
	return s.next.AccountByKeyHash(ctx, hash)
}
