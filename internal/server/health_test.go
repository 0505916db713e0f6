package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestTheHealthPortServesProbesAndMetricsOnly(t *testing.T) {
	ready := errors.New("database gone")
	var down atomic.Bool
	h, err := NewHealth(HealthDeps{Registry: NewRegistry(), Ready: func(context.Context) error {
		if down.Load() {
			return ready
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tt := range []struct {
		path, want string
		code       int
	}{
		{"/healthz", "ok", http.StatusOK},
		{"/readyz", "ok", http.StatusOK},
		{"/metrics", "go_goroutines", http.StatusOK},
		{"/v1/jobs", "", http.StatusNotFound},
		{"/openapi.yaml", "", http.StatusNotFound},
	} {
		if code, body := get(tt.path); code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("GET %s = %d %q, want %d with %q", tt.path, code, body, tt.code, tt.want)
		}
	}
	down.Store(true)
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("GET /readyz with the database gone = %d, want 503", code)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz with the database gone = %d, want 200", code)
	}
}
