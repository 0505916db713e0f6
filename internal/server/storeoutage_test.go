package server

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"gocloud.dev/blob/fileblob"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/api"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/secret"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// A request with a static key (DOCJOBS_API_KEYS, checked in memory) passes
// authentication during a database outage and meets the outage in the
// service: it is UNAVAILABLE with a retry delay on every transport, the
// cause logged under the id the answer names, as a stored key's check is,
// not INTERNAL (500), which clients do not retry.
func TestAStaticKeysRequestDuringADatabaseOutageIsUnavailable(t *testing.T) {
	outages := []struct {
		name string
		// open returns a store and a func that makes it unreachable.
		open func(t *testing.T) (store.Store, func())
		// causes are what the logged error may name: a request on a
		// pooled connection meets it cut, a new one is refused.
		causes []string
	}{
		{"postgres, server gone from its port", openPostgresBehindProxy,
			[]string{"failed to connect", "unexpected EOF", "conn closed", "connection reset"}},
		{"sqlite, store closed", openClosableSQLite, []string{"database is closed"}},
	}
	for _, o := range outages {
		t.Run(o.name, func(t *testing.T) {
			st, cutOff := o.open(t)
			svc := outageService(t, st)
			j := &job.Job{ID: "0190a3a8-7c1e-7d4a-9a1e-3f0b6b1c2d3e", AccountID: "alice", Status: job.StatusNew,
				SourceURLs: []string{"https://example.com/a"}, Created: time.Now()}
			if _, _, err := st.CreateJob(t.Context(), store.CreateJobParams{Job: j}); err != nil {
				t.Fatal(err)
			}
			env := startServer(t, func(_ *Config, d *Deps) { d.Service, d.Files, d.Results = svc, svc, svc })
			if resp := env.doJSON("GET", "/v1/jobs/"+j.ID, keyAlice, ""); resp.StatusCode != http.StatusOK {
				t.Fatalf("database up: status %d: %s", resp.StatusCode, readBody(t, resp))
			}
			cutOff()

			for _, r := range []struct{ method, path, body string }{
				{"GET", "/v1/jobs", ""},
				{"GET", "/v1/jobs/" + j.ID, ""},
				{"GET", "/v1/jobs/" + j.ID + "/result", ""},
				{"POST", "/v1/jobs/" + j.ID + ":cancel", ""},
				{"POST", "/v1/jobs", `{"sourceUrls":["https://example.com/b.txt"],
					"neural":{"type":"NEURAL_CLIENT_TYPE_PROVIDER_2","model":"gpt-4o-mini","apiKey":"sk-neural"},
					"ocr":{"provider":"NEURAL_CLIENT_TYPE_PROVIDER_1","model":"mistral-ocr-latest","providerKey":"ocr-key"}}`},
			} {
				t.Run("REST "+r.method+" "+r.path, func(t *testing.T) {
					resp := env.doJSON(r.method, r.path, keyAlice, r.body)
					if got := resp.Header.Get("Retry-After"); got != "5" {
						t.Errorf("Retry-After = %q, want 5", got)
					}
					m := wantStatusBody(t, resp, http.StatusServiceUnavailable, codes.Unavailable, true)
					wantLoggedOutage(t, env, m["message"].(string), o.causes)
				})
			}
			t.Run("gRPC", func(t *testing.T) {
				client, _, as := grpcClient(t, env)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				calls := map[string]func() error{
					"GetJob": func() error {
						_, err := client.GetJob(as(ctx, keyAlice), &docjobsv1.GetJobRequest{Id: j.ID})
						return err
					},
					"GetJobResult": func() error {
						_, err := client.GetJobResult(as(ctx, keyAlice), &docjobsv1.GetJobResultRequest{Id: j.ID})
						return err
					},
				}
				for name, call := range calls {
					st := status.Convert(call())
					if st.Code() != codes.Unavailable {
						t.Errorf("%s: %v; want Unavailable", name, st.Err())
						continue
					}
					wantLoggedOutage(t, env, st.Message(), o.causes)
				}
			})
		})
	}
}

// wantLoggedOutage checks msg for the "retry later (id=…)" form and that
// a log line under that id names one of the causes.
func wantLoggedOutage(t *testing.T, env *testEnv, msg string, causes []string) {
	t.Helper()
	const prefix = "the database could not be reached; retry later (id="
	if !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, ")") {
		t.Fatalf("message %q, want %q…)", msg, prefix)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(msg, prefix), ")")
	for _, rec := range env.logs.Records(t) {
		if rec["error_id"] == id {
			e, _ := rec["error"].(string)
			if !slices.ContainsFunc(causes, func(c string) bool { return strings.Contains(e, c) }) {
				t.Errorf("logged error %q names none of the causes %q", e, causes)
			}
			return
		}
	}
	t.Errorf("no log line with error_id %s:\n%s", id, env.logs.String())
}

// outageService is the API service over st, as serve wires it.
func outageService(t *testing.T, st store.Store) *api.Service {
	t.Helper()
	dir := t.TempDir()
	sealer, err := secret.Open(filepath.Join(dir, "master.keyset"))
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := fileblob.OpenBucket(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bucket.Close() })
	svc, err := api.New(api.Config{PublicURL: "http://docjobs.test"}, api.Deps{
		Store: st, Sealer: sealer, Bucket: bucket,
		FirstStage: func(string, int) []river.InsertManyParams { return nil },
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// openPostgresBehindProxy opens a store that reaches PostgreSQL through a
// TCP proxy; cutting off closes the proxy's port and every connection
// through it, as a database server that went away.
func openPostgresBehindProxy(t *testing.T) (store.Store, func()) {
	t.Helper()
	raw, schema := pgtest.Schema(t)
	proxied, cut := pgtest.BehindProxy(t, raw)
	st, err := postgres.Open(t.Context(), postgres.Config{URL: proxied, Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, cut
}

// openClosableSQLite opens a SQLite store; cutting off closes it.
func openClosableSQLite(t *testing.T) (store.Store, func()) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "docjobs.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = st.Close()
		}
	})
	return st, func() {
		closed = true
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
}
