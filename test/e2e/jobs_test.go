package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	txtDoc  = "Quarterly report\n\nRevenue grew by 12 percent.\n"
	htmlDoc = `<html><head><title>Invoice</title><script>alert("x")</script><style>p{}</style></head>
<body><h1>Invoice 42</h1><p>Total: <b>100 EUR</b></p><!-- internal note --></body></html>`
	xmlDoc = `<?xml version="1.0"?><catalog><book id="1"><title>Go</title></book></catalog>`
)

// createBody is a valid create request for the given sources.
func createBody(urls ...string) map[string]any {
	return map[string]any{
		"sourceUrls": urls,
		"neural":     map[string]any{"type": "NEURAL_CLIENT_TYPE_PROVIDER_2", "model": "gpt-4o-mini", "apiKey": "sk-neural-SECRET-0001"},
		"ocr":        map[string]any{"provider": "NEURAL_CLIENT_TYPE_PROVIDER_1", "model": "mistral-ocr-latest", "providerKey": "ocr-SECRET-0002"},
	}
}

func TestNoPromptJobCompletesWithOneRowPerFile(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			src := sources(t, map[string]string{"a.txt": txtDoc, "b.html": htmlDoc, "c.xml": xmlDoc})
			s := startServer(t, b.databaseURL(t))

			created := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(src+"/a.txt", src+"/b.html", src+"/c.xml"))
			if created["status"] != "JOB_STATUS_NEW" {
				t.Fatalf("create: status %v, want JOB_STATUS_NEW", created["status"])
			}
			id := created["id"].(string)
			final := s.waitTerminal(id, keyA, time.Minute)
			if final["status"] != "JOB_STATUS_COMPLETE" {
				t.Fatalf("job ended %v, want JOB_STATUS_COMPLETE: %v", final["status"], final)
			}
			files, _ := final["files"].([]any)
			if len(files) != 3 {
				t.Fatalf("files = %v, want 3 stored copies", final["files"])
			}

			res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
			ocr, llm := res["ocr"].([]any), res["llm"].([]any)
			if len(ocr) != 3 || len(llm) != 3 {
				t.Fatalf("got %d ocr and %d llm rows, want 3 and 3", len(ocr), len(llm))
			}
			for i, want := range []string{"plain", "html", "xml"} {
				row := ocr[i].(map[string]any)
				if row["status"] != "JOB_OCR_STATUS_DONE" || row["outputFormat"] != want {
					t.Errorf("ocr[%d]: status %v format %v, want DONE %s (error %v)", i, row["status"], row["outputFormat"], want, row["error"])
				}
				if row["file"] != files[i] {
					t.Errorf("ocr[%d].file = %v, want files[%d] = %v", i, row["file"], i, files[i])
				}
				m := llm[i].(map[string]any)
				if m["status"] != "JOB_LLM_STATUS_SKIPPED" || m["skipReason"] != "no_prompt" {
					t.Errorf("llm[%d]: status %v skipReason %v, want SKIPPED no_prompt", i, m["status"], m["skipReason"])
				}
				for _, r := range []map[string]any{row, m} {
					for _, f := range []string{"jobId", "file", "duration", "created", "updated"} {
						if _, ok := r[f]; !ok {
							t.Errorf("row %v has no %s", r, f)
						}
					}
					if d, ok := r["duration"].(string); ok && strings.Trim(d, "0123456789") != "" {
						t.Errorf("duration %q is not nanoseconds as a numeric string", d)
					}
				}
			}
			html := ocr[1].(map[string]any)["content"].(string)
			if strings.Contains(html, "alert(") || strings.Contains(html, "internal note") || !strings.Contains(html, "Invoice 42") {
				t.Errorf("html content kept script/comment or lost text: %s", html)
			}
			if c := ocr[0].(map[string]any)["content"].(string); !strings.Contains(c, "Revenue grew by 12 percent.") {
				t.Errorf("plain content = %q", c)
			}
		})
	}
}

func TestAJobWhoseOnlyFileFailsEndsFailedWithTheReason(t *testing.T) {
	src := sources(t, map[string]string{})
	s := startServer(t, "")
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(src+"/missing.txt"))["id"].(string)
	final := s.waitTerminal(id, keyA, time.Minute)
	if final["status"] != "JOB_STATUS_FAILED" || !strings.Contains(fmt.Sprint(final["error"]), "404") {
		t.Fatalf("job = %v %q, want FAILED naming the 404", final["status"], final["error"])
	}
	res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
	row := res["ocr"].([]any)[0].(map[string]any)
	if row["status"] != "JOB_OCR_STATUS_FAILED" || row["error"] == "" {
		t.Errorf("ocr row = %v, want FAILED with an error", row)
	}
	if m := res["llm"].([]any)[0].(map[string]any); m["skipReason"] != "ocr_failed" {
		t.Errorf("llm row = %v, want SKIPPED ocr_failed", m)
	}
}

func TestResponsesAndDataDirNeverHoldASecret(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			src := sources(t, map[string]string{"a.txt": txtDoc})
			s := startServer(t, b.databaseURL(t))
			body := createBody(src + "/a.txt")
			body["webhookSecret"] = "whsec-SECRET-0003"
			body["idempotencyKey"] = "secret-test"
			secrets := []string{"sk-neural-SECRET-0001", "ocr-SECRET-0002", "whsec-SECRET-0003"}

			var bodies [][]byte
			create := s.do("POST", "/v1/jobs", keyA, body)
			bodies = append(bodies, create.body)
			id := create.json(t)["id"].(string)
			s.waitTerminal(id, keyA, time.Minute)
			bodies = append(bodies, s.do("POST", "/v1/jobs", keyA, body).body) // replay
			for _, path := range []string{"/v1/jobs/" + id, "/v1/jobs/" + id + "/result", "/v1/jobs", "/openapi.yaml"} {
				bodies = append(bodies, s.do("GET", path, keyA, nil).body)
			}
			bodies = append(bodies, s.do("POST", "/v1/jobs/"+id+":cancel", keyA, "{}").body)
			for _, got := range bodies {
				for _, secret := range secrets {
					if strings.Contains(string(got), secret) {
						t.Fatalf("a response contains %q:\n%s", secret, got)
					}
				}
			}
			if strings.Contains(s.logs.String(), "SECRET-000") {
				t.Fatalf("the log contains a secret")
			}
			s.stop()
			err := filepath.Walk(s.dataDir, func(path string, info os.FileInfo, err error) error {
				if err != nil || info.IsDir() {
					return err
				}
				raw, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				for _, secret := range secrets {
					if strings.Contains(string(raw), secret) {
						t.Errorf("%s holds %q in plaintext", path, secret)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConcurrentCreatesWithOneIdempotencyKeyMakeOneJob(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			src := sources(t, map[string]string{"a.txt": txtDoc})
			s := startServer(t, b.databaseURL(t))
			body := createBody(src + "/a.txt")
			body["idempotencyKey"] = "7f0c9a52-1b61-4c1e-9d0e-3c1f2b9a6e11"

			ids := make([]string, 20)
			var wg sync.WaitGroup
			for i := range ids {
				wg.Go(func() {
					r := s.do("POST", "/v1/jobs", keyA, body)
					if r.status != http.StatusOK {
						t.Errorf("create %d: %d %s", i, r.status, r.body)
						return
					}
					ids[i] = r.json(t)["id"].(string)
				})
			}
			wg.Wait()
			for _, id := range ids {
				if id != ids[0] {
					t.Fatalf("concurrent creates gave different jobs: %v", ids)
				}
			}
			list := s.mustDo(http.StatusOK, "GET", "/v1/jobs", keyA, nil)
			if n := len(list["jobs"].([]any)); n != 1 {
				t.Fatalf("account has %d jobs, want 1", n)
			}

			body["title"] = "changed"
			r := s.do("POST", "/v1/jobs", keyA, body)
			if r.status != http.StatusBadRequest || r.json(t)["message"] != "idempotency key reused with different request parameters" {
				t.Fatalf("changed parameters: %d %s", r.status, r.body)
			}
			// The key is per account: another account gets its own job.
			other := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyB, createBody(src+"/a.txt"))
			if other["id"] == ids[0] {
				t.Fatal("another account's create returned account A's job")
			}
		})
	}
}

func TestAnotherAccountsJobIsNotFound(t *testing.T) {
	src := sources(t, map[string]string{"a.txt": txtDoc})
	s := startServer(t, "")
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(src+"/a.txt"))["id"].(string)
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/jobs/" + id}, {"GET", "/v1/jobs/" + id + "/result"},
		{"POST", "/v1/jobs/" + id + ":cancel"}, {"DELETE", "/v1/jobs/" + id},
	} {
		var body any
		if c.method == "POST" {
			body = "{}"
		}
		if r := s.do(c.method, c.path, keyB, body); r.status != http.StatusNotFound {
			t.Errorf("%s %s as another account: %d, want 404: %s", c.method, c.path, r.status, r.body)
		}
	}
	if jobs := s.mustDo(http.StatusOK, "GET", "/v1/jobs", keyB, nil)["jobs"]; jobs != nil && len(jobs.([]any)) != 0 {
		t.Errorf("another account lists %v", jobs)
	}
	for _, key := range []string{"", "dj_wrong"} {
		if r := s.do("GET", "/v1/jobs", key, nil); r.status != http.StatusUnauthorized {
			t.Errorf("key %q: %d, want 401", key, r.status)
		}
	}
}
