package worker

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/merge"
)

// mergedAnswer is a merge.Answer in the wire form of result.merged[], so
// that the stored JSON decodes straight into the API's MergedAnswer.
type mergedAnswer struct {
	File                   string          `json:"file"`
	Format                 string          `json:"format"`
	Content                string          `json:"content"`
	SchemaValid            *bool           `json:"schemaValid,omitempty"`
	Conflicts              []mergeConflict `json:"conflicts,omitempty"`
	DedupeRemovedTechnical int             `json:"dedupeRemovedTechnical"`
	DedupeRemovedContent   int             `json:"dedupeRemovedContent"`
	MergeIncomplete        bool            `json:"mergeIncomplete"`
	IncompleteChunks       []chunkRef      `json:"incompleteChunks,omitempty"`
}

type mergeConflict struct {
	Field   string     `json:"field"`
	Values  []string   `json:"values"`
	Sources []chunkRef `json:"sources"`
}

type chunkRef struct {
	File       string `json:"file"`
	ChunkIndex int    `json:"chunkIndex"`
}

// mergeAnswers merges the model rows of a finished job into its
// result.merged, as stored JSON; nil when the job does not merge or sent no
// prompt. Rows that failed, and files whose recognition failed, take part
// as chunks that could not be merged, so the answer says they are missing.
// A file without text (no_ocr_content, empty_ocr_content) takes part too,
// as a chunk with nothing to merge: the spec gives MERGE_SCOPE_FILE "one
// merged entry per file", so merged[] has one entry per file in file order,
// and that file's entry holds the empty answer ("null" for JSON) with
// mergeIncomplete false, as nothing of it was lost.
func mergeAnswers(res *job.Result, log *slog.Logger) ([]byte, error) {
	j := res.Job
	if !j.Merge.Enabled || len(j.Prompts) == 0 {
		return nil, nil
	}
	opts := merge.Options{DedupeBy: j.Merge.DedupeBy, HasSchema: j.ResponseSchema != ""}
	var err error
	if opts.Scope, err = merge.ParseScope(j.Merge.Scope); err != nil {
		return nil, err
	}
	if opts.Policy, err = merge.ParsePolicy(j.Merge.ConflictPolicy); err != nil {
		return nil, err
	}
	if opts.Format, err = merge.ParseFormat(j.Merge.Format); err != nil {
		return nil, err
	}

	var chunks []merge.Chunk
	for _, r := range res.LLM {
		file := r.File
		if file == "" && r.FileIndex < len(j.SourceURLs) {
			file = j.SourceURLs[r.FileIndex] // never stored: its download failed
		}
		c := merge.Chunk{File: file, FileIndex: r.FileIndex, Index: r.ChunkIndex}
		switch {
		case r.Status == job.RowDone:
			c.Content, c.Overlap, c.NoOverlap = r.Content, r.Overlap, r.ChunkIndex > 0 && r.Overlap == ""
			c.Unread = r.ContentUnread // past the merge's input limit, left unread
		case r.Status == job.RowSkipped && (r.SkipReason == job.SkipNoOCRContent || r.SkipReason == job.SkipEmptyOCRContent):
			c.NoText = true
		default:
			// FAILED, ocr_failed, and whatever else a finished row may be:
			// named as missing rather than left out without a word.
			c.Failed = true
		}
		chunks = append(chunks, c)
	}
	answers, err := merge.Merge(chunks, opts)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}

	out := make([]mergedAnswer, len(answers))
	for i, a := range answers {
		m := mergedAnswer{File: a.File, Format: a.Format, Content: a.Content,
			DedupeRemovedTechnical: a.DedupeRemovedTechnical, DedupeRemovedContent: a.DedupeRemovedContent,
			MergeIncomplete: a.MergeIncomplete}
		if j.ResponseSchema != "" {
			m.SchemaValid, _ = verdict(j.ResponseSchema, a.Content)
		}
		for _, c := range a.Conflicts {
			mc := mergeConflict{Field: c.Field, Values: c.Values}
			for _, s := range c.Sources {
				mc.Sources = append(mc.Sources, chunkRef{File: s.File, ChunkIndex: s.Index})
			}
			m.Conflicts = append(m.Conflicts, mc)
		}
		for _, c := range a.IncompleteChunks {
			m.IncompleteChunks = append(m.IncompleteChunks, chunkRef{File: c.File, ChunkIndex: c.Index})
			log.Info("merge: chunk left unmerged", "file", c.File, "chunk_index", c.Index, "reason", c.Reason)
		}
		if a.ConflictsDropped > 0 {
			log.Info("merge: conflicts over the cap dropped", "file", a.File, "dropped", a.ConflictsDropped)
		}
		out[i] = m
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("merge: encode: %w", err)
	}
	return raw, nil
}
