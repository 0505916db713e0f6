package server

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// A key kept in a database that cannot be read (here: closed) is neither
// good nor bad: every transport answers UNAVAILABLE with a retry delay, and
// logs the cause under the id the answer names, never the key. A 401 would
// tell the client to give up on a good key.
func TestAKeyStoreThatCannotBeReadAnswersUnavailableNotUnauthenticated(t *testing.T) {
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "docjobs.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	const stored = "dj_stored-key-of-carol"
	if err := st.PutAPIKey(t.Context(), "carol", auth.HashKey(stored)); err != nil {
		t.Fatal(err)
	}
	env := startServer(t, func(_ *Config, d *Deps) { d.Auth = auth.NewAuthenticator(st) })
	if resp := env.doJSON("GET", "/v1/jobs", stored, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("store up: status %d: %s", resp.StatusCode, readBody(t, resp))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	rest := []struct {
		name, method, path string
		withDetails        bool
	}{
		{"REST through the gateway", "GET", "/v1/jobs", true},
		{"upload", "POST", "/v1/jobs/upload", false},
	}
	for _, tt := range rest {
		t.Run(tt.name, func(t *testing.T) {
			resp := env.doJSON(tt.method, tt.path, stored, "")
			if got := resp.Header.Get("Retry-After"); got != "5" {
				t.Errorf("Retry-After = %q, want 5", got)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != "" {
				t.Errorf("WWW-Authenticate = %q on an answer that is no 401", got)
			}
			m := wantStatusBody(t, resp, http.StatusServiceUnavailable, codes.Unavailable, tt.withDetails)
			wantLoggedUnavailable(t, env, m["message"].(string), stored)
		})
	}
	t.Run("gRPC", func(t *testing.T) {
		client, _, as := grpcClient(t, env)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := client.ListJobs(as(ctx, stored), &docjobsv1.ListJobsRequest{})
		st := status.Convert(err)
		if st.Code() != codes.Unavailable {
			t.Fatalf("ListJobs: %v; want Unavailable", err)
		}
		wantLoggedUnavailable(t, env, st.Message(), stored)
	})
}

// wantLoggedUnavailable checks msg for the "retry later (id=…)" form and
// that a log line under that id names the cause and not the key.
func wantLoggedUnavailable(t *testing.T, env *testEnv, msg, key string) {
	t.Helper()
	const prefix = "API keys could not be checked; retry later (id="
	if !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, ")") {
		t.Fatalf("message %q, want %q…)", msg, prefix)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(msg, prefix), ")")
	if strings.Contains(env.logs.String(), key) {
		t.Errorf("the log carries the key:\n%s", env.logs.String())
	}
	for _, rec := range env.logs.Records(t) {
		if rec["error_id"] == id {
			if e, _ := rec["error"].(string); !strings.Contains(e, "database is closed") {
				t.Errorf("logged error %q does not name the cause", e)
			}
			return
		}
	}
	t.Errorf("no log line with error_id %s:\n%s", id, env.logs.String())
}
