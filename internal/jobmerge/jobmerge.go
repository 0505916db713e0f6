// Package jobmerge computes a job's merged answers (result.merged) from its
// finished rows. It is apart from the worker so that every step that ends a
// merging job, finalize, a cancel and the deadline, stores the same answers
// in the transaction that ends it (DESIGN §1): the store ends cancelled and
// overdue jobs itself and cannot depend on the worker.
package jobmerge

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/merge"
	"github.com/docjobs/docjobs/internal/schema"
)

// InputBudget is how many bytes of answers a merge reads: the caller loads
// no answer past it (job.LLMRow.ContentUnread), as merge would leave it out.
const InputBudget = merge.DefaultMaxTotalBytes

// maxLoggedChunks: with this many rows without an answer or more, the
// chunks left unmerged are not logged one by one.
const maxLoggedChunks = 100

// Answer is a merge.Answer in the wire form of result.merged[], so that
// the stored JSON decodes straight into the API's MergedAnswer.
type Answer struct {
	File                   string     `json:"file"`
	Format                 string     `json:"format"`
	Content                string     `json:"content"`
	SchemaValid            *bool      `json:"schemaValid,omitempty"`
	Conflicts              []Conflict `json:"conflicts,omitempty"`
	DedupeRemovedTechnical int        `json:"dedupeRemovedTechnical"`
	DedupeRemovedContent   int        `json:"dedupeRemovedContent"`
	MergeIncomplete        bool       `json:"mergeIncomplete"`
	IncompleteChunks       []ChunkRef `json:"incompleteChunks,omitempty"`
}

// Conflict is a field the chunks disagreed on.
type Conflict struct {
	Field   string     `json:"field"`
	Values  []string   `json:"values"`
	Sources []ChunkRef `json:"sources"`
}

// ChunkRef names one chunk of one file.
type ChunkRef struct {
	File       string `json:"file"`
	ChunkIndex int    `json:"chunkIndex"`
}

// Answers merges the model rows of a finished job into its result.merged,
// as stored JSON; nil when the job does not merge. Whatever status the job
// ends with, its rows are all terminal by then: rows that failed (a cancel
// and the deadline fail the pending ones), and files whose recognition
// failed, take part as chunks that could not be merged, so the answer says
// they are missing. A file without text (no_ocr_content, empty_ocr_content)
// or without a prompt to answer (no_prompt) takes part too, as a chunk with
// nothing to merge: the spec gives MERGE_SCOPE_FILE "one merged entry per
// file" and merged[] to every job that set merge.enabled, so merged[] has
// one entry per file in file order, and that file's entry holds the empty
// answer ("null" for JSON) with mergeIncomplete false, as nothing of it
// was lost.
func Answers(res *job.Result, log *slog.Logger) ([]byte, error) {
	j := res.Job
	if !j.Merge.Enabled {
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
	failed := 0 // rows without an answer: a cancel may leave thousands
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
		case r.Status == job.RowSkipped && (r.SkipReason == job.SkipNoOCRContent ||
			r.SkipReason == job.SkipEmptyOCRContent || r.SkipReason == job.SkipNoPrompt):
			c.NoText = true
		default:
			// FAILED, ocr_failed, and whatever else a finished row may be:
			// named as missing rather than left out without a word.
			c.Failed = true
			failed++
		}
		chunks = append(chunks, c)
	}
	answers, err := merge.Merge(chunks, opts)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}

	out := make([]Answer, len(answers))
	for i, a := range answers {
		m := Answer{File: a.File, Format: a.Format, Content: a.Content,
			DedupeRemovedTechnical: a.DedupeRemovedTechnical, DedupeRemovedContent: a.DedupeRemovedContent,
			MergeIncomplete: a.MergeIncomplete}
		if j.ResponseSchema != "" {
			m.SchemaValid = conforms(j.ResponseSchema, a.Content)
		}
		for _, c := range a.Conflicts {
			mc := Conflict{Field: c.Field, Values: c.Values}
			for _, s := range c.Sources {
				mc.Sources = append(mc.Sources, ChunkRef{File: s.File, ChunkIndex: s.Index})
			}
			m.Conflicts = append(m.Conflicts, mc)
		}
		for _, c := range a.IncompleteChunks {
			m.IncompleteChunks = append(m.IncompleteChunks, ChunkRef{File: c.File, ChunkIndex: c.Index})
			// Rows without an answer are counted once below rather than
			// logged each, inside the transaction of a cancel that failed
			// them; the row itself says why it has none.
			if failed < maxLoggedChunks {
				log.Info("merge: chunk left unmerged", "file", c.File, "chunk_index", c.Index, "reason", c.Reason)
			}
		}
		if a.ConflictsDropped > 0 {
			log.Info("merge: conflicts over the cap dropped", "file", a.File, "dropped", a.ConflictsDropped)
		}
		out[i] = m
	}
	if failed >= maxLoggedChunks {
		log.Info("merge: chunks without an answer left unmerged, not logged one by one", "rows", failed)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("merge: encode: %w", err)
	}
	return raw, nil
}

// conforms is the merged content's schemaValid; nil when the schema does
// not compile (it was checked at create, so only a stored job from an
// older release could have one that does not).
func conforms(schemaText, content string) *bool {
	s, err := schema.Compile(schemaText)
	if err != nil {
		return nil
	}
	valid, _ := schema.Verdict(s, content)
	return &valid
}
