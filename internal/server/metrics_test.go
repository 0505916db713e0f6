package server

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gathered returns the metric of family name whose labels include want.
func gathered(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metrics
				}
			}
			return m
		}
	}
	t.Fatalf("no %s%v gathered", name, want)
	return nil
}

func TestPipelineMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)

	t.Run("stage durations are observed by stage and outcome", func(t *testing.T) {
		m.ObserveStage("recognize", "ok", 1500*time.Millisecond)
		m.ObserveStage("recognize", "ok", 500*time.Millisecond)
		h := gathered(t, reg, "docjobs_stage_duration_seconds", map[string]string{"stage": "recognize", "outcome": "ok"}).GetHistogram()
		if h.GetSampleCount() != 2 || h.GetSampleSum() != 2 {
			t.Errorf("count %d sum %v, want 2 and 2", h.GetSampleCount(), h.GetSampleSum())
		}
	})
	t.Run("provider calls are counted by provider and outcome", func(t *testing.T) {
		m.ProviderCall("NEURAL_CLIENT_TYPE_PROVIDER_1", "rate_limit")
		c := gathered(t, reg, "docjobs_provider_calls_total", map[string]string{"provider": "NEURAL_CLIENT_TYPE_PROVIDER_1", "outcome": "rate_limit"})
		if c.GetCounter().GetValue() != 1 {
			t.Errorf("counter = %v, want 1", c.GetCounter().GetValue())
		}
	})
	t.Run("registering twice on one registry is a wiring mistake that panics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("second NewMetrics did not panic")
			}
		}()
		NewMetrics(reg)
	})
	t.Run("pipeline and request metrics are served from one registry", func(t *testing.T) {
		reg := NewRegistry()
		m := NewMetrics(reg)
		m.ObserveStage("fetch", "ok", time.Second)
		m.ProviderCall("NEURAL_CLIENT_TYPE_PROVIDER_8", "ok")
		env := startServer(t, func(_ *Config, d *Deps) { d.Registry = reg })
		body := readBody(t, env.do("GET", "/metrics", "", "", nil))
		for _, want := range []string{
			"go_goroutines",
			`docjobs_stage_duration_seconds_count{outcome="ok",stage="fetch"} 1`,
			`docjobs_provider_calls_total{outcome="ok",provider="NEURAL_CLIENT_TYPE_PROVIDER_8"} 1`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}
