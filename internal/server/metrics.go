package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns a Prometheus registry holding the Go runtime and
// process collectors, ready to pass as Deps.Registry and to NewMetrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Metrics are the pipeline metrics the worker updates. Label values must come
// from small fixed sets (stage names, outcome words, provider slots) so that
// series stay bounded; never put ids or error texts in them.
//
// docjobs_jobs{status} is not here: it is counted in the store when
// /metrics is scraped (a collector registered by the caller), which is
// always current and needs no ticker.
type Metrics struct {
	// StageDuration is docjobs_stage_duration_seconds{stage,outcome}.
	StageDuration *prometheus.HistogramVec
	// ProviderCalls is docjobs_provider_calls_total{provider,outcome}.
	ProviderCalls *prometheus.CounterVec
}

// NewMetrics creates the pipeline metrics and registers them with reg. It
// panics if they are registered already: that is a wiring mistake, made
// once at start.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		StageDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "docjobs_stage_duration_seconds",
			Help: "Duration of pipeline stages (fetch, recognize, model, finalize, webhook) by outcome.",
			// Stages range from a native TXT conversion (milliseconds) to
			// Tesseract or a provider call on a long PDF (minutes).
			Buckets: prometheus.ExponentialBucketsRange(0.005, 600, 14),
		}, []string{"stage", "outcome"}),
		ProviderCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docjobs_provider_calls_total",
			Help: "Calls to recognition and model providers by provider slot and outcome (ok or an error category).",
		}, []string{"provider", "outcome"}),
	}
	reg.MustRegister(m.StageDuration, m.ProviderCalls)
	return m
}

// ObserveStage records one run of a pipeline stage.
func (m *Metrics) ObserveStage(stage, outcome string, d time.Duration) {
	m.StageDuration.WithLabelValues(stage, outcome).Observe(d.Seconds())
}

// ProviderCall counts one call to a provider.
func (m *Metrics) ProviderCall(provider, outcome string) {
	m.ProviderCalls.WithLabelValues(provider, outcome).Inc()
}

// edgeMetrics are the request metrics of this package.
type edgeMetrics struct {
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	grpcRequests *prometheus.CounterVec
	grpcDuration *prometheus.HistogramVec
	// rateLimited counts requests refused by the account rate limit,
	// which the code labels above cannot tell from other 429s.
	rateLimited prometheus.Counter
	// connsReclaimed counts connections closed to make room at the
	// connection cap (connlimit.go).
	connsReclaimed prometheus.Counter
}

// requestBuckets extend the default buckets because uploads and downloads
// of large files legitimately take tens of seconds.
var requestBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

func newEdgeMetrics(reg prometheus.Registerer) (*edgeMetrics, error) {
	m := &edgeMetrics{
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docjobs_http_requests_total",
			Help: "HTTP requests by method, route pattern and status code.",
		}, []string{"method", "route", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "docjobs_http_request_duration_seconds",
			Help:    "HTTP request duration by method and route pattern.",
			Buckets: requestBuckets,
		}, []string{"method", "route"}),
		grpcRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docjobs_grpc_requests_total",
			Help: "gRPC requests by full method name and status code.",
		}, []string{"method", "code"}),
		grpcDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "docjobs_grpc_request_duration_seconds",
			Help:    "gRPC request duration by full method name.",
			Buckets: requestBuckets,
		}, []string{"method"}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "docjobs_account_rate_limited_total",
			Help: "Requests refused because their account exceeded DOCJOBS_ACCOUNT_RATE, REST and gRPC.",
		}),
		connsReclaimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "docjobs_connections_reclaimed_total",
			Help: "Connections closed, idle or held only by keyless streams, to make room for a new one at DOCJOBS_MAX_CONNECTIONS.",
		}),
	}
	for _, c := range []prometheus.Collector{m.httpRequests, m.httpDuration, m.grpcRequests, m.grpcDuration, m.rateLimited, m.connsReclaimed} {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				return nil, fmt.Errorf("register request metrics (one Server per registry): %w", err)
			}
			return nil, fmt.Errorf("register request metrics: %w", err)
		}
	}
	return m, nil
}

func (m *edgeMetrics) observeHTTP(method, route string, code int, d time.Duration) {
	method = methodLabel(method)
	m.httpRequests.WithLabelValues(method, route, strconv.Itoa(code)).Inc()
	m.httpDuration.WithLabelValues(method, route).Observe(d.Seconds())
}

// methodLabel keeps arbitrary client-chosen method strings out of the labels.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return method
	}
	return "OTHER"
}
