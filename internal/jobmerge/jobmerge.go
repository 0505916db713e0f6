// Package jobmerge computes a job's merged answers (result.merged) from its
// finished rows. It is apart from the worker so that every step that ends a
// merging job, finalize, a cancel and the deadline, stores the same answers
// in the transaction that ends it (DESIGN §1): the store ends cancelled and
// overdue jobs itself and cannot depend on the worker.
package jobmerge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/docjobs/docjobs/internal/fence"
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
	raw, err := encode(out)
	if err != nil {
		return nil, fmt.Errorf("merge: encode: %w", err)
	}
	return raw, nil
}

// encode is json.Marshal(answers), byte for byte, written once into a
// buffer of its size. json.Marshal grew its buffer by doubling and copied
// the result once more: about 3 times the merged content at once, the
// peak of a merge at its input limit once the merge itself was cut
// (mergemem). Each answer is marshalled without its content, which is
// then escaped in pieces by json.Marshal itself, so the bytes are its.
func encode(answers []Answer) ([]byte, error) {
	if answers == nil {
		return []byte("null"), nil
	}
	heads := make([][]byte, len(answers))
	size := 2 + max(len(answers)-1, 0)
	for i, a := range answers {
		content := a.Content
		a.Content = ""
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		heads[i] = b
		size += len(b) - 2 + escapedLen(content) // the head holds the empty content's quotes
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i, a := range answers {
		if i > 0 {
			out = append(out, ',')
		}
		b := heads[i]
		at := bytes.Index(b, emptyContent)
		if at < 0 {
			return nil, fmt.Errorf("no content field in %.100s", b)
		}
		at += len(emptyContent) - 2 // at the content's opening quote
		out = append(out, b[:at]...)
		var err error
		if out, err = appendString(out, a.Content); err != nil {
			return nil, err
		}
		out = append(out, b[at+2:]...)
	}
	return append(out, ']'), nil
}

// emptyContent is the content field of an answer marshalled without it;
// it follows the format, whose string cannot hold it unescaped.
var emptyContent = []byte(`,"content":""`)

// escapePiece is how much of a content json.Marshal escapes at a time.
const escapePiece = 64 << 10

// appendString appends s as json.Marshal writes a string. It marshals s in
// pieces cut before an ASCII byte: json.Marshal escapes each byte or
// character on its own, and a character cannot span such a cut (an
// incomplete one before it is invalid either way), so the pieces' escapes
// are the whole string's.
func appendString(dst []byte, s string) ([]byte, error) {
	dst = append(dst, '"')
	for len(s) > 0 {
		n := min(len(s), escapePiece)
		for n < len(s) && s[n] >= utf8.RuneSelf {
			n++
		}
		b, err := json.Marshal(s[:n])
		if err != nil {
			return nil, err
		}
		dst = append(dst, b[1:len(b)-1]...)
		s = s[n:]
	}
	return append(dst, '"'), nil
}

// escapedLen is how long json.Marshal's string for s is: the buffer's
// size (TestEscapedLenIsJSONMarshals holds it to that).
func escapedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// conforms is the merged content's schemaValid; nil when the schema does
// not compile (it was checked at create, so only a stored job from an
// older release could have one that does not).
func conforms(schemaText, content string) *bool {
	doc, ok := decode(fence.Strip(content))
	if !ok {
		s, err := schema.Compile(schemaText)
		if err != nil {
			return nil
		}
		valid, _ := schema.Verdict(s, content)
		return &valid
	}
	// Only whether it conforms: a Conformance builds no violation, where
	// Validate built every one (about 300 bytes each; 646 MiB for 4 MB
	// of content with a violation per element, hunt-merge).
	c, err := schema.CompileConformance(schemaText)
	if err != nil {
		return nil
	}
	valid := c.Conforms(doc)
	return &valid
}

// decode is jsonschema.UnmarshalJSON of valid JSON (what schema.Verdict
// validates), built from the text without copying it: its strings and
// numbers share the content's memory. Verdict's decoder read the whole
// content into a buffer of its own and copied every string, about twice
// the content beside the tree, the peak of a merge with a schema
// (mergemem). ok is false when s is not one valid JSON value.
func decode(s string) (any, bool) {
	if !json.Valid([]byte(s)) {
		return nil, false
	}
	d := decoder{s: s, nums: map[string]any{}, strs: map[string]any{}}
	return d.value(), true
}

// decoder reads text json.Valid accepted.
type decoder struct {
	s string
	i int
	// nums and strs hold short numbers and strings already boxed in an
	// interface, shared by every place that holds the same one: boxing
	// allocates the value's 16-byte header, as much again as the slot
	// that holds it, and merged content of small values repeats a few
	// (hunt-merge: 64 MiB of one-digit numbers is 32 million of them).
	// The validator only reads the document.
	nums, strs map[string]any
}

// Bounds of the boxed caches: values at most maxBoxedLen bytes long, at
// most maxBoxed of each kind; past them a value is boxed where it is.
const (
	maxBoxedLen = 16
	maxBoxed    = 1 << 12
)

// box is s boxed (as json.Number when num), shared through cache.
func box(cache map[string]any, s string, num bool) any {
	if v, ok := cache[s]; ok {
		return v
	}
	var v any = s
	if num {
		v = json.Number(s)
	}
	if len(s) <= maxBoxedLen && len(cache) < maxBoxed {
		cache[s] = v
	}
	return v
}

func (d *decoder) space() {
	for d.i < len(d.s) && (d.s[d.i] == ' ' || d.s[d.i] == '\t' || d.s[d.i] == '\n' || d.s[d.i] == '\r') {
		d.i++
	}
}

func (d *decoder) value() any {
	d.space()
	switch d.s[d.i] {
	case 'n':
		d.i += 4
		return nil
	case 't':
		d.i += 4
		return true
	case 'f':
		d.i += 5
		return false
	case '"':
		return box(d.strs, d.str(), false)
	case '[':
		d.i++
		arr := []any{}
		d.space()
		if d.s[d.i] == ']' {
			d.i++
			return arr
		}
		for {
			arr = append(arr, d.value())
			d.space()
			c := d.s[d.i]
			d.i++
			if c == ']' {
				return slices.Clip(arr)
			}
		}
	case '{':
		d.i++
		obj := map[string]any{}
		d.space()
		if d.s[d.i] == '}' {
			d.i++
			return obj
		}
		for {
			d.space()
			k := d.str()
			d.space()
			d.i++              // ':'
			obj[k] = d.value() // the last of a repeated key wins, as in encoding/json
			d.space()
			c := d.s[d.i]
			d.i++
			if c == '}' {
				return obj
			}
		}
	}
	start := d.i
	for d.i < len(d.s) && strings.IndexByte("+-0123456789.eE", d.s[d.i]) >= 0 {
		d.i++
	}
	return box(d.nums, d.s[start:d.i], true)
}

// str reads a string: sliced from the text when it holds no escape and
// is valid UTF-8, else decoded by encoding/json, so that invalid UTF-8
// and escapes come out as there.
func (d *decoder) str() string {
	start := d.i
	d.i++
	plain := true
	for c := d.s[d.i]; c != '"'; c = d.s[d.i] {
		if c == '\\' {
			plain = false
			d.i++
		} else if c >= utf8.RuneSelf {
			plain = false
		}
		d.i++
	}
	d.i++
	raw := d.s[start:d.i]
	if plain || !strings.Contains(raw, "\\") && utf8.ValidString(raw) {
		return raw[1 : len(raw)-1]
	}
	var out string
	_ = json.Unmarshal([]byte(raw), &out) // valid: it cannot fail
	return out
}
