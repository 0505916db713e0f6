package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// chatVendor speaks OpenAI chat completions. It answers with the record ids
// it sees in the user message as JSON, fails on request (a document
// containing FAIL401 gets 401, TRUNCATE a cut-off answer, RATE429 a 429 on
// its first request, LIMIT429X4 on its first four, which outlasts the
// adapter's own retries) and records every request.
type chatVendor struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []map[string]any
	limited  bool // a RATE429 request was already refused
	refused  int  // LIMIT429X4 requests refused so far
}

var recordID = regexp.MustCompile(`record (\d+):`)

func newChatVendor(t *testing.T) *chatVendor {
	t.Helper()
	v := &chatVendor{}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &req)
		user := messageText(req, "user")
		v.mu.Lock()
		v.requests = append(v.requests, req)
		limit := strings.Contains(user, "RATE429") && !v.limited
		v.limited = v.limited || limit
		if strings.Contains(user, "LIMIT429X4") && v.refused < 4 {
			limit = true
			v.refused++
		}
		v.mu.Unlock()
		switch {
		case limit:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		case strings.Contains(user, "FAIL401"):
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		finish := "stop"
		if strings.Contains(user, "TRUNCATE") {
			finish = "length"
		}
		ids := []int{}
		for _, m := range recordID.FindAllStringSubmatch(user, -1) {
			var n int
			fmt.Sscan(m[1], &n)
			ids = append(ids, n)
		}
		answer, _ := json.Marshal(map[string]any{"records": ids})
		if strings.Contains(user, "NONCONFORMING") {
			answer = []byte(`{"records":"not a list"}`)
		}
		writeChat(w, string(answer), finish, 1000)
	}))
	t.Cleanup(v.srv.Close)
	return v
}

// writeChat answers an OpenAI chat completions request with content.
func writeChat(w http.ResponseWriter, content, finish string, promptTokens int) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish,
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"prompt_tokens": promptTokens, "completion_tokens": 20, "total_tokens": promptTokens + 20},
	})
}

// messageText is the text of the first message with the given role.
func messageText(req map[string]any, role string) string {
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] != role {
			continue
		}
		switch c := mm["content"].(type) {
		case string:
			return c
		case []any:
			var b strings.Builder
			for _, part := range c {
				if p, ok := part.(map[string]any); ok {
					b.WriteString(fmt.Sprint(p["text"]))
				}
			}
			return b.String()
		}
	}
	return ""
}

func promptJob(urls []string, prompts ...string) map[string]any {
	body := createBody(urls...)
	body["prompts"] = prompts
	body["neural"] = map[string]any{"type": "NEURAL_CLIENT_TYPE_PROVIDER_2", "model": "gpt-4o-mini", "apiKey": "sk-neural-MODEL-KEY-7", "chunkBudgetTokens": 1000}
	return body
}

func records(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "record %d: the customer number %d ordered %d units of part %d.\n\n", i, i*7, i%13+1, i*31)
	}
	return b.String()
}

func TestTheFirstPromptRunsOverEveryChunkAndSeesEveryRecord(t *testing.T) {
	t.Parallel()
	vendor := newChatVendor(t)
	src := sources(t, map[string]string{"orders.md": records(400)})
	s := startServer(t, "", "DOCJOBS_PROVIDER_2_BASE_URL="+vendor.srv.URL+"/v1")
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA,
		promptJob([]string{src + "/orders.md"}, "List the record numbers.", "A SECOND PROMPT that must never be sent"))["id"].(string)
	if j := s.waitTerminal(id, keyA, 2*time.Minute); j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job ended %v: %v", j["status"], j["error"])
	}
	res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
	llm := res["llm"].([]any)
	if len(llm) < 2 {
		t.Fatalf("%d model rows for 400 records at budget 1000, want several chunks", len(llm))
	}
	seen := map[int]bool{}
	for i, row := range llm {
		r := row.(map[string]any)
		if r["status"] != "JOB_LLM_STATUS_DONE" || r["chunkIndex"] != nil && r["chunkIndex"] != float64(i) ||
			r["chunkTotal"] != float64(len(llm)) || r["model"] != "gpt-4o-mini" {
			t.Fatalf("row %d = %v", i, r)
		}
		if pi, ok := r["promptIndex"]; ok && pi != float64(0) {
			t.Fatalf("row %d promptIndex = %v", i, pi)
		}
		if _, ok := r["schemaValid"]; ok {
			t.Fatalf("row %d has schemaValid without a responseSchema", i)
		}
		var answer struct{ Records []int }
		if err := json.Unmarshal([]byte(r["content"].(string)), &answer); err != nil {
			t.Fatalf("row %d content %q: %v", i, r["content"], err)
		}
		for _, n := range answer.Records {
			seen[n] = true
		}
		if r["inputTokens"] != "1000" || r["outputTokens"] != "20" {
			t.Errorf("row %d tokens = %v/%v", i, r["inputTokens"], r["outputTokens"])
		}
	}
	var missing []int
	for n := 1; n <= 400; n++ {
		if !seen[n] {
			missing = append(missing, n)
		}
	}
	sort.Ints(missing)
	if len(missing) > 0 {
		t.Fatalf("records never shown to the model: %v", missing)
	}
	vendor.mu.Lock()
	defer vendor.mu.Unlock()
	if len(vendor.requests) != len(llm) {
		t.Errorf("provider called %d times for %d chunks", len(vendor.requests), len(llm))
	}
	for _, req := range vendor.requests {
		raw, _ := json.Marshal(req)
		if strings.Contains(string(raw), "SECOND PROMPT") || strings.Contains(string(raw), "MODEL-KEY") {
			t.Fatalf("a request carried the second prompt or the key: %.300s", raw)
		}
		if !strings.Contains(messageText(req, "system"), "List the record numbers.") {
			t.Fatalf("the system message lacks the first prompt: %.300s", raw)
		}
	}
}

func TestModelAnswersAreJudgedAndFailuresNamed(t *testing.T) {
	t.Parallel()
	vendor := newChatVendor(t)
	src := sources(t, map[string]string{
		"good.txt":  records(3),
		"bad.txt":   "NONCONFORMING " + records(2),
		"auth.txt":  "FAIL401 " + records(1),
		"cut.txt":   "TRUNCATE " + records(1),
		"blank.txt": "   \n",
		"busy.txt":  "RATE429 " + records(2),
	})
	s := startServer(t, "", "DOCJOBS_PROVIDER_2_BASE_URL="+vendor.srv.URL+"/v1")
	body := promptJob([]string{src + "/good.txt", src + "/bad.txt", src + "/auth.txt", src + "/cut.txt", src + "/blank.txt", src + "/busy.txt"}, "List the record numbers.")
	body["responseSchema"] = `{"type":"object","required":["records"],"properties":{"records":{"type":"array","items":{"type":"integer"}}}}`
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, body)["id"].(string)
	if j := s.waitTerminal(id, keyA, 2*time.Minute); j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job ended %v: %v", j["status"], j["error"])
	}
	res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
	rows := res["llm"].([]any)
	row := func(i int) map[string]any { return rows[i].(map[string]any) }
	if r := row(0); r["status"] != "JOB_LLM_STATUS_DONE" || r["schemaValid"] != true {
		t.Errorf("conforming answer: %v", r)
	}
	if r := row(1); r["status"] != "JOB_LLM_STATUS_DONE" || r["schemaValid"] != false || len(r["schemaErrors"].([]any)) == 0 {
		t.Errorf("non-conforming answer: %v", r)
	}
	// A failed row keeps the request; only a 200 body is kept as raw data
	// (an error body may echo the input), and never the key.
	if r := row(2); r["status"] != "JOB_LLM_STATUS_FAILED" || !strings.Contains(fmt.Sprint(r["error"]), "category=auth, status=401") ||
		!strings.Contains(fmt.Sprint(r["request"]), "FAIL401") || r["rawData"] != nil {
		t.Errorf("401: %v", r)
	}
	if r := row(3); r["status"] != "JOB_LLM_STATUS_FAILED" || !strings.Contains(fmt.Sprint(r["error"]), "category=truncated") ||
		!strings.Contains(fmt.Sprint(r["request"]), "TRUNCATE") || !strings.Contains(fmt.Sprint(r["rawData"]), `"finish_reason":"length"`) ||
		r["inputTokens"] == nil || r["outputTokens"] == nil {
		t.Errorf("truncated: %v", r)
	}
	for i := range rows {
		if b, _ := json.Marshal(row(i)); strings.Contains(string(b), "sk-neural-MODEL-KEY-7") {
			t.Errorf("row %d holds the model key", i)
		}
	}
	if r := row(4); r["status"] != "JOB_LLM_STATUS_SKIPPED" || r["skipReason"] != "empty_ocr_content" {
		t.Errorf("blank file: %v", r)
	}
	if r := row(5); r["status"] != "JOB_LLM_STATUS_DONE" || r["schemaValid"] != true || r["content"] != `{"records":[1,2]}` {
		t.Errorf("answer after a 429: %v", r)
	}
	vendor.mu.Lock()
	defer vendor.mu.Unlock()
	auth, busy := 0, 0
	for _, req := range vendor.requests {
		if strings.Contains(messageText(req, "user"), "FAIL401") {
			auth++
		}
		if strings.Contains(messageText(req, "user"), "RATE429") {
			busy++
		}
		if rf, _ := req["response_format"].(map[string]any); rf == nil {
			t.Errorf("the schema did not reach the provider as response_format")
		}
	}
	if auth != 1 {
		t.Errorf("a 401 was sent %d times, want once (no retry)", auth)
	}
	if busy != 2 {
		t.Errorf("the rate-limited chunk was sent %d times, want twice (429, then 200)", busy)
	}
}

// A provider that stays rate limited through the adapter's own retries
// puts the file to sleep (River's snooze); when it wakes, its row is asked
// again and answered, and the job completes.
func TestARowRateLimitedPastItsRetriesIsAnsweredAfterTheSnooze(t *testing.T) {
	t.Parallel()
	vendor := newChatVendor(t)
	src := sources(t, map[string]string{"busy.txt": "LIMIT429X4 " + records(2)})
	s := startServer(t, "", "DOCJOBS_PROVIDER_2_BASE_URL="+vendor.srv.URL+"/v1")
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, promptJob([]string{src + "/busy.txt"}, "List the record numbers."))["id"].(string)
	if j := s.waitTerminal(id, keyA, time.Minute); j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job ended %v: %v", j["status"], j["error"])
	}
	res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
	if r := res["llm"].([]any)[0].(map[string]any); r["status"] != "JOB_LLM_STATUS_DONE" || r["content"] != `{"records":[1,2]}` {
		t.Fatalf("row after the snooze: %v", r)
	}
	vendor.mu.Lock()
	defer vendor.mu.Unlock()
	if n := len(vendor.requests); n != 5 {
		t.Errorf("the provider was asked %d times, want 5 (four 429s, then the answer)", n)
	}
}

func TestAJobWhoseProviderNeverAnswersEndsByItsDeadline(t *testing.T) {
	t.Parallel()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets net/http notice when the client goes away.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(hang.Close)
	src := sources(t, map[string]string{"a.txt": records(3)})
	s := startServer(t, "", "DOCJOBS_PROVIDER_2_BASE_URL="+hang.URL+"/v1", "DOCJOBS_JOB_DEADLINE=3s")
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, promptJob([]string{src + "/a.txt"}, "List the records."))["id"].(string)
	start := time.Now()
	j := s.waitTerminal(id, keyA, 30*time.Second)
	if j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job ended %v: %v; the file was recognized, so COMPLETE", j["status"], j["error"])
	}
	t.Logf("ended %s after create", time.Since(start).Round(100*time.Millisecond))
	res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
	r := res["llm"].([]any)[0].(map[string]any)
	if r["status"] != "JOB_LLM_STATUS_FAILED" || !strings.Contains(fmt.Sprint(r["error"]), "category=timeout") {
		t.Fatalf("row = %v, want FAILED with category=timeout", r)
	}
	// The call still hangs; a graceful stop would wait for it.
	s.kill()
}
