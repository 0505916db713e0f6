package api

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/job"
)

func TestToJobAlwaysCarriesTheConsensusMode(t *testing.T) {
	tests := []struct {
		name string
		mode string
		want string
	}{
		{"consensus off shows UNSPECIFIED", "CONSENSUS_MODE_UNSPECIFIED", `"consensus":{"mode":"CONSENSUS_MODE_UNSPECIFIED"}`},
		{"a job stored without a mode shows UNSPECIFIED", "", `"consensus":{"mode":"CONSENSUS_MODE_UNSPECIFIED"}`},
		{"consensus on shows its mode", "CONSENSUS_MODE_THREE_RUNS", `"consensus":{"mode":"CONSENSUS_MODE_THREE_RUNS"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := protojson.Marshal(toJob(&job.Job{ID: "j1", ConsensusMode: tt.mode}))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.ReplaceAll(string(b), " ", ""), tt.want) {
				t.Fatalf("job JSON %s lacks %s", b, tt.want)
			}
		})
	}
}

func TestToJobEchoesTheDomainJob(t *testing.T) {
	created := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	j := &job.Job{
		ID: "j1", AccountID: "acme", Title: "Invoices", Metadata: map[string]string{"batch": "7"},
		Status: job.StatusRunning, Error: "", SourceURLs: []string{"https://example.com/a.txt"},
		Files: []string{"http://localhost:8080/v1/files/f1"}, Prompts: []string{"extract"},
		Neural:         job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_3", Model: "claude", ChunkBudgetTokens: 4000},
		OCR:            job.OCR{Provider: "NEURAL_CLIENT_TYPE_PROVIDER_1", Model: "mistral-ocr-latest"},
		ExtractionMode: job.ExtractionOCRAlways, ResponseSchema: `{}`, ConsensusMode: "CONSENSUS_MODE_TWO_RUNS",
		Merge: job.Merge{Enabled: true, Scope: "MERGE_SCOPE_JOB", ConflictPolicy: "MERGE_CONFLICT_POLICY_MAJORITY",
			DedupeBy: []string{"id"}, Format: "MERGE_FORMAT_JSON"},
		WebhookURL: "https://hooks.example.com", IdempotencyKey: "k1", RequestHash: "abc",
		Created: created, Updated: created.Add(time.Second),
	}
	got := toJob(j)
	checks := []struct {
		name      string
		got, want any
	}{
		{"id", got.GetId(), "j1"},
		{"account", got.GetAccountId(), "acme"},
		{"status", got.GetStatus(), docjobsv1.JobStatus_JOB_STATUS_RUNNING},
		{"files", got.GetFiles()[0], "http://localhost:8080/v1/files/f1"},
		{"neural.type", got.GetNeural().GetType(), docjobsv1.NeuralClientType_NEURAL_CLIENT_TYPE_PROVIDER_3},
		{"neural.chunkBudgetTokens", got.GetNeural().GetChunkBudgetTokens(), int32(4000)},
		{"neural.apiKey", got.GetNeural().GetApiKey(), ""},
		{"extractionMode", got.GetExtractionMode(), docjobsv1.ExtractionMode_EXTRACTION_MODE_OCR_ALWAYS},
		{"consensus.mode", got.GetConsensus().GetMode(), docjobsv1.ConsensusMode_CONSENSUS_MODE_TWO_RUNS},
		{"merge.scope", got.GetMerge().GetScope(), docjobsv1.MergeScope_MERGE_SCOPE_JOB},
		{"merge.conflictPolicy", got.GetMerge().GetConflictPolicy(), docjobsv1.MergeConflictPolicy_MERGE_CONFLICT_POLICY_MAJORITY},
		{"merge.format", got.GetMerge().GetFormat(), docjobsv1.MergeFormat_MERGE_FORMAT_JSON},
		{"webhookUrl", got.GetWebhookUrl(), "https://hooks.example.com"},
		{"created", got.GetCreated().AsTime(), created},
		{"updated", got.GetUpdated().AsTime(), created.Add(time.Second)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestToJobOmitsMergeWhenNoneWasGiven(t *testing.T) {
	if m := toJob(&job.Job{ID: "j1"}).GetMerge(); m != nil {
		t.Fatalf("merge = %v, want none", m)
	}
}

func TestToResultMapsRowStatuses(t *testing.T) {
	res := &job.Result{
		Job: &job.Job{ID: "j1"},
		OCR: []job.OCRRow{
			{JobID: "j1", Status: job.RowPending},
			{JobID: "j1", FileIndex: 1, Status: job.RowSkipped},
			{JobID: "j1", FileIndex: 2, Status: job.RowDone, Content: "text", OutputFormat: job.FormatPlain, Duration: 1500 * time.Millisecond},
			{JobID: "j1", FileIndex: 3, Status: job.RowFailed, Error: "download failed"},
		},
		LLM: []job.LLMRow{
			{JobID: "j1", Status: job.RowPending},
			{JobID: "j1", FileIndex: 1, Status: job.RowSkipped, SkipReason: job.SkipNoOCRContent, ChunkTotal: 1},
			{JobID: "j1", FileIndex: 2, Status: job.RowDone, ChunkTotal: 1},
			{JobID: "j1", FileIndex: 3, Status: job.RowFailed},
		},
	}
	out := &docjobsv1.JobResult{}
	for i := range res.OCR {
		out.Ocr = append(out.Ocr, toOCRResult(&res.OCR[i]))
	}
	for i := range res.LLM {
		row, err := toLLMResult(&res.LLM[i])
		if err != nil {
			t.Fatal(err)
		}
		out.Llm = append(out.Llm, row)
	}
	wantOCR := []docjobsv1.JobOcrStatus{
		docjobsv1.JobOcrStatus_JOB_OCR_STATUS_PENDING, docjobsv1.JobOcrStatus_JOB_OCR_STATUS_SKIPPED,
		docjobsv1.JobOcrStatus_JOB_OCR_STATUS_DONE, docjobsv1.JobOcrStatus_JOB_OCR_STATUS_FAILED,
	}
	wantLLM := []docjobsv1.JobLlmStatus{
		docjobsv1.JobLlmStatus_JOB_LLM_STATUS_PENDING, docjobsv1.JobLlmStatus_JOB_LLM_STATUS_SKIPPED,
		docjobsv1.JobLlmStatus_JOB_LLM_STATUS_DONE, docjobsv1.JobLlmStatus_JOB_LLM_STATUS_FAILED,
	}
	for i := range wantOCR {
		if got := out.GetOcr()[i].GetStatus(); got != wantOCR[i] {
			t.Errorf("ocr[%d].status = %v, want %v", i, got, wantOCR[i])
		}
		if got := out.GetLlm()[i].GetStatus(); got != wantLLM[i] {
			t.Errorf("llm[%d].status = %v, want %v", i, got, wantLLM[i])
		}
	}
	if d := out.GetOcr()[2].GetDuration(); d != 1_500_000_000 {
		t.Errorf("ocr[2].duration = %d, want nanoseconds", d)
	}
	if r := out.GetLlm()[1].GetSkipReason(); r != job.SkipNoOCRContent {
		t.Errorf("llm[1].skipReason = %q", r)
	}
}

func TestToLLMResultSchemaValidIsPresentOnlyWhenSet(t *testing.T) {
	valid, invalid := true, false
	tests := []struct {
		name     string
		in       *bool
		wantJSON string // substring; "" = schemaValid absent
	}{
		{"no schema check leaves schemaValid out", nil, ""},
		{"a passing check is true", &valid, `"schemaValid":true`},
		{"a failing check is false, not omitted", &invalid, `"schemaValid":false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row, err := toLLMResult(&job.LLMRow{JobID: "j1", Status: job.RowDone, SchemaValid: tt.in})
			if err != nil {
				t.Fatal(err)
			}
			b, err := protojson.Marshal(row)
			if err != nil {
				t.Fatal(err)
			}
			s := strings.ReplaceAll(string(b), " ", "")
			if tt.wantJSON == "" {
				if strings.Contains(s, "schemaValid") {
					t.Fatalf("row JSON %s has schemaValid", s)
				}
				return
			}
			if !strings.Contains(s, tt.wantJSON) {
				t.Fatalf("row JSON %s lacks %s", s, tt.wantJSON)
			}
		})
	}
}

func TestToLLMResultDecodesTheConsensusBlock(t *testing.T) {
	block := []byte(`{"k":3,"runsVotable":2,"minAgreement":0.5,"incomplete":true,
		"disagreements":[{"fieldPath":"total","variants":[{"value":"12","runs":1,"included":true},{"value":"13","runs":1}]}],
		"disagreementsDropped":0}`)
	row, err := toLLMResult(&job.LLMRow{JobID: "j1", Status: job.RowDone, Consensus: block})
	if err != nil {
		t.Fatal(err)
	}
	c := row.GetConsensus()
	if c.GetK() != 3 || c.GetRunsVotable() != 2 || c.GetMinAgreement() != 0.5 || !c.GetIncomplete() {
		t.Fatalf("consensus = %v", c)
	}
	if v := c.GetDisagreements()[0].GetVariants(); len(v) != 2 || !v[0].GetIncluded() || v[1].GetValue() != "13" {
		t.Fatalf("variants = %v", v)
	}

	for _, empty := range [][]byte{nil, []byte("null"), []byte(" ")} {
		row, err := toLLMResult(&job.LLMRow{JobID: "j1", Status: job.RowSkipped, Consensus: empty})
		if err != nil || row.GetConsensus() != nil {
			t.Fatalf("consensus %q: got %v, %v; want none", empty, row.GetConsensus(), err)
		}
	}

	if _, err := toLLMResult(&job.LLMRow{JobID: "j1", Consensus: []byte(`{"k":`)}); err == nil {
		t.Fatal("a corrupt consensus block decoded")
	}
}

func TestToMergedCarriesMergedAnswersOnlyWhenMergeIsEnabled(t *testing.T) {
	stored := []byte(`[{"file":"","format":"json","content":"{\"ids\":[1,2]}","schemaValid":true,` +
		`"conflicts":[{"field":"total","values":["1","2"],"sources":[{"file":"f","chunkIndex":0},{"file":"f","chunkIndex":1}]}],` +
		`"dedupeRemovedTechnical":3,"mergeIncomplete":true,"incompleteChunks":[{"file":"f","chunkIndex":2}]}]`)
	for _, tc := range []struct {
		name    string
		enabled bool
		want    int
	}{
		{"enabled", true, 1},
		{"disabled: stored answers are not returned", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			merged, err := toMerged(&job.Job{ID: "j1", Merge: job.Merge{Enabled: tc.enabled}}, stored)
			if err != nil {
				t.Fatal(err)
			}
			if len(merged) != tc.want {
				t.Fatalf("merged = %v", merged)
			}
			if tc.want == 0 {
				return
			}
			m := merged[0]
			if m.GetFormat() != "json" || !m.GetSchemaValid() || m.GetDedupeRemovedTechnical() != 3 || !m.GetMergeIncomplete() ||
				m.GetConflicts()[0].GetSources()[1].GetChunkIndex() != 1 || m.GetIncompleteChunks()[0].GetChunkIndex() != 2 {
				t.Errorf("merged answer = %v", m)
			}
		})
	}
	if _, err := toMerged(&job.Job{ID: "j1", Merge: job.Merge{Enabled: true}}, []byte(`{`)); err == nil {
		t.Error("a corrupt stored merge decoded without error")
	}
}

func TestToJobSummarizesTheWebhookOnlyWhenThereIsOne(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := toJob(&job.Job{ID: "j", WebhookURL: "https://h.example/x", Webhook: job.WebhookDelivery{State: job.WebhookDelivered,
		Attempts: 3, LastStatus: 200, LastAttemptAt: at, DeliveredAt: at}})
	w := out.GetWebhook()
	if w.GetState() != "delivered" || w.GetAttempts() != 3 || w.GetLastStatus() != 200 || !w.GetDeliveredAt().AsTime().Equal(at) {
		t.Errorf("webhook = %v", w)
	}
	if pending := toJob(&job.Job{ID: "j", WebhookURL: "https://h.example/x", Webhook: job.WebhookDelivery{State: job.WebhookPending}}).GetWebhook(); pending.GetDeliveredAt() != nil || pending.GetLastAttemptAt() != nil {
		t.Errorf("a pending delivery has times: %v", pending)
	}
	if toJob(&job.Job{ID: "j"}).GetWebhook() != nil {
		t.Error("a job without a webhook URL has a webhook summary")
	}
}
