// Package e2e drives the real docjobs binary over HTTP, on SQLite and on
// PostgreSQL, the way a caller would.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var docjobsBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "docjobs-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	docjobsBinary = filepath.Join(dir, "docjobs")
	build := exec.Command("go", "build", "-o", docjobsBinary, "github.com/docjobs/docjobs/cmd/docjobs")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build docjobs:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Every test runs its own server process on its own port, data directory
// and database (a fresh PostgreSQL schema), and mostly waits on it, so the
// tests run in parallel (t.Parallel at the top of each).

// Two accounts every test server knows.
const (
	keyA = "dj_test_key_account_a_0123456789"
	keyB = "dj_test_key_account_b_9876543210"
)

// backend names a database the binary runs on.
type backend struct {
	name string
	// databaseURL returns DOCJOBS_DATABASE_URL for a fresh database ("" = the SQLite default).
	databaseURL func(t *testing.T) string
}

// backends are SQLite always and PostgreSQL when DOCJOBS_TEST_POSTGRES_URL is set.
func backends(t *testing.T) []backend {
	t.Helper()
	bs := []backend{{name: "sqlite", databaseURL: func(*testing.T) string { return "" }}}
	if pg := os.Getenv("DOCJOBS_TEST_POSTGRES_URL"); pg != "" {
		bs = append(bs, backend{name: "postgres", databaseURL: func(t *testing.T) string { return freshSchema(t, pg) }})
	}
	return bs
}

// schemas counts the schemas freshSchema made.
var schemas atomic.Int64

// freshSchema creates a schema for one test and returns a URL whose
// search_path points at it.
func freshSchema(t *testing.T, base string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect postgres: %v", err)
	}
	defer conn.Close(ctx)
	// Tests run in parallel: the clock alone could name two schemas alike.
	schema := fmt.Sprintf("e2e_%d_%d", time.Now().UnixNano(), schemas.Add(1))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

// server is one running docjobs process.
type server struct {
	t       *testing.T
	cmd     *exec.Cmd
	base    string
	dataDir string
	env     []string
	logs    *logBuffer
	exited  chan struct{}
	// readyLine, when set, is a log line that says the process is ready
	// (for processes without a port); else /readyz is polled.
	readyLine string
}

// logBuffer collects a process's output while tests read it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServer runs `docjobs serve` with a fresh data directory.
func startServer(t *testing.T, databaseURL string, extraEnv ...string) *server {
	t.Helper()
	dataDir := t.TempDir()
	addr := freeAddr(t)
	env := append(os.Environ(),
		"DOCJOBS_ADDR="+addr,
		"DOCJOBS_PUBLIC_URL=http://"+addr,
		"DOCJOBS_DATA_DIR="+dataDir,
		"DOCJOBS_API_KEYS=acct-a:"+keyA+",acct-b:"+keyB,
		"DOCJOBS_ALLOW_PRIVATE_URLS=true",
		"DOCJOBS_NODE_ID=e2e-node",
	)
	if databaseURL != "" {
		env = append(env, "DOCJOBS_DATABASE_URL="+databaseURL)
	}
	env = append(env, extraEnv...)
	s := &server{t: t, base: "http://" + addr, dataDir: dataDir, env: env}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *server) start() {
	s.t.Helper()
	s.logs = &logBuffer{}
	s.cmd = exec.Command(docjobsBinary, "serve")
	s.cmd.Env = s.env
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start docjobs: %v", err)
	}
	s.exited = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			s.t.Fatalf("docjobs exited at start:\n%s", s.logs)
		default:
		}
		if s.readyLine != "" {
			if strings.Contains(s.logs.String(), s.readyLine) {
				return
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		resp, err := http.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("docjobs not ready within 30s:\n%s", s.logs)
}

// kill is kill -9: no shutdown path runs.
func (s *server) kill() {
	s.t.Helper()
	_ = s.cmd.Process.Kill()
	<-s.exited
}

func (s *server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	if s.t.Failed() {
		s.t.Logf("docjobs logs:\n%s", s.logs)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// response is a raw answer: status, headers and body.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// do sends a request as the holder of key ("" = no Authorization header).
func (s *server) do(method, path, key string, body any) response {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

// mustDo is do that fails the test unless the status is want.
func (s *server) mustDo(want int, method, path, key string, body any) map[string]any {
	s.t.Helper()
	r := s.do(method, path, key, body)
	if r.status != want {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r.json(s.t)
}

// waitTerminal polls the job until it ends and returns it.
func (s *server) waitTerminal(id, key string, within time.Duration) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for {
		j := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id, key, nil)
		switch j["status"] {
		case "JOB_STATUS_COMPLETE", "JOB_STATUS_FAILED", "JOB_STATUS_CANCELLED":
			return j
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("job %s not terminal after %s: %v", id, within, j)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sources serves named documents over HTTP for jobs to fetch.
func sources(t *testing.T, docs map[string]string) string {
	t.Helper()
	mux := http.NewServeMux()
	for name, body := range docs {
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, body)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}
