package worker

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/outbound"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
	"github.com/docjobs/docjobs/internal/webhook"
)

// forEachStore runs test on SQLite, and on PostgreSQL when
// DOCJOBS_TEST_POSTGRES_URL is set.
func forEachStore(t *testing.T, test func(t *testing.T, st store.Store)) {
	t.Helper()
	eachStore(t, false, test)
}

// forEachStoreAtOnce is forEachStore running the two side by side, each on
// a store, workers and sources of its own: for tests that mostly wait out
// River's backoff and the download bounds. The test calling it ends with
// them, so nothing else in the package runs meanwhile. Not for tests that
// start an S3 gateway (s3test sets the environment and working directory,
// which a parallel test may not).
func forEachStoreAtOnce(t *testing.T, test func(t *testing.T, st store.Store)) {
	t.Helper()
	eachStore(t, true, test)
}

func eachStore(t *testing.T, atOnce bool, test func(t *testing.T, st store.Store)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		if atOnce {
			t.Parallel()
		}
		test(t, openStore(t))
	})
	t.Run("postgres", func(t *testing.T) {
		if atOnce {
			t.Parallel()
		}
		url, schema := pgtest.Schema(t)
		test(t, openPostgresSchema(t, url, schema))
	})
}

// openPostgresSchema opens a store, with its own pool, on schema. Its node
// ids are checked every 100ms, as the postgres package's tests check them:
// a process restarted under a node id waits two checks before it reclaims
// the work its previous holder left running, which at the 5 s default
// was 10 s of every crash test's wall time.
func openPostgresSchema(t *testing.T, url, schema string) *postgres.Store {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := postgres.Open(t.Context(), postgres.Config{URL: url, Schema: schema, Logger: quiet,
		NodeCheck: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// startWorkers runs the pipeline's workers under River over st, downloading
// through realFetcher (an hour per attempt unless cfg.FetchTimeout says),
// until the test ends. No model stage is configured.
func startWorkers(t *testing.T, st store.Store, cfg Config) {
	t.Helper()
	startPipeline(t, st, cfg, nil, nil, nil)
}

// startObservedWorkers is startWorkers reporting stage durations to obs.
func startObservedWorkers(t *testing.T, st store.Store, cfg Config, obs Observer) {
	t.Helper()
	startPipeline(t, st, cfg, nil, nil, obs)
}

// startPipeline is startWorkers with a model stage of chats and chunker,
// reporting stage durations to obs.
func startPipeline(t *testing.T, st store.Store, cfg Config, chats Chats, chunker Chunker, obs Observer) {
	t.Helper()
	startLoggingPipeline(t, st, cfg, chats, chunker, obs, slog.New(slog.DiscardHandler))
}

// startLoggingPipeline is startPipeline with the workers logging to log;
// it returns the bucket the files are stored in.
func startLoggingPipeline(t *testing.T, st store.Store, cfg Config, chats Chats, chunker Chunker, obs Observer, log *slog.Logger) *blob.Bucket {
	t.Helper()
	if cfg.FetchTimeout == 0 {
		cfg.FetchTimeout = time.Hour
	}
	fetcher, bucket := realFetcher(t, st, cfg.FetchTimeout)
	sender, err := webhook.NewSender(webhook.Config{Client: outbound.NewClient(outbound.Config{AllowPrivate: true})})
	if err != nil {
		t.Fatal(err)
	}
	cfg.JobCheck = 20 * time.Millisecond
	workUntilTheTestEnds(t, st, cfg, Deps{
		Store: st, Fetcher: fetcher, Convert: convert.New(convert.Config{}).Convert, Webhooks: sender,
		Bucket: bucket, Chats: chats, Chunker: chunker, Observer: obs, Logger: log,
	})
	return bucket
}

// workUntilTheTestEnds registers the pipeline's workers of cfg and deps and
// runs them under River over st until the test ends.
func workUntilTheTestEnds(t *testing.T, st store.Store, cfg Config, deps Deps) {
	t.Helper()
	workers := river.NewWorkers()
	queues, err := Register(workers, cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	runUntilTheTestEnds(t, st, workers, queues)
}

// runUntilTheTestEnds runs workers on queues under River over st until the
// test ends.
func runUntilTheTestEnds(t *testing.T, st store.Store, workers *river.Workers, queues map[string]river.QueueConfig) {
	t.Helper()
	stop, err := st.Work(t.Context(), store.WorkConfig{Workers: workers, Queues: queues,
		RescueStuckJobsAfter: time.Hour, FetchPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := stop(ctx); err != nil {
			t.Errorf("stop workers: %v", err)
		}
	})
}

// createJob stores a job of sources without prompts, its files queued.
func createJob(t *testing.T, st store.Store, id, account string, sources ...string) {
	t.Helper()
	j := &job.Job{ID: id, AccountID: account, Status: job.StatusNew, SourceURLs: sources,
		ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
	if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j, Enqueue: FirstStage(id, len(sources))}); err != nil {
		t.Fatal(err)
	}
}

// endOf waits for job id to end and returns its result, failing the test
// after a generous while.
func endOf(t *testing.T, st store.Store, id string) *job.Result {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		res, err := st.GetResult(context.Background(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if res.Job.Status.Terminal() {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s", id, res.Job.Status)
		}
	}
}

// stallingSource starts every answer and then holds it until the test
// ends, as a slow server does (headers first, so the client's header
// timeout does not end it). It announces each request on hit and counts
// the requests, and those still open.
type stallingSource struct {
	*httptest.Server
	hit            chan struct{}
	requests, open atomic.Int64
}

func newStallingSource(t *testing.T) *stallingSource {
	t.Helper()
	s := &stallingSource{hit: make(chan struct{}, 8)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.open.Add(1)
		defer s.open.Add(-1)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "the first bytes")
		w.(http.Flusher).Flush()
		s.hit <- struct{}{}
		select {
		case <-t.Context().Done(): // before the workers stop
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// textSource serves a text file.
func textSource(t *testing.T, text string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, text)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAStalledSourceDoesNotHoldUpAnotherAccountsRecognition(t *testing.T) {
	forEachStoreAtOnce(t, func(t *testing.T, st store.Store) {
		stalled := newStallingSource(t)
		ok := textSource(t, "hello from b")
		// One recognition place: while acct-a's download held it, acct-b's
		// file waited for the download's hour.
		startWorkers(t, st, Config{RecognizeWorkers: 1})
		createJob(t, st, "job-a", "acct-a", stalled.URL+"/a.txt")
		select {
		case <-stalled.hit:
		case <-time.After(time.Minute):
			t.Fatal("acct-a's source was never asked for")
		}
		createJob(t, st, "job-b", "acct-b", ok.URL+"/b.txt")
		b := endOf(t, st, "job-b")
		if b.Job.Status != job.StatusComplete || b.OCR[0].Status != job.RowDone || b.OCR[0].Content != "hello from b" {
			t.Fatalf("acct-b's job = %s, row %s %q (%s)", b.Job.Status, b.OCR[0].Status, b.OCR[0].Content, b.OCR[0].Error)
		}
		// acct-a's first download is still held by its server.
		if n, open := stalled.requests.Load(), stalled.open.Load(); n != 1 || open != 1 {
			t.Fatalf("acct-a's source has had %d requests, %d open; want its first still open", n, open)
		}
		a, err := st.GetResult(context.Background(), "", "job-a")
		if err != nil {
			t.Fatal(err)
		}
		if a.Job.Status.Terminal() || a.OCR[0].Status != job.RowPending {
			t.Fatalf("acct-a's job = %s, row %s; want it still downloading", a.Job.Status, a.OCR[0].Status)
		}
	})
}

func TestOneAccountsStalledSourcesDoNotKeepAnotherAccountsFileFromTheQueue(t *testing.T) {
	forEachStoreAtOnce(t, func(t *testing.T, st store.Store) {
		stalled := newStallingSource(t)
		ok := textSource(t, "hello from b")
		// One place per stage, so River runs three files at once. Were
		// acct-a's six files to wait in them for their downloads, acct-b's
		// file would be handed out only once all six had been tried, each
		// stalling 2s.
		startWorkers(t, st, Config{FetchWorkers: 1, RecognizeWorkers: 1, ModelWorkers: 1, FetchTimeout: 2 * time.Second})
		var sources []string
		for i := range 6 {
			sources = append(sources, fmt.Sprintf("%s/a%d.txt", stalled.URL, i))
		}
		createJob(t, st, "job-a", "acct-a", sources...)
		select {
		case <-stalled.hit:
		case <-time.After(time.Minute):
			t.Fatal("acct-a's sources were never asked for")
		}
		createJob(t, st, "job-b", "acct-b", ok.URL+"/b.txt")
		b := endOf(t, st, "job-b")
		if b.Job.Status != job.StatusComplete || b.OCR[0].Status != job.RowDone {
			t.Fatalf("acct-b's job = %s, row %s (%s)", b.Job.Status, b.OCR[0].Status, b.OCR[0].Error)
		}
		// acct-b's download took the place after acct-a's first, second
		// or third, by turns, not after all six.
		if n := stalled.requests.Load(); n >= 6 {
			t.Fatalf("acct-a's source was asked %d times before acct-b's file was done; want fewer than its six files", n)
		}
	})
}

func TestASourceThatKeepsFailingGivesUpWithinTheBoundOnItsDownloads(t *testing.T) {
	forEachStoreAtOnce(t, func(t *testing.T, st store.Store) {
		var requests atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			requests.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		t.Cleanup(srv.Close)
		// The first try fails at once and the second 2s later (River's
		// backoff); the third would come 8s after that, past 9s from the
		// first. Counted from the second try instead, as it would be if
		// the retry did not carry the first one's start, it would be
		// made.
		startWorkers(t, st, Config{FetchTotalTimeout: 9 * time.Second})
		createJob(t, st, "job-a", "acct-a", srv.URL+"/a.txt")
		res := endOf(t, st, "job-a")
		row := res.OCR[0]
		if res.Job.Status != job.StatusFailed || row.Status != job.RowFailed {
			t.Fatalf("job %s, row %s (%s); want both FAILED", res.Job.Status, row.Status, row.Error)
		}
		for _, want := range []string{"HTTP 503", "gave up: the 9s limit on a file's downloads, retries included, would run out before the next try"} {
			if !strings.Contains(row.Error, want) {
				t.Errorf("row error %q does not say %q", row.Error, want)
			}
		}
		if n := requests.Load(); n != 2 {
			t.Errorf("the source was asked %d times, want 2", n)
		}
	})
}

func TestADownloadCutOffByTheBoundOnItsDownloadsFailsTheRowSayingSo(t *testing.T) {
	stalled := newStallingSource(t)
	st := openStore(t)
	createJob(t, st, "job-a", "acct-a", stalled.URL+"/a.txt")
	w := downloadingWorker(t, st, Config{FetchTotalTimeout: 300 * time.Millisecond})
	if err := workAttempt(w, &job.Job{ID: "job-a"}, 1); err != nil {
		t.Fatalf("err = %v; a file out of time for downloads has nothing left to retry", err)
	}
	row := endOf(t, st, "job-a").OCR[0]
	want := "timed out; gave up: the 300ms limit on a file's downloads, retries included, ran out"
	if row.Status != job.RowFailed || !strings.Contains(row.Error, want) {
		t.Fatalf("row %s %q, want FAILED saying %q", row.Status, row.Error, want)
	}
}

func TestARetryAfterTheBoundOnDownloadsFailsWithoutAsking(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	st := openStore(t)
	createJob(t, st, "job-a", "acct-a", "http://user:pw@"+strings.TrimPrefix(srv.URL, "http://")+"/a.txt")
	w := downloadingWorker(t, st, Config{FetchTotalTimeout: time.Minute})
	// The downloads began an hour ago: River waited this long to retry
	// (a busy queue, a node that went away).
	md := fmt.Sprintf(`{%q:%q}`, downloadsBeganKey, time.Now().Add(-time.Hour).Format(time.RFC3339Nano))
	err := w.Work(context.Background(), &river.Job[FileArgs]{
		JobRow: &rivertype.JobRow{Attempt: 3, MaxAttempts: 5, Metadata: []byte(md)}, Args: FileArgs{JobID: "job-a"}})
	if err != nil {
		t.Fatal(err)
	}
	row := endOf(t, st, "job-a").OCR[0]
	want := "was not tried again; gave up: the 1m0s limit on a file's downloads, retries included, ran out"
	if row.Status != job.RowFailed || !strings.Contains(row.Error, want) || strings.Contains(row.Error, "pw") {
		t.Fatalf("row %s %q, want FAILED saying %q without the password", row.Status, row.Error, want)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the source was asked %d times after its time ran out", n)
	}
}

// downloadingWorker is a file worker over st downloading through
// realFetcher, for a test that calls Work itself.
func downloadingWorker(t *testing.T, st Store, cfg Config) *fileWorker {
	t.Helper()
	fetcher, _ := realFetcher(t, st, time.Hour)
	cfg.JobCheck = 20 * time.Millisecond
	return newFileWorker(cfg.withDefaults(), Deps{Store: st, Fetcher: fetcher,
		Convert: convert.New(convert.Config{}).Convert, Logger: slog.New(slog.DiscardHandler)})
}

// realFetcher downloads through the SSRF-safe client (private addresses
// allowed, attempt long per attempt) into a bucket of the test's.
func realFetcher(t *testing.T, files fetch.FileGetter, attempt time.Duration) (*fetch.Fetcher, *blob.Bucket) {
	t.Helper()
	bucket, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{NoTempDir: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bucket.Close() })
	var ids atomic.Int64
	fetcher, err := fetch.New(fetch.Config{PublicURL: "http://docjobs.test", Timeout: attempt}, fetch.Deps{
		Client: outbound.NewClient(outbound.Config{AllowPrivate: true, Timeout: attempt}),
		Bucket: bucket, Files: files,
		NewID: func() string { return "f" + strconv.FormatInt(ids.Add(1), 10) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return fetcher, bucket
}

func TestARetryAfterTheBoundOnDownloadsSaysWhyTheLastTryFailed(t *testing.T) {
	st := openStore(t)
	createJob(t, st, "job-a", "acct-a", "http://files.example/a.txt")
	w := downloadingWorker(t, st, Config{FetchTotalTimeout: time.Minute})
	// The downloads began an hour ago and the last try stalled; the file
	// then waited for a download place until its time was gone.
	last := "download of http://files.example/a.txt timed out: it stalled, nothing arrived for 30s, the limit on a stalled download"
	md := fmt.Sprintf(`{%q:%q,%q:%q}`, downloadsBeganKey, time.Now().Add(-time.Hour).Format(time.RFC3339Nano), lastDownloadErrorKey, last)
	err := w.Work(context.Background(), &river.Job[FileArgs]{
		JobRow: &rivertype.JobRow{Attempt: 3, MaxAttempts: 5, Metadata: []byte(md)}, Args: FileArgs{JobID: "job-a"}})
	if err != nil {
		t.Fatal(err)
	}
	row := endOf(t, st, "job-a").OCR[0]
	want := last + "; gave up: the 1m0s limit on a file's downloads, retries included, ran out before the next try"
	if row.Status != job.RowFailed || row.Error != want {
		t.Fatalf("row %s %q, want FAILED saying %q", row.Status, row.Error, want)
	}
}

func TestAFileWhoseTimeRanOutWaitingForADownloadPlaceSaysWhyItsDownloadFailed(t *testing.T) {
	forEachStoreAtOnce(t, func(t *testing.T, st store.Store) {
		var requests atomic.Int64
		failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			requests.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		t.Cleanup(failing.Close)
		stalled := newStallingSource(t)
		// One download place. acct-a's first try fails at once, and its
		// retry comes 2 s later (River's backoff), within the 3 s bound.
		// acct-b's source, asked 1 s after acct-a's, holds the place by
		// then, until acct-b's own 3 s bound cuts it, 1 s after acct-a's
		// time is gone: acct-a's retry gets the place too late to try. The
		// row said only "was not tried again".
		startWorkers(t, st, Config{FetchWorkers: 1, FetchTotalTimeout: 3 * time.Second})
		createJob(t, st, "job-a", "acct-a", failing.URL+"/a.txt")
		for deadline := time.Now().Add(time.Minute); requests.Load() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("acct-a's source was never asked for")
			}
		}
		time.Sleep(time.Second)
		createJob(t, st, "job-b", "acct-b", stalled.URL+"/b.txt")
		select {
		case <-stalled.hit:
		case <-time.After(time.Minute):
			t.Fatal("acct-b's source was never asked for")
		}
		row := endOf(t, st, "job-a").OCR[0]
		want := "download of " + failing.URL + "/a.txt failed: the server answered HTTP 503 Service Unavailable; " +
			"gave up: the 3s limit on a file's downloads, retries included, ran out before the next try"
		if row.Status != job.RowFailed || row.Error != want {
			t.Fatalf("row %s %q, want FAILED saying %q", row.Status, row.Error, want)
		}
		if n := requests.Load(); n != 1 {
			t.Errorf("acct-a's source was asked %d times, want once", n)
		}
	})
}

func TestARowsDurationLeavesOutTheWaitForADownloadPlace(t *testing.T) {
	const hold = time.Second
	hit := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hit <- struct{}{}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(hold)
		fmt.Fprint(w, "slow")
	}))
	t.Cleanup(slow.Close)
	quick := textSource(t, "a 41-byte text file, give or take a few.")
	st := openStore(t)
	createJob(t, st, "job-a", "acct-a", slow.URL+"/a.txt")
	createJob(t, st, "job-b", "acct-b", quick.URL+"/b.txt")
	// One download place: acct-b's file waits for acct-a's download.
	w := downloadingWorker(t, st, Config{FetchWorkers: 1})
	errs := make(chan error, 2)
	go func() { errs <- workAttempt(w, &job.Job{ID: "job-a"}, 1) }()
	select {
	case <-hit: // acct-a's download has the place
	case <-time.After(time.Minute):
		t.Fatal("acct-a's source was never asked for")
	}
	start := time.Now()
	go func() { errs <- workAttempt(w, &job.Job{ID: "job-b"}, 1) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	a, b := endOf(t, st, "job-a").OCR[0], endOf(t, st, "job-b").OCR[0]
	if a.Status != job.RowDone || b.Status != job.RowDone {
		t.Fatalf("rows %s (%s), %s (%s); want both DONE", a.Status, a.Error, b.Status, b.Error)
	}
	t.Logf("acct-b's file took %v to be done, its row says %v; acct-a's row says %v", took, b.Duration, a.Duration)
	if took < hold/2 {
		t.Fatalf("acct-b's file was done after %v: it did not wait for the place", took)
	}
	if b.Duration <= 0 || b.Duration > hold/4 {
		t.Errorf("acct-b's row duration = %v, want its own download and recognition, not its %v wait for the place", b.Duration, took)
	}
	if a.Duration < hold {
		t.Errorf("acct-a's row duration = %v, want at least its %v download", a.Duration, hold)
	}
}

func TestARetryCutOffByTheBoundOnDownloadsAlsoSaysWhyTheTryBeforeFailed(t *testing.T) {
	stalled := newStallingSource(t)
	st := openStore(t)
	createJob(t, st, "job-a", "acct-a", stalled.URL+"/a.txt")
	w := downloadingWorker(t, st, Config{FetchTotalTimeout: 300 * time.Millisecond})
	// This try is cut short by the bound: its own "timed out" says only
	// that; the try before says why the file was not here by then.
	before := "download of " + stalled.URL + "/a.txt failed: the server answered HTTP 503 Service Unavailable"
	md := fmt.Sprintf(`{%q:%q,%q:%q}`, downloadsBeganKey, time.Now().Format(time.RFC3339Nano), lastDownloadErrorKey, before)
	err := w.Work(context.Background(), &river.Job[FileArgs]{
		JobRow: &rivertype.JobRow{Attempt: 2, MaxAttempts: 5, Metadata: []byte(md)}, Args: FileArgs{JobID: "job-a"}})
	if err != nil {
		t.Fatal(err)
	}
	row := endOf(t, st, "job-a").OCR[0]
	want := "download of " + stalled.URL + "/a.txt timed out; gave up: the 300ms limit on a file's downloads, retries included, ran out; the try before: " + before
	if row.Status != job.RowFailed || row.Error != want {
		t.Fatalf("row %s %q, want FAILED saying %q", row.Status, row.Error, want)
	}
}
