package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/logtest"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// The client against a service that is busy, restarting, partly failing,
// or another implementation of the contract (spec/interface.md).

// shortWaits makes the client's waits between attempts short for the
// test, and puts them back after it.
func shortWaits(t *testing.T, backoff, maxBackoff, giveUp time.Duration) {
	t.Helper()
	saved := []time.Duration{followBackoff, followMaxBackoff, followGiveUp, pollMaxInterval}
	followBackoff, followMaxBackoff, followGiveUp, pollMaxInterval = backoff, maxBackoff, giveUp, maxBackoff
	t.Cleanup(func() {
		followBackoff, followMaxBackoff, followGiveUp, pollMaxInterval = saved[0], saved[1], saved[2], saved[3]
	})
}

// manyFiles writes n small text files and returns their paths.
func manyFiles(t *testing.T, n int) []string {
	t.Helper()
	dir := t.TempDir()
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("f%02d.txt", i))
		if err := os.WriteFile(paths[i], []byte(fmt.Sprintf("Document %d.\n", i)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// A submit of more files than the account's burst used to stop at the
// first 429 and leave its uploads behind: each request now waits out the
// service's Retry-After, and the job gets every file.
func TestSubmitOfManyFilesWaitsOutTheAccountRateLimit(t *testing.T) {
	s := startService(t, "DOCJOBS_ACCOUNT_RATE", "4", "DOCJOBS_ACCOUNT_BURST", "3")
	files := manyFiles(t, 8)
	code, out, stderr := run(t, s.env(), append(append([]string{"submit"}, files...), "--wait")...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := decodeResult(t, out).Result
	if r.Job.Status != "JOB_STATUS_COMPLETE" || len(r.OCR) != len(files) {
		t.Fatalf("job %s with %d files, want COMPLETE with %d", r.Job.Status, len(r.OCR), len(files))
	}
	if !strings.Contains(stderr, "(DOCJOBS_ACCOUNT_RATE); retry after 1s (HTTP 429); asking again in 1s") {
		t.Errorf("stderr does not say that the client waited for the rate limit:\n%s", stderr)
	}

	// jobs and get --result wait too: a burst of them is listed in full.
	for range 4 {
		if code, _, stderr := run(t, s.env(), "jobs", "--limit", "1"); code != ExitOK {
			t.Fatalf("jobs: exit %d: %s", code, stderr)
		}
	}
	if code, out, stderr := run(t, s.env(), "get", r.Job.ID, "--result"); code != ExitOK || decodeResult(t, out).Result.Job.ID != r.Job.ID {
		t.Fatalf("get --result after a burst: exit %d: %s", code, stderr)
	}
}

// A create refused after many uploads deletes every one, though the
// deletes come right after the uploads used up the account's rate.
func TestARefusedCreateRemovesEveryUploadDespiteTheRateLimit(t *testing.T) {
	s := startService(t, "DOCJOBS_ACCOUNT_RATE", "4", "DOCJOBS_ACCOUNT_BURST", "3")
	files := manyFiles(t, 6)
	args := append(append([]string{"submit"}, files...), "--prompt", "Summarize.", "--neural-type", "PROVIDER_2", "--neural-model", "m")
	code, _, stderr := run(t, s.env(), args...)
	if code != ExitError || !strings.Contains(stderr, "neural.apiKey: required when prompts are given") {
		t.Fatalf("exit %d: %s; want the create refused for its missing neural key", code, stderr)
	}
	if n := strings.Count(stderr, "removed the upload "); n != len(files) || strings.Contains(stderr, "could not remove") {
		t.Fatalf("%d of %d uploads removed:\n%s", n, len(files), stderr)
	}
}

// Each kind of request of the client waits out a 429 or a 503 that says
// when, gives up on a service that stays busy, and takes a 429 that does
// not say when (the upload quota's) as final.
func TestEveryRequestWaitsOutComeBackLater(t *testing.T) {
	shortWaits(t, time.Millisecond, 10*time.Millisecond, time.Second)
	savedTries := retryTries
	retryTries = 3
	t.Cleanup(func() { retryTries = savedTries })
	var mu sync.Mutex
	seen := map[string]int{}
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		key := r.Method + " " + r.URL.Path
		seen[key]++
		n := seen[key]
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		switch {
		case r.URL.Path == "/v1/jobs/busy":
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		case r.URL.Path == "/v1/jobs/quota":
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"code":8,"message":"account is over its upload quota"}`)
			return
		case n == 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"code":8,"message":"slow down"}`)
			return
		case n == 2 && r.Method == http.MethodPost && r.URL.Path == "/v1/jobs":
			// A 503 that says when refused the create: sending it again
			// cannot make a second job.
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		switch r.URL.Path {
		case "/v1/jobs/upload":
			_, _ = io.WriteString(w, `{"url":"http://svc/v1/files/f1","name":"a.txt","size_bytes":7}`)
		case "/v1/jobs":
			if r.Method == http.MethodPost {
				_, _ = io.WriteString(w, `{"id":"job-1","status":"JOB_STATUS_NEW"}`)
				return
			}
			_, _ = io.WriteString(w, `{"jobs":[{"id":"job-1","status":"JOB_STATUS_COMPLETE"}]}`)
		case "/v1/jobs/job-1/events":
			_, _ = io.WriteString(w, "event: done\ndata: {\"status\":\"JOB_STATUS_COMPLETE\",\"ocrDone\":1,\"ocrTotal\":1}\n\n")
		case "/v1/jobs/job-1/result":
			_, _ = io.WriteString(w, `{"result":{"job":{"id":"job-1"}}}`)
		default:
			http.NotFound(w, r)
		}
	})
	file := writeFile(t, "a.txt", "Alpha.\n")
	if code, out, stderr := run(t, env, "submit", file, "--wait"); code != ExitOK || !strings.Contains(out, `"id":"job-1"`) {
		t.Fatalf("submit --wait: exit %d, stdout %q: %s", code, out, stderr)
	}
	if code, out, stderr := run(t, env, "jobs"); code != ExitOK || !strings.Contains(out, "job-1") {
		t.Fatalf("jobs: exit %d, stdout %q: %s", code, out, stderr)
	}
	mu.Lock()
	for _, key := range []string{"POST /v1/jobs/upload", "POST /v1/jobs", "GET /v1/jobs/job-1/events", "GET /v1/jobs/job-1/result", "GET /v1/jobs"} {
		if seen[key] < 2 {
			t.Errorf("%s was sent %d times, want again after its 429", key, seen[key])
		}
	}
	mu.Unlock()

	code, _, stderr := run(t, env, "get", "busy")
	if code != ExitError || !strings.HasSuffix(stderr, "docjobs: Too Many Requests (HTTP 429, retry after 1s)\n") {
		t.Errorf("a service that stays busy: exit %d: %q, want the 429 after the retries", code, stderr)
	}
	code, _, stderr = run(t, env, "get", "quota")
	if code != ExitError || !strings.Contains(stderr, "over its upload quota (HTTP 429)") {
		t.Errorf("a 429 without Retry-After: exit %d: %q, want it at once", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["GET /v1/jobs/busy"] != retryTries {
		t.Errorf("a 429 that does not end was asked %d times, want retryTries (%d)", seen["GET /v1/jobs/busy"], retryTries)
	}
	if seen["GET /v1/jobs/quota"] != 1 {
		t.Errorf("a 429 without Retry-After was asked %d times, want once", seen["GET /v1/jobs/quota"])
	}
}

// restartingService serves handler on one address, and can close the
// address for a while, as a restarting `docjobs serve` does.
type restartingService struct {
	t       *testing.T
	addr    string
	handler http.Handler
	mu      sync.Mutex
	srv     *http.Server
}

func newRestartingService(t *testing.T, handler http.Handler) *restartingService {
	t.Helper()
	addr, err := freeLocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	r := &restartingService{t: t, addr: addr, handler: handler}
	r.start()
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		_ = r.srv.Close()
	})
	return r
}

func (r *restartingService) start() {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Error(err)
		return
	}
	srv := &http.Server{Handler: r.handler}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// restart closes the port, cutting open connections, and opens it again
// after down.
func (r *restartingService) restart(down time.Duration) {
	r.mu.Lock()
	_ = r.srv.Close()
	r.mu.Unlock()
	time.AfterFunc(down, r.start)
}

// A restart of the service closes its port for its drain (up to 30 s):
// the wait reconnects with a growing backoff for followGiveUp, not ten
// tries, and the job's end is seen once the service is back.
func TestWaitSurvivesARestartOfTheService(t *testing.T) {
	shortWaits(t, 10*time.Millisecond, 100*time.Millisecond, 10*time.Second)
	var mu sync.Mutex
	streams := 0
	var svc *restartingService
	svc = newRestartingService(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/jobs":
			_, _ = io.WriteString(w, `{"id":"job-1","status":"JOB_STATUS_NEW"}`)
		case "/v1/jobs/job-1/events":
			mu.Lock()
			streams++
			n := streams
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: progress\ndata: {\"status\":\"JOB_STATUS_RUNNING\",\"ocrTotal\":1}\n\n")
			if n == 1 {
				w.(http.Flusher).Flush()
				svc.restart(1500 * time.Millisecond) // far more than ten tries of the backoff
				<-r.Context().Done()
				return
			}
			_, _ = io.WriteString(w, "event: done\ndata: {\"status\":\"JOB_STATUS_COMPLETE\",\"ocrDone\":1,\"ocrTotal\":1}\n\n")
		case "/v1/jobs/job-1/result":
			_, _ = io.WriteString(w, `{"result":{"job":{"id":"job-1","status":"JOB_STATUS_COMPLETE"}}}`)
		}
	}))
	env := map[string]string{"DOCJOBS_URL": "http://" + svc.addr, "DOCJOBS_API_KEY": "dj_fake", "DOCJOBS_OCR_KEY": testOCRKey}
	code, out, stderr := run(t, env, "submit", "https://example.com/a.txt", "--wait")
	if code != ExitOK || !strings.Contains(out, "JOB_STATUS_COMPLETE") {
		t.Fatalf("exit %d, stdout %q: %s", code, out, stderr)
	}
}

// When the wait gives up, for any reason but an interrupt, it says that
// the job goes on and how to look at it.
func TestAWaitThatGivesUpSaysTheJobGoesOn(t *testing.T) {
	shortWaits(t, time.Millisecond, 5*time.Millisecond, 200*time.Millisecond)
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/jobs":
			_, _ = io.WriteString(w, `{"id":"job-1","status":"JOB_STATUS_NEW"}`)
		default: // a proxy whose service stays down
			w.WriteHeader(http.StatusBadGateway)
		}
	})
	code, _, stderr := run(t, env, "submit", "https://example.com/a.txt", "--wait")
	want := "Bad Gateway (HTTP 502); stopped waiting, the job job-1 goes on: `docjobs get job-1` shows it, `docjobs get job-1 --result` prints its result\n"
	if code != ExitError || !strings.HasSuffix(stderr, want) {
		t.Fatalf("exit %d: %q; want exit %d ending %q", code, stderr, ExitError, want)
	}
}

// The progress stream is docjobs' own: against a service of the contract
// without it, --wait polls GET /v1/jobs/{id} to the job's end.
func TestWaitPollsAServiceWithoutTheEventStream(t *testing.T) {
	shortWaits(t, time.Millisecond, 5*time.Millisecond, time.Second)
	status := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
	}
	for _, tt := range []struct {
		name   string
		events http.HandlerFunc
		says   string
	}{
		{"404", status(http.StatusNotFound), "the service has no progress stream ("},
		{"405", status(http.StatusMethodNotAllowed), "the service has no progress stream ("},
		{"501", status(http.StatusNotImplemented), "the service has no progress stream ("},
		// Before, each of these was opened again for ever.
		{"429 for too many streams", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"code":8,"message":"too many progress streams"}`)
		}, "the service keeps no more progress streams for now ("},
		{"an empty 200", status(http.StatusOK), "the progress stream sent nothing readable"},
		{"a page that is no stream", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html><body>Welcome</body></html>\n")
		}, "the progress stream sent nothing readable"},
		{"an event that does not decode", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: progress\ndata: {not json\n\n")
		}, "the progress stream sent nothing readable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var reads atomic.Int32
			env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/v1/jobs":
					_, _ = io.WriteString(w, `{"id":"j1","status":"JOB_STATUS_NEW"}`)
				case "/v1/jobs/j1":
					n := reads.Add(1)
					status := map[bool]string{true: "JOB_STATUS_RUNNING", false: "JOB_STATUS_COMPLETE"}[n < 3]
					fmt.Fprintf(w, `{"job":{"id":"j1","status":%q}}`, status)
				case "/v1/jobs/j1/result":
					_, _ = io.WriteString(w, `{"result":{"job":{"id":"j1","status":"JOB_STATUS_COMPLETE"},"ocr":[{"status":"JOB_OCR_STATUS_DONE"}]}}`)
				default:
					tt.events(w, r)
				}
			})
			code, out, stderr := run(t, env, "submit", "https://example.com/a.pdf", "--wait")
			if code != ExitOK || !strings.Contains(out, `"id":"j1"`) {
				t.Fatalf("exit %d, stdout %q: %s", code, out, stderr)
			}
			for _, want := range []string{tt.says, "reading GET /v1/jobs/j1 instead", "job j1: RUNNING\n", "job j1: COMPLETE\n"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
	t.Run("a job that is gone", func(t *testing.T) {
		env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/jobs" {
				_, _ = io.WriteString(w, `{"id":"j1","status":"JOB_STATUS_NEW"}`)
				return
			}
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"code":5,"message":"job not found"}`)
		})
		code, _, stderr := run(t, env, "submit", "https://example.com/a.pdf", "--wait")
		if code != ExitError || !strings.Contains(stderr, "follow job j1: job not found (HTTP 404)") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
}

// A job is COMPLETE when any file could be recognized (DESIGN §4), even
// when its model rows all FAILED: the wait says so, and exits with
// ExitRowsFailed, not 0.
func TestAJobWhoseModelRowsFailedDoesNotLookLikeSuccess(t *testing.T) {
	provider := sourceServer(t, nil) // answers 404 to every call: a model provider that refuses
	s := startService(t, "DOCJOBS_PROVIDER_2_BASE_URL", provider)
	file := writeFile(t, "a.txt", "Total: 12 EUR.\n")
	code, out, stderr := run(t, s.env("DOCJOBS_NEURAL_KEY", "sk-wrong"), "submit", file, "--prompt", "List the totals.",
		"--neural-type", "PROVIDER_2", "--neural-model", "gpt-4o-mini", "--wait")
	r := decodeResult(t, out).Result
	if r.Job.Status != "JOB_STATUS_COMPLETE" || len(r.LLM) != 1 || r.LLM[0].Status != "JOB_LLM_STATUS_FAILED" {
		t.Fatalf("job %s, llm %+v: want COMPLETE with its model row FAILED\n%s", r.Job.Status, r.LLM, stderr)
	}
	if code != ExitRowsFailed {
		t.Errorf("exit %d, want ExitRowsFailed (%d)", code, ExitRowsFailed)
	}
	for _, want := range []string{"COMPLETE, files finished 1/1, model rows finished 1/1",
		"docjobs: job " + r.Job.ID + " is COMPLETE, but 1 of 1 model rows FAILED: the result's ocr[].error and llm[].error say why\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// A value nested a million levels deep (a rawData of brackets, or a
// server that is not docjobs) costs the scanner a counter, not a frame a
// level, and the rows after it still count. Twenty thousand levels show
// it: a frame a level would be a stack of 20,000 frames, not at most 64,
// and the scan costs a fiftieth of a million levels' 5–10 s under -race.
func TestRowStatusesHoldsNoFrameBeyondItsDepth(t *testing.T) {
	const depth = 20_000
	deep := strings.Repeat(`[{"status":"JOB_LLM_STATUS_FAILED","a":`, depth) + `1` + strings.Repeat(`}]`, depth)
	result := `{"result":{"llm":[{"status":"JOB_LLM_STATUS_DONE","rawData":` + deep + `},{"status":"JOB_LLM_STATUS_FAILED"}]}}`
	var r rowStatuses
	_, _ = r.Write([]byte(result))
	if r.LLM != 2 || r.LLMFailed != 1 {
		t.Errorf("%d/%d model rows FAILED; want 1/2", r.LLMFailed, r.LLM)
	}
	if cap(r.stack) > 64 {
		t.Errorf("the scanner held %d frames", cap(r.stack))
	}
}

func TestRowStatusesCountsTheResultsFailedRows(t *testing.T) {
	long := strings.Repeat(`x\"{[`, 50_000)
	result := `{"result":{"job":{"id":"j","status":"JOB_STATUS_COMPLETE","error":"status"},` +
		`"ocr":[{"status":"JOB_OCR_STATUS_DONE","content":"` + long + `"},{"content":"\"status\": \"JOB_OCR_STATUS_FAILED\"","status":"JOB_OCR_STATUS_FAILED"}],` +
		`"llm":[{"status":"JOB_LLM_STATUS_FAILED","consensus":{"status":"JOB_LLM_STATUS_FAILED"}},{"status":"JOB_LLM_STATUS_SKIPPED","skipReason":"ocr_failed"},{"status" : "JOB_LLM_STATUS_FAILED"}],` +
		`"merged":[{"status":"JOB_LLM_STATUS_FAILED"}]}}`
	for _, chunk := range []int{1, 7, len(result)} {
		var r rowStatuses
		for i := 0; i < len(result); i += chunk {
			_, _ = r.Write([]byte(result[i:min(i+chunk, len(result))]))
		}
		if r.OCR != 2 || r.OCRFailed != 1 || r.LLM != 3 || r.LLMFailed != 2 {
			t.Errorf("in chunks of %d: %d/%d files, %d/%d model rows FAILED; want 1/2 and 2/3", chunk, r.OCRFailed, r.OCR, r.LLMFailed, r.LLM)
		}
		if cap(r.str) > 2*maxScanString {
			t.Errorf("in chunks of %d: the scanner held %d bytes of a string", chunk, cap(r.str))
		}
	}
	if got := failedRows(rowStatuses{OCR: 3, OCRFailed: 1, LLM: 3, LLMFailed: 2}); got != "1 of 3 files FAILED recognition, 2 of 3 model rows FAILED" {
		t.Errorf("failedRows = %q", got)
	}
}

// Ctrl-C during an upload, a list or a get is an interrupt (130), as
// during a wait, not a failure (1).
func TestAnInterruptedClientCommandExits130(t *testing.T) {
	arrived := make(chan struct{}, 1)
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		// The server sees the client go only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	})
	file := writeFile(t, "a.txt", "Alpha.\n")
	for name, args := range map[string][]string{"upload": {"submit", file}, "jobs": {"jobs"}, "get": {"get", "j1"}, "get --result": {"get", "j1", "--result"}} {
		t.Run(name, func(t *testing.T) {
			ctx, interrupt := context.WithCancel(context.Background())
			done := make(chan int, 1)
			var out, stderr strings.Builder
			go func() { done <- Run(ctx, args, &out, &stderr, func(k string) string { return env[k] }) }()
			<-arrived
			interrupt()
			if code := <-done; code != ExitInterrupted {
				t.Fatalf("exit %d, want %d: %s", code, ExitInterrupted, stderr.String())
			}
			if !strings.HasPrefix(stderr.String(), "docjobs: interrupted: ") {
				t.Errorf("stderr %q, want it to say the command was interrupted", stderr.String())
			}
		})
	}
}

// A client command stops quietly at the first signal (no server log line),
// and a second signal exits 130 at once: never ExitForced, which for
// submit --wait is the code of a FAILED job.
func TestASecondSignalInAClientCommandExits130(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	var stderr logtest.Buffer
	exited := make(chan int, 1)
	ctx, stop := InterruptOnSignal(context.Background(), sigs, &stderr, func(code int) { exited <- code })
	defer stop()

	sigs <- os.Interrupt
	sigs <- os.Interrupt // the group's copy of the same Ctrl-C
	<-ctx.Done()
	select {
	case code := <-exited:
		t.Fatalf("the first interrupt exited with %d; want the command to stop itself", code)
	case <-time.After(100 * time.Millisecond):
	}
	if stderr.String() != "" {
		t.Errorf("the first interrupt wrote %q; a client command says itself what it stopped", stderr.String())
	}
	time.Sleep(repeatWindow)
	sigs <- syscall.SIGTERM
	select {
	case code := <-exited:
		if code != ExitInterrupted {
			t.Errorf("exit %d, want ExitInterrupted (%d)", code, ExitInterrupted)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second signal did not exit")
	}
	if got := stderr.String(); got != "docjobs: interrupted again: stopping at once\n" {
		t.Errorf("stderr %q", got)
	}
}

func TestOnlyServerCommandsDrainOnASignal(t *testing.T) {
	for args, want := range map[string]bool{
		"serve": true, "serve --role api": true, "bench --jobs 1": true,
		"submit a.txt --wait": false, "jobs": false, "get x": false, "apikey create --account a": false, "migrate": false, "": false,
	} {
		if got := isServerCommand(strings.Fields(args)); got != want {
			t.Errorf("isServerCommand(%q) = %v, want %v", args, got, want)
		}
	}
}

// failingWriter is a stdout that cannot be written, as /dev/full.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A command whose output is lost has failed: the only copy of a new API
// key, or a created job's id, must not end with exit 0.
func TestALostOutputFailsTheCommand(t *testing.T) {
	dir := migratedDataDir(t)
	env := map[string]string{"DOCJOBS_DATA_DIR": dir}
	var stderr strings.Builder
	code := Run(context.Background(), []string{"apikey", "create", "--account", "acme"}, failingWriter{}, &stderr, func(k string) string { return env[k] })
	if code != ExitError || !strings.Contains(stderr.String(), "write the key: no space left on device; nothing was stored") {
		t.Fatalf("apikey create to a full stdout: exit %d: %s", code, stderr.String())
	}
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "docjobs.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if has, err := st.HasAPIKeys(context.Background()); err != nil || has {
		t.Errorf("a key nobody has was stored (%v, %v)", has, err)
	}

	svc, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"id":"job-1","status":"JOB_STATUS_NEW"}`)
	})
	for _, args := range [][]string{{"submit", "https://example.com/a.txt"}, {"account", "set", "--account", "acme", "--extraction-mode", "HYBRID", "--create"}, {"migrate"}} {
		stderr.Reset()
		all := map[string]string{"DOCJOBS_DATA_DIR": dir}
		for k, v := range svc {
			all[k] = v
		}
		if code := Run(context.Background(), args, failingWriter{}, &stderr, func(k string) string { return all[k] }); code != ExitError || !strings.Contains(stderr.String(), syscall.ENOSPC.Error()) {
			t.Errorf("%v to a full stdout: exit %d: %s", args, code, stderr.String())
		}
	}
}

// The check before the first upload opens each file: one this process
// cannot read stops submit before anything is uploaded.
func TestSubmitChecksThatEveryFileIsReadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a file of mode 000")
	}
	env, requests := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
	})
	present := writeFile(t, "a.txt", "Alpha.\n")
	locked := writeFile(t, "locked.txt", "Beta.\n")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, env, "submit", present, locked)
	if code != ExitError || !strings.Contains(stderr, "upload "+locked+": open "+locked+": permission denied") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests sent before the unreadable file was found", n)
	}
}

// Any 2xx is success (a gateway may answer 201 to a create, 204 to a
// delete), and a redirect of a POST is not followed as a GET.
func TestAnySuccessCodeIsSuccessAndRedirectsAreNamed(t *testing.T) {
	var mu sync.Mutex
	var deleted []string
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/jobs/upload":
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"url":"http://svc/v1/files/f1","name":"a.txt","size_bytes":7}`)
		case r.URL.Path == "/v1/jobs":
			var req createRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			if req.Title == "refuse" {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"code":3,"message":"no"}`)
				return
			}
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"job-1","status":"JOB_STATUS_NEW"}`)
		case r.Method == http.MethodDelete:
			mu.Lock()
			deleted = append(deleted, r.URL.Path)
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}
	})
	file := writeFile(t, "a.txt", "Alpha.\n")
	if code, out, stderr := run(t, env, "submit", file); code != ExitOK || out != "job-1\n" {
		t.Fatalf("201s: exit %d, stdout %q: %s", code, out, stderr)
	}
	mu.Lock()
	if len(deleted) != 0 {
		t.Errorf("the uploads of a created job were deleted: %v", deleted)
	}
	mu.Unlock()
	if code, _, stderr := run(t, env, "submit", file, "--title", "refuse"); code != ExitError || !strings.Contains(stderr, "removed the upload http://svc/v1/files/f1: no job was created") {
		t.Fatalf("a 204 to the delete: exit %d: %s", code, stderr)
	}

	redirect := httptest.NewServer(http.RedirectHandler("https://docjobs.example/v1/jobs", http.StatusMovedPermanently))
	t.Cleanup(redirect.Close)
	env["DOCJOBS_URL"] = redirect.URL
	code, _, stderr := run(t, env, "submit", "https://example.com/a.txt")
	want := "docjobs: the service at " + redirect.URL + " redirects POST /v1/jobs to https://docjobs.example/v1/jobs: set --server or DOCJOBS_URL to the address it redirects to (HTTP 301)\n"
	if code != ExitError || stderr != want {
		t.Fatalf("a redirected create: exit %d: %q, want %q", code, stderr, want)
	}
}

// jobs says when the service has more jobs than --limit, and a faulty
// service whose pages are empty but never end cannot loop it.
func TestJobsSaysWhenThereAreMore(t *testing.T) {
	env, requests := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("pageToken") {
		case "":
			_, _ = io.WriteString(w, `{"jobs":[{"id":"j1"},{"id":"j2"}],"nextPageToken":"A"}`)
		case "A":
			_, _ = io.WriteString(w, `{"jobs":[],"nextPageToken":"B"}`)
		default:
			_, _ = io.WriteString(w, `{"jobs":[],"nextPageToken":"A"}`)
		}
	})
	code, out, stderr := run(t, env, "jobs", "--limit", "2")
	if code != ExitOK || strings.Count(out, "\nj") != 2 || stderr != "docjobs: more jobs than --limit 2: the newest 2 are listed\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	requests.Store(0)
	code, out, stderr = run(t, env, "jobs", "--limit", "10")
	if code != ExitOK || strings.Count(out, "\nj") != 2 || stderr != "" || requests.Load() != 2 {
		t.Fatalf("pages without jobs: exit %d after %d requests, stdout %q, stderr %q", code, requests.Load(), out, stderr)
	}
}

// The service's answers that are odd but legal, or from a faulty service:
// a stream that goes silent, SSE data over several lines, a done event
// without a status, a list without "jobs".
func TestOddStreamsAndListsAreReadOrRefused(t *testing.T) {
	shortWaits(t, time.Millisecond, 5*time.Millisecond, 5*time.Second)
	saved := streamIdle
	streamIdle = 200 * time.Millisecond
	t.Cleanup(func() { streamIdle = saved })

	var mu sync.Mutex
	streams := map[string]int{}
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		streams[r.URL.Path]++
		n := streams[r.URL.Path]
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		switch r.URL.Path {
		case "/v1/jobs":
			if r.Method == http.MethodGet {
				_, _ = io.WriteString(w, `{"items":[{"id":"j1"}]}`)
				return
			}
			var req createRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			fmt.Fprintf(w, `{"id":%q}`, req.Title)
		case "/v1/jobs/silent/events":
			_, _ = io.WriteString(w, "event: progress\ndata: {\"status\":\"JOB_STATUS_RUNNING\"}\n\n")
			if n == 1 { // hangs without a keep-alive: a hung service
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				return
			}
			_, _ = io.WriteString(w, "event: done\ndata: {\"status\":\"JOB_STATUS_COMPLETE\"}\n\n")
		case "/v1/jobs/multiline/events":
			_, _ = io.WriteString(w, ": keep-alive\n\nevent: progress\ndata: {\"status\":\ndata: \"JOB_STATUS_RUNNING\"}\n\n"+
				"event: other\ndata: not JSON\n\nevent:done\ndata:{\"status\":\"JOB_STATUS_COMPLETE\",\ndata: \"ocrDone\":1,\"ocrTotal\":1}\n\n")
		case "/v1/jobs/nostatus/events":
			_, _ = io.WriteString(w, "event: done\ndata: {}\n\n")
		case "/v1/jobs/nostatus":
			_, _ = io.WriteString(w, `{"id":"nostatus","status":"JOB_STATUS_FAILED","error":"no file could be recognized"}`)
		default: // results
			_, _ = io.WriteString(w, `{"result":{}}`)
		}
	})
	for _, tt := range []struct {
		id     string
		code   int
		stderr string
	}{
		{"silent", ExitOK, "job silent: COMPLETE"},
		{"multiline", ExitOK, "job multiline: RUNNING, files finished 0/0, model rows finished 0/0\njob multiline: COMPLETE, files finished 1/1"},
		{"nostatus", ExitJobFailed, "docjobs: job nostatus ended JOB_STATUS_FAILED: no file could be recognized\n"},
	} {
		t.Run(tt.id, func(t *testing.T) {
			done := make(chan struct{})
			var code int
			var stderr string
			go func() {
				defer close(done)
				code, _, stderr = run(t, env, "submit", "https://example.com/a.txt", "--wait", "--title", tt.id)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the wait did not end")
			}
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d: %s\nwant exit %d and %q", code, stderr, tt.code, tt.stderr)
			}
		})
	}
	code, out, stderr := run(t, env, "jobs")
	if code != ExitError || !strings.Contains(stderr, `GET /v1/jobs: the answer has no "jobs" array`) {
		t.Fatalf("a list in another shape: exit %d, stdout %q: %s", code, out, stderr)
	}
}

// Error texts: a write error is not a read error, a 429 shows when to
// come back, a lost create answer says the uploads stay.
func TestErrorTextsSayWhatHappened(t *testing.T) {
	shortWaits(t, time.Millisecond, 5*time.Millisecond, time.Second)
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/v1/jobs/upload":
			_, _ = io.WriteString(w, `{"url":"http://svc/v1/files/f1","name":"a.txt","size_bytes":7}`)
		case "/v1/jobs":
			w.WriteHeader(http.StatusBadGateway)
		case "/v1/jobs/j1/result":
			_, _ = io.WriteString(w, `{"result":{}}`)
		default:
			w.Header().Set("Retry-After", "120") // longer than the retry budget: not waited
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"code":8,"message":"slow down"}`)
		}
	})
	var stderr strings.Builder
	code := Run(context.Background(), []string{"get", "j1", "--result"}, failingWriter{}, &stderr, func(k string) string { return env[k] })
	if code != ExitError || !strings.Contains(stderr.String(), "GET /v1/jobs/j1/result: write the answer: no space left on device") {
		t.Errorf("get --result to a full stdout: exit %d: %s", code, stderr.String())
	}
	saved := retryBudget
	retryBudget = time.Second
	t.Cleanup(func() { retryBudget = saved })
	if code, _, stderr := run(t, env, "get", "j2"); code != ExitError || stderr != "docjobs: slow down (HTTP 429, retry after 2m0s)\n" {
		t.Errorf("a 429: exit %d: %q", code, stderr)
	}
	file := writeFile(t, "a.txt", "Alpha.\n")
	code, _, errOut := run(t, env, "submit", file)
	if want := "docjobs: Bad Gateway (HTTP 502); the job may have been created (`docjobs jobs` lists it), so the 1 uploads above are kept\n"; code != ExitError || !strings.HasSuffix(errOut, want) {
		t.Errorf("a lost create answer: exit %d: %q, want it to end %q", code, errOut, want)
	}
}

// The service takes at most 100 sources a job: submit says so before it
// uploads anything, and 100 pass.
func TestSubmitRefusesMoreSourcesThanAJobTakes(t *testing.T) {
	s := startService(t)
	src := sourceServer(t, map[string]string{"/a.txt": "Alpha.\n"})
	args := []string{"submit"}
	for i := range maxSources {
		args = append(args, fmt.Sprintf("%s/a.txt?n=%d", src, i))
	}
	if code, out, stderr := run(t, s.env(), args...); code != ExitOK || strings.TrimSpace(out) == "" {
		t.Fatalf("%d sources: exit %d: %s", maxSources, code, stderr)
	}
	env, requests := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
	})
	args = append(args, writeFile(t, "a.txt", "Alpha.\n"))
	code, _, stderr := run(t, env, args...)
	if code != ExitUsage || !strings.Contains(stderr, "101 files and URLs: a job takes at most 100") || requests.Load() != 0 {
		t.Fatalf("101 sources: exit %d after %d requests: %s", code, requests.Load(), stderr)
	}
}

// A create sent again after a 503 carries the run's own idempotency key,
// so a service that did make the job returns it rather than a second one.
func TestSubmitSendsItsCreateAgainUnderOneKey(t *testing.T) {
	shortWaits(t, time.Millisecond, 5*time.Millisecond, time.Second)
	var mu sync.Mutex
	var keys []string
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		var body struct{ IdempotencyKey string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		keys = append(keys, body.IdempotencyKey)
		n := len(keys)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, `{"id":"j1","status":"JOB_STATUS_NEW"}`)
	})
	code, out, stderr := run(t, env, "submit", "https://example.com/a.pdf")
	if code != ExitOK || strings.TrimSpace(out) != "j1" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, stderr)
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("creates sent with keys %q; want two with one key of the run's own", keys)
	}
	// Another run is another job: its key is its own.
	if code, _, stderr := run(t, env, "submit", "https://example.com/a.pdf"); code != ExitOK || len(keys) != 3 || keys[2] == keys[0] {
		t.Fatalf("exit %d, keys %q: %s; want a third create with a new key", code, keys, stderr)
	}
}

// Ctrl-C while a create waits out a 429 stops a create that was refused:
// no job was made, so the uploads go.
func TestAnInterruptedWaitAfterARefusedCreateRemovesTheUploads(t *testing.T) {
	refused := make(chan struct{}, 1)
	var deletes atomic.Int32
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch {
		case r.URL.Path == "/v1/jobs/upload":
			_, _ = io.WriteString(w, `{"url":"http://svc/v1/files/f1","name":"a.txt","size_bytes":7}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/jobs":
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"code":8,"message":"account has 1000 active jobs"}`)
			select {
			case refused <- struct{}{}:
			default:
			}
		case r.Method == http.MethodDelete && r.URL.Path == "/v1/files/f1":
			deletes.Add(1)
		}
	})
	ctx, interrupt := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, stderr strings.Builder
	go func() {
		done <- Run(ctx, []string{"submit", writeFile(t, "a.txt", "Alpha.\n")}, &out, &stderr, func(k string) string { return env[k] })
	}()
	<-refused
	time.Sleep(200 * time.Millisecond) // into the minute's wait the 429 asked for
	interrupt()
	if code := <-done; code != ExitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, ExitInterrupted, stderr.String())
	}
	if deletes.Load() != 1 || !strings.Contains(stderr.String(), "removed the upload http://svc/v1/files/f1: no job was created") ||
		strings.Contains(stderr.String(), "may have been created") {
		t.Errorf("%d deletes; stderr:\n%s\nwant the upload removed, no job having been made", deletes.Load(), stderr.String())
	}
}

// A submit sent while the service restarts (its port closed for its
// drain) used to fail at once saying that the job "may have been
// created": the create is now sent again, under its idempotency key, until
// the service is back (audit-readme F5).
func TestSubmitSendsItsCreateAgainWhileTheServiceRestarts(t *testing.T) {
	shortWaits(t, 10*time.Millisecond, 100*time.Millisecond, 10*time.Second)
	var mu sync.Mutex
	var keys []string
	svc := newRestartingService(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ IdempotencyKey string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		keys = append(keys, body.IdempotencyKey)
		mu.Unlock()
		_, _ = io.WriteString(w, `{"id":"j1","status":"JOB_STATUS_NEW"}`)
	}))
	svc.restart(500 * time.Millisecond)
	env := map[string]string{"DOCJOBS_URL": "http://" + svc.addr, "DOCJOBS_API_KEY": "dj_fake", "DOCJOBS_OCR_KEY": testOCRKey}
	code, out, stderr := run(t, env, "submit", "https://example.com/a.pdf")
	if code != ExitOK || strings.TrimSpace(out) != "j1" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, stderr)
	}
	if !strings.Contains(stderr, "connection refused; sending the create again in ") {
		t.Errorf("stderr does not say the create is sent again:\n%s", stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 1 || keys[0] == "" {
		t.Errorf("creates received with keys %q, want one with the run's key", keys)
	}
}

// A create that never reached the service (every attempt refused at the
// dial) made no job: its uploads go, and the message says so rather than
// that the job may exist.
func TestACreateThatNeverReachedTheServiceMadeNoJob(t *testing.T) {
	shortWaits(t, time.Millisecond, 5*time.Millisecond, 200*time.Millisecond)
	// A service that answers one upload and is gone: its port is closed
	// before the answer is written, so every later dial is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		conn, err := ln.Accept()
		_ = ln.Close()
		if err != nil {
			return
		}
		defer conn.Close()
		req, err := http.ReadRequest(bufio.NewReader(conn))
		if err != nil {
			t.Errorf("read the upload: %v", err)
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		body := `{"url":"http://svc/v1/files/f1","name":"a.txt","size_bytes":7}`
		_, _ = fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}()
	env := map[string]string{"DOCJOBS_URL": "http://" + ln.Addr().String(), "DOCJOBS_API_KEY": "dj_fake", "DOCJOBS_OCR_KEY": testOCRKey}
	code, _, stderr := run(t, env, "submit", writeFile(t, "a.txt", "Alpha.\n"))
	<-served
	if code != ExitError || !strings.Contains(stderr, "connection refused; no job was created\n") || strings.Contains(stderr, "may have been created") {
		t.Fatalf("exit %d: %s\nwant %d saying no job was created", code, stderr, ExitError)
	}
}

func TestOnlyAnErrorOfAServiceAwayIsSentAgain(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tt := range []struct {
		name            string
		err             error
		away, neverSent bool
	}{
		{"a refused connection", &unanswered{fmt.Errorf("cannot reach: %w", refused)}, true, true},
		{"a connection reset", &unanswered{fmt.Errorf("cannot reach: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET})}, true, false},
		{"an answer cut short", &unanswered{fmt.Errorf("cannot reach: %w", io.ErrUnexpectedEOF)}, true, false},
		{"an answer that does not decode", fmt.Errorf("POST /v1/jobs: read answer: %w", io.ErrUnexpectedEOF), false, false},
		{"a proxy's 502", &apiError{status: http.StatusBadGateway}, true, false},
		{"a proxy's 504", &apiError{status: http.StatusGatewayTimeout}, true, false},
		{"a 503 without Retry-After", &apiError{status: http.StatusServiceUnavailable}, true, false},
		{"a 503 with Retry-After, already waited out", &apiError{status: http.StatusServiceUnavailable, retry: time.Second}, false, false},
		{"a refusal", &apiError{status: http.StatusBadRequest}, false, false},
		{"a 500", &apiError{status: http.StatusInternalServerError}, false, false},
		{"a name that does not resolve", &unanswered{fmt.Errorf("cannot reach: %w", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", IsNotFound: true}})}, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := serviceAway(tt.err); got != tt.away {
				t.Errorf("serviceAway = %v, want %v", got, tt.away)
			}
			if got := neverSent(tt.err); got != tt.neverSent {
				t.Errorf("neverSent = %v, want %v", got, tt.neverSent)
			}
		})
	}
}
