package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// slowSources serves text files, each after its own delay, so that a job's
// files finish recognition one by one.
func slowSources(t *testing.T, delays map[string]time.Duration) string {
	t.Helper()
	mux := http.NewServeMux()
	for name, d := range delays {
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, txtDoc)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// progressData is the data of a progress or done event.
type progressData struct {
	Status   string `json:"status"`
	Error    string `json:"error"`
	OCRDone  int    `json:"ocrDone"`
	OCRTotal int    `json:"ocrTotal"`
	LLMDone  int    `json:"llmDone"`
	LLMTotal int    `json:"llmTotal"`
}

type sseEvent struct {
	name string
	data progressData
	raw  string
}

// readEvents follows GET /v1/jobs/{id}/events to its end and returns its
// events (comments skipped), as any SSE client would parse them.
func readEvents(t *testing.T, base, id, key string, within time.Duration) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/jobs/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("open events: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("events: %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var (
		events []sseEvent
		cur    sseEvent
	)
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			return events
		}
		if err != nil {
			t.Fatalf("read events after %d: %v (got %+v)", len(events), err, events)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if cur.name != "" {
				events = append(events, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.raw = strings.TrimPrefix(line, "data: ")
			if err := json.Unmarshal([]byte(cur.raw), &cur.data); err != nil {
				t.Fatalf("event data is not JSON: %v: %s", err, cur.raw)
			}
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
}

// checkLiveProgress checks a whole stream of a 3-file job without prompts.
func checkLiveProgress(t *testing.T, events []sseEvent) {
	t.Helper()
	for _, ev := range events {
		t.Logf("%s %s", ev.name, ev.raw)
	}
	if len(events) < 2 {
		t.Fatalf("events = %+v, want progress events and done", events)
	}
	last := events[len(events)-1]
	if last.name != "done" {
		t.Fatalf("the stream ends with %q, want done: %+v", last.name, events)
	}
	if last.data.Status != "JOB_STATUS_COMPLETE" || last.data.OCRDone != 3 || last.data.LLMDone != 3 {
		t.Errorf("done carries %+v, want COMPLETE with 3 files and 3 model rows done", last.data)
	}
	if prev := events[len(events)-2]; prev.name != "progress" || prev.raw != last.raw {
		t.Errorf("done is not preceded by the same terminal progress: %+v", prev)
	}
	ocrDone, intermediate := -1, false
	for i, ev := range events[:len(events)-1] {
		if ev.name != "progress" {
			t.Errorf("event %d is %q before the end", i, ev.name)
		}
		if ev.data.OCRTotal != 3 {
			t.Errorf("event %d: ocrTotal %d, want 3", i, ev.data.OCRTotal)
		}
		if ev.data.OCRDone < ocrDone {
			t.Errorf("event %d: ocrDone went back from %d to %d", i, ocrDone, ev.data.OCRDone)
		}
		if ev.data.OCRDone == ocrDone && i > 0 && ev.raw == events[i-1].raw {
			t.Errorf("event %d repeats an unchanged state: %s", i, ev.raw)
		}
		ocrDone = ev.data.OCRDone
		if ocrDone > 0 && ocrDone < 3 {
			intermediate = true
		}
	}
	if !intermediate {
		t.Errorf("no event showed the files finishing one by one: %+v", events)
	}
}

// threeSlowFiles creates the job the tests watch: its files arrive after
// 0.5s, 1.25s and 2s, further apart than the stream's poll interval.
func threeSlowFiles(t *testing.T, s *server) string {
	t.Helper()
	src := slowSources(t, map[string]time.Duration{
		"a.txt": 500 * time.Millisecond, "b.txt": 1250 * time.Millisecond, "c.txt": 2 * time.Second,
	})
	return s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(src+"/a.txt", src+"/b.txt", src+"/c.txt"))["id"].(string)
}

func TestEventsFollowAJobFileByFileUntilDone(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := startServer(t, b.databaseURL(t))
			id := threeSlowFiles(t, s)
			checkLiveProgress(t, readEvents(t, s.base, id, keyA, time.Minute))

			// A finished job answers at once: its state, then done.
			again := readEvents(t, s.base, id, keyA, 10*time.Second)
			if len(again) != 2 || again[0].name != "progress" || again[1].name != "done" ||
				again[1].data.Status != "JOB_STATUS_COMPLETE" {
				t.Errorf("a finished job's stream: %+v", again)
			}
		})
	}
}

func TestEventsOfAnotherAccountsOrAnUnknownJobAreNotFound(t *testing.T) {
	t.Parallel()
	src := sources(t, map[string]string{"a.txt": txtDoc})
	s := startServer(t, "")
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(src+"/a.txt"))["id"].(string)
	for _, c := range []struct{ name, id, key string }{
		{"another account's job", id, keyB},
		{"an unknown job", "job_does_not_exist", keyA},
	} {
		r := s.do("GET", "/v1/jobs/"+c.id+"/events", c.key, nil)
		if r.status != http.StatusNotFound || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q, want a JSON 404: %s", c.name, r.status, r.header.Get("Content-Type"), r.body)
			continue
		}
		body := r.json(t)
		if body["code"] != float64(5) || body["message"] == "" {
			t.Errorf("%s: body %s, want code 5 (NOT_FOUND) with a message", c.name, r.body)
		}
		if strings.Contains(string(r.body), c.id) {
			t.Errorf("%s: the answer echoes the id: %s", c.name, r.body)
		}
	}
	if r := s.do("GET", "/v1/jobs/"+id+"/events", "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("no key: %d, want 401", r.status)
	}
}

// TestEventsFromTheAPIWhileAWorkerWorks watches a job through the API
// process while another process works it: progress comes from the database.
func TestEventsFromTheAPIWhileAWorkerWorks(t *testing.T) {
	t.Parallel()
	pg := os.Getenv("DOCJOBS_TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("DOCJOBS_TEST_POSTGRES_URL is not set")
	}
	dbURL := freshSchema(t, pg)
	apiNode := startServer(t, dbURL, "DOCJOBS_ROLE=api")
	storage := "DOCJOBS_STORAGE_URL=file://" + filepath.Join(apiNode.dataDir, "files") + "?create_dir=true&no_tmp_dir=true"
	keyset := "DOCJOBS_MASTER_KEY_FILE=" + filepath.Join(apiNode.dataDir, "master.keyset")
	startWorker(t, dbURL, storage, keyset, "DOCJOBS_PUBLIC_URL="+apiNode.base)

	id := threeSlowFiles(t, apiNode)
	checkLiveProgress(t, readEvents(t, apiNode.base, id, keyA, time.Minute))
}
