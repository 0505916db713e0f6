package server

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

func TestResultRowsOfConsensusJobsSayConsensusNullWhenTheyHadNoVote(t *testing.T) {
	m := resultMarshaler{&runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{}}}
	result := func(mode docjobsv1.ConsensusMode) *docjobsv1.GetJobResultResponse {
		return &docjobsv1.GetJobResultResponse{Result: &docjobsv1.JobResult{
			Job: &docjobsv1.Job{Id: "j", Consensus: &docjobsv1.ConsensusOptions{Mode: &mode}},
			Llm: []*docjobsv1.LlmResult{
				{ChunkIndex: 0, Status: docjobsv1.JobLlmStatus_JOB_LLM_STATUS_DONE, Content: `{"a":"<b>"}`,
					Consensus: &docjobsv1.ConsensusResult{K: 3, RunsVotable: 3, MinAgreement: 1}},
				{ChunkIndex: 1, Status: docjobsv1.JobLlmStatus_JOB_LLM_STATUS_FAILED, Error: "run 1: invalid JSON"},
			},
		}}
	}
	rows := func(t *testing.T, raw []byte) []map[string]json.RawMessage {
		t.Helper()
		var out struct {
			Result struct{ Llm []map[string]json.RawMessage }
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		return out.Result.Llm
	}

	raw, err := m.Marshal(result(docjobsv1.ConsensusMode_CONSENSUS_MODE_THREE_RUNS))
	if err != nil {
		t.Fatal(err)
	}
	got := rows(t, raw)
	if c := string(got[0]["consensus"]); !strings.Contains(c, `"runsVotable":3`) {
		t.Errorf("a voted row's consensus = %s", c)
	}
	if c, ok := got[1]["consensus"]; !ok || string(c) != "null" {
		t.Errorf("the failed row of a consensus job: consensus = %q (present %v), want null", c, ok)
	}
	if !strings.Contains(string(raw), `<b>`) {
		t.Errorf("content was re-escaped: %s", raw)
	}

	raw, err = m.Marshal(result(docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rows(t, raw)[1]["consensus"]; ok {
		t.Errorf("a row of a job without consensus has a consensus key: %s", raw)
	}
}

func TestListAndResultEnvelopesAlwaysCarryTheirArrays(t *testing.T) {
	m := resultMarshaler{&runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{}}}
	job := &docjobsv1.Job{Id: "j", Consensus: &docjobsv1.ConsensusOptions{Mode: docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED.Enum()}}
	consensusJob := &docjobsv1.Job{Id: "j", Consensus: &docjobsv1.ConsensusOptions{Mode: docjobsv1.ConsensusMode_CONSENSUS_MODE_THREE_RUNS.Enum()}}
	ocrRow := &docjobsv1.OcrResult{JobId: "j", File: "f", Status: docjobsv1.JobOcrStatus_JOB_OCR_STATUS_PENDING}
	tests := []struct {
		name string
		msg  any
		// keys is the envelope's keys in order (the list's, or the
		// result's); empty lists their values must be [].
		keys  []string
		empty []string
	}{
		{"an empty list has jobs []", &docjobsv1.ListJobsResponse{},
			[]string{"jobs"}, []string{"jobs"}},
		{"an empty last page keeps its token after jobs []", &docjobsv1.ListJobsResponse{NextPageToken: "t"},
			[]string{"jobs", "nextPageToken"}, []string{"jobs"}},
		{"a list with jobs is as protojson wrote it", &docjobsv1.ListJobsResponse{Jobs: []*docjobsv1.Job{job}},
			[]string{"jobs"}, nil},
		{"a result without rows has ocr [] and llm []",
			&docjobsv1.GetJobResultResponse{Result: &docjobsv1.JobResult{Job: job}},
			[]string{"job", "ocr", "llm"}, []string{"ocr", "llm"}},
		{"a result still recognizing has llm [] after its ocr rows",
			&docjobsv1.GetJobResultResponse{Result: &docjobsv1.JobResult{Job: job, Ocr: []*docjobsv1.OcrResult{ocrRow}}},
			[]string{"job", "ocr", "llm"}, []string{"llm"}},
		{"llm [] goes before merged",
			&docjobsv1.GetJobResultResponse{Result: &docjobsv1.JobResult{Job: job, Ocr: []*docjobsv1.OcrResult{ocrRow},
				Merged: []*docjobsv1.MergedAnswer{{Format: "json", Content: "{}"}}}},
			[]string{"job", "ocr", "llm", "merged"}, []string{"llm"}},
		{"a consensus job without rows has ocr [] and llm [] too",
			&docjobsv1.GetJobResultResponse{Result: &docjobsv1.JobResult{Job: consensusJob}},
			nil, []string{"ocr", "llm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := m.Marshal(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal(raw, &top); err != nil {
				t.Fatalf("%v: %s", err, raw)
			}
			env, envRaw := top, raw
			if r, ok := top["result"]; ok {
				envRaw = r
				if err := json.Unmarshal(r, &env); err != nil {
					t.Fatalf("%v: %s", err, raw)
				}
			}
			for _, k := range tt.empty {
				if got := string(env[k]); got != "[]" {
					t.Errorf("%s = %q, want []: %s", k, got, raw)
				}
			}
			if tt.keys != nil {
				if got := objectKeys(t, envRaw); !slices.Equal(got, tt.keys) {
					t.Errorf("keys = %q, want %q: %s", got, tt.keys, raw)
				}
			}
			// Nothing else is emitted unpopulated: the job keeps its zero
			// fields out (its title, error, sourceUrls).
			if strings.Contains(string(raw), `"title"`) || strings.Contains(string(raw), `"sourceUrls"`) {
				t.Errorf("zero fields emitted: %s", raw)
			}
		})
	}
}

// objectKeys lists the keys of a JSON object in document order.
func objectKeys(t *testing.T, obj []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestConsensusNullsKeepProtojsonsOrder(t *testing.T) {
	m := resultMarshaler{&runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{}}}
	mode := docjobsv1.ConsensusMode_CONSENSUS_MODE_THREE_RUNS
	raw, err := m.Marshal(&docjobsv1.GetJobResultResponse{Result: &docjobsv1.JobResult{
		Job: &docjobsv1.Job{Id: "j", Consensus: &docjobsv1.ConsensusOptions{Mode: &mode}},
		Ocr: []*docjobsv1.OcrResult{{JobId: "j", Content: "text"}},
		Llm: []*docjobsv1.LlmResult{
			{JobId: "j", Status: docjobsv1.JobLlmStatus_JOB_LLM_STATUS_FAILED, Error: "e", InputTokens: 7},
			{JobId: "j", Status: docjobsv1.JobLlmStatus_JOB_LLM_STATUS_SKIPPED},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var top struct{ Result json.RawMessage }
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	// Re-encoding through Go maps had sorted the keys (llm before ocr).
	if got, want := objectKeys(t, top.Result), []string{"job", "ocr", "llm"}; !slices.Equal(got, want) {
		t.Errorf("result keys = %q, want %q", got, want)
	}
	var result struct{ Llm []json.RawMessage }
	if err := json.Unmarshal(top.Result, &result); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]string{
		{"jobId", "status", "error", "consensus", "inputTokens"},
		{"jobId", "status", "consensus"},
	} {
		if got := objectKeys(t, result.Llm[i]); !slices.Equal(got, want) {
			t.Errorf("row %d keys = %q, want %q", i, got, want)
		}
	}
}
