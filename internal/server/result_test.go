package server

import (
	"encoding/json"
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
