package server

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// resultMarshaler is the gateway's JSON marshaler plus the one rule
// protojson cannot express: in the result of a consensus job, model rows
// without a vote (skipped and failed rows) carry "consensus": null
// explicitly, while rows of other jobs have no consensus key (spec).
type resultMarshaler struct {
	*runtime.JSONPb
}

func (m resultMarshaler) Marshal(v any) ([]byte, error) {
	raw, err := m.JSONPb.Marshal(v)
	if err != nil {
		return nil, err
	}
	res, ok := v.(*docjobsv1.GetJobResultResponse)
	if !ok || res.GetResult().GetJob().GetConsensus().GetMode() == docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED {
		return raw, nil
	}
	return nullConsensus(raw)
}

// nullConsensus adds "consensus": null to every row of result.llm that has
// no consensus key.
func nullConsensus(raw []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("consensus nulls: %w", err)
	}
	var result map[string]json.RawMessage
	if err := json.Unmarshal(top["result"], &result); err != nil {
		return nil, fmt.Errorf("consensus nulls: result: %w", err)
	}
	if len(result["llm"]) == 0 {
		return raw, nil
	}
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(result["llm"], &rows); err != nil {
		return nil, fmt.Errorf("consensus nulls: llm: %w", err)
	}
	changed := false
	for _, r := range rows {
		if _, ok := r["consensus"]; !ok {
			r["consensus"] = json.RawMessage("null")
			changed = true
		}
	}
	if !changed {
		return raw, nil
	}
	var err error
	if result["llm"], err = marshalRaw(rows); err != nil {
		return nil, err
	}
	if top["result"], err = marshalRaw(result); err != nil {
		return nil, err
	}
	return marshalRaw(top)
}

// marshalRaw encodes without HTML escaping, as protojson does, so that row
// content keeps its form.
func marshalRaw(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("consensus nulls: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
