package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"gocloud.dev/blob/fileblob"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/outbound"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/slots"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/webhook"
)

// Keys the held vendor tells the stages apart by.
const (
	drainOCRKey   = "ocr-key-drain"
	drainModelKey = "model-key-drain"
)

// heldVendor speaks OpenAI's chat completions and holds every call until
// release is closed, as a vision model that takes its time does. It
// counts, per key, the calls it began, those it answered (paid for) and
// those whose client went away first (not paid).
type heldVendor struct {
	*httptest.Server
	release chan struct{}

	mu                      sync.Mutex
	started, answered, gone map[string]int
	began                   chan string // the key of each call begun
}

func newHeldVendor(t *testing.T) *heldVendor {
	t.Helper()
	v := &heldVendor{release: make(chan struct{}), began: make(chan string, 16),
		started: map[string]int{}, answered: map[string]int{}, gone: map[string]int{}}
	v.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		v.count(v.started, key)
		select {
		case v.began <- key:
		default: // nobody waits for it
		}
		select {
		case <-v.release:
		case <-r.Context().Done():
			v.count(v.gone, key)
			return
		}
		content := "the page's text"
		if key == drainModelKey {
			content = `{"n":1}`
		}
		v.count(v.answered, key)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
			"usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1},
		})
	}))
	t.Cleanup(func() {
		select {
		case <-v.release:
		default:
			close(v.release)
		}
		v.Close()
	})
	return v
}

func (v *heldVendor) count(m map[string]int, key string) {
	v.mu.Lock()
	m[key]++
	v.mu.Unlock()
}

func (v *heldVendor) counts(key string) (started, answered, gone int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.started[key], v.answered[key], v.gone[key]
}

// waitCutOff waits until every call with key begun so far has been seen
// cut off by its client.
func (v *heldVendor) waitCutOff(t *testing.T, key string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		started, _, gone := v.counts(key)
		if gone == started {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls seen cut off after a minute", gone, started)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitForCall waits until a call with key has begun.
func (v *heldVendor) waitForCall(t *testing.T, key string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case k := <-v.began:
			if k == key {
				return
			}
		case <-timeout:
			t.Fatalf("no call with the %s key began", key)
		}
	}
}

// scanSource serves a small PNG at /scan.png and a text at /a.txt.
func scanSource(t *testing.T) *httptest.Server {
	t.Helper()
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 8, 8))); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".png") {
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(img.Bytes())
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "one two three")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// startProcess runs the pipeline's workers under River over st, as one
// serve process does, with OCR on slot 8 and the model on slot 2 of
// vendor, one call in flight per slot. It returns the process's stop,
// which takes the graceful stop's budget as serve gives it.
func startProcess(t *testing.T, st store.Store, vendor *heldVendor) func(context.Context) error {
	t.Helper()
	providers := slots.New(slots.Config{BaseURLs: map[int]string{2: vendor.URL + "/v1", 8: vendor.URL + "/v1"},
		PerSlotConcurrency: 1, RetryBaseDelay: time.Millisecond})
	return startNode(t, st, node{providers: providers, chats: providers})
}

// node is what startNode runs a process with: its providers, the node id
// it works under ("" for none, which reclaims nothing), and how long its
// stop waits for the work it cancelled (0 for the store's default).
type node struct {
	id        string
	providers Providers
	chats     Chats
	hardStop  time.Duration
	// cfg is the process's configuration (JobCheck is set for the test).
	cfg Config
}

// startNode runs the pipeline's workers under River over st, as one serve
// process does, and returns the process's stop.
func startNode(t *testing.T, st store.Store, n node) func(context.Context) error {
	t.Helper()
	bucket, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{NoTempDir: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bucket.Close() })
	fetcher, err := fetch.New(fetch.Config{PublicURL: "http://docjobs.test", Timeout: time.Minute}, fetch.Deps{
		Client: outbound.NewClient(outbound.Config{AllowPrivate: true, Timeout: time.Minute}),
		Bucket: bucket, Files: st,
		// Unique across the processes of a test, as a real one's are.
		NewID: func() string { return "f" + strconv.FormatInt(drainIDs.Add(1), 10) },
	})
	if err != nil {
		t.Fatal(err)
	}
	sender, err := webhook.NewSender(webhook.Config{Client: outbound.NewClient(outbound.Config{AllowPrivate: true})})
	if err != nil {
		t.Fatal(err)
	}
	workers := river.NewWorkers()
	cfg := n.cfg
	cfg.JobCheck = 20 * time.Millisecond
	queues, err := Register(workers, cfg, Deps{
		Store: st, Fetcher: fetcher, Convert: convert.New(convert.Config{}).Convert, Webhooks: sender, Bucket: bucket,
		Providers: n.providers, Chats: n.chats, Secrets: plainOpener{}, Chunker: wordChunker{n: 1000},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	stop, err := st.Work(t.Context(), store.WorkConfig{Workers: workers, Queues: queues, ClientID: n.id,
		HardStopWait: n.hardStop, RescueStuckJobsAfter: time.Hour, FetchPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = stop(ctx) // a second stop finds the client stopped
	})
	return stop
}

// drainIDs numbers the files stored by startProcess's processes.
var drainIDs atomic.Int64

// stopAtTheBudget stops a process whose graceful stop's budget
// (DOCJOBS_SHUTDOWN_TIMEOUT) is over before its calls in flight end: River
// cancels the work still running, and stop returns once it has returned.
func stopAtTheBudget(t *testing.T, stop func(context.Context) error) {
	t.Helper()
	over, cancel := context.WithCancel(context.Background())
	cancel()
	if err := stop(over); err == nil {
		t.Fatal("the process stopped within a budget that was over: nothing was in flight")
	}
}

// TestAStopMidCallHandsTheFileBackAndPaysEachAnswerOnce: a process whose
// graceful stop runs out while a file's provider call is in flight (OCR,
// or the model stage; the file's first or its last River attempt) records
// nothing FAILED: the file goes back to River, and the next process
// finishes it, each page and chunk answered (paid) once. Before, the OCR
// row was FAILED "provider call abandoned: stop initiated" (and "waiting
// for a free … slot: stop initiated" for a file waiting for the slot), and
// on a file's last attempt its rows were failed "the worker stopped while
// the file was in progress".
//
// A consensus chunk's runs (k = 3, one call in flight per slot: one run
// in flight, two waiting for the slot) cut by the stop keep nothing in
// ocr_pages and leave their row PENDING; the next process asks all three
// and votes on three answers. Before, each cut run was kept as an
// unusable outcome ("provider call abandoned: stop initiated", "waiting
// for a free … slot: stop initiated") and the next process voted on
// them: the row FAILED "consensus: no votable run" (audit-crash F1). An
// OCR page cut by the stop is no more kept as a failure: the next process
// asks it, and each scan is answered once.
func TestAStopMidCallHandsTheFileBackAndPaysEachAnswerOnce(t *testing.T) {
	tests := []struct {
		name     string
		attempts int  // the file's River attempts: 1 makes the stopped one its last
		model    bool // the call in flight is the model stage's, else OCR's
		runs     int  // the model stage's consensus runs; 0 for none
	}{
		{"an OCR call", 5, false, 0},
		{"an OCR call in the file's last attempt", 1, false, 0},
		{"a model call", 5, true, 0},
		{"a model call in the file's last attempt", 1, true, 0},
		{"a consensus chunk's runs, in flight and waiting for the slot", 5, true, 3},
		{"a consensus chunk's runs in the file's last attempt", 1, true, 3},
	}
	forEachStore(t, func(t *testing.T, st store.Store) {
		for n, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				vendor := newHeldVendor(t)
				src := scanSource(t)
				id := "job-drain-" + string(rune('a'+n))
				j := &job.Job{ID: id, AccountID: "acct", Status: job.StatusNew, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED",
					OCR: job.OCR{Provider: "NEURAL_CLIENT_TYPE_PROVIDER_8", Model: "vision"}, Created: time.Now()}
				key := drainOCRKey
				if tc.model {
					j.SourceURLs = []string{src.URL + "/a.txt"}
					j.Prompts = []string{"extract"}
					j.Neural = job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_2", Model: "gpt-4.1", ChunkBudgetTokens: 4000}
					key = drainModelKey
					if tc.runs == 3 {
						j.ConsensusMode = "CONSENSUS_MODE_THREE_RUNS"
					}
				} else {
					// Two scans and one call in flight per slot: the second
					// waits for the slot when the stop comes.
					j.SourceURLs = []string{src.URL + "/scan-0.png", src.URL + "/scan-1.png"}
				}
				enqueue := FirstStage(id, len(j.SourceURLs))
				for i := range enqueue {
					enqueue[i].InsertOpts = &river.InsertOpts{MaxAttempts: tc.attempts}
				}
				if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j, Enqueue: enqueue,
					Secrets: []job.SealedSecret{
						{Field: job.SecretOCRProviderKey, Ciphertext: []byte(drainOCRKey)},
						{Field: job.SecretNeuralAPIKey, Ciphertext: []byte(drainModelKey)},
					}}); err != nil {
					t.Fatal(err)
				}

				stop := startProcess(t, st, vendor)
				vendor.waitForCall(t, key)
				stopAtTheBudget(t, stop)

				res, err := st.GetResult(context.Background(), "", id)
				if err != nil {
					t.Fatal(err)
				}
				if res.Job.Status.Terminal() {
					t.Errorf("the stop ended the job: %s", res.Job.Status)
				}
				for _, r := range res.OCR {
					if r.Status == job.RowFailed {
						t.Errorf("the stop failed OCR row %d: %q", r.FileIndex, r.Error)
					}
				}
				for _, r := range res.LLM {
					if r.Status == job.RowFailed {
						t.Errorf("the stop failed model row %d/%d: %q", r.FileIndex, r.ChunkIndex, r.Error)
					}
				}
				// Nothing was answered: a consensus run cut by the stop
				// keeps no outcome.
				for r := range tc.runs {
					if v, err := st.GetOCRPage(context.Background(), id, 0, "model/0/0/run/"+strconv.Itoa(r)); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("run %d of the cut chunk kept %s (%v), want nothing", r, v, err)
					}
				}
				if t.Failed() {
					return
				}

				// The next process; the vendor now answers at once. The
				// stopped process's calls are seen cut off first: its
				// connections close as it stops, but the vendor hears of it
				// a moment later, and a call released before would count
				// as answered.
				vendor.waitCutOff(t, key)
				close(vendor.release)
				startProcess(t, st, vendor)
				res = endOf(t, st, id)
				if res.Job.Status != job.StatusComplete {
					t.Errorf("job %s (%s), want COMPLETE", res.Job.Status, res.Job.Error)
				}
				for _, r := range res.OCR {
					if r.Status != job.RowDone {
						t.Errorf("OCR row %d %s %q, want DONE", r.FileIndex, r.Status, r.Error)
					}
				}
				for _, r := range res.LLM {
					if want := map[bool]job.RowStatus{true: job.RowDone, false: job.RowSkipped}[tc.model]; r.Status != want {
						t.Errorf("model row %d/%d %s %q, want %s", r.FileIndex, r.ChunkIndex, r.Status, r.Error, want)
					}
				}
				// One page per scan, one chunk per text: each file's one
				// answer paid once (a consensus chunk's once per run), and
				// the call cut off by the stop begun besides.
				want := len(j.SourceURLs) * max(tc.runs, 1)
				if started, answered, gone := vendor.counts(key); answered != want || started <= answered {
					t.Errorf("the vendor began %d calls, answered %d, saw %d cut off; want %d answered and the call the stop cut off",
						started, answered, gone, want)
				}
				for _, r := range res.LLM {
					if tc.runs == 0 {
						continue
					}
					var block struct {
						RunsVotable int  `json:"runsVotable"`
						Incomplete  bool `json:"incomplete"`
					}
					if err := json.Unmarshal(r.Consensus, &block); err != nil || block.RunsVotable != tc.runs || block.Incomplete {
						t.Errorf("model row %d/%d consensus %s (%v), want all %d runs votable", r.FileIndex, r.ChunkIndex, r.Consensus, err, tc.runs)
					}
				}
			})
		}
	})
}

// stoppingOCR answers a page, paid for, and cancels the context of the
// call as the answer comes back, as a stop that lands at that moment does.
type stoppingOCR struct {
	calls atomic.Int64
	stop  context.CancelFunc
}

func (o *stoppingOCR) Recognize(_ context.Context, doc provider.Document) (provider.Recognition, error) {
	o.calls.Add(1)
	if o.stop != nil {
		o.stop()
	}
	return provider.Recognition{Text: "text of page " + string(doc.Data), Format: "markdown", Model: "m"}, nil
}

// TestAnAnswerPaidForAsTheWorkerStopsIsKept: an OCR answer that arrives as
// the worker's context ends is kept all the same, so the file's next run
// reads it instead of paying the vendor again. Before, it was dropped:
// "keep the answer: put ocr page …: context canceled".
func TestAnAnswerPaidForAsTheWorkerStopsIsKept(t *testing.T) {
	st := openStore(t)
	createJob(t, st, "job-paid", "acct", "https://example.com/scan.png")
	page := provider.Document{Data: []byte("scan"), MIME: "image/png", Page: 1, Format: "markdown"}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	vendor := &stoppingOCR{stop: stop}
	rec, err := (&cachedOCR{store: st, jobID: "job-paid", next: vendor}).Recognize(ctx, page)
	if err != nil || rec.Text != "text of page scan" {
		t.Fatalf("the answer that came as the stop did = %+v, %v; want it, kept", rec, err)
	}

	vendor.stop = nil
	rec, err = (&cachedOCR{store: st, jobID: "job-paid", next: vendor}).Recognize(context.Background(), page)
	if err != nil || rec.Text != "text of page scan" {
		t.Fatalf("the next run's read = %+v, %v", rec, err)
	}
	if n := vendor.calls.Load(); n != 1 {
		t.Fatalf("the vendor was paid %d times for the page, want once", n)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal("the stop never came")
	}
}

// cutAtSecrets is a store whose read of the job's secrets comes as the
// worker stops: cut cancels the file's River context first.
type cutAtSecrets struct {
	Store
	cut context.CancelFunc
}

func (s *cutAtSecrets) JobSecrets(ctx context.Context, jobID string) ([]job.SealedSecret, error) {
	s.cut()
	return s.Store.JobSecrets(ctx, jobID)
}

// TestAModelProviderOpenedAsTheWorkerStopsLeavesTheRowsPending: when the
// stop cuts off the read of the keys that open the model provider, the
// file's rows stay PENDING for its next run, as a call cut off does.
// Before, they were recorded FAILED "load the job's secrets: context
// canceled".
func TestAModelProviderOpenedAsTheWorkerStopsLeavesTheRowsPending(t *testing.T) {
	chat := &sendingChat{release: make(chan struct{})}
	close(chat.release)
	db := openStore(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	st := &cutAtSecrets{Store: db, cut: stop}
	source := &savingFetcher{data: "one two three four five six"}
	w, j := textFileWorker(st, source, chat), newTextFileJob(t, db)
	err := w.Work(ctx, &river.Job[FileArgs]{JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 5}, Args: FileArgs{JobID: j.ID}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Work = %v, want the stop's cause, for River to hand the file back", err)
	}
	res := result(t, db, j.ID)
	if len(res.LLM) != 3 || chat.started.Load() != 0 {
		t.Fatalf("%d model rows, %d calls; want the 3 rows recorded and no call", len(res.LLM), chat.started.Load())
	}
	for _, r := range res.LLM {
		if r.Status != job.RowPending {
			t.Errorf("model row %d %s %q, want PENDING", r.ChunkIndex, r.Status, r.Error)
		}
	}
}
