package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	t.Parallel()
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
	t.Parallel()
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

// The secrets the secret test gives at create: both provider keys and the
// webhook secret.
const (
	neuralKey     = "sk-neural-SECRET-0001"
	ocrKey        = "ocr-SECRET-0002"
	webhookSecret = "whsec-SECRET-0003"
)

// leakedSecrets names the secrets data holds in clear, or hex-encoded as
// PostgreSQL prints bytea.
func leakedSecrets(data []byte) []string {
	var found []string
	for _, secret := range []string{neuralKey, ocrKey, webhookSecret} {
		if bytes.Contains(data, []byte(secret)) || bytes.Contains(data, []byte(hex.EncodeToString([]byte(secret)))) {
			found = append(found, secret)
		}
	}
	return found
}

// checkStorageHoldsNoSecret greps every file of the data directory (the
// SQLite database and its WAL, stored files, the keyset) and, on
// PostgreSQL, every row of every table of the server's schema (jobs,
// job_secrets, river_job and the rest).
func checkStorageHoldsNoSecret(t *testing.T, when, dbURL, dataDir string) {
	t.Helper()
	err := filepath.Walk(dataDir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if found := leakedSecrets(raw); found != nil {
			t.Errorf("%s: %s holds %q", when, path, found)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: walk the data directory: %v", when, err)
	}
	if dbURL == "" {
		return
	}
	for table, rows := range dumpTables(t, dbURL) {
		if found := leakedSecrets([]byte(strings.Join(rows, "\n"))); found != nil {
			t.Errorf("%s: table %s holds %q", when, table, found)
		}
	}
}

// dumpTables returns every row of every table of the schema dbURL uses, as
// PostgreSQL prints a row (bytea as hex, jsonb as text), by table.
func dumpTables(t *testing.T, dbURL string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tables, err := pgx.CollectRows(mustQuery(t, conn, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`), pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	dump := map[string][]string{}
	for _, table := range tables {
		rows, err := pgx.CollectRows(mustQuery(t, conn, `SELECT t::text FROM `+pgx.Identifier{table}.Sanitize()+` t`), pgx.RowTo[string])
		if err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		dump[table] = rows
	}
	for _, want := range []string{"jobs", "job_secrets", "river_job"} {
		if _, ok := dump[want]; !ok {
			t.Fatalf("the schema has no table %s to check: %v", want, tables)
		}
	}
	return dump
}

func mustQuery(t *testing.T, conn *pgx.Conn, query string) pgx.Rows {
	t.Helper()
	rows, err := conn.Query(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return rows
}

// readFor reads a streaming answer (the progress events) for d and returns
// what arrived.
func (s *server) readFor(path, key string, d time.Duration) response {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.base+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body) // ends with the deadline while the stream is open
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

// TestNoAnswerAndNoStorageHoldsASecret gives both provider keys and a
// webhook secret at create and, while the job still holds them (one of its
// files is being downloaded), greps the data directory and the database,
// then every endpoint's answers, errors included; then again once the job
// is cancelled and deleted.
func TestNoAnswerAndNoStorageHoldsASecret(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			held := newHeldSource(t)
			src := sources(t, map[string]string{"a.txt": txtDoc})
			hook := newReceiver(t)
			dbURL := b.databaseURL(t)
			s := startServer(t, dbURL)

			// answers are every answer the test got: what, status, headers and body.
			var answers []string
			record := func(what string, r response) response {
				t.Helper()
				answers = append(answers, fmt.Sprintf("%s: %d %v\n%s", what, r.status, r.header, r.body))
				return r
			}
			want := func(what string, r response, status int) response {
				t.Helper()
				record(what, r)
				if r.status != status {
					t.Fatalf("%s: %d, want %d: %s", what, r.status, status, r.body)
				}
				return r
			}

			uploaded := want("upload", upload(t, s, keyA, "notes.txt", 1<<10), http.StatusOK).json(t)["url"].(string)
			body := createBody(src+"/a.txt", held.url+"/b.txt", uploaded)
			body["webhookUrl"] = hook.srv.URL + "/hook"
			body["webhookSecret"] = webhookSecret
			body["idempotencyKey"] = "secret-test"
			id := want("create", s.do("POST", "/v1/jobs", keyA, body), http.StatusOK).json(t)["id"].(string)

			// The job is in flight: two files stored and recognized, the
			// third being downloaded.
			held.waitRequested(t)
			deadline := time.Now().Add(time.Minute)
			for {
				res := want("result while running", s.do("GET", "/v1/jobs/"+id+"/result", keyA, nil), http.StatusOK)
				ocr := res.json(t)["result"].(map[string]any)["ocr"].([]any)
				status := func(i int) any { return ocr[i].(map[string]any)["status"] }
				if status(0) == "JOB_OCR_STATUS_DONE" && status(2) == "JOB_OCR_STATUS_DONE" {
					if status(1) != "JOB_OCR_STATUS_PENDING" {
						t.Fatalf("the held file's row is %v, want PENDING", status(1))
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the files that were not held are not DONE after a minute: %s", res.body)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if n := rowCount(t, dbURL, s.dataDir, "SELECT COUNT(*) FROM job_secrets WHERE job_id = ?", id); n != 3 {
				t.Fatalf("the running job has %d sealed secrets, want 3 (both keys and the webhook secret)", n)
			}
			checkStorageHoldsNoSecret(t, "while the job runs", dbURL, s.dataDir)

			running := want("get", s.do("GET", "/v1/jobs/"+id, keyA, nil), http.StatusOK).json(t)
			if running["status"] != "JOB_STATUS_RUNNING" {
				t.Fatalf("job status %v while a file is held, want JOB_STATUS_RUNNING", running["status"])
			}
			stored := strings.TrimPrefix(running["files"].([]any)[0].(string), s.base)
			want("download of a stored copy", s.do("GET", stored, keyA, nil), http.StatusOK)
			want("download of the upload", s.do("GET", strings.TrimPrefix(uploaded, s.base), keyA, nil), http.StatusOK)
			want("list", s.do("GET", "/v1/jobs", keyA, nil), http.StatusOK)
			want("list of running jobs", s.do("GET", "/v1/jobs?statusEq=JOB_STATUS_RUNNING", keyA, nil), http.StatusOK)
			want("progress events", s.readFor("/v1/jobs/"+id+"/events", keyA, time.Second), http.StatusOK)
			want("replayed create", s.do("POST", "/v1/jobs", keyA, body), http.StatusOK)

			// Error answers to requests that carry the secrets.
			changed := createBody(src+"/a.txt", held.url+"/b.txt", uploaded)
			changed["webhookUrl"], changed["webhookSecret"], changed["idempotencyKey"] = body["webhookUrl"], webhookSecret, "secret-test"
			changed["title"] = "changed"
			want("create reusing the key with other parameters", s.do("POST", "/v1/jobs", keyA, changed), http.StatusBadRequest)
			tooLong := createBody(src + "/a.txt")
			tooLong["neural"].(map[string]any)["apiKey"] = neuralKey + strings.Repeat("k", 4096)
			tooLong["ocr"].(map[string]any)["providerKey"] = ocrKey + strings.Repeat("k", 4096)
			want("create with keys over 4096 bytes", s.do("POST", "/v1/jobs", keyA, tooLong), http.StatusBadRequest)
			noSources := createBody()
			noSources["webhookSecret"] = webhookSecret
			want("create without sourceUrls", s.do("POST", "/v1/jobs", keyA, noSources), http.StatusBadRequest)
			for what, raw := range map[string]string{
				"create with a key of the wrong type":            `{"sourceUrls": ["https://example.com/a.txt"], "neural": {"apiKey": ["` + neuralKey + `"]}}`,
				"create with a webhook secret of the wrong type": `{"webhookSecret": {"v": "` + webhookSecret + `"}}`,
				"create whose JSON breaks inside a key":          `{"ocr": {"providerKey": "` + ocrKey + `"}, "neural": {"apiKey": "` + neuralKey + `" "x"}}`,
				"create whose JSON ends inside a key":            `{"ocr": {"providerKey": "` + ocrKey,
			} {
				want(what, s.do("POST", "/v1/jobs", keyA, raw), http.StatusBadRequest)
			}
			want("create without a key", s.do("POST", "/v1/jobs", "", body), http.StatusUnauthorized)
			want("get as another account", s.do("GET", "/v1/jobs/"+id, keyB, nil), http.StatusNotFound)
			want("result as another account", s.do("GET", "/v1/jobs/"+id+"/result", keyB, nil), http.StatusNotFound)
			want("upload without a file", s.do("POST", "/v1/jobs/upload", keyA, "{}"), http.StatusBadRequest)

			cancelled := want("cancel", s.do("POST", "/v1/jobs/"+id+":cancel", keyA, "{}"), http.StatusOK)
			if st := cancelled.json(t)["status"]; st != "JOB_STATUS_CANCELLED" {
				t.Fatalf("cancel answered %v", st)
			}
			want("cancel again", s.do("POST", "/v1/jobs/"+id+":cancel", keyA, "{}"), http.StatusConflict)
			want("get after cancel", s.do("GET", "/v1/jobs/"+id, keyA, nil), http.StatusOK)
			want("result after cancel", s.do("GET", "/v1/jobs/"+id+"/result", keyA, nil), http.StatusOK)
			want("progress events after cancel", s.readFor("/v1/jobs/"+id+"/events", keyA, 5*time.Second), http.StatusOK)
			hook.wait(t, time.Minute)
			want("delete", s.do("DELETE", "/v1/jobs/"+id, keyA, nil), http.StatusOK)
			want("get after delete", s.do("GET", "/v1/jobs/"+id, keyA, nil), http.StatusNotFound)
			held.let()

			hook.mu.Lock()
			for _, d := range hook.seen {
				answers = append(answers, fmt.Sprintf("webhook delivery: %s %s %s\n%s", d.id, d.timestamp, d.signature, d.body))
			}
			hook.mu.Unlock()
			for _, a := range answers {
				if found := leakedSecrets([]byte(a)); found != nil {
					t.Errorf("an answer holds %q:\n%s", found, a)
				}
			}
			if found := leakedSecrets([]byte(s.logs.String())); found != nil {
				t.Errorf("the log holds %q", found)
			}
			s.stop()
			checkStorageHoldsNoSecret(t, "after the job was deleted", dbURL, s.dataDir)
		})
	}
}

func TestConcurrentCreatesWithOneIdempotencyKeyMakeOneJob(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
