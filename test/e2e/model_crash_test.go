package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"
)

var partOf = regexp.MustCompile(`part (\d+) of (\d+)`)

// TestKilledDuringTheModelStageNoAnsweredRowIsPaidTwice answers the first
// chunk at once and holds every other call until the server has been
// killed; after the restart every row ends DONE and the chunk that had
// answered is never asked again.
func TestKilledDuringTheModelStageNoAnsweredRowIsPaidTwice(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		calls    = map[string]int{}
		released = make(chan struct{})
	)
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &req)
		part := partOf.FindString(messageText(req, "user"))
		mu.Lock()
		calls[part]++
		mu.Unlock()
		if part != "part 1 of "+partOf.FindStringSubmatch(part)[2] {
			select {
			case <-released:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": `{"ok":true}`}}},
		})
	}))
	t.Cleanup(vendor.Close)

	src := sources(t, map[string]string{"orders.md": records(120)})
	s := startServer(t, "", "DOCJOBS_PROVIDER_2_BASE_URL="+vendor.URL+"/v1")
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, promptJob([]string{src + "/orders.md"}, "List the records."))["id"].(string)

	deadline := time.Now().Add(30 * time.Second)
	for {
		res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
		if rows, _ := res["llm"].([]any); len(rows) > 1 && rows[0].(map[string]any)["status"] == "JOB_LLM_STATUS_DONE" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first chunk never answered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.kill()
	close(released)
	s.start()
	if j := s.waitTerminal(id, keyA, 2*time.Minute); j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job ended %v", j["status"])
	}
	llmRowsAllDone(t, s, id)
	mu.Lock()
	defer mu.Unlock()
	first := 0
	for part, n := range calls {
		if m := partOf.FindStringSubmatch(part); m != nil && m[1] == "1" {
			first = n
		}
	}
	if first != 1 {
		t.Errorf("the chunk that answered before the kill was asked %d times, want once (calls %v)", first, calls)
	}
}

// llmRowsAllDone reads job id's model rows and fails the test for each that
// is not DONE.
func llmRowsAllDone(t *testing.T, s *server, id string) []any {
	t.Helper()
	res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
	rows := res["llm"].([]any)
	for i, row := range rows {
		if r := row.(map[string]any); r["status"] != "JOB_LLM_STATUS_DONE" {
			t.Errorf("row %d ended %v: %v", i, r["status"], r["error"])
		}
	}
	return rows
}
