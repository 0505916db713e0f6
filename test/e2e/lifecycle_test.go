package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestFirstStartWithNoKeyPrintsOneForTheDefaultAccount(t *testing.T) {
	s := startServer(t, "", "DOCJOBS_API_KEYS=")
	key := regexp.MustCompile(`dj_[A-Za-z0-9_-]{43}`).FindString(s.logs.String())
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

func TestCancelEndsAJobAndDeleteErasesIt(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, txtDoc)
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	src := sources(t, map[string]string{"a.txt": txtDoc})
	s := startServer(t, "")

	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(slow.URL+"/a.txt"))["id"].(string)
	cancelled := s.mustDo(http.StatusOK, "POST", "/v1/jobs/"+id+":cancel", keyA, "{}")
	if cancelled["status"] != "JOB_STATUS_CANCELLED" {
		t.Fatalf("cancel answered %v", cancelled["status"])
	}
	res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
	if row := res["ocr"].([]any)[0].(map[string]any); row["status"] != "JOB_OCR_STATUS_FAILED" {
		t.Errorf("pending row after cancel = %v, want FAILED", row["status"])
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
	pg := os.Getenv("DOCJOBS_TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("DOCJOBS_TEST_POSTGRES_URL is not set")
	}
	dbURL := freshSchema(t, pg)
	src := sources(t, map[string]string{"a.txt": txtDoc, "b.html": htmlDoc})
	apiNode := startServer(t, dbURL, "DOCJOBS_ROLE=api")
	storage := "DOCJOBS_STORAGE_URL=file://" + filepath.Join(apiNode.dataDir, "files") + "?create_dir=true"
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
