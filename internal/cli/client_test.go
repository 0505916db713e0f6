package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/auth"
)

// The client commands are tested against the real service, started in
// this process as `docjobs serve` runs it, on a fresh SQLite database:
// DESIGN §7's integration tests through the service's own client.

// testService is a running docjobs service and the key of its account.
type testService struct {
	base, key string
	// stop stops the service as a signal does and returns what serve
	// returned; the test's cleanup calls it when the test did not.
	stop func() error
}

// startService starts the service; extra are more of its variables, as
// name, value pairs.
func startService(t *testing.T, extra ...string) testService {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the whole service")
	}
	addr, err := freeLocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	key := auth.NewKey()
	vars := map[string]string{
		"DOCJOBS_ADDR": addr, "DOCJOBS_PUBLIC_URL": "http://" + addr, "DOCJOBS_DATA_DIR": migratedDataDir(t),
		"DOCJOBS_API_KEYS": "acme:" + key, "DOCJOBS_ALLOW_PRIVATE_URLS": "true", "DOCJOBS_LOG_LEVEL": "error",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		vars[extra[i]] = extra[i+1]
	}
	serveEnv := &environment{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return vars[k] }}
	cfg, err := serveEnv.config(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, serveEnv, cfg) }()
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			serveErr = <-served
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	base := "http://" + addr
	if err := waitReady(ctx, base, nil); err != nil {
		t.Fatal(err)
	}
	return testService{base: base, key: key, stop: stop}
}

// env is the client's environment for this service.
func (s testService) env(extra ...string) map[string]string {
	env := map[string]string{"DOCJOBS_URL": s.base, "DOCJOBS_API_KEY": s.key, "DOCJOBS_OCR_KEY": testOCRKey}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

const testOCRKey = "ocr-SECRET-0002"

// sourceServer serves docs by path, like a caller's web server.
func sourceServer(t *testing.T, docs map[string]string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, doc)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// resultJSON is the part of GET /v1/jobs/{id}/result the tests read.
type resultJSON struct {
	Result struct {
		Job struct {
			ID, Status, Title, Error string
			SourceURLs               []string `json:"sourceUrls"`
		}
		OCR []struct{ Status, Content string }
		LLM []struct{ Status, SkipReason string }
	}
}

func decodeResult(t *testing.T, out string) resultJSON {
	t.Helper()
	var r resultJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("stdout is not the result JSON: %v\n%s", err, out)
	}
	return r
}

func TestSubmitWaitUploadsAFileUsesAURLAndPrintsTheResult(t *testing.T) {
	s := startService(t)
	file := writeFile(t, "notes.txt", "Quarterly report\n\nRevenue grew by 12 percent.\n")
	src := sourceServer(t, map[string]string{"/memo.txt": "Memo: the meeting moves to Friday.\n"})

	code, out, stderr := run(t, s.env(), "submit", file, src+"/memo.txt", "--wait", "--title", "cli test")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := decodeResult(t, out).Result
	if r.Job.Status != "JOB_STATUS_COMPLETE" || r.Job.Title != "cli test" {
		t.Fatalf("job %s %q, want COMPLETE titled %q\n%s", r.Job.Status, r.Job.Title, "cli test", out)
	}
	if len(r.Job.SourceURLs) != 2 || !strings.HasPrefix(r.Job.SourceURLs[0], s.base+"/v1/files/") || r.Job.SourceURLs[1] != src+"/memo.txt" {
		t.Errorf("sourceUrls = %v, want the upload's URL then the URL as given", r.Job.SourceURLs)
	}
	if len(r.OCR) != 2 || !strings.Contains(r.OCR[0].Content, "Revenue grew by 12 percent.") || !strings.Contains(r.OCR[1].Content, "moves to Friday") {
		t.Errorf("ocr rows do not hold the two files' text: %+v", r.OCR)
	}
	for i, l := range r.LLM {
		if l.Status != "JOB_LLM_STATUS_SKIPPED" || l.SkipReason != "no_prompt" {
			t.Errorf("llm[%d] = %+v, want SKIPPED no_prompt", i, l)
		}
	}
	for _, want := range []string{"uploaded " + file + " (", "job " + r.Job.ID + " created", "job " + r.Job.ID + ": COMPLETE, files finished 2/2"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, secret := range []string{s.key, testOCRKey} {
		if strings.Contains(out+stderr, secret) {
			t.Errorf("a key was printed: %q", secret)
		}
	}
	// The job has ended with its own copy of the upload: the upload no
	// longer counts against the account's quota.
	if !strings.Contains(stderr, "removed the upload "+r.Job.SourceURLs[0]+": the job has ended and keeps its own copy") {
		t.Errorf("stderr does not say the upload was removed:\n%s", stderr)
	}
	uploadGone(t, s, r.Job.SourceURLs[0])
}

// uploadGone checks that the upload at url is no more.
func uploadGone(t *testing.T, s testService, url string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of the upload %s: %d, want 404 (removed)", url, resp.StatusCode)
	}
}

func TestJobsListsAndGetShowsASubmittedJob(t *testing.T) {
	s := startService(t)
	file := writeFile(t, "a.txt", "Alpha.\n")
	code, out, stderr := run(t, s.env(), "submit", file, "--title", "listed one")
	if code != ExitOK {
		t.Fatalf("submit: exit %d: %s", code, stderr)
	}
	id := strings.TrimSpace(out)
	if id == "" || strings.ContainsAny(id, " \n") {
		t.Fatalf("submit without --wait printed %q, want the job id alone", out)
	}

	// The key may come from a file, as a mounted secret.
	keyFile := writeFile(t, "key", s.key+"\n")
	fileEnv := s.env()
	delete(fileEnv, "DOCJOBS_API_KEY")
	fileEnv["DOCJOBS_API_KEY_FILE"] = keyFile
	code, out, stderr = run(t, fileEnv, "jobs")
	if code != ExitOK {
		t.Fatalf("jobs: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], id) || !strings.HasSuffix(lines[1], "listed one") {
		t.Fatalf("jobs table, want a header and the job's row:\n%s", out)
	}

	code, out, stderr = run(t, s.env(), "jobs", "--json")
	var listed []struct{ ID, Title string }
	if code != ExitOK || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || listed[0].ID != id {
		t.Fatalf("jobs --json: exit %d, %s%s", code, out, stderr)
	}
	if code, out, _ = run(t, s.env(), "jobs", "--status", "cancelled"); code != ExitOK || strings.Contains(out, id) {
		t.Errorf("jobs --status cancelled lists the job: exit %d\n%s", code, out)
	}

	code, out, stderr = run(t, s.env(), "get", id)
	var got struct{ ID, Title string }
	if code != ExitOK || json.Unmarshal([]byte(out), &got) != nil || got.ID != id || got.Title != "listed one" {
		t.Fatalf("get: exit %d, %s%s", code, out, stderr)
	}
	if !strings.Contains(out, "\n  \"id\": ") {
		t.Errorf("get does not indent the job:\n%s", out)
	}
	code, out, stderr = run(t, s.env(), "get", id, "--result")
	if code != ExitOK || decodeResult(t, out).Result.Job.ID != id {
		t.Fatalf("get --result: exit %d, %s%s", code, out, stderr)
	}
}

func TestSubmitWaitExitsWithTheJobsFailure(t *testing.T) {
	s := startService(t)
	src := sourceServer(t, map[string]string{})
	code, out, stderr := run(t, s.env(), "submit", src+"/missing.txt", "--wait")
	if code != ExitJobFailed {
		t.Fatalf("exit %d, want %d: %s", code, ExitJobFailed, stderr)
	}
	if r := decodeResult(t, out).Result; r.Job.Status != "JOB_STATUS_FAILED" {
		t.Errorf("printed result has status %s, want the failed job's result", r.Job.Status)
	}
	if !strings.Contains(stderr, "ended JOB_STATUS_FAILED: no file could be recognized") {
		t.Errorf("stderr does not say the job failed and why:\n%s", stderr)
	}
}

// notifyWriter is a stderr that tests may read while a command writes it,
// and that says when a string first appears.
type notifyWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	want   string
	seen   chan struct{} // closed when want is first written
	closed bool
}

func newNotifyWriter(want string) *notifyWriter {
	return &notifyWriter{want: want, seen: make(chan struct{})}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if !w.closed && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
		w.closed = true
	}
	return n, err
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestAnInterruptedWaitLeavesTheJobRunning(t *testing.T) {
	s := startService(t)
	// A source that answers only when the test ends keeps the job running.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })

	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	stderr := newNotifyWriter(": RUNNING, files finished 0/1")
	var out bytes.Buffer
	done := make(chan int, 1)
	env := s.env()
	go func() {
		done <- Run(ctx, []string{"submit", slow.URL + "/slow.txt", "--wait"}, &out, stderr, func(k string) string { return env[k] })
	}()
	select {
	case <-stderr.seen:
	case code := <-done:
		t.Fatalf("submit ended (exit %d) before the job ran: %s", code, stderr.String())
	}
	interrupt() // as Ctrl-C does, through main's signal context
	if code := <-done; code != ExitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, ExitInterrupted, stderr.String())
	}
	var id string
	if _, err := fmt.Sscanf(stderr.String(), "job %s created", &id); err != nil {
		t.Fatalf("stderr does not name the job: %v\n%s", err, stderr.String())
	}
	if want := "stopped waiting; job " + id + " goes on: `docjobs get " + id + "` shows it, `docjobs get " + id + " --result` prints its result"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout holds %q; an interrupted wait has no result to print", out.String())
	}
	code, got, errOut := run(t, env, "get", id)
	if code != ExitOK || !strings.Contains(got, `"status": "JOB_STATUS_RUNNING"`) {
		t.Errorf("after the interrupt the job is not running on: exit %d %s%s", code, got, errOut)
	}
}

func TestClientErrorsSayWhatWentWrong(t *testing.T) {
	s := startService(t)
	file := writeFile(t, "a.txt", "Alpha.\n")
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		{"a wrong key gets the service's message", s.env("DOCJOBS_API_KEY", "dj_wrong"), []string{"jobs"},
			ExitError, "docjobs: missing or invalid API key (HTTP 401)\n"},
		{"a wrong key stops the upload", s.env("DOCJOBS_API_KEY", "dj_wrong"), []string{"submit", file},
			ExitError, "docjobs: upload " + file + ": missing or invalid API key (HTTP 401)\n"},
		{"an unknown job", s.env(), []string{"get", "0190c8a0-0000-7000-8000-000000000000"},
			ExitError, "docjobs: job not found (HTTP 404)\n"},
		{"a refused create", s.env(), []string{"submit", "https://example.com/a.txt", "--idempotency-key", strings.Repeat("k", 300)},
			ExitError, "docjobs: idempotencyKey: "},
		{"an unknown provider is a usage error", s.env(), []string{"submit", "https://example.com/a.txt", "--ocr-provider", "PROVIDER_9"},
			ExitUsage, "docjobs: usage: --ocr-provider PROVIDER_9: want PROVIDER_1 to PROVIDER_8"},
		{"an unknown status is a usage error", s.env(), []string{"jobs", "--status", "bogus"},
			ExitUsage, "docjobs: usage: --status bogus: want NEW, RUNNING, COMPLETE, FAILED or CANCELLED"},
		{"a password in the server URL is refused, not echoed", s.env("DOCJOBS_URL", "http://user:pw-secret@127.0.0.1:1"), []string{"jobs"},
			ExitUsage, "--server / DOCJOBS_URL: no user or password in the URL (the API key is the credential)\n"},
		{"a query in the server URL", s.env("DOCJOBS_URL", "http://127.0.0.1:1?token=abc"), []string{"jobs"},
			ExitUsage, "want the service's base URL, without a query or fragment, got \"http://127.0.0.1:1?…\""},
		{"a password in a server URL that does not parse is not echoed", s.env("DOCJOBS_URL", "http://user:pw-s3cr%zzet@127.0.0.1:1"), []string{"jobs"},
			ExitUsage, "want an http(s) URL like http://localhost:8080, got \"http://…@127.0.0.1:1\""},
		{"a key with a line break", s.env("DOCJOBS_API_KEY", s.key+"\nmore"), []string{"jobs"},
			ExitUsage, "the API key holds a control character (a line break?) at byte "},
		{"an unreachable service names its URL", s.env("DOCJOBS_URL", "http://127.0.0.1:1"), []string{"jobs"},
			ExitError, "cannot reach the service at http://127.0.0.1:1 (--server, DOCJOBS_URL): GET /v1/jobs?"},
		{"the --server flag wins over DOCJOBS_URL", s.env("DOCJOBS_URL", "http://127.0.0.1:1"), []string{"jobs", "--server", s.base},
			ExitOK, ""},
		{"no key", s.env("DOCJOBS_API_KEY", ""), []string{"jobs"},
			ExitUsage, "an API key is required: set DOCJOBS_API_KEY or DOCJOBS_API_KEY_FILE (or --api-key)"},
		{"a key twice", s.env("DOCJOBS_API_KEY_FILE", file), []string{"jobs"},
			ExitUsage, "set DOCJOBS_API_KEY or DOCJOBS_API_KEY_FILE, not both"},
		{"a server that is not a URL", s.env("DOCJOBS_URL", "localhost:8080"), []string{"jobs"},
			ExitUsage, "--server / DOCJOBS_URL: want an http(s) URL"},
		{"two prompts", s.env(), []string{"submit", file, "--prompt", "a", "--prompt", "b", "--neural-type", "PROVIDER_2", "--neural-model", "m"},
			ExitUsage, "one --prompt: the service runs only the first"},
		{"a prompt without a model", s.env(), []string{"submit", file, "--prompt", "a"},
			ExitUsage, "--prompt needs --neural-type and --neural-model"},
		{"no recognition key", s.env("DOCJOBS_OCR_KEY", ""), []string{"submit", file},
			ExitUsage, "a recognition key is required"},
		{"a schema that is not JSON", s.env(), []string{"submit", file, "--schema", file, "--prompt", "a", "--neural-type", "PROVIDER_2", "--neural-model", "m"},
			ExitUsage, "--schema " + file + " is not JSON"},
		{"a schema without a prompt checks nothing", s.env(), []string{"submit", file, "--schema", file},
			ExitUsage, "--schema needs --prompt: without a prompt no model runs"},
		{"get without an id", s.env(), []string{"get"}, ExitUsage, "accepts 1 arg(s), received 0"},
		{"get with an empty id", s.env(), []string{"get", "", "--result"}, ExitUsage, "docjobs: usage: the job id is empty\n"},
		{"submit without a file", s.env(), []string{"submit"}, ExitUsage, "requires at least 1 arg(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := run(t, tt.env, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q (stdout %q)", code, stderr, tt.code, tt.stderr, out)
			}
			for _, secret := range []string{s.key, "pw-s3cr", "token=abc"} {
				if strings.Contains(out+stderr, secret) {
					t.Errorf("a secret was printed: %q", secret)
				}
			}
		})
	}
}

// fakeService answers the client's requests with handler and counts them.
func fakeService(t *testing.T, handler http.HandlerFunc) (env map[string]string, requests *atomic.Int32) {
	t.Helper()
	requests = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return map[string]string{"DOCJOBS_URL": srv.URL, "DOCJOBS_API_KEY": "dj_fake", "DOCJOBS_OCR_KEY": testOCRKey}, requests
}

func TestSubmitChecksEveryFileBeforeUploadingAny(t *testing.T) {
	env, requests := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
	})
	present := writeFile(t, "a.txt", "Alpha.\n")
	missing := filepath.Join(t.TempDir(), "missing.txt")
	code, _, stderr := run(t, env, "submit", present, missing)
	if code != ExitError || !strings.Contains(stderr, missing+": no such file or directory") {
		t.Fatalf("exit %d: %s; want the missing file named", code, stderr)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests were sent; a missing file must stop submit before any upload", n)
	}
}

func TestUploadStreamsTheFileWithItsLength(t *testing.T) {
	content := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB
	file := writeFile(t, "big.txt", content)
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/jobs/upload":
			if r.ContentLength <= int64(len(content)) || len(r.TransferEncoding) != 0 {
				t.Errorf("upload sent Content-Length %d, transfer encoding %v; want the whole body's length", r.ContentLength, r.TransferEncoding)
			}
			_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			part, err := multipart.NewReader(r.Body, params["boundary"]).NextPart()
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(part)
			if part.FormName() != "file" || part.FileName() != "big.txt" || string(got) != content {
				t.Errorf("upload part %q %q of %d bytes, want field file, big.txt and the file's %d bytes", part.FormName(), part.FileName(), len(got), len(content))
			}
			_, _ = io.WriteString(w, `{"url":"http://svc/v1/files/f1","name":"big.txt","size_bytes":1048576}`)
		case "/v1/jobs":
			var req createRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			if len(req.SourceURLs) != 1 || req.SourceURLs[0] != "http://svc/v1/files/f1" || req.OCR.ProviderKey != testOCRKey ||
				req.OCR.Provider != "NEURAL_CLIENT_TYPE_PROVIDER_1" || req.OCR.Model != defaultOCRModel {
				t.Errorf("create request %+v", req)
			}
			_, _ = io.WriteString(w, `{"id":"job-1","status":"JOB_STATUS_NEW"}`)
		}
	})
	code, out, stderr := run(t, env, "submit", file)
	if code != ExitOK || out != "job-1\n" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, stderr)
	}
}

func TestJobsFollowsPagesUpToTheLimit(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		asked = append(asked, q.Get("pageSize")+"/"+q.Get("pageToken")+"/"+q.Get("statusEq"))
		mu.Unlock()
		// The service may answer fewer than asked; the client goes on.
		n := 0
		_, _ = fmt.Sscan(q.Get("pageToken"), &n)
		fmt.Fprintf(w, `{"jobs":[{"id":"j%d","status":"JOB_STATUS_COMPLETE"},{"id":"j%d","status":"JOB_STATUS_COMPLETE"}],"nextPageToken":"%d"}`, n, n+1, n+2)
	})
	code, out, stderr := run(t, env, "jobs", "--limit", "5", "--status", "complete", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var jobs []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || len(jobs) != 5 || jobs[4].ID != "j4" {
		t.Fatalf("jobs --limit 5 printed %v (%v), want j0…j4:\n%s", jobs, err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"5//JOB_STATUS_COMPLETE", "3/2/JOB_STATUS_COMPLETE", "1/4/JOB_STATUS_COMPLETE"}
	if fmt.Sprint(asked) != fmt.Sprint(want) {
		t.Errorf("pages asked %v, want %v", asked, want)
	}
}

func TestWaitOpensTheStreamAgainUntilDone(t *testing.T) {
	var streams atomic.Int32
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/jobs":
			_, _ = io.WriteString(w, `{"id":"job-1","status":"JOB_STATUS_NEW"}`)
		case "/v1/jobs/job-1/events":
			switch streams.Add(1) {
			case 1: // the server ends a stream without done (an hour passed)
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "event: progress\ndata: {\"status\":\"JOB_STATUS_RUNNING\",\"ocrTotal\":1}\n\n")
			case 2: // too many streams open: come back later
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = io.WriteString(w, `{"code":8,"message":"too many open progress streams","details":[]}`)
			default:
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, ": keep-alive\n\n"+
					"event: progress\ndata: {\"status\":\"JOB_STATUS_RUNNING\",\"ocrTotal\":1}\n\n"+
					"event: progress\ndata: {\"status\":\"JOB_STATUS_CANCELLED\",\"ocrDone\":1,\"ocrTotal\":1,\"error\":\"cancelled by the caller\"}\n\n"+
					"event: done\ndata: {\"status\":\"JOB_STATUS_CANCELLED\",\"ocrDone\":1,\"ocrTotal\":1,\"error\":\"cancelled by the caller\"}\n\n")
			}
		case "/v1/jobs/job-1/result":
			_, _ = io.WriteString(w, `{"result":{"job":{"id":"job-1","status":"JOB_STATUS_CANCELLED"}}}`)
		default:
			http.NotFound(w, r)
		}
	})
	code, out, stderr := run(t, env, "submit", "https://example.com/a.txt", "--wait")
	if code != ExitJobCancelled {
		t.Fatalf("exit %d, want %d: %s", code, ExitJobCancelled, stderr)
	}
	if want := `{"result":{"job":{"id":"job-1","status":"JOB_STATUS_CANCELLED"}}}` + "\n"; out != want {
		t.Errorf("stdout %q, want the result as sent and a newline", out)
	}
	// The state a reconnect repeats is shown once.
	want := "job job-1 created\n" +
		"job job-1: RUNNING, files finished 0/1, model rows finished 0/0\n" +
		"docjobs: GET /v1/jobs/job-1/events: too many open progress streams (HTTP 429); asking again in 1s\n" +
		"job job-1: CANCELLED, files finished 1/1, model rows finished 0/0, error: cancelled by the caller\n" +
		"docjobs: job job-1 ended JOB_STATUS_CANCELLED: cancelled by the caller\n"
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
	if n := streams.Load(); n != 3 {
		t.Errorf("%d streams opened, want 3", n)
	}
}

// A create the service refuses made no job: the uploads made for it are
// deleted, or they would count against the account's quota with nothing
// naming them. A retried submit of local files with the same idempotency
// key cannot replay (each run uploads anew) and says so.
func TestARefusedCreateRemovesTheRunsUploads(t *testing.T) {
	s := startService(t)
	file := writeFile(t, "a.txt", "Alpha.\n")

	code, _, stderr := run(t, s.env(), "submit", file, "--prompt", "Summarize.", "--neural-type", "PROVIDER_2", "--neural-model", "gpt-4o-mini")
	if code != ExitError || !strings.Contains(stderr, "neural.apiKey: required when prompts are given") {
		t.Fatalf("exit %d: %s; want the create refused for its missing neural key", code, stderr)
	}
	uploaded := regexp.MustCompile(`uploaded \S+ \(\d+ bytes\): (\S+)`).FindStringSubmatch(stderr)
	if uploaded == nil || !strings.Contains(stderr, "removed the upload "+uploaded[1]) {
		t.Fatalf("stderr does not report the upload and its removal:\n%s", stderr)
	}
	id := uploaded[1][strings.LastIndex(uploaded[1], "/")+1:]
	uploadGone(t, s, s.base+"/v1/files/"+id)

	args := []string{"submit", file, "--idempotency-key", "retry-1"}
	if code, _, stderr := run(t, s.env(), args...); code != ExitOK {
		t.Fatalf("first submit: exit %d: %s", code, stderr)
	}
	code, _, stderr = run(t, s.env(), args...)
	if code != ExitError || !strings.Contains(stderr, "a submit of local files cannot replay the job an earlier run made") {
		t.Fatalf("retried submit of a local file: exit %d: %s; want the replay explained", code, stderr)
	}
}

// TestAnAnswerEchoingTheRequestShowsNoKey: a --server pointing at the
// wrong host, or a proxy in front of the service, may answer with a page
// that echoes the request, headers and body. Whatever the client prints
// of such an answer (an error's message, the note of a wait, a created
// job without an id, --json's output) holds none of the keys it sent: the
// API key, which need not look like one of ours, and both provider keys.
func TestAnAnswerEchoingTheRequestShowsNoKey(t *testing.T) {
	const (
		apiKey    = "operator-chosen-static-key-1234"
		ocrKey    = "sk-ocr-echoed-0123456789abcdef"
		neuralKey = "sk-neural-echoed-0123456789abcd"
	)
	shortWaits(t, time.Millisecond, time.Millisecond, 50*time.Millisecond)
	savedTries := retryTries
	retryTries = 2
	t.Cleanup(func() { retryTries = savedTries })
	echo := func(status int, extra string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			page, _ := json.Marshal(map[string]any{"headers": r.Header, "data": string(body)})
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			w.WriteHeader(status)
			fmt.Fprintf(w, "%s%s", extra, page)
		}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		args    []string
	}{
		{"a 400 page", echo(http.StatusBadRequest, ""), nil},
		{"a 502 page, sent again", echo(http.StatusBadGateway, "<html>upstream: "), nil},
		{"a 429 waited out", echo(http.StatusTooManyRequests, ""), nil},
		{"a 200 without an id", echo(http.StatusOK, ""), nil},
		{"a 200 with an id, printed with --json", func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			page, _ := json.Marshal(map[string]any{"id": "j1", "auth": r.Header.Get("Authorization"), "data": string(body)})
			w.Write(page)
		}, []string{"--json"}},
	}
	t.Run("get of a job", func(t *testing.T) {
		env, _ := fakeService(t, echo(http.StatusOK, ""))
		env["DOCJOBS_API_KEY"] = apiKey
		_, out, stderr := run(t, env, "get", "j1")
		if strings.Contains(out+stderr, apiKey) || !strings.Contains(out, "[key elided]") {
			t.Errorf("stdout %q, stderr %q: want the echo shown without the API key", out, stderr)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, requests := fakeService(t, tt.handler)
			env["DOCJOBS_API_KEY"], env["DOCJOBS_OCR_KEY"], env["DOCJOBS_NEURAL_KEY"] = apiKey, ocrKey, neuralKey
			args := append([]string{"submit", "https://example.com/a.pdf", "--prompt", "Totals?",
				"--neural-type", "PROVIDER_2", "--neural-model", "m"}, tt.args...)
			_, out, stderr := run(t, env, args...)
			if requests.Load() == 0 {
				t.Fatal("nothing was sent")
			}
			for _, key := range []string{apiKey, ocrKey, neuralKey} {
				if strings.Contains(out+stderr, key) {
					t.Errorf("%q was printed: stdout %q, stderr %q", key, out, stderr)
				}
			}
			if !strings.Contains(out+stderr, "[key elided]") {
				t.Errorf("stdout %q, stderr %q: want the echo shown with its keys elided", out, stderr)
			}
		})
	}
}
