package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/reflect/protoreflect"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// resultMarshaler is the gateway's JSON marshaler plus the rules protojson
// cannot express:
//   - the arrays of the list and result envelopes are always present: the
//     lists carry "jobs": [] and "files": [] when empty, the result "ocr": [] and
//     "llm": [] before any row exists (protojson never writes an empty
//     repeated field, and turning EmitUnpopulated on would change every other
//     shape; merged stays absent unless the job merges);
//   - in the result of a consensus job, model rows without a vote (skipped
//     and failed rows) carry "consensus": null explicitly, while rows of
//     other jobs have no consensus key (spec).
type resultMarshaler struct {
	*runtime.JSONPb
}

func (m resultMarshaler) Marshal(v any) ([]byte, error) {
	raw, err := m.JSONPb.Marshal(v)
	if err != nil {
		return nil, err
	}
	switch res := v.(type) {
	case *docjobsv1.ListJobsResponse:
		if len(res.GetJobs()) > 0 {
			return raw, nil
		}
		return withEmptyLists(raw, res.ProtoReflect().Descriptor(), "jobs")
	case *docjobsv1.ListFilesResponse:
		if len(res.GetFiles()) > 0 {
			return raw, nil
		}
		return withEmptyLists(raw, res.ProtoReflect().Descriptor(), "files")
	case *docjobsv1.GetJobResultResponse:
		// A result's rows can be megabytes: it is read again only when an
		// array is missing from it.
		if len(res.GetResult().GetOcr()) == 0 || len(res.GetResult().GetLlm()) == 0 {
			if raw, err = withResultLists(raw); err != nil {
				return nil, err
			}
		}
		if res.GetResult().GetJob().GetConsensus().GetMode() == docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED {
			return raw, nil
		}
		return nullConsensus(raw)
	}
	return raw, nil
}

// withResultLists adds the result's missing row arrays to raw, the JSON of
// a GetJobResultResponse.
func withResultLists(raw []byte) ([]byte, error) {
	start, end, ok, err := memberSpan(raw, "result")
	if err != nil || !ok {
		return raw, err
	}
	inner, err := withEmptyLists(raw[start:end], (*docjobsv1.JobResult)(nil).ProtoReflect().Descriptor(), "ocr", "llm")
	if err != nil {
		return nil, err
	}
	return slices.Concat(raw[:start], inner, raw[end:]), nil
}

// withEmptyLists returns obj, the JSON object protojson wrote for a message
// of type md, with "name": [] added for each of the named repeated fields it
// left out (withMembers).
func withEmptyLists(obj []byte, md protoreflect.MessageDescriptor, names ...protoreflect.Name) ([]byte, error) {
	members := make([]missingMember, len(names))
	for i, name := range names {
		if fd := md.Fields().ByName(name); fd == nil || !fd.IsList() {
			return nil, fmt.Errorf("empty lists: %s has no repeated field %s", md.Name(), name)
		}
		members[i] = missingMember{name: name, value: "[]"}
	}
	return withMembers(obj, md, members...)
}

// missingMember is a field protojson leaves out and the value to write for
// it instead.
type missingMember struct {
	name  protoreflect.Name
	value string // JSON
}

// withMembers returns obj, the JSON object protojson wrote for a message of
// type md, with "name": value added for each member it left out, at the
// field's place in declaration order (the order protojson writes fields
// in), after a bare comma. Everything else is kept byte for byte.
func withMembers(obj []byte, md protoreflect.MessageDescriptor, missing ...missingMember) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("missing members: %s is not a JSON object", md.Name())
	}
	type member struct {
		index int   // field index in md; -1 for a key md does not have
		end   int64 // offset just past the member's value
	}
	open := dec.InputOffset()
	var members []member
	present := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("missing members: %w", err)
		}
		key, _ := tok.(string)
		present[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("missing members: %w", err)
		}
		index := -1
		if fd := md.Fields().ByJSONName(key); fd != nil {
			index = fd.Index()
		}
		members = append(members, member{index: index, end: dec.InputOffset()})
	}
	var atOpen []string // insertions right after '{'
	after := map[int64][]string{}
	for _, m := range missing {
		fd := md.Fields().ByName(m.name)
		if fd == nil {
			return nil, fmt.Errorf("missing members: %s has no field %s", md.Name(), m.name)
		}
		if present[fd.JSONName()] {
			continue
		}
		item := strconv.Quote(fd.JSONName()) + ":" + m.value
		at := int64(-1)
		for _, m := range members {
			if m.index >= 0 && m.index < fd.Index() {
				at = m.end
			}
		}
		if at < 0 {
			atOpen = append(atOpen, item)
		} else {
			after[at] = append(after[at], item)
		}
	}
	if len(atOpen) == 0 && len(after) == 0 {
		return obj, nil
	}
	out := slices.Clone(obj[:open])
	last := open
	if len(atOpen) > 0 {
		out = append(out, strings.Join(atOpen, ",")...)
		if len(members) > 0 {
			out = append(out, ',')
		}
	}
	for _, m := range members {
		items, ok := after[m.end]
		if !ok {
			continue
		}
		out = append(out, obj[last:m.end]...)
		last = m.end
		for _, item := range items {
			out = append(out, ',')
			out = append(out, item...)
		}
	}
	return append(out, obj[last:]...), nil
}

// memberSpan finds the value of the top-level member name of the JSON
// object obj: obj[start:end] is the value.
func memberSpan(obj []byte, name string) (start, end int, ok bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0, 0, false, errors.New("empty lists: the response is not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, false, fmt.Errorf("empty lists: %w", err)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return 0, 0, false, fmt.Errorf("empty lists: %w", err)
		}
		if tok == name {
			end := int(dec.InputOffset())
			return end - len(value), end, true, nil
		}
	}
	return 0, 0, false, nil
}

// nullConsensus adds "consensus": null to every row of result.llm that has
// no consensus key, in the row where protojson would have written the field
// (withNullConsensus); everything else is kept byte for byte.
func nullConsensus(raw []byte) ([]byte, error) {
	start, end, ok, err := memberSpan(raw, "result")
	if err != nil || !ok {
		return raw, err
	}
	result := raw[start:end]
	lstart, lend, ok, err := memberSpan(result, "llm")
	if err != nil || !ok {
		return raw, err
	}
	rows := result[lstart:lend]
	dec := json.NewDecoder(bytes.NewReader(rows))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, errors.New("consensus nulls: result.llm is not an array")
	}
	var out []byte
	last := 0
	for dec.More() {
		var row json.RawMessage
		if err := dec.Decode(&row); err != nil {
			return nil, fmt.Errorf("consensus nulls: %w", err)
		}
		rowEnd := int(dec.InputOffset())
		fixed, err := withNullConsensus(row)
		if err != nil {
			return nil, err
		}
		if len(fixed) == len(row) {
			continue
		}
		out = append(out, rows[last:rowEnd-len(row)]...)
		out = append(out, fixed...)
		last = rowEnd
	}
	if out == nil {
		return raw, nil
	}
	out = append(out, rows[last:]...)
	at := start + lstart
	return slices.Concat(raw[:at], out, raw[start+lend:]), nil
}

// withNullConsensus adds "consensus": null to row, the protojson of one
// LlmResult of a consensus job, when it has no consensus (the row had no
// vote: skipped, failed or pending).
func withNullConsensus(row []byte) ([]byte, error) {
	out, err := withMembers(row, (*docjobsv1.LlmResult)(nil).ProtoReflect().Descriptor(),
		missingMember{name: "consensus", value: "null"})
	if err != nil {
		return nil, fmt.Errorf("consensus nulls: %w", err)
	}
	return out, nil
}
