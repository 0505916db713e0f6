package e2e

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCreateIsRejectedWithTheFieldNamed sends each request the contract
// refuses to the binary; the messages are those of TestValidateCreate
// (internal/api), in full.
func TestCreateIsRejectedWithTheFieldNamed(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	deep := strings.Repeat(`{"items":`, 70) + `{}` + strings.Repeat(`}`, 70)
	long := strings.Repeat("k", 256)
	tests := []struct {
		name    string
		mutate  func(map[string]any)
		message string
	}{
		{"missing sourceUrls", func(b map[string]any) { delete(b, "sourceUrls") }, "sourceUrls: required"},
		{"empty sourceUrls", func(b map[string]any) { b["sourceUrls"] = []string{} }, "sourceUrls: required"},
		{"relative source URL", func(b map[string]any) { b["sourceUrls"] = []string{"/a.txt"} },
			"sourceUrls[0]: must be an absolute http or https URL"},
		{"ftp source URL", func(b map[string]any) { b["sourceUrls"] = []string{"ftp://example.com/a.txt"} },
			"sourceUrls[0]: must be an absolute http or https URL"},
		{"missing neural", func(b map[string]any) { delete(b, "neural") }, "neural: required"},
		{"missing ocr", func(b map[string]any) { delete(b, "ocr") }, "ocr: required"},
		{"missing ocr.provider", func(b map[string]any) { delete(b["ocr"].(map[string]any), "provider") }, "ocr.provider: required"},
		{"missing ocr.model", func(b map[string]any) { delete(b["ocr"].(map[string]any), "model") }, "ocr.model: required"},
		{"missing ocr.providerKey", func(b map[string]any) { delete(b["ocr"].(map[string]any), "providerKey") }, "ocr.providerKey: required"},
		{"schema not JSON", func(b map[string]any) { b["responseSchema"] = "{nope" },
			"responseSchema: not valid JSON: invalid character 'n'"},
		{"schema not a schema", func(b map[string]any) { b["responseSchema"] = `{"type": 12}` },
			"responseSchema: not a valid JSON Schema: at /type: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'; at /type: got number, want array"},
		{"schema external ref", func(b map[string]any) { b["responseSchema"] = `{"$ref": "https://example.com/s.json"}` },
			`responseSchema: references must be internal (start with "#"): $ref "https://example.com/s.json" at /$ref`},
		{"schema too deep", func(b map[string]any) { b["responseSchema"] = deep }, "responseSchema: deeper than 64 levels"},
		{"schema too large", func(b map[string]any) {
			b["responseSchema"] = `{"description": "` + strings.Repeat("x", 129<<10) + `"}`
		}, "responseSchema: larger than 131072 bytes (128 KiB)"},
		{"schema of more than 10000 nodes", func(b map[string]any) {
			b["responseSchema"] = `{"enum":[` + strings.TrimSuffix(strings.Repeat("1,", 10000), ",") + `]}`
		}, "responseSchema: more than 10000 nodes"},
		{"consensus without schema", func(b map[string]any) { b["consensus"] = map[string]any{"mode": "CONSENSUS_MODE_THREE_RUNS"} },
			"consensus.mode: requires responseSchema"},
		{"33 dedupeBy names", func(b map[string]any) {
			names := make([]string, 33)
			for i := range names {
				names[i] = fmt.Sprintf("f%d", i)
			}
			b["merge"] = map[string]any{"enabled": true, "dedupeBy": names}
		}, "merge.dedupeBy: at most 32 names"},
		{"idempotencyKey of 256 characters", func(b map[string]any) { b["idempotencyKey"] = long }, "idempotencyKey: at most 255 characters"},
		{"relative webhookUrl", func(b map[string]any) { b["webhookUrl"] = "hooks/done" },
			"webhookUrl: must be an absolute http or https URL"},
		{"non-http webhookUrl", func(b map[string]any) { b["webhookUrl"] = "mailto:ops@example.com" },
			"webhookUrl: must be an absolute http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := createBody("https://example.com/a.txt")
			tt.mutate(body)
			r := s.do("POST", "/v1/jobs", keyA, body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			if msg := r.json(t)["message"]; msg != tt.message {
				t.Fatalf("message = %q, want %q", msg, tt.message)
			}
		})
	}
}

func TestUnknownConsensusModeIsIgnoredAndReported(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	body := createBody("https://example.com/a.txt")
	body["consensus"] = map[string]any{"mode": "CONSENSUS_MODE_SEVEN_RUNS"}
	body["tittle"] = "typo"
	r := s.do("POST", "/v1/jobs", keyA, body)
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", r.status, r.body)
	}
	j := r.json(t)
	if mode := j["consensus"].(map[string]any)["mode"]; mode != "CONSENSUS_MODE_UNSPECIFIED" {
		t.Errorf("consensus.mode = %v, want CONSENSUS_MODE_UNSPECIFIED", mode)
	}
	warn := strings.Join(r.header.Values("Docjobs-Warning"), ",")
	if !strings.Contains(warn, "consensus.mode") || !strings.Contains(warn, "tittle") {
		t.Errorf("Docjobs-Warning = %q, want it to name consensus.mode and tittle", warn)
	}
	if _, ok := j["neural"].(map[string]any)["apiKey"]; ok {
		t.Error("the echo carries neural.apiKey")
	}
	if j["neural"].(map[string]any)["chunkBudgetTokens"] != float64(4000) {
		t.Errorf("neural.chunkBudgetTokens = %v, want the effective 4000", j["neural"])
	}
}

func TestOpenAPIIsPublished(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	r := s.do("GET", "/openapi.yaml", "", nil)
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte("openapi: 3.0.3")) {
		t.Fatalf("GET /openapi.yaml: %d %.200s", r.status, r.body)
	}
	for _, p := range []string{"/v1/jobs:", "/v1/jobs/{id}:", "/v1/jobs/{id}/result:", "/v1/jobs/upload:", "/v1/files/{id}:", "/v1/jobs/{id}:cancel:"} {
		if !bytes.Contains(r.body, []byte(p)) {
			t.Errorf("openapi.yaml does not list %s", p)
		}
	}
	// A client generated from it sends the key and reads the headers the
	// service answers with (internal/server checks each operation).
	for _, want := range []string{"\nsecurity:\n    - bearer: []\n", "securitySchemes:\n        bearer:\n            type: http\n",
		"scheme: bearer", "WWW-Authenticate:", "Retry-After:", "Docjobs-Warning:"} {
		if !bytes.Contains(r.body, []byte(want)) {
			t.Errorf("openapi.yaml lacks %q", want)
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := s.do("GET", path, "", nil); r.status != http.StatusOK {
			t.Errorf("GET %s: %d", path, r.status)
		}
	}
	if m := s.do("GET", "/metrics", "", nil); !bytes.Contains(m.body, []byte("docjobs_jobs")) || !bytes.Contains(m.body, []byte("go_goroutines")) {
		t.Errorf("/metrics lacks docjobs_ or Go runtime metrics")
	}
}

// upload posts size bytes as a multipart file without ever holding them.
func upload(t *testing.T, s *server, key, name string, size int64) response {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", name)
		if err == nil {
			_, err = io.CopyN(part, zeroReader{}, size)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest("POST", s.base+"/v1/jobs/upload", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// rssKiB is the resident set of process pid in KiB (VmRSS: what it holds
// now, unlike VmHWM, a high-water mark that start-up may have set).
func rssKiB(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}

// uploadSampled posts size bytes as a multipart file, a piece every pause,
// and samples the server's resident set while the body streams. It returns
// the answer, the largest sample and the number of samples.
func uploadSampled(t *testing.T, s *server, size, piece int64, pause time.Duration) (response, int64, int) {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", "big.bin")
		for sent := int64(0); err == nil && sent < size; sent += piece {
			_, err = io.CopyN(part, zeroReader{}, min(piece, size-sent))
			time.Sleep(pause)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err) // also when the server stopped reading
	}()
	type answer struct {
		r   response
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		req, err := http.NewRequest("POST", s.base+"/v1/jobs/upload", pr)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+keyA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		answered <- answer{r: response{status: resp.StatusCode, header: resp.Header, body: raw}, err: err}
	}()

	var peak int64
	samples := 0
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case a := <-answered:
			if a.err != nil {
				t.Fatalf("upload: %v", a.err)
			}
			return a.r, peak, samples
		case <-tick.C:
			peak = max(peak, rssKiB(t, s.cmd.Process.Pid))
			samples++
		}
	}
}

func TestUploadIsStreamedAndCapped(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	small := upload(t, s, keyA, "notes.txt", 1<<20)
	if small.status != http.StatusOK {
		t.Fatalf("1 MiB upload: %d %s", small.status, small.body)
	}
	up := small.json(t)
	if up["name"] != "notes.txt" || up["size_bytes"] != float64(1<<20) || !strings.Contains(up["url"].(string), "/v1/files/") {
		t.Fatalf("upload answer = %v, want url, name and size_bytes", up)
	}

	// 21 MiB in 256 KiB pieces, 5 ms apart: the server's memory is sampled
	// every 2 ms for the half second or so the body takes, so a server
	// that held the body would be seen holding most of it.
	baseline := rssKiB(t, s.cmd.Process.Pid)
	big, peak, samples := uploadSampled(t, s, 21<<20, 256<<10, 5*time.Millisecond)
	t.Logf("resident set: %d KiB before the upload, at most %d KiB in %d samples during it", baseline, peak, samples)
	if samples < 100 {
		t.Fatalf("only %d samples of the server's memory during the upload, want 100 or more", samples)
	}
	if grown := peak - baseline; grown > 6<<10 {
		t.Errorf("the resident set grew by %d KiB during a 21 MiB upload: it was held, not streamed", grown)
	}
	if big.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("21 MiB upload: %d %s, want 413", big.status, big.body)
	}
	e := big.json(t)
	if _, ok := e["details"]; ok || e["code"] == nil || e["message"] == "" {
		t.Fatalf("upload error body = %s, want {code, message}", big.body)
	}

	// The uploaded file works as a source of the same account only.
	url := up["url"].(string)
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(url))["id"].(string)
	if j := s.waitTerminal(id, keyA, time.Minute); j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job from upload ended %v: %v", j["status"], j)
	}
	path := strings.TrimPrefix(url, s.base)
	if r := s.do("GET", path, keyA, nil); r.status != http.StatusOK || len(r.body) != 1<<20 {
		t.Errorf("download own upload: %d, %d bytes", r.status, len(r.body))
	}
	if r := s.do("GET", path, keyB, nil); r.status != http.StatusNotFound {
		t.Errorf("download another account's upload: %d, want 404", r.status)
	}
	if r := s.do("POST", "/v1/jobs", keyB, createBody(url)); r.status != http.StatusBadRequest {
		t.Errorf("another account's upload as a source: %d, want 400", r.status)
	}
}

// TestListPagesNeitherLoseNorRepeatJobsDuringInserts creates a job between
// every two page fetches: a list paged by offset would then repeat the last
// job of each page on the next one.
func TestListPagesNeitherLoseNorRepeatJobsDuringInserts(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := startServer(t, b.databaseURL(t))
			existing := map[string]bool{}
			for range 25 {
				id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody("https://example.com/a.txt"))["id"].(string)
				existing[id] = true
			}
			seen := map[string]int{}
			pages, createdWhilePaging := 0, 0
			token := ""
			for {
				path := "/v1/jobs?pageSize=4"
				if token != "" {
					path += "&pageToken=" + token
				}
				page := s.mustDo(http.StatusOK, "GET", path, keyA, nil)
				pages++
				jobs, _ := page["jobs"].([]any)
				for _, j := range jobs {
					seen[j.(map[string]any)["id"].(string)]++
				}
				token, _ = page["nextPageToken"].(string)
				if token == "" {
					break
				}
				s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody("https://example.com/b.txt"))
				createdWhilePaging++
			}
			if createdWhilePaging == 0 {
				t.Fatalf("no job was created while paging (%d page)", pages)
			}
			for id := range existing {
				if seen[id] != 1 {
					t.Errorf("job %s seen %d times, want once", id, seen[id])
				}
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("job %s repeated %d times", id, n)
				}
			}
			if r := s.do("GET", "/v1/jobs?pageToken=garbage", keyA, nil); r.status != http.StatusBadRequest {
				t.Errorf("corrupt token: %d, want 400", r.status)
			}
		})
	}
}
