// Package server is the network edge of docjobs: one listener that serves
// gRPC and, over HTTP/1.1 and h2c, the REST API (grpc-gateway in process),
// file upload and download, /openapi.yaml, /healthz, /readyz and /metrics.
// It authenticates callers, bounds what they may send, maps every error to
// the status a client sees (errors.go), and logs and counts every request.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/gen/openapi"
	"github.com/docjobs/docjobs/internal/auth"
)

// Config tunes the edge. Zero values take the defaults in the comments.
type Config struct {
	// UploadMaxBytes is the largest accepted upload (DOCJOBS_UPLOAD_MAX_BYTES).
	// Default 20 MiB.
	UploadMaxBytes int64
	// MaxJSONBodyBytes bounds a REST request body; larger ones get 413.
	// Default 4 MiB (DefaultMaxJSONBodyBytes).
	MaxJSONBodyBytes int64
	// IOIdleTimeout cuts an upload or download that moves no byte for this
	// long, REST and gRPC alike, and any HTTP answer whose client reads
	// none of it for this long (a transfer that keeps moving may take as
	// long as it needs). Default 1 minute.
	IOIdleTimeout time.Duration
	// JSONReadTimeout bounds reading a REST request, body included.
	// Default 30s.
	JSONReadTimeout time.Duration
	// ShutdownTimeout is how long Serve waits for in-flight requests once
	// its context ends, before it closes the remaining connections.
	// Default 30s.
	ShutdownTimeout time.Duration
	// Progress tunes the live progress streams (events.go).
	Progress ProgressConfig
	// MaxConnections bounds the connections held open at once. Every
	// connection is a file descriptor, and the database and storage need
	// theirs. One that arrives at the cap takes the place of the open one
	// doing nothing longest (idle between requests, or held only by what a
	// caller without a key can hold: connlimit.go); it waits only while
	// every open connection serves a request. Default 4096.
	MaxConnections int
	// AccountRate is the requests a second one account may make to this
	// process, after authentication (DOCJOBS_ACCOUNT_RATE); an upload,
	// download or event stream counts once, when opened. Zero means no
	// limit (the config package sets the service's default).
	AccountRate float64
	// AccountBurst is how many requests an account may make at once above
	// AccountRate (DOCJOBS_ACCOUNT_BURST). Default DefaultAccountBurst.
	AccountBurst int
}

// Defaults of Config.
//
// DefaultMaxJSONBodyBytes is grpc-go's default receive limit, so that both
// transports take requests of the same size, and it is above the sum of the
// per-field caps of a create request (internal/api/validate.go), so that a
// request with every field at its cap is accepted: 100 sourceUrls × 2048 B
// (200 KiB), 16 prompts × 64 KiB (1 MiB), responseSchema 128 KiB, 64
// metadata pairs × (128 + 2048) B (136 KiB), title 1024 characters (up to 4
// KiB), 32 dedupeBy names × 256 B (8 KiB), idempotencyKey 255 characters, two
// model names × 256 B, three keys and secrets × 4096 B (12 KiB) and a webhookUrl
// of 2048 B: 1,551,868 bytes of values, about 1.5 MiB, which JSON quoting and
// escaping can more than double.
const (
	DefaultUploadMaxBytes   = 20 << 20
	DefaultMaxJSONBodyBytes = 4 << 20
	DefaultShutdownTimeout  = 30 * time.Second
	DefaultIOIdleTimeout    = time.Minute
	DefaultMaxConnections   = 4096
	DefaultAccountBurst     = 100
)

func (c Config) withDefaults() Config {
	if c.UploadMaxBytes <= 0 {
		c.UploadMaxBytes = DefaultUploadMaxBytes
	}
	if c.MaxJSONBodyBytes <= 0 {
		c.MaxJSONBodyBytes = DefaultMaxJSONBodyBytes
	}
	if c.IOIdleTimeout <= 0 {
		c.IOIdleTimeout = DefaultIOIdleTimeout
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.JSONReadTimeout <= 0 {
		c.JSONReadTimeout = jsonReadTimeout
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.AccountBurst <= 0 {
		c.AccountBurst = DefaultAccountBurst
	}
	c.Progress = c.Progress.withDefaults()
	return c
}

// Deps are what the edge serves and reports on.
type Deps struct {
	// Service implements the API; REST and gRPC both call it. Required.
	Service docjobsv1.JobServiceServer
	// Files streams uploads to storage and downloads from it. Required.
	Files Files
	// Results streams GET /v1/jobs/{id}/result one row at a time
	// (resultstream.go); *api.Service implements it. nil leaves the route
	// to the gateway, which builds the whole result in memory.
	Results Results
	// Auth resolves bearer keys to accounts. Required.
	Auth *auth.Authenticator
	// Progress reads job progress from the database for
	// GET /v1/jobs/{id}/events; nil answers that route 501 Unimplemented.
	Progress ProgressSource
	// Ready reports whether the process can serve (for example a store
	// ping); nil means always ready.
	Ready func(context.Context) error
	// Registry receives the request metrics and is served at /metrics; nil
	// means a new one from NewRegistry.
	Registry *prometheus.Registry
	// Logger receives one line per request and every internal error; nil
	// discards.
	Logger *slog.Logger
	// Now is the clock of the account rate limit; nil means time.Now.
	Now func() time.Time
}

// Server serves docjobs on one listener.
type Server struct {
	cfg     Config
	deps    Deps
	log     *slog.Logger
	metrics *edgeMetrics
	routes  map[string]restRoute
	json    resultMarshaler // the gateway's, which the result stream shares
	methods *methodTable
	rate    *accountLimiter // nil: no rate limit
	grpc    *grpc.Server
	codec   *requestCodec // the gRPC server's (codec.go)
	// grpcMethods are the methods s.grpc serves (grpcedge.go).
	grpcMethods map[string]grpcMethod
	// keyless counts the gRPC streams that need no key (grpcedge.go).
	keyless keylessSlots
	// conns is the listener of the running Serve (connlimit.go), which
	// tests read.
	conns   atomic.Pointer[connLimiter]
	handler http.Handler
	// stopping ends when Serve starts shutting down: streams that would
	// otherwise last until their client leaves (Health.Watch, reflection)
	// end then, as the progress stream does, and so does the wait for a
	// gRPC request message that has not arrived (grpcedge.go).
	stopping      context.Context
	beginShutdown context.CancelFunc
}

// readyTimeout bounds one readiness check.
const readyTimeout = 3 * time.Second

// New builds a Server. It registers the request metrics with deps.Registry,
// so one registry serves one Server.
func New(cfg Config, deps Deps) (*Server, error) {
	switch {
	case deps.Service == nil:
		return nil, errors.New("server: Deps.Service is required")
	case deps.Files == nil:
		return nil, errors.New("server: Deps.Files is required")
	case deps.Auth == nil:
		return nil, errors.New("server: Deps.Auth is required")
	}
	if deps.Registry == nil {
		deps.Registry = NewRegistry()
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	s := &Server{cfg: cfg.withDefaults(), deps: deps, log: deps.Logger}
	s.stopping, s.beginShutdown = context.WithCancel(context.Background())
	s.rate = newAccountLimiter(s.cfg.AccountRate, s.cfg.AccountBurst, deps.Now)
	metrics, err := newEdgeMetrics(deps.Registry)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.metrics = metrics
	gateway, err := s.newGateway(deps.Service)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.grpc = s.newGRPC(deps.Service)
	s.grpcMethods = grpcMethodTable(s.grpc)
	if s.handler, err = s.routeTable(gateway); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return s, nil
}

// routeTable is every HTTP route of the service in one place. Each path
// also goes into a method table, so that a known path asked with a method
// it does not serve answers 405 with Allow (methods.go).
func (s *Server) routeTable(gateway *runtime.ServeMux) (http.Handler, error) {
	mux := http.NewServeMux()
	var methods methodTable
	var err error
	handle := func(method, path string, h http.Handler, answer func(http.ResponseWriter, *http.Request, error)) {
		mux.Handle(method+" "+path, routed(path, h))
		err = errors.Join(err, methods.add(method, path, answer))
		if method == http.MethodGet { // a GET pattern serves HEAD too
			err = errors.Join(err, methods.add(http.MethodHead, path, answer))
		}
	}
	handle("GET", "/healthz", http.HandlerFunc(healthz), s.writeError)
	handle("GET", "/readyz", http.HandlerFunc(s.readyz), s.writeError)
	handle("GET", "/metrics", promhttp.HandlerFor(s.deps.Registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		Registry: s.deps.Registry,
	}), s.writeError)
	handle("GET", "/openapi.yaml", http.HandlerFunc(serveOpenAPI), s.writeError)
	// The upload and download handlers stream; they win over the gateway's
	// patterns for the same paths because ServeMux prefers the more
	// specific pattern.
	handle("POST", uploadRoute, s.authenticate(http.HandlerFunc(s.upload), s.writeUploadError), s.writeUploadError)
	handle("GET", "/v1/files/{id}", s.authenticate(warnQuery(http.HandlerFunc(s.download)), s.writeError), s.writeError)
	handle("GET", "/v1/jobs/{id}/events", s.authenticate(warnQuery(s.progressEvents()), s.writeError), s.writeError)
	// The gateway's bindRequest middleware authenticates and sets the
	// precise route label once a REST route matched. Its routes serve
	// exactly their method (no HEAD).
	mux.Handle("/v1/", routed(routeUnmatched, gateway))
	// Without it ServeMux redirects /v1 to the /v1/ subtree (an HTML 307)
	// instead of answering the JSON 404 of every unknown path.
	mux.Handle("/v1", http.HandlerFunc(s.notFound))
	for _, key := range slices.Sorted(maps.Keys(s.routes)) {
		method, path, _ := strings.Cut(key, " ")
		err = errors.Join(err, methods.add(method, path, s.writeError))
	}
	mux.Handle("/", http.HandlerFunc(s.notFound))
	if err != nil {
		return nil, err
	}
	s.methods = &methods
	return s.answerDeadline(s.observe(s.canonicalOnly(methods.check(mux)))), nil
}

// canonicalOnly answers the JSON 404 of an unknown path for a path with an
// empty, "." or ".." segment (//v1/jobs, /v1/jobs/, /v1/jobs/./x). No route
// has such a path, and letting them through would be worse than a 404:
// ServeMux answers an HTML 307 to the cleaned path, which can name another
// resource (/v1/jobs//result becomes job "result"), and the gateway binds
// an empty segment as an empty id.
func (s *Server) canonicalOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !canonicalPath(r.URL.Path) {
			s.notFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// canonicalPath reports whether path is "/" or "/" followed by non-empty
// segments none of which is "." or "..": the paths ServeMux serves as they
// are rather than redirecting.
func canonicalPath(path string) bool {
	if path == "/" {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/")
	if !ok {
		return false
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// Handler returns the HTTP handler of the whole service, gRPC included
// (gRPC needs HTTP/2, which Serve provides in clear text).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A connection serving a request is not closed to make room for
		// another (connlimit.go).
		defer beginRequest(r.Context()).endRequest()
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			s.serveGRPC(w, r)
			return
		}
		s.handler.ServeHTTP(w, r)
	})
}

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting, lets in-flight requests finish for up to ShutdownTimeout and
// closes what is left. It returns nil after a shutdown caused by ctx.
//
// HTTP/1.1 and HTTP/2 with prior knowledge (h2c, what gRPC clients speak
// without TLS) share the port; net/http's own h2c support does this without
// a connection multiplexer, and gRPC runs as an http.Handler
// (grpc.Server.ServeHTTP), so one http.Server owns every connection and one
// Shutdown drains them all.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	hs := &http.Server{
		Handler:           s.Handler(),
		Protocols:         &protocols,
		ReadHeaderTimeout: 10 * time.Second,
		// No ReadTimeout or WriteTimeout: they would cut long uploads and
		// downloads. Handlers set their own deadlines (idle deadlines while
		// bytes move, a fixed read deadline on REST calls), and every
		// answer's writes are cut when they move nothing for
		// IOIdleTimeout (writedeadline.go).
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	// At most MaxConnections are open; one that arrives at the cap takes
	// the place of the one doing nothing longest (connlimit.go).
	limiter := newConnLimiter(ln, s.cfg.MaxConnections, time.Now, s.metrics.connsReclaimed.Inc)
	hs.ConnState, hs.ConnContext = limiter.ConnState, limiter.ConnContext
	s.conns.Store(limiter)
	ln = limiter
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	select {
	case err := <-errc:
		s.grpc.Stop()
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	s.beginShutdown()
	err := hs.Shutdown(shutdownCtx)
	if err != nil {
		_ = hs.Close()
		err = fmt.Errorf("shutdown: in-flight requests cut after %s: %w", s.cfg.ShutdownTimeout, err)
	}
	<-errc // http.ErrServerClosed
	s.grpc.Stop()
	return err
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.checkReady(r.Context()) != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// checkReady is the readiness check of /readyz and the gRPC health
// service. The cause may name hosts and paths: it goes to the log only.
func (s *Server) checkReady(ctx context.Context) error {
	if s.deps.Ready == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	err := s.deps.Ready(rctx)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "not ready", slog.String("error", err.Error()))
	}
	return err
}

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(openapi.YAML)
}
