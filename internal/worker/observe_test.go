package worker

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob/fileblob"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/logtest"
	"github.com/docjobs/docjobs/internal/store"
)

// stages records the stage runs a worker reports, as "stage outcome".
type stages struct {
	mu   sync.Mutex
	runs []string
}

func (s *stages) ObserveStage(stage, outcome string, _ time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = append(s.runs, stage+" "+outcome)
}

func (s *stages) has(run string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.runs, run)
}

// Every stage docjobs_stage_duration_seconds names is recorded: a download
// that worked and one that did not, and a webhook delivery.
func TestDownloadsAndWebhooksAreObservedAsStages(t *testing.T) {
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing.txt" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("plain text"))
	}))
	defer src.Close()
	st := openStore(t)
	obs := &stages{}
	startObservedWorkers(t, st, Config{}, obs)
	createJob(t, st, "job-obs", "acme", src.URL+"/a.txt", src.URL+"/missing.txt")
	endOf(t, st, "job-obs")
	for _, run := range []string{"fetch DONE", "fetch FAILED", "recognize DONE"} {
		if !obs.has(run) {
			t.Errorf("stages %v lack %q", obs.runs, run)
		}
	}

	c := newWebhookCase(t, "", http.StatusOK)
	hooks := &stages{}
	c.w.deps.Observer = hooks
	if err := c.work(1, 22); err != nil {
		t.Fatal(err)
	}
	if !hooks.has("webhook DONE") {
		t.Errorf("stages %v lack a delivered webhook (DONE, as every stage's outcome)", hooks.runs)
	}
}

func lineOf(t *testing.T, b *bytes.Buffer, msg string) map[string]any {
	t.Helper()
	for _, l := range logtest.Records(t, b.String()) {
		if l["msg"] == msg {
			return l
		}
	}
	t.Fatalf("no %q line in:\n%s", msg, b.String())
	return nil
}

// The sweeps' job lines name the account, as every job line does, and
// their durations as durations.
func TestSweepLinesNameTheJobsAccount(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))

	old := &job.Job{ID: "job-late", AccountID: "acme", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", RequestHash: "h", Created: time.Now().Add(-3 * time.Hour)}
	if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: old}); err != nil {
		t.Fatal(err)
	}
	dw := &deadlineWorker{cfg: Config{JobDeadline: time.Hour}, deps: Deps{Store: st, Logger: log}}
	if err := dw.Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if l := lineOf(t, &logs, "job ended by its deadline"); l["job_id"] != old.ID || l["account_id"] != "acme" || l["deadline"] != "1h0m0s" {
		t.Errorf("deadline line %v; want job_id, account_id acme and deadline 1h0m0s", l)
	}

	time.Sleep(5 * time.Millisecond)
	rw := &retentionWorker{cfg: Config{Retention: time.Millisecond}, deps: Deps{Store: st, Logger: log}}
	if err := rw.Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if l := lineOf(t, &logs, "job deleted by retention"); l["job_id"] != old.ID || l["account_id"] != "acme" || l["retention"] != "1ms" {
		t.Errorf("retention line %v; want job_id, account_id acme and retention 1ms", l)
	}
}

// On file:// storage an account's upload folder goes with its last upload.
func TestRetentionRemovesTheEmptyUploadFolder(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	dir := t.TempDir()
	bucket, err := fileblob.OpenBucket(dir, &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bucket.Close() })
	for _, f := range []job.File{
		{ID: "up-1", AccountID: "acme", Key: "uploads/acme/up-1", Created: time.Now().Add(-2 * time.Hour)},
		{ID: "up-2", AccountID: "bob", Key: "uploads/bob/up-2", Created: time.Now().Add(-2 * time.Hour)},
		{ID: "up-3", AccountID: "bob", Key: "uploads/bob/up-3", Created: time.Now()},
	} {
		if err := bucket.WriteAll(ctx, f.Key, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateFile(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	w := &retentionWorker{cfg: Config{Retention: time.Hour, StorageDir: dir},
		deps: Deps{Store: st, Bucket: bucket, Logger: slog.New(slog.DiscardHandler)}}
	if err := w.Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "uploads", "acme")); !os.IsNotExist(err) {
		t.Errorf("acme's folder after its only upload expired: %v, want it gone", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "uploads", "bob", "up-3")); err != nil {
		t.Errorf("bob's fresh upload: %v, want it kept", err)
	}
}
