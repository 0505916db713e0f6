// Package merge turns the per-chunk model answers of a job into one answer
// per file or per job, losing nothing: JSON is deep-merged with conflicts
// and dedupes reported, markup and text are joined without the overlap the
// chunker repeats, and every chunk that could not be merged safely is named
// with the reason.
//
// Consecutive chunks of a file overlap by one block (internal/chunk), so a
// record on a boundary is answered twice: at the tail of chunk i's answer
// and at the head of chunk i+1's. Technical dedupe removes exactly that
// repeated run; content dedupe (Options.DedupeBy) removes records that
// share key fields anywhere. See docs/merge.md for the rules and examples.
//
// The package is pure: no I/O, no clock.
package merge

import (
	"errors"
	"fmt"
	"slices"

	"github.com/docjobs/docjobs/internal/fence"
)

// Scope says what one merged answer covers.
type Scope int

const (
	ScopeFile Scope = iota // one answer per file (MERGE_SCOPE_FILE, the default)
	ScopeJob               // one answer for all files, File "" (MERGE_SCOPE_JOB)
)

// Policy decides a JSON scalar that chunks answer differently.
type Policy int

const (
	FirstNonNull Policy = iota // the first non-null value in chunk order (the default)
	Majority                   // the most frequent non-null value; ties go to the earliest
)

// Formats of a merged answer, as the spec names them.
const (
	FormatJSON     = "json"
	FormatXML      = "xml"
	FormatHTML     = "html"
	FormatMarkdown = "markdown"
	FormatText     = "text"
)

// Caps the spec puts on a merged answer.
const (
	MaxConflicts      = 100 // conflict entries per answer
	MaxConflictValues = 10  // competing values per conflict
	MaxValueBytes     = 512 // bytes per value, cut on a character boundary
	MaxDedupeBy       = 32  // names in merge.dedupeBy
)

// Default limits; see Limits. DefaultMaxTotalBytes bounds a merge's peak:
// a JSON merge holds one answer parsed at a time and keeps text of the
// others, about 4–5 times the input at its peak with a job's stored
// answers included (docs/benchmarks.md, "mergemem"); an answer that gives
// every value its own key costs a merged node per key, which
// DefaultMaxMergedNodes bounds.
const (
	DefaultMaxAnswerBytes = 8 << 20
	DefaultMaxTotalBytes  = 64 << 20
	DefaultMaxDepth       = 128
	DefaultMaxNodes       = 1 << 20
	// DefaultMaxMergedNodes bounds the merged JSON tree: a field costs
	// about 150 bytes there (its node, its value's copy, the map entry;
	// 350 before they were made small), and an answer that gives every
	// value its own key took 45 times its input (2.9 GB at the input
	// limit) before the bound, 12 times after (hunt-merge).
	DefaultMaxMergedNodes = 1 << 20
)

// Limits bound the work hostile answers can cause. A chunk over a limit is
// not merged: it is listed in IncompleteChunks with the limit it broke.
// Zero fields take the defaults.
type Limits struct {
	MaxAnswerBytes int // bytes of one chunk answer
	// Bytes of all answers of one Merge call, counted in chunk order: a
	// chunk that would pass it is left out (and counts for nothing), so a
	// later, smaller chunk that still fits is merged.
	MaxTotalBytes int
	MaxDepth      int // nesting of JSON values and of HTML/XML elements
	MaxNodes      int // JSON values or HTML/XML tokens in one answer
	// Fields (object members, at any depth) of one merged JSON answer. A
	// field that would pass it is left out of the merged answer and its
	// chunk listed as not merged whole; fields the answer already holds
	// still take their values.
	MaxMergedNodes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxAnswerBytes <= 0 {
		l.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	if l.MaxMergedNodes <= 0 {
		l.MaxMergedNodes = DefaultMaxMergedNodes
	}
	return l
}

// Chunk is one model answer row. Merge wants them ordered by file (in
// sourceUrls order), then by chunk index.
type Chunk struct {
	File  string
	Index int
	// FileIndex is the file's position in the job (its sourceUrls index).
	// A file is File and FileIndex together: a job may list one upload
	// twice, and each listing is its own file with its own answer.
	FileIndex int
	Content   string
	// Failed marks a row that did not finish (FAILED, the SKIPPED row of a
	// file whose recognition failed, or an answer known to be truncated):
	// it is never merged, only listed (and, for the text formats, appended
	// as it is), so a file missing from the merged answer is named.
	Failed bool
	// NoOverlap says the chunker dropped the overlap before this chunk
	// (chunk.Chunk.Overlap == 0): nothing at its head repeats the previous
	// chunk, so nothing there is removed as a technical duplicate.
	NoOverlap bool
	// Overlap is the source text this chunk repeats from the previous one
	// (the chunk's Body()[:Overlap]), when the caller has it. With it, a
	// run of JSON records, markdown or text units, or HTML or XML elements
	// is removed as overlap only if each is grounded in that text (see
	// docs/merge.md); without it, the longest tail/head run is removed.
	Overlap string
	// Unread says the caller did not read the answer because it would have
	// passed Limits.MaxTotalBytes, reading answers in chunk order as Merge
	// counts them: the chunk is listed as past the input limit, as Merge
	// would have left it out, and counts for nothing. A caller bounds what
	// it loads with the same limit this way.
	Unread bool
	// NoText marks the one row of a file that has no text to answer (its
	// model row skipped as no_ocr_content or empty_ocr_content). Nothing
	// is merged from it and nothing is lost, so it is not listed; at
	// ScopeFile it still gives its file an answer, with the format's empty
	// content ("null" for JSON, "" otherwise), so that there is one answer
	// per file.
	NoText bool
}

// Options are the job's merge settings.
type Options struct {
	Scope     Scope
	Format    string // "" picks the format (MERGE_FORMAT_AUTO); else one of the Format constants
	Policy    Policy
	DedupeBy  []string // JSON field names identifying a record; content dedupe needs HasSchema too
	HasSchema bool     // the job set responseSchema: JSON is forced, content dedupe applies
	Limits    Limits
}

// ChunkRef names one chunk: the spec's {file, chunkIndex}.
type ChunkRef struct {
	File  string
	Index int
}

// Incomplete is a chunk left out of the merge, and why.
type Incomplete struct {
	ChunkRef
	Reason string
}

// Conflict is a JSON field whose chunks gave different non-null values.
// Values[0] is the value kept; Sources[i] produced Values[i] (its first
// occurrence). Values are compact JSON cut to MaxValueBytes.
type Conflict struct {
	Field         string // dot-path; array elements by index; "" is the root
	Values        []string
	Sources       []ChunkRef
	ValuesDropped int // distinct values beyond MaxConflictValues
}

// Answer is one merged answer (the spec's "Merged answer" without
// schemaValid, which the caller judges on Content).
type Answer struct {
	File                   string // "" at ScopeJob
	Format                 string
	Content                string
	Conflicts              []Conflict
	ConflictsDropped       int // conflicts beyond MaxConflicts
	DedupeRemovedTechnical int
	DedupeRemovedContent   int
	MergeIncomplete        bool
	IncompleteChunks       []Incomplete
}

// Errors callers branch on. Merge fails only on a caller's mistake;
// whatever the answers hold, it degrades to incomplete chunks instead.
var (
	ErrOption = errors.New("merge: invalid option")
	ErrOrder  = errors.New("merge: chunks out of order")
)

// ParseScope maps a MERGE_SCOPE_* name; "" and UNSPECIFIED are ScopeFile.
func ParseScope(name string) (Scope, error) {
	switch name {
	case "", "MERGE_SCOPE_UNSPECIFIED", "MERGE_SCOPE_FILE":
		return ScopeFile, nil
	case "MERGE_SCOPE_JOB":
		return ScopeJob, nil
	}
	return 0, fmt.Errorf("%w: scope %q", ErrOption, name)
}

// ParsePolicy maps a MERGE_CONFLICT_POLICY_* name; "" and UNSPECIFIED are
// FirstNonNull.
func ParsePolicy(name string) (Policy, error) {
	switch name {
	case "", "MERGE_CONFLICT_POLICY_UNSPECIFIED", "MERGE_CONFLICT_POLICY_FIRST_NON_NULL":
		return FirstNonNull, nil
	case "MERGE_CONFLICT_POLICY_MAJORITY":
		return Majority, nil
	}
	return 0, fmt.Errorf("%w: conflict policy %q", ErrOption, name)
}

// ParseFormat maps a MERGE_FORMAT_* name to Options.Format; "",
// UNSPECIFIED and AUTO are "" (pick by content).
func ParseFormat(name string) (string, error) {
	switch name {
	case "", "MERGE_FORMAT_UNSPECIFIED", "MERGE_FORMAT_AUTO":
		return "", nil
	case "MERGE_FORMAT_JSON":
		return FormatJSON, nil
	case "MERGE_FORMAT_XML":
		return FormatXML, nil
	case "MERGE_FORMAT_HTML":
		return FormatHTML, nil
	case "MERGE_FORMAT_MARKDOWN":
		return FormatMarkdown, nil
	case "MERGE_FORMAT_TEXT":
		return FormatText, nil
	}
	return "", fmt.Errorf("%w: format %q", ErrOption, name)
}

func (o Options) validate() error {
	switch o.Scope {
	case ScopeFile, ScopeJob:
	default:
		return fmt.Errorf("%w: scope %d", ErrOption, o.Scope)
	}
	switch o.Policy {
	case FirstNonNull, Majority:
	default:
		return fmt.Errorf("%w: policy %d", ErrOption, o.Policy)
	}
	switch o.Format {
	case "", FormatJSON, FormatXML, FormatHTML, FormatMarkdown, FormatText:
	default:
		return fmt.Errorf("%w: format %q", ErrOption, o.Format)
	}
	if len(o.DedupeBy) > MaxDedupeBy {
		return fmt.Errorf("%w: %d dedupeBy names, at most %d", ErrOption, len(o.DedupeBy), MaxDedupeBy)
	}
	return nil
}

// part is a chunk on its way through a merge.
type part struct {
	Chunk
	ref  ChunkRef
	src  int    // index of the part in its group (JSON sources)
	skip string // why the chunk is not merged whatever the format; "" when it may be
	drop bool   // over the total limit: not even appended

	jsonDone bool
	jsonRoot probe
}

// probe is what detection and the root's vote need of an answer's parse.
type probe struct {
	err      error
	kind     kind
	shape    shape
	absent   bool
	kindName string
}

// json parses the answer once for detection and the root's vote, and
// keeps only what they need of it: a merge that kept every answer's tree
// until it rendered held about 7 bytes per byte of input (mergemem).
// The merge parses each answer again as it merges it.
func (p *part) json(lim Limits) probe {
	if !p.jsonDone {
		v, err := parseJSON(stripFence(p.Content), lim)
		p.jsonRoot = probe{err: err}
		if err == nil {
			p.jsonRoot = probe{kind: v.kind, shape: shapeOf(v), absent: absent(v), kindName: kindName(v)}
		}
		p.jsonDone = true
	}
	return p.jsonRoot
}

// follows reports whether p is the chunk right after prev in the same file.
func (p *part) follows(prev *part) bool {
	return prev != nil && prev.sameFile(p.Chunk) && prev.Index+1 == p.Index
}

// sameFile reports whether c is a chunk of the same file as the receiver.
func (c Chunk) sameFile(o Chunk) bool {
	return c.File == o.File && c.FileIndex == o.FileIndex
}

// Merge merges chunk answers into one Answer per file (ScopeFile, files in
// the order the chunks give them, a file of NoText chunks included) or one
// for all (ScopeJob). It fails only on invalid options or misordered
// chunks; no chunks give no answers.
func Merge(chunks []Chunk, opts Options) ([]Answer, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := checkOrder(chunks); err != nil {
		return nil, err
	}
	lim := opts.Limits.withDefaults()
	parts := make([]*part, len(chunks))
	total := 0
	for i, c := range chunks {
		p := &part{Chunk: c, ref: ChunkRef{File: c.File, Index: c.Index}}
		switch {
		case len(c.Content) > lim.MaxAnswerBytes:
			p.skip = fmt.Sprintf("answer of %d bytes is over the %d-byte limit", len(c.Content), lim.MaxAnswerBytes)
		case c.Failed:
			p.skip = "the chunk has no answer: its model call or its file's recognition failed"
		}
		if c.Unread || total+len(c.Content) > lim.MaxTotalBytes {
			p.skip = fmt.Sprintf("the merge's input limit of %d bytes was reached", lim.MaxTotalBytes)
			p.drop = true
		} else {
			total += len(c.Content)
		}
		parts[i] = p
	}

	var groups [][]*part
	if opts.Scope == ScopeJob {
		if len(parts) > 0 {
			groups = append(groups, parts)
		}
	} else {
		for i, p := range parts {
			if i == 0 || !p.sameFile(parts[i-1].Chunk) {
				groups = append(groups, nil)
			}
			groups[len(groups)-1] = append(groups[len(groups)-1], p)
		}
	}

	answers := make([]Answer, 0, len(groups))
	for _, g := range groups {
		file := ""
		if opts.Scope == ScopeFile {
			file = g[0].File
		}
		g = slices.DeleteFunc(slices.Clone(g), func(p *part) bool { return p.NoText })
		format := opts.Format
		if format == "" {
			format = detect(g, opts.HasSchema, lim)
		}
		var a Answer
		switch {
		case len(g) == 0 && format == FormatJSON:
			a.Content = "null" // a JSON answer is always JSON
		case len(g) == 0:
		case format == FormatJSON:
			a = mergeJSON(g, opts, lim)
		case format == FormatXML:
			a = mergeXML(g, lim)
		case format == FormatHTML:
			a = mergeHTML(g, lim)
		default:
			a = joinText(g)
		}
		a.File, a.Format = file, format
		a.MergeIncomplete = len(a.IncompleteChunks) > 0
		answers = append(answers, a)
	}
	return answers, nil
}

func checkOrder(chunks []Chunk) error {
	type fileKey struct {
		url   string
		index int
	}
	seen := make(map[fileKey]bool)
	for i, c := range chunks {
		if c.Index < 0 {
			return fmt.Errorf("%w: %q has chunk index %d", ErrOrder, c.File, c.Index)
		}
		if i > 0 && chunks[i-1].sameFile(c) {
			if c.Index <= chunks[i-1].Index {
				return fmt.Errorf("%w: chunk %d of %q follows chunk %d", ErrOrder, c.Index, c.File, chunks[i-1].Index)
			}
			continue
		}
		k := fileKey{c.File, c.FileIndex}
		if seen[k] {
			return fmt.Errorf("%w: the chunks of %q are not together", ErrOrder, c.File)
		}
		seen[k] = true
	}
	return nil
}

func (a *Answer) incomplete(p *part, reason string) {
	a.IncompleteChunks = append(a.IncompleteChunks, Incomplete{ChunkRef: p.ref, Reason: reason})
}

// addConflict records a conflict if the cap leaves room; values are
// rendered only for the entries and values that are kept.
func (a *Answer) addConflict(field string, n int, value func(i int) string, source func(i int) ChunkRef) {
	if n < 2 {
		return
	}
	if len(a.Conflicts) >= MaxConflicts {
		a.ConflictsDropped++
		return
	}
	c := Conflict{Field: field}
	kept := min(n, MaxConflictValues)
	c.ValuesDropped = n - kept
	for i := range kept {
		c.Values = append(c.Values, value(i))
		c.Sources = append(c.Sources, source(i))
	}
	a.Conflicts = append(a.Conflicts, c)
}

// stripFence is fence.Strip: the row's verdict and the consensus vote read
// an answer through the same fence rule as merge does.
func stripFence(s string) string { return fence.Strip(s) }
