package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFirstStartWithNoKeyPrintsOneForTheDefaultAccount(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", "DOCJOBS_API_KEYS=")
	// /readyz can answer before the key's lines have come through the
	// process's stdout pipe: wait for them a while.
	var key string
	for deadline := time.Now().Add(10 * time.Second); key == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		key = regexp.MustCompile(`dj_[A-Za-z0-9_-]{43}`).FindString(s.logs.String())
	}
	if key == "" {
		t.Fatalf("no key printed on first start:\n%s", s.logs)
	}
	created := s.mustDo(http.StatusOK, "POST", "/v1/jobs", key, createBody("https://example.com/a.txt"))
	if created["accountId"] != "default" {
		t.Errorf("accountId = %v, want default", created["accountId"])
	}
	s.stop()
	s.start()
	if n := strings.Count(s.logs.String(), "dj_"); n != 0 {
		t.Errorf("second start printed a key again")
	}
	s.mustDo(http.StatusOK, "GET", "/v1/jobs", key, nil)
}

// heldSource serves txtDoc at any path, but only once released: a job
// fetching from it stays in flight until then.
type heldSource struct {
	url       string
	requested chan struct{} // closed at the first request
	release   chan struct{} // closed by let
	served    chan struct{} // closed once a held request got the whole body
	dropped   chan struct{} // closed once a held request was abandoned by its client
	once      struct{ requested, release, served, dropped sync.Once }
}

func newHeldSource(t *testing.T) *heldSource {
	t.Helper()
	h := &heldSource{requested: make(chan struct{}), release: make(chan struct{}),
		served: make(chan struct{}), dropped: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.once.requested.Do(func() { close(h.requested) })
		select {
		case <-h.release:
		case <-r.Context().Done():
			h.once.dropped.Do(func() { close(h.dropped) })
			return
		}
		if _, err := io.WriteString(w, txtDoc); err == nil {
			h.once.served.Do(func() { close(h.served) })
		}
	}))
	// Cleanups run last in, first out: the held requests end before the
	// server waits for them.
	t.Cleanup(srv.Close)
	t.Cleanup(h.let)
	h.url = srv.URL
	return h
}

// let releases every held request, now and later.
func (h *heldSource) let() { h.once.release.Do(func() { close(h.release) }) }

// waitRequested waits until something (the job's worker) asks for a file.
func (h *heldSource) waitRequested(t *testing.T) {
	t.Helper()
	select {
	case <-h.requested:
	case <-time.After(30 * time.Second):
		t.Fatal("the held source was not requested within 30s")
	}
}

// unfinishedFileJobs counts the River jobs of kind file that may still run.
func unfinishedFileJobs(t *testing.T, dbURL, dataDir string) int {
	t.Helper()
	return rowCount(t, dbURL, dataDir,
		`SELECT COUNT(*) FROM river_job WHERE kind = ? AND state NOT IN ('completed', 'cancelled', 'discarded')`, "file")
}

func TestCancelEndsAJobAndDeleteErasesIt(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			held := newHeldSource(t)
			src := sources(t, map[string]string{"a.txt": txtDoc})
			dbURL := b.databaseURL(t)
			s := startServer(t, dbURL)

			heldURL := held.url + "/a.txt"
			id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(heldURL))["id"].(string)
			held.waitRequested(t) // the file is being downloaded
			cancelled := s.mustDo(http.StatusOK, "POST", "/v1/jobs/"+id+":cancel", keyA, "{}")
			if cancelled["status"] != "JOB_STATUS_CANCELLED" {
				t.Fatalf("cancel answered %v", cancelled["status"])
			}
			// The file was never stored: the job and its row name its source.
			if files := fmt.Sprint(cancelled["files"]); files != "["+heldURL+"]" {
				t.Errorf("files after cancel = %s, want [%s]", files, heldURL)
			}
			resultPath := "/v1/jobs/" + id + "/result"
			before := s.do("GET", resultPath, keyA, nil)
			res := before.json(t)["result"].(map[string]any)
			row := res["ocr"].([]any)[0].(map[string]any)
			if row["status"] != "JOB_OCR_STATUS_FAILED" || row["error"] != "job cancelled" || row["file"] != heldURL {
				t.Errorf("row after cancel = %v, want FAILED \"job cancelled\" with file %s", row, heldURL)
			}
			// A file whose recognition failed has one SKIPPED ocr_failed model row (DESIGN §4).
			llm, _ := res["llm"].([]any)
			if len(llm) != 1 || llm[0].(map[string]any)["skipReason"] != "ocr_failed" || llm[0].(map[string]any)["file"] != heldURL {
				t.Errorf("model rows after cancel = %v, want one SKIPPED ocr_failed row naming %s", llm, heldURL)
			}

			// The download the worker started now completes. Nothing of it
			// may reach the job: not its status, not a row, not a stored file.
			held.let()
			select {
			case <-held.served:
			case <-held.dropped:
				t.Log("the worker dropped the download before it was released")
			case <-time.After(30 * time.Second):
				t.Fatal("the released download neither completed nor was dropped within 30s")
			}
			deadline := time.Now().Add(30 * time.Second)
			for unfinishedFileJobs(t, dbURL, s.dataDir) != 0 {
				if time.Now().After(deadline) {
					t.Fatal("the file's River job was still unfinished 30s after the release")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if j := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id, keyA, nil); j["status"] != "JOB_STATUS_CANCELLED" {
				t.Errorf("after the release the job is %v, want JOB_STATUS_CANCELLED", j["status"])
			}
			if after := s.do("GET", resultPath, keyA, nil); !bytes.Equal(after.body, before.body) {
				t.Errorf("the result changed after the release:\nbefore %s\nafter  %s", before.body, after.body)
			}
			if n := countFiles(t, filepath.Join(s.dataDir, "files", "jobs", id)); n != 0 {
				t.Errorf("%d files stored for the cancelled job after the release, want none", n)
			}
			if r := s.do("POST", "/v1/jobs/"+id+":cancel", keyA, "{}"); r.status != http.StatusConflict {
				t.Errorf("second cancel: %d, want 409", r.status)
			}

			done := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(src+"/a.txt"))["id"].(string)
			j := s.waitTerminal(done, keyA, time.Minute)
			stored := j["files"].([]any)[0].(string)
			if r := s.do("GET", strings.TrimPrefix(stored, s.base), keyA, nil); r.status != http.StatusOK || string(r.body) != txtDoc {
				t.Fatalf("stored copy: %d %q", r.status, r.body)
			}
			blobsBefore := countFiles(t, filepath.Join(s.dataDir, "files"))
			s.mustDo(http.StatusOK, "DELETE", "/v1/jobs/"+done, keyA, nil)
			for _, path := range []string{"/v1/jobs/" + done, "/v1/jobs/" + done + "/result", strings.TrimPrefix(stored, s.base)} {
				if r := s.do("GET", path, keyA, nil); r.status != http.StatusNotFound {
					t.Errorf("GET %s after delete: %d, want 404", path, r.status)
				}
			}
			if after := countFiles(t, filepath.Join(s.dataDir, "files")); after != blobsBefore-1 {
				t.Errorf("stored files: %d before delete, %d after, want one fewer", blobsBefore, after)
			}
		})
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.HasSuffix(info.Name(), ".attrs") {
			n++
		}
		return nil
	})
	return n
}

// TestSplitRolesShareOnePostgres runs the API and a worker as two processes.
func TestSplitRolesShareOnePostgres(t *testing.T) {
	t.Parallel()
	pg := os.Getenv("DOCJOBS_TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("DOCJOBS_TEST_POSTGRES_URL is not set")
	}
	dbURL := freshSchema(t, pg)
	src := sources(t, map[string]string{"a.txt": txtDoc, "b.html": htmlDoc})
	apiNode := startServer(t, dbURL, "DOCJOBS_ROLE=api")
	storage := "DOCJOBS_STORAGE_URL=file://" + filepath.Join(apiNode.dataDir, "files") + "?create_dir=true&no_tmp_dir=true"
	keyset := "DOCJOBS_MASTER_KEY_FILE=" + filepath.Join(apiNode.dataDir, "master.keyset")
	startWorker(t, dbURL, storage, keyset, "DOCJOBS_PUBLIC_URL="+apiNode.base)

	id := apiNode.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(src+"/a.txt", src+"/b.html"))["id"].(string)
	if j := apiNode.waitTerminal(id, keyA, time.Minute); j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job ended %v: %v", j["status"], j["error"])
	}
}

// startWorker runs `docjobs serve --role=worker`; it has no port, so it
// counts as started once its River client says so.
func startWorker(t *testing.T, dbURL string, extraEnv ...string) *server {
	t.Helper()
	w := &server{t: t, dataDir: t.TempDir(), readyLine: `"msg":"workers started"`}
	w.env = append(os.Environ(), "DOCJOBS_DATABASE_URL="+dbURL, "DOCJOBS_ROLE=worker",
		"DOCJOBS_DATA_DIR="+w.dataDir, "DOCJOBS_ALLOW_PRIVATE_URLS=true", "DOCJOBS_NODE_ID=e2e-worker",
		"DOCJOBS_API_KEYS=acct-a:"+keyA)
	w.env = append(w.env, extraEnv...)
	w.start()
	t.Cleanup(w.stop)
	return w
}
