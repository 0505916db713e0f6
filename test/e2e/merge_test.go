package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordVendor speaks OpenAI chat completions and extracts every record
// line it is shown as {"id", "customer", "part"}, so records of a chunk
// overlap come back twice; a document containing BROKEN gets invalid JSON.
type recordVendor struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen int // records answered over all calls
}

var recordLine = regexp.MustCompile(`record (\d+): the customer number (\d+) ordered \d+ units of part (\d+)\.`)

func newRecordVendor(t *testing.T) *recordVendor {
	t.Helper()
	v := &recordVendor{}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &req)
		user := messageText(req, "user")
		recs := []map[string]int{}
		for _, m := range recordLine.FindAllStringSubmatch(user, -1) {
			var id, customer, part int
			fmt.Sscan(m[1], &id)
			fmt.Sscan(m[2], &customer)
			fmt.Sscan(m[3], &part)
			recs = append(recs, map[string]int{"id": id, "customer": customer, "part": part})
		}
		v.mu.Lock()
		v.seen += len(recs)
		v.mu.Unlock()
		answer, _ := json.Marshal(map[string]any{"records": recs})
		if strings.Contains(user, "BROKEN") {
			answer = []byte(`{"records": [{"id": 1,`)
		}
		writeChat(w, string(answer), "stop", 100)
	}))
	t.Cleanup(v.srv.Close)
	return v
}

// recordRange is records from..to in the form records() writes.
func recordRange(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "record %d: the customer number %d ordered %d units of part %d.\n\n", i, i*7, i%13+1, i*31)
	}
	return b.String()
}

type mergedAnswer struct {
	File                   string
	Format                 string
	Content                string
	SchemaValid            *bool
	DedupeRemovedTechnical int
	DedupeRemovedContent   int
	MergeIncomplete        bool
	IncompleteChunks       []struct {
		File       string
		ChunkIndex int
	}
}

func runMergeJob(t *testing.T, s *server, body map[string]any) ([]mergedAnswer, map[string]any) {
	t.Helper()
	merged, job, _ := runMergeJobRows(t, s, body)
	return merged, job
}

// runMergeJobRows is runMergeJob that also returns the model rows.
func runMergeJobRows(t *testing.T, s *server, body map[string]any) ([]mergedAnswer, map[string]any, []map[string]any) {
	t.Helper()
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, body)["id"].(string)
	if j := s.waitTerminal(id, keyA, 2*time.Minute); j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job ended %v: %v", j["status"], j["error"])
	}
	raw := s.do("GET", "/v1/jobs/"+id+"/result", keyA, nil).body
	var res struct {
		Result struct {
			Job    map[string]any
			LLM    []map[string]any
			Merged []mergedAnswer
		}
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return res.Result.Merged, res.Result.Job, res.Result.LLM
}

func recordIDs(t *testing.T, content string) []int {
	t.Helper()
	var doc struct{ Records []struct{ ID int } }
	if err := json.Unmarshal([]byte(content), &doc); err != nil {
		t.Fatalf("merged content is not JSON: %v\n%.300s", err, content)
	}
	ids := make([]int, len(doc.Records))
	for i, r := range doc.Records {
		ids[i] = r.ID
	}
	return ids
}

const recordSchema = `{"type":"object","properties":{"records":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"}}}}}}`

func TestMergeJoinsChunkAnswersLosingNothing(t *testing.T) {
	t.Parallel()
	vendor := newRecordVendor(t)
	src := sources(t, map[string]string{
		"orders.md": recordRange(1, 400),
		"a.md":      recordRange(1, 3), "b.md": recordRange(2, 4), "c.md": recordRange(3, 5),
		"broken.md": "BROKEN " + recordRange(50, 51),
	})
	s := startServer(t, "", "DOCJOBS_PROVIDER_2_BASE_URL="+vendor.srv.URL+"/v1")

	t.Run("400 records at budget 1000, scope FILE: each once, the overlap counted", func(t *testing.T) {
		body := promptJob([]string{src + "/orders.md"}, "Extract the records.")
		body["responseSchema"] = recordSchema
		body["merge"] = map[string]any{"enabled": true}
		merged, _, rows := runMergeJobRows(t, s, body)
		if len(merged) != 1 {
			t.Fatalf("%d merged answers, want one per file", len(merged))
		}
		// The file was split: its rows carry no verdict, the merged answer does.
		if len(rows) < 2 {
			t.Fatalf("%d model rows, want the file split", len(rows))
		}
		for i, r := range rows {
			_, valid := r["schemaValid"]
			_, errs := r["schemaErrors"]
			if r["chunkTotal"] != float64(len(rows)) || valid || errs {
				t.Fatalf("row %d of a split file = %v, want chunkTotal %d and neither schemaValid nor schemaErrors", i, r, len(rows))
			}
		}
		m := merged[0]
		ids := recordIDs(t, m.Content)
		seen := map[int]int{}
		for _, id := range ids {
			seen[id]++
		}
		for id := 1; id <= 400; id++ {
			if seen[id] != 1 {
				t.Fatalf("record %d appears %d times in the merged answer", id, seen[id])
			}
		}
		vendor.mu.Lock()
		overlap := vendor.seen - 400
		vendor.mu.Unlock()
		if overlap <= 0 || m.DedupeRemovedTechnical != overlap || m.DedupeRemovedContent != 0 {
			t.Errorf("dedupeRemovedTechnical = %d, content %d; the chunks repeated %d records", m.DedupeRemovedTechnical, m.DedupeRemovedContent, overlap)
		}
		if m.Format != "json" || !strings.HasPrefix(m.File, s.base+"/v1/files/") || m.MergeIncomplete || m.SchemaValid == nil || !*m.SchemaValid {
			t.Errorf("merged answer = %+v", m)
		}
	})

	t.Run("three files sharing ids, dedupeBy id, scope JOB: one entry, each id once", func(t *testing.T) {
		body := promptJob([]string{src + "/a.md", src + "/b.md", src + "/c.md"}, "Extract the records.")
		body["responseSchema"] = recordSchema
		body["merge"] = map[string]any{"enabled": true, "scope": "MERGE_SCOPE_JOB", "dedupeBy": []string{"id"}}
		merged, _ := runMergeJob(t, s, body)
		if len(merged) != 1 || merged[0].File != "" {
			t.Fatalf("merged = %+v, want one answer with file \"\"", merged)
		}
		if ids := recordIDs(t, merged[0].Content); fmt.Sprint(ids) != "[1 2 3 4 5]" {
			t.Errorf("merged ids = %v", ids)
		}
		if m := merged[0]; m.DedupeRemovedContent != 4 || m.SchemaValid == nil || !*m.SchemaValid {
			t.Errorf("merged answer = %+v, want dedupeRemovedContent 4 (ids 2, 3, 3, 4 again) and a valid schema", m)
		}
	})

	t.Run("an invalid JSON answer is left out and listed", func(t *testing.T) {
		body := promptJob([]string{src + "/a.md", src + "/broken.md"}, "Extract the records.")
		body["responseSchema"] = recordSchema
		body["merge"] = map[string]any{"enabled": true, "scope": "MERGE_SCOPE_JOB"}
		merged, job := runMergeJob(t, s, body)
		if len(merged) != 1 {
			t.Fatalf("merged = %+v", merged)
		}
		m := merged[0]
		if ids := recordIDs(t, m.Content); fmt.Sprint(ids) != "[1 2 3]" {
			t.Errorf("merged ids = %v", ids)
		}
		files := job["files"].([]any)
		if !m.MergeIncomplete || len(m.IncompleteChunks) != 1 || m.IncompleteChunks[0].File != files[1] || m.IncompleteChunks[0].ChunkIndex != 0 {
			t.Errorf("merged answer = %+v, want the broken file's chunk listed", m)
		}
	})

	t.Run("a source listed twice is merged twice", func(t *testing.T) {
		// Both listings of the missing file keep its sourceUrl as their
		// file: the merge must tell them apart by position, not by URL.
		gone := src + "/gone.md"
		body := promptJob([]string{src + "/a.md", gone, gone}, "Extract the records.")
		body["merge"] = map[string]any{"enabled": true}
		merged, _ := runMergeJob(t, s, body)
		if len(merged) != 3 {
			t.Fatalf("merged = %+v, want one answer per listed file", merged)
		}
		if ids := recordIDs(t, merged[0].Content); fmt.Sprint(ids) != "[1 2 3]" || merged[0].MergeIncomplete {
			t.Errorf("first file: %+v", merged[0])
		}
		for _, m := range merged[1:] {
			if m.File != gone || !m.MergeIncomplete || len(m.IncompleteChunks) != 1 {
				t.Errorf("missing file: %+v", m)
			}
		}
		for _, m := range merged {
			if m.SchemaValid != nil {
				t.Errorf("merged answer %+v has schemaValid without a responseSchema", m)
			}
		}
	})

	t.Run("merge not enabled: no merged answers", func(t *testing.T) {
		merged, _ := runMergeJob(t, s, promptJob([]string{src + "/a.md"}, "Extract the records."))
		if merged != nil {
			t.Errorf("merged = %+v", merged)
		}
	})
}
