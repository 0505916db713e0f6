package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/api"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/secret"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
	"github.com/docjobs/docjobs/internal/store/sqlite/sqlitetest"
)

// realService is the API service over a real SQLite store, as serve wires it.
type realService struct {
	svc    *api.Service
	store  *sqlite.Store
	dbPath string
	sealer *secret.Sealer
	bucket *blob.Bucket
}

func newRealService(t testing.TB, cfg api.Config) *realService {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "docjobs.db")
	// A copy of a database migrated once per test binary: migrating costs
	// about 0.3 s of CPU under -race (the migrations are tested in
	// internal/store).
	sqlitetest.WriteMigrated(t, path)
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	sealer, err := secret.Open(filepath.Join(dir, "master.keyset"))
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := fileblob.OpenBucket(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bucket.Close() })
	rs := &realService{store: st, dbPath: path, sealer: sealer, bucket: bucket}
	rs.svc = rs.service(t, cfg)
	return rs
}

// service is another API service over the same store.
func (rs *realService) service(t testing.TB, cfg api.Config) *api.Service {
	t.Helper()
	cfg.PublicURL = "http://docjobs.test"
	svc, err := api.New(cfg, api.Deps{
		Store: rs.store, Sealer: rs.sealer, Bucket: rs.bucket,
		FirstStage: func(string, int) []river.InsertManyParams { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// countingResults counts the rows the stream reads, so that a test knows
// the stream, not the gateway, answered.
type countingResults struct {
	Results
	rows atomic.Int64
}

func (c *countingResults) JobResultRows(ctx context.Context, id string) (*docjobsv1.Job, iter.Seq2[api.ResultRow, error], error) {
	j, rows, err := c.Results.JobResultRows(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return j, func(yield func(api.ResultRow, error) bool) {
		for r, err := range rows {
			c.rows.Add(1)
			if !yield(r, err) {
				return
			}
		}
	}, nil
}

// resultJob is a job the comparison test builds in the store.
type resultJob struct {
	name   string
	build  func(j *job.Job)
	files  []func(j *job.Job, i int) store.OCRDone
	merged string // stored merged answers; "" for none
}

func ocrDone(content string, llm ...func(ocr job.OCRRow) job.LLMRow) func(j *job.Job, i int) store.OCRDone {
	return func(j *job.Job, i int) store.OCRDone {
		ocr := job.OCRRow{JobID: j.ID, FileIndex: i, File: fmt.Sprintf("http://docjobs.test/v1/files/f%d", i),
			Status: job.RowDone, Content: content, OutputFormat: job.FormatMarkdown, Model: "ocr-1",
			Request: `{"model":"ocr-1"}`, RawData: `{"pages":[]}`, Duration: 1500 * time.Millisecond}
		if content == "" {
			ocr.Status, ocr.OutputFormat, ocr.Request, ocr.RawData, ocr.Model = job.RowSkipped, "", "", "", ""
		}
		d := store.OCRDone{Row: ocr}
		for _, f := range llm {
			d.LLM = append(d.LLM, f(ocr))
		}
		return d
	}
}

func ocrFailed(j *job.Job, i int) store.OCRDone {
	ocr := job.OCRRow{JobID: j.ID, FileIndex: i, File: j.SourceURLs[i], Status: job.RowFailed, Error: "download failed: 404"}
	return store.OCRDone{Row: ocr, LLM: []job.LLMRow{job.SkippedLLMRow(ocr, job.SkipOCRFailed, "m")}}
}

func skipped(reason string) func(ocr job.OCRRow) job.LLMRow {
	return func(ocr job.OCRRow) job.LLMRow { return job.SkippedLLMRow(ocr, reason, "m") }
}

// answered is a model row of prompt p, chunk c of total; consensus is its
// vote block ("" for none), failure its error (a FAILED row).
func answered(p, c, total int, consensus, failure string) func(ocr job.OCRRow) job.LLMRow {
	return func(ocr job.OCRRow) job.LLMRow {
		valid := c%2 == 0
		r := job.LLMRow{JobID: ocr.JobID, FileIndex: ocr.FileIndex, File: ocr.File, PromptIndex: p, ChunkIndex: c,
			ChunkTotal: total, Status: job.RowDone, Content: fmt.Sprintf(`{"n":%d,"html":"<b>&amp;</b> é"}`, c),
			Model: "m", Request: `{"messages":[]}`, RawData: `{"choices":[]}`, Duration: time.Duration(c+1) * time.Millisecond,
			SchemaValid: &valid, InputTokens: 100, OutputTokens: int64(c)}
		if !valid {
			r.SchemaErrors = []string{"/n: got 1, want string"}
		}
		if consensus != "" {
			r.Consensus = []byte(consensus)
		}
		if failure != "" {
			r.Status, r.Content, r.SchemaValid, r.SchemaErrors, r.Error = job.RowFailed, "", nil, nil, failure
		}
		return r
	}
}

// create stores the job and its files' outcomes, and the merged answers.
func (rs *realService) create(t *testing.T, account string, spec resultJob) string {
	t.Helper()
	ctx := context.Background()
	j := &job.Job{
		ID: "job-" + strings.ReplaceAll(spec.name, " ", "-"), AccountID: account, Title: "t", Status: job.StatusNew,
		Neural:         job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_1", Model: "m", ChunkBudgetTokens: job.DefaultChunkBudgetTokens},
		OCR:            job.OCR{Provider: "NEURAL_CLIENT_TYPE_PROVIDER_1", Model: "ocr-1"},
		ExtractionMode: job.ExtractionHybrid, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", RequestHash: "h",
		Metadata: map[string]string{"k": "v"},
	}
	for i := range max(len(spec.files), 1) {
		j.SourceURLs = append(j.SourceURLs, fmt.Sprintf("https://example.com/doc%d.pdf", i))
	}
	if spec.build != nil {
		spec.build(j)
	}
	if _, _, err := rs.store.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	for i, f := range spec.files {
		if _, err := rs.store.FinishOCR(ctx, f(j, i)); err != nil {
			t.Fatal(err)
		}
	}
	if spec.merged != "" {
		// A job's merged answers are written by its finalize step inside a
		// River worker; here they are written into the same database file.
		db, err := sql.Open("sqlite", rs.dbPath)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`UPDATE jobs SET merged = ?, status = ? WHERE id = ?`,
			spec.merged, string(job.StatusComplete), j.ID); err != nil {
			t.Fatal(err)
		}
	}
	return j.ID
}

func TestTheStreamedResultIsByteForByteTheGatewaysResult(t *testing.T) {
	rs := newRealService(t, api.Config{})
	counted := &countingResults{Results: rs.svc}
	real := func(c *Config, d *Deps) { d.Service, d.Files = rs.svc, rs.svc }
	streamed := startServer(t, real, func(_ *Config, d *Deps) { d.Results = counted })
	gateway := startServer(t, real)

	const vote = `{"k":3,"runsVotable":3,"minAgreement":0.6667,"disagreements":[{"fieldPath":"n","variants":[{"value":"1","runs":2,"included":true}]}]}`
	jobs := []resultJob{
		{name: "new job", files: nil},
		{name: "no prompt", files: []func(*job.Job, int) store.OCRDone{
			ocrDone("# Title\n\n<b>bold</b> & \u2028 text", skipped(job.SkipNoPrompt)),
			ocrDone("", skipped(job.SkipNoOCRContent)),
		}},
		{name: "prompts and a failed file", build: func(j *job.Job) {
			j.Prompts = []string{"p0", "p1"}
			j.ResponseSchema = `{"type":"object"}`
		}, files: []func(*job.Job, int) store.OCRDone{
			ocrDone("text", answered(0, 0, 2, "", ""), answered(0, 1, 2, "", ""), answered(1, 0, 1, "", "provider error (category=auth, status=401)")),
			ocrFailed,
		}},
		{name: "consensus with a skipped and a failed row", build: func(j *job.Job) {
			j.Prompts = []string{"p0"}
			j.ConsensusMode = "CONSENSUS_MODE_THREE_RUNS"
		}, files: []func(*job.Job, int) store.OCRDone{
			ocrDone("text", answered(0, 0, 2, vote, ""), answered(0, 1, 2, "", "run 1: invalid JSON")),
			ocrDone("", skipped(job.SkipNoOCRContent)),
		}},
		{name: "consensus with every row voted", build: func(j *job.Job) {
			j.Prompts = []string{"p0"}
			j.ConsensusMode = "CONSENSUS_MODE_FIVE_RUNS"
		}, files: []func(*job.Job, int) store.OCRDone{
			ocrDone("text", answered(0, 0, 1, vote, "")),
		}},
		{name: "merge enabled", build: func(j *job.Job) {
			j.Prompts = []string{"p0"}
			j.Merge = job.Merge{Enabled: true, Scope: "MERGE_SCOPE_FILE", ConflictPolicy: "MERGE_CONFLICT_POLICY_FIRST_NON_NULL",
				Format: "MERGE_FORMAT_AUTO", DedupeBy: []string{"id"}}
		}, files: []func(*job.Job, int) store.OCRDone{
			ocrDone("text", answered(0, 0, 2, "", ""), answered(0, 1, 2, "", "")),
			ocrFailed,
		}, merged: `[{"file":"f0","format":"json","content":"{\"n\":1}","schemaValid":true,` +
			`"conflicts":[{"field":"n","values":["0","1"],"sources":[{"file":"f0","chunkIndex":0},{"file":"f0","chunkIndex":1}]}]},` +
			`{"file":"f1","format":"json","content":"{}","mergeIncomplete":true}]`},
		{name: "merge enabled without answers", build: func(j *job.Job) {
			j.Merge = job.Merge{Enabled: true, Scope: "MERGE_SCOPE_JOB"}
		}, files: []func(*job.Job, int) store.OCRDone{ocrFailed}, merged: `[]`},
		{name: "merged answers of a job that did not ask", files: []func(*job.Job, int) store.OCRDone{
			ocrDone("text", skipped(job.SkipNoPrompt)),
		}, merged: `[{"file":"f0","format":"text","content":"x"}]`},
	}
	for _, spec := range jobs {
		t.Run(spec.name, func(t *testing.T) {
			id := rs.create(t, "alice", spec)
			for _, query := range []string{"", "?fields=x&id=other"} {
				before := counted.rows.Load()
				want := gateway.doJSON("GET", "/v1/jobs/"+id+"/result"+query, keyAlice, "")
				got := streamed.doJSON("GET", "/v1/jobs/"+id+"/result"+query, keyAlice, "")
				wantBody, gotBody := readBody(t, want), readBody(t, got)
				if got.StatusCode != http.StatusOK || want.StatusCode != http.StatusOK {
					t.Fatalf("status: streamed %d, gateway %d: %s", got.StatusCode, want.StatusCode, gotBody)
				}
				if counted.rows.Load() == before {
					t.Fatal("the stream read no row: the gateway answered")
				}
				if gotBody != wantBody {
					t.Fatalf("bodies differ\n stream  %s\n gateway %s", gotBody, wantBody)
				}
				for _, h := range []string{"Content-Type", WarningHeader, "Content-Length"} {
					if g, w := got.Header.Get(h), want.Header.Get(h); g != w {
						t.Errorf("%s: streamed %q, gateway %q", h, g, w)
					}
				}
				if !json.Valid([]byte(gotBody)) {
					t.Fatalf("not JSON: %s", gotBody)
				}
			}
		})
	}

	t.Run("what is not found is answered alike", func(t *testing.T) {
		id := rs.create(t, "alice", resultJob{name: "alices"})
		for _, tc := range []struct{ name, id, key string }{
			{"another account's job", id, keyBob},
			{"an unknown job", "job-missing", keyAlice},
		} {
			want := gateway.doJSON("GET", "/v1/jobs/"+tc.id+"/result", tc.key, "")
			got := streamed.doJSON("GET", "/v1/jobs/"+tc.id+"/result", tc.key, "")
			wantBody := readBody(t, want)
			if gotBody := readBody(t, got); got.StatusCode != want.StatusCode || gotBody != wantBody ||
				got.Header.Get("Content-Type") != want.Header.Get("Content-Type") {
				t.Errorf("%s: streamed %d %s, gateway %d %s", tc.name, got.StatusCode, gotBody, want.StatusCode, wantBody)
			}
			if want.StatusCode != http.StatusNotFound {
				t.Errorf("%s: status %d, want 404", tc.name, want.StatusCode)
			}
		}
		resp := streamed.doJSON("GET", "/v1/jobs/"+id+"/result", "", "")
		wantStatusBody(t, resp, http.StatusUnauthorized, codes.Unauthenticated, true)
		resp = streamed.doJSON("HEAD", "/v1/jobs/"+id+"/result", keyAlice, "")
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("HEAD: status %d, want 405 as the gateway route answers", resp.StatusCode)
		}
	})
}

// brokenResults yields its rows, then fails as a database that went away
// would.
type brokenResults struct {
	rows []api.ResultRow
	err  error
}

func (b brokenResults) JobResultRows(context.Context, string) (*docjobsv1.Job, iter.Seq2[api.ResultRow, error], error) {
	j := &docjobsv1.Job{Id: "job-1", Consensus: &docjobsv1.ConsensusOptions{Mode: docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED.Enum()}}
	return j, func(yield func(api.ResultRow, error) bool) {
		for _, r := range b.rows {
			if !yield(r, nil) {
				return
			}
		}
		yield(api.ResultRow{}, b.err)
	}, nil
}

func TestAResultThatFailsMidStreamIsCutNotCompleted(t *testing.T) {
	failure := status.Error(codes.Internal, "internal error (id=0123456789abcdef)")
	big := strings.Repeat("x", 64<<10) // past every buffer, so the status is sent
	env := startServer(t, func(_ *Config, d *Deps) {
		d.Results = brokenResults{rows: []api.ResultRow{{OCR: &docjobsv1.OcrResult{JobId: "job-1", Content: big}}}, err: failure}
	})
	resp := env.doJSON("GET", "/v1/jobs/job-1/result", keyAlice, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200 (the first row was sent)", resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("reading the body: error = %v, want unexpected EOF", err)
	}
	if json.Valid(body) {
		t.Errorf("the cut body is valid JSON: %.200s…", body)
	}
	if !strings.HasPrefix(string(body), `{"result":{"job":`) || !strings.Contains(string(body), big) {
		t.Errorf("the rows read before the failure were not sent: %.200s…", body)
	}
	logs := env.logs.String()
	if !strings.Contains(logs, "result stream aborted") || !strings.Contains(logs, `"job_id":"job-1"`) {
		t.Errorf("the abort was not logged with the job: %s", logs)
	}
}

func TestAResultThatFailsBeforeItsFirstRowIsAnErrorAnswer(t *testing.T) {
	failure := status.Error(codes.Internal, "internal error (id=0123456789abcdef)")
	env := startServer(t, func(_ *Config, d *Deps) { d.Results = brokenResults{err: failure} })
	resp := env.doJSON("GET", "/v1/jobs/job-1/result", keyAlice, "")
	m := wantStatusBody(t, resp, http.StatusInternalServerError, codes.Internal, true)
	if m["message"] != "internal error (id=0123456789abcdef)" {
		t.Errorf("message = %v", m["message"])
	}
}

// hangingResults yields one row, then waits for the request to end and
// yields its error, as a store read cancelled with its request does.
type hangingResults struct{ done chan struct{} }

func (h hangingResults) JobResultRows(ctx context.Context, _ string) (*docjobsv1.Job, iter.Seq2[api.ResultRow, error], error) {
	j := &docjobsv1.Job{Id: "job-1"}
	return j, func(yield func(api.ResultRow, error) bool) {
		defer close(h.done)
		if !yield(api.ResultRow{OCR: &docjobsv1.OcrResult{Content: strings.Repeat("x", 64<<10)}}, nil) {
			return
		}
		<-ctx.Done()
		yield(api.ResultRow{}, status.Error(codes.Canceled, "request canceled"))
	}, nil
}

func TestAClientLeavingAResultStreamIsNoError(t *testing.T) {
	done := make(chan struct{})
	env := startServer(t, func(_ *Config, d *Deps) { d.Results = hangingResults{done: done} })
	resp := env.doJSON("GET", "/v1/jobs/job-1/result", keyAlice, "")
	if _, err := resp.Body.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	<-done
	if logs := env.logs.String(); strings.Contains(logs, "result stream aborted") {
		t.Errorf("a client that left was logged as a failure: %s", logs)
	}
}

// slowResults yields n rows, each after a pause, as a result of many large
// rows does to a slow client; a request that ends stops it.
type slowResults struct {
	n     int
	pause time.Duration
}

func (s slowResults) JobResultRows(ctx context.Context, _ string) (*docjobsv1.Job, iter.Seq2[api.ResultRow, error], error) {
	j := &docjobsv1.Job{Id: "job-1"}
	return j, func(yield func(api.ResultRow, error) bool) {
		for i := range s.n {
			select {
			case <-ctx.Done():
				yield(api.ResultRow{}, status.Error(codes.Canceled, "request canceled"))
				return
			case <-time.After(s.pause):
			}
			if !yield(api.ResultRow{OCR: &docjobsv1.OcrResult{JobId: "job-1", File: fmt.Sprint("file-", i)}}, nil) {
				return
			}
		}
	}, nil
}

// A result may take longer than a request's read deadline to send; the
// deadline must not end it after the rows sent so far, as a complete body.
func TestAResultSlowerThanTheReadDeadlineIsSentWhole(t *testing.T) {
	const rows = 4
	env := startServer(t, func(c *Config, d *Deps) {
		c.JSONReadTimeout = 100 * time.Millisecond
		d.Results = slowResults{n: rows, pause: 60 * time.Millisecond}
	})
	resp := env.doJSON("GET", "/v1/jobs/job-1/result", keyAlice, "")
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v (%d bytes)", err, len(body))
	}
	var got struct {
		Result struct {
			OCR []json.RawMessage `json:"ocr"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body is not a whole result: %v: %s", err, body)
	}
	if len(got.Result.OCR) != rows {
		t.Errorf("%d rows, want %d", len(got.Result.OCR), rows)
	}
}
