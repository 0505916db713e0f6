package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// HealthDeps are what a port without the API reports on.
type HealthDeps struct {
	// Ready is /readyz's check, as Deps.Ready; nil means always ready.
	Ready func(context.Context) error
	// Registry is served at /metrics. Required.
	Registry *prometheus.Registry
	// Logger receives failed readiness checks; nil discards.
	Logger *slog.Logger
}

// Health serves /healthz, /readyz and /metrics, and nothing else, as the
// full Server does: the port of a worker-role process, which serves no
// API but records the provider and stage metrics and needs probes.
type Health struct {
	srv     *Server // only its readiness check
	handler http.Handler
}

// NewHealth builds the health and metrics port.
func NewHealth(deps HealthDeps) (*Health, error) {
	if deps.Registry == nil {
		return nil, errors.New("server: HealthDeps.Registry is required")
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Health{srv: &Server{deps: Deps{Ready: deps.Ready, Registry: deps.Registry}, log: deps.Logger}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", h.srv.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(deps.Registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(deps.Logger.Handler(), slog.LevelWarn),
		Registry: deps.Registry,
	}))
	h.handler = mux
	return h, nil
}

// Handler is the port's HTTP handler.
func (h *Health) Handler() http.Handler { return h.handler }

// healthShutdownTimeout bounds the end of a health port's requests: they
// are probes and scrapes, over in milliseconds.
const healthShutdownTimeout = 5 * time.Second

// Serve serves on ln until ctx ends, then shuts down. It returns nil after
// a shutdown caused by ctx.
func (h *Health) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           h.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(h.srv.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healthShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(shutdownCtx)
	if err != nil {
		_ = hs.Close()
	}
	<-errc // http.ErrServerClosed
	return err
}
