package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/job"
)

// This file turns domain values into wire messages. The domain Job carries
// no secret (they live apart, sealed), and nothing here reads one, so no
// response can hold a provider key or webhook secret.

// enumOf returns the enum value named name, or 0 (UNSPECIFIED) for a name
// the contract does not know.
func enumOf[E ~int32](values map[string]int32, name string) E {
	return E(values[name])
}

// toJob is the wire form of j. consensus is always set with its mode present,
// CONSENSUS_MODE_UNSPECIFIED when off, as the spec requires.
func toJob(j *job.Job) *docjobsv1.Job {
	mode := enumOf[docjobsv1.ConsensusMode](docjobsv1.ConsensusMode_value, j.ConsensusMode)
	out := &docjobsv1.Job{
		Id:         j.ID,
		AccountId:  j.AccountID,
		Title:      j.Title,
		Metadata:   j.Metadata,
		Status:     enumOf[docjobsv1.JobStatus](docjobsv1.JobStatus_value, string(j.Status)),
		Error:      j.Error,
		SourceUrls: j.SourceURLs,
		Files:      j.Files,
		Prompts:    j.Prompts,
		Neural: &docjobsv1.Neural{
			Type:              enumOf[docjobsv1.NeuralClientType](docjobsv1.NeuralClientType_value, j.Neural.Type),
			Model:             j.Neural.Model,
			ChunkBudgetTokens: j.Neural.ChunkBudgetTokens,
		},
		ResponseSchema: j.ResponseSchema,
		Consensus:      &docjobsv1.ConsensusOptions{Mode: &mode},
		ExtractionMode: enumOf[docjobsv1.ExtractionMode](docjobsv1.ExtractionMode_value, j.ExtractionMode),
		WebhookUrl:     j.WebhookURL,
		IdempotencyKey: j.IdempotencyKey,
		Created:        timestamp(j.Created),
		Updated:        timestamp(j.Updated),
	}
	if m := j.Merge; m.Enabled || m.Scope != "" || m.ConflictPolicy != "" || m.Format != "" || len(m.DedupeBy) > 0 {
		out.Merge = &docjobsv1.MergeOptions{
			Enabled:        m.Enabled,
			Scope:          enumOf[docjobsv1.MergeScope](docjobsv1.MergeScope_value, m.Scope),
			ConflictPolicy: enumOf[docjobsv1.MergeConflictPolicy](docjobsv1.MergeConflictPolicy_value, m.ConflictPolicy),
			DedupeBy:       m.DedupeBy,
			Format:         enumOf[docjobsv1.MergeFormat](docjobsv1.MergeFormat_value, m.Format),
		}
	}
	if w := j.Webhook; w.State != "" {
		out.Webhook = &docjobsv1.WebhookDelivery{State: w.State, Attempts: int32(w.Attempts),
			LastStatus: int32(w.LastStatus), LastError: w.LastError,
			LastAttemptAt: timestamp(w.LastAttemptAt), DeliveredAt: timestamp(w.DeliveredAt)}
	}
	return out
}

// toMerged is the wire form of a job's stored merged answers (a JSON array
// of protojson MergedAnswer objects): none unless the job set
// merge.enabled. It fails only when they do not decode.
func toMerged(j *job.Job, stored []byte) ([]*docjobsv1.MergedAnswer, error) {
	if !j.Merge.Enabled || len(stored) == 0 {
		return nil, nil
	}
	var answers []json.RawMessage
	if err := json.Unmarshal(stored, &answers); err != nil {
		return nil, fmt.Errorf("decode merged answers of job %s: %w", j.ID, err)
	}
	out := make([]*docjobsv1.MergedAnswer, 0, len(answers))
	for i, a := range answers {
		var m docjobsv1.MergedAnswer
		if err := protojson.Unmarshal(a, &m); err != nil {
			return nil, fmt.Errorf("decode merged answer %d of job %s: %w", i, j.ID, err)
		}
		out = append(out, &m)
	}
	return out, nil
}

func toOCRResult(r *job.OCRRow) *docjobsv1.OcrResult {
	return &docjobsv1.OcrResult{
		JobId:        r.JobID,
		File:         r.File,
		Status:       enumOf[docjobsv1.JobOcrStatus](docjobsv1.JobOcrStatus_value, "JOB_OCR_STATUS_"+string(r.Status)),
		Content:      r.Content,
		OutputFormat: r.OutputFormat,
		Model:        r.Model,
		Request:      r.Request,
		RawData:      r.RawData,
		Error:        r.Error,
		Duration:     proto.Int64(r.Duration.Nanoseconds()),
		Created:      timestamp(r.Created),
		Updated:      timestamp(r.Updated),
	}
}

// toLLMResult is the wire form of a model row. Row.Consensus holds the
// protojson encoding of a docjobsv1.ConsensusResult.
func toLLMResult(r *job.LLMRow) (*docjobsv1.LlmResult, error) {
	out := &docjobsv1.LlmResult{
		JobId:        r.JobID,
		File:         r.File,
		PromptIndex:  int32(r.PromptIndex),
		ChunkIndex:   int32(r.ChunkIndex),
		ChunkTotal:   int32(r.ChunkTotal),
		Status:       enumOf[docjobsv1.JobLlmStatus](docjobsv1.JobLlmStatus_value, "JOB_LLM_STATUS_"+string(r.Status)),
		SkipReason:   r.SkipReason,
		Content:      r.Content,
		Model:        r.Model,
		Request:      r.Request,
		RawData:      r.RawData,
		Error:        r.Error,
		Duration:     proto.Int64(r.Duration.Nanoseconds()),
		Created:      timestamp(r.Created),
		Updated:      timestamp(r.Updated),
		SchemaErrors: r.SchemaErrors,
		InputTokens:  r.InputTokens,
		OutputTokens: r.OutputTokens,
	}
	if r.SchemaValid != nil {
		out.SchemaValid = proto.Bool(*r.SchemaValid)
	}
	if c := bytes.TrimSpace(r.Consensus); len(c) > 0 && !bytes.Equal(c, []byte("null")) {
		var cr docjobsv1.ConsensusResult
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(c, &cr); err != nil {
			return nil, fmt.Errorf("decode consensus of job %s file %d chunk %d: %w", r.JobID, r.FileIndex, r.ChunkIndex, err)
		}
		out.Consensus = &cr
	}
	return out, nil
}

func timestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
