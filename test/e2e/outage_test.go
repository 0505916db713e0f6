package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
)

// dbSwitch takes PostgreSQL away from the service and gives it back
// (pgtest.Switch: a TCP proxy that cuts its connections and refuses new
// ones while down).
type dbSwitch struct{ down, up func() }

// newDBSwitch returns rawURL with its host replaced by a switch to it.
func newDBSwitch(t *testing.T, rawURL string) (*dbSwitch, string) {
	t.Helper()
	proxied, down, up := pgtest.Switch(t, rawURL)
	return &dbSwitch{down: down, up: up}, proxied
}

// outageFor takes the database away now and gives it back after d, once
// per test whatever calls it.
func (sw *dbSwitch) outageFor(once *sync.Once, d time.Duration, ended chan<- struct{}) {
	once.Do(func() {
		sw.down()
		time.AfterFunc(d, func() { sw.up(); close(ended) })
	})
}

// TestADatabaseOutageLosesNoPaidAnswerNorRepeatsAWebhook takes PostgreSQL
// away from a running service twice: for 8 s as the provider answers a
// file's chunks, longer than the ~6 s the records of answers were tried
// for (every answer was then lost and paid again once the database came
// back), and for 3 s as the webhook receiver takes the delivery (its
// record had one try; River sent the webhook again). The job ends
// COMPLETE, each chunk is asked once and the webhook arrives once.
func TestADatabaseOutageLosesNoPaidAnswerNorRepeatsAWebhook(t *testing.T) {
	t.Parallel()
	pg := os.Getenv("DOCJOBS_TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("DOCJOBS_TEST_POSTGRES_URL is not set")
	}
	sw, dbURL := newDBSwitch(t, freshSchema(t, pg))

	var (
		mu         sync.Mutex
		calls      = map[string]int{}
		deliveries int
		modelOnce  sync.Once
		hookOnce   sync.Once
		modelBack  = make(chan struct{})
		hookBack   = make(chan struct{})
	)
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &req)
		mu.Lock()
		calls[partOf.FindString(messageText(req, "user"))]++
		mu.Unlock()
		// The chunks' calls are in flight together: the first takes the
		// database away, and every answer arrives while it is gone.
		sw.outageFor(&modelOnce, 8*time.Second, modelBack)
		writeChat(w, `{"ok":true}`, "stop", 100)
	}))
	t.Cleanup(vendor.Close)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		deliveries++
		mu.Unlock()
		sw.outageFor(&hookOnce, 3*time.Second, hookBack)
	}))
	t.Cleanup(receiver.Close)

	src := sources(t, map[string]string{"orders.md": records(120)})
	s := startServer(t, dbURL, "DOCJOBS_PROVIDER_2_BASE_URL="+vendor.URL+"/v1",
		// A delivery whose record was lost was sent again a second later.
		"DOCJOBS_WEBHOOK_RETRY_SCHEDULE=1s,1s,1s")
	body := promptJob([]string{src + "/orders.md"}, "List the records.")
	body["webhookUrl"] = receiver.URL + "/hook"
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, body)["id"].(string)

	for _, back := range []chan struct{}{modelBack, hookBack} {
		select {
		case <-back:
		case <-time.After(time.Minute):
			t.Fatalf("the outage never began: the provider or the receiver was not called")
		}
	}
	j := s.waitTerminal(id, keyA, time.Minute)
	if j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job ended %v: %v", j["status"], j["error"])
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		j = s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id, keyA, nil)
		if wh, _ := j["webhook"].(map[string]any); wh["state"] != "pending" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook still pending: %v", j["webhook"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A second delivery would follow the schedule's second by about as
	// much again.
	time.Sleep(3 * time.Second)

	wh := j["webhook"].(map[string]any)
	if wh["state"] != "delivered" || wh["attempts"] != float64(1) {
		t.Errorf("webhook = %v, want delivered at the first attempt", wh)
	}
	rows := llmRowsAllDone(t, s, id)
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != len(rows) || len(rows) < 2 {
		t.Errorf("the provider was asked for %d chunks, the job has %d rows: %v", len(calls), len(rows), calls)
	}
	for part, n := range calls {
		if n != 1 {
			t.Errorf("%q was asked %d times, want once: an answer that arrived during the outage was lost", part, n)
		}
	}
	if deliveries != 1 {
		t.Errorf("the receiver got the webhook %d times, want once", deliveries)
	}
}

// TestADatabaseOutageDuringOCRDoesNotFailTheFile takes PostgreSQL away for
// 5 s as the vision provider answers the first page of a three-page PDF
// read OCR_ALWAYS. The page cache's write had one try, and its error
// failed the file's row as a bad input would: the job ended FAILED, "no
// file could be recognized", with the database's error as the reason.
// Now the answers are kept once the database is back, the file is
// recognized, and no page is asked twice.
func TestADatabaseOutageDuringOCRDoesNotFailTheFile(t *testing.T) {
	t.Parallel()
	pg := os.Getenv("DOCJOBS_TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("DOCJOBS_TEST_POSTGRES_URL is not set")
	}
	pdf, err := os.ReadFile("testdata/eu-001.pdf")
	if err != nil {
		t.Fatal(err)
	}
	sw, dbURL := newDBSwitch(t, freshSchema(t, pg))
	var (
		mu    sync.Mutex
		pages = map[string]int{}
		once  sync.Once
		back  = make(chan struct{})
	)
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		pages[string(raw)]++
		mu.Unlock()
		sw.outageFor(&once, 5*time.Second, back)
		writeChat(w, "Transcribed by the vendor.", "stop", 10)
	}))
	t.Cleanup(vendor.Close)
	src := sources(t, map[string]string{"eu.pdf": string(pdf)})
	s := startServer(t, dbURL, "DOCJOBS_PROVIDER_2_BASE_URL="+vendor.URL+"/v1")
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, visionJob([]string{src + "/eu.pdf"}, "EXTRACTION_MODE_OCR_ALWAYS"))["id"].(string)
	select {
	case <-back:
	case <-time.After(time.Minute):
		t.Fatal("the outage never began: the provider was not called")
	}
	j := s.waitTerminal(id, keyA, time.Minute)
	row := ocrRow(t, s, id, 0)
	if j["status"] != "JOB_STATUS_COMPLETE" || row["status"] != "JOB_OCR_STATUS_DONE" {
		t.Fatalf("job ended %v (%v), its file %v: %v", j["status"], j["error"], row["status"], row["error"])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pages) != 3 {
		t.Errorf("the provider was asked %d different pages, want 3", len(pages))
	}
	for _, n := range pages {
		if n != 1 {
			t.Errorf("a page was asked %d times, want once", n)
		}
	}
}
