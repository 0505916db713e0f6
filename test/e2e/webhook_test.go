package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// delivery is one request a webhook receiver got.
type delivery struct {
	id, timestamp, signature string
	body                     []byte
}

// receiver answers the n-th delivery with codes[n] (200 past the end) and
// signals each one on got.
type receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	seen  []delivery
	codes []int
	got   chan struct{}
}

func newReceiver(t *testing.T, codes ...int) *receiver {
	t.Helper()
	rc := &receiver{codes: codes, got: make(chan struct{}, 100)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.seen = append(rc.seen, delivery{r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body})
		code := http.StatusOK
		if n := len(rc.seen) - 1; n < len(rc.codes) {
			code = rc.codes[n]
		}
		rc.mu.Unlock()
		w.WriteHeader(code)
		rc.got <- struct{}{}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) wait(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-rc.got:
	case <-time.After(within):
		t.Fatalf("no webhook delivery within %s", within)
	}
}

// rowCount runs a COUNT query with one argument on the server's database.
func rowCount(t *testing.T, dbURL, dataDir, query, arg string) int {
	t.Helper()
	var n int
	if dbURL == "" {
		db, err := sql.Open("sqlite", filepath.Join(dataDir, "docjobs.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRow(query, arg).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), strings.ReplaceAll(query, "?", "$1"), arg).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWebhookIsSignedRetriedAcrossACrashAndEndsWithItsSecret(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			src := sources(t, map[string]string{"a.txt": txtDoc})
			rc := newReceiver(t, http.StatusInternalServerError, http.StatusInternalServerError)
			dbURL := b.databaseURL(t)
			s := startServer(t, dbURL, "DOCJOBS_WEBHOOK_RETRY_SCHEDULE=2s,2s,2s")
			const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
			body := createBody(src + "/a.txt")
			body["webhookUrl"] = rc.srv.URL + "/hook"
			body["webhookSecret"] = secret
			body["title"] = "Quarterly"
			id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, body)["id"].(string)

			rc.wait(t, time.Minute)
			// Once the failed first attempt is recorded and its River job has
			// ended (a retry is scheduled), the server dies before the retry.
			deadline := time.Now().Add(30 * time.Second)
			for {
				w, _ := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id, keyA, nil)["webhook"].(map[string]any)
				running := rowCount(t, dbURL, s.dataDir, `SELECT COUNT(*) FROM river_job WHERE kind = 'webhook' AND state = ?`, "running")
				if w != nil && w["attempts"] == float64(1) && running == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the first attempt did not end: %v, %d running", w, running)
				}
				time.Sleep(20 * time.Millisecond)
			}
			killed := time.Now()
			s.kill()
			s.start()
			rc.wait(t, time.Minute)
			if waited := time.Since(killed); waited < time.Second {
				t.Errorf("the retry came %s after the crash; its schedule says 2s after the first attempt", waited)
			}
			rc.wait(t, time.Minute)

			j := s.waitTerminal(id, keyA, time.Minute)
			deadline = time.Now().Add(30 * time.Second)
			for j["webhook"].(map[string]any)["state"] != "delivered" && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				j = s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id, keyA, nil)
			}
			w := j["webhook"].(map[string]any)
			if w["state"] != "delivered" || w["attempts"] != float64(3) || w["lastStatus"] != float64(200) || w["deliveredAt"] == nil {
				t.Errorf("webhook summary = %v", w)
			}

			rc.mu.Lock()
			seen := append([]delivery(nil), rc.seen...)
			rc.mu.Unlock()
			if len(seen) != 3 {
				t.Fatalf("%d deliveries, want 3 (500, 500, 200)", len(seen))
			}
			key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
			for i, d := range seen {
				if d.id != seen[0].id || d.id == "" {
					t.Errorf("delivery %d has webhook-id %q, want the first's %q", i, d.id, seen[0].id)
				}
				mac := hmac.New(sha256.New, key)
				mac.Write([]byte(d.id + "." + d.timestamp + "." + string(d.body)))
				if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); d.signature != want {
					t.Errorf("delivery %d signature %q, want %q", i, d.signature, want)
				}
			}
			var payload map[string]any
			if err := json.Unmarshal(seen[2].body, &payload); err != nil {
				t.Fatal(err)
			}
			if payload["type"] != "job.completed" || payload["job_id"] != id || payload["account_id"] != "acct-a" ||
				payload["status"] != "JOB_STATUS_COMPLETE" || payload["title"] != "Quarterly" ||
				payload["result_url"] != s.base+"/v1/jobs/"+id+"/result" {
				t.Errorf("payload = %s", seen[2].body)
			}
			if strings.Contains(string(seen[2].body), "SECRET") || strings.Contains(string(seen[2].body), secret) {
				t.Errorf("the payload carries a secret: %s", seen[2].body)
			}

			if n := rowCount(t, dbURL, s.dataDir, `SELECT COUNT(*) FROM job_secrets WHERE job_id = ?`, id); n != 0 {
				t.Errorf("%d sealed secrets left for a delivered job", n)
			}
			if n := rowCount(t, dbURL, s.dataDir, `SELECT COUNT(*) FROM webhook_attempts WHERE job_id = ?`, id); n != 3 {
				t.Errorf("%d attempts recorded, want 3", n)
			}
		})
	}
}

// A private webhook address is refused when the job is created (the dial
// time refusal of names that resolve to one is tested in package webhook);
// the other tests here allow private URLs and are delivered.
func TestWebhookToAPrivateAddressIsRefused(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	s := startServer(t, "", "DOCJOBS_ALLOW_PRIVATE_URLS=false")
	body := createBody("https://docs.example.com/a.txt")
	body["webhookUrl"] = rc.srv.URL + "/hook"
	r := s.do("POST", "/v1/jobs", keyA, body)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "webhookUrl: must not point to a private or local address") {
		t.Errorf("create with a loopback webhook: %d %s", r.status, r.body)
	}
}

func TestCancellingAJobSendsJobCancelled(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	s := startServer(t, "")
	body := createBody(slow.URL + "/a.txt")
	body["webhookUrl"] = rc.srv.URL + "/hook"
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, body)["id"].(string)
	s.mustDo(http.StatusOK, "POST", "/v1/jobs/"+id+":cancel", keyA, map[string]any{})
	rc.wait(t, 30*time.Second)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var payload map[string]any
	if err := json.Unmarshal(rc.seen[0].body, &payload); err != nil || payload["type"] != "job.cancelled" || payload["status"] != "JOB_STATUS_CANCELLED" {
		t.Errorf("payload = %s (%v)", rc.seen[0].body, err)
	}
	if rc.seen[0].signature != "" {
		t.Errorf("a job without a webhook secret sent a signature %q", rc.seen[0].signature)
	}
}

func TestRetentionDeletesFinishedJobsWithTheirFiles(t *testing.T) {
	t.Parallel()
	src := sources(t, map[string]string{"a.txt": txtDoc})
	s := startServer(t, "", "DOCJOBS_RETENTION=2s")
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(src+"/a.txt"))["id"].(string)
	j := s.waitTerminal(id, keyA, time.Minute)
	file := strings.TrimPrefix(j["files"].([]any)[0].(string), s.base)
	if r := s.do("GET", file, keyA, nil); r.status != http.StatusOK {
		t.Fatalf("the stored copy before retention: %d", r.status)
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.do("GET", "/v1/jobs/"+id, keyA, nil).status != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("the job outlived its retention by 28s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := s.do("GET", file, keyA, nil); r.status != http.StatusNotFound {
		t.Errorf("the stored copy after retention: %d, want 404", r.status)
	}
	if n := rowCount(t, "", s.dataDir, `SELECT COUNT(*) FROM ocr_rows WHERE job_id = ?`, id); n != 0 {
		t.Errorf("%d OCR rows left", n)
	}
}

func TestAWebhookIsGivenUpOnceItsRetryScheduleIsSpent(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			src := sources(t, map[string]string{"a.txt": txtDoc})
			// Always 500, a fourth attempt included, should one come.
			rc := newReceiver(t, 500, 500, 500, 500, 500)
			dbURL := b.databaseURL(t)
			s := startServer(t, dbURL, "DOCJOBS_WEBHOOK_RETRY_SCHEDULE=1s,1s")
			body := createBody(src + "/a.txt")
			body["webhookUrl"] = rc.srv.URL + "/hook"
			body["webhookSecret"] = "a plain secret"
			id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, body)["id"].(string)
			for range 3 {
				rc.wait(t, time.Minute)
			}
			var w map[string]any
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if w, _ = s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id, keyA, nil)["webhook"].(map[string]any); w["state"] != "pending" {
					break
				}
			}
			if w["state"] != "failed" || w["attempts"] != float64(3) || w["lastStatus"] != float64(500) ||
				w["lastError"] != "receiver answered 500 Internal Server Error; given up after 3 attempts" || w["deliveredAt"] != nil {
				t.Errorf("webhook summary = %v, want failed, given up after three 500s", w)
			}
			if n := rowCount(t, dbURL, s.dataDir, `SELECT COUNT(*) FROM job_secrets WHERE job_id = ?`, id); n != 0 {
				t.Errorf("%d sealed secrets left after the delivery was given up", n)
			}
			if n := rowCount(t, dbURL, s.dataDir, `SELECT COUNT(*) FROM webhook_attempts WHERE job_id = ?`, id); n != 3 {
				t.Errorf("%d attempts recorded, want 3", n)
			}
			// A fourth attempt would come a second after the third; River's
			// scheduler may add a few more.
			time.Sleep(4 * time.Second)
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if len(rc.seen) != 3 {
				t.Errorf("%d deliveries, want 3: the first and one per entry of the schedule", len(rc.seen))
			}
		})
	}
}

func TestAReceiverAnswering410GoneEndsTheDeliveryAndItsSecret(t *testing.T) {
	t.Parallel()
	src := sources(t, map[string]string{"a.txt": txtDoc})
	rc := newReceiver(t, http.StatusGone)
	s := startServer(t, "", "DOCJOBS_WEBHOOK_RETRY_SCHEDULE=1s,1s")
	body := createBody(src + "/a.txt")
	body["webhookUrl"] = rc.srv.URL + "/hook"
	body["webhookSecret"] = "a plain secret"
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, body)["id"].(string)
	rc.wait(t, time.Minute)
	var w map[string]any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if w, _ = s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id, keyA, nil)["webhook"].(map[string]any); w["state"] == "failed" {
			break
		}
	}
	if w["state"] != "failed" || w["attempts"] != float64(1) || w["lastStatus"] != float64(410) {
		t.Errorf("webhook summary = %v, want failed after one 410", w)
	}
	if n := rowCount(t, "", s.dataDir, `SELECT COUNT(*) FROM job_secrets WHERE job_id = ?`, id); n != 0 {
		t.Errorf("%d sealed secrets left after the delivery was given up", n)
	}
	time.Sleep(1500 * time.Millisecond) // past the first retry's time
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.seen) != 1 {
		t.Errorf("%d deliveries after a 410, want 1", len(rc.seen))
	}
	mac := hmac.New(sha256.New, []byte("a plain secret"))
	d := rc.seen[0]
	mac.Write([]byte(d.id + "." + d.timestamp + "." + string(d.body)))
	if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); d.signature != want {
		t.Errorf("signature with a plain secret %q, want %q", d.signature, want)
	}
}
