package merge

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/docjobs/docjobs/internal/fieldpath"
	"github.com/docjobs/docjobs/internal/jsonnum"
)

type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// value is a parsed JSON value. Objects keep their key order (the merged
// answer shows keys as the chunks first gave them); a key repeated in one
// object keeps its last value, as encoding/json does.
//
// A parsed answer lives only while its chunk is merged (and the next one,
// which may continue its records): what the merged tree keeps of it is
// text, the spans of its array elements in the answer, and copies of its
// scalars, so that a merge holds one or two parsed answers at a time
// rather than all of them (mergemem).
type value struct {
	kind kind
	b    bool
	// lazy: a container kept as its text, in s, parsed again when rendered
	// (a value that lost to its node's shape, kept for the conflict).
	lazy     bool
	s        string   // a string, or a number's literal as written
	arr      []*value // array elements, or object values index-aligned with keys
	keys     []string
	off, end int // the value's span in the text it was parsed from
}

// candOf is what a node keeps of v from source src: a scalar copied, a
// container as its text (raw), so that nothing points into the parsed
// answer.
func candOf(v *value, raw string, src int) cand {
	switch v.kind {
	case kArray, kObject:
		return cand{kind: v.kind, lazy: true, s: raw[v.off:v.end], src: src}
	}
	return cand{kind: v.kind, b: v.b, s: v.s, src: src}
}

// parseValid parses text a parse within the limits already accepted: one
// value, or (seq) values separated by commas, such as the span of an
// array's elements.
func parseValid(s string, each func(v *value)) {
	p := &jsonScanner{s: s, lim: Limits{MaxDepth: math.MaxInt, MaxNodes: math.MaxInt}}
	for {
		v, _ := p.value(0)
		each(v)
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != ',' {
			return
		}
		p.i++
	}
}

func (v *value) field(name string) *value {
	for i, k := range v.keys {
		if k == name {
			return v.arr[i]
		}
	}
	return nil
}

// parseJSON parses one answer, refusing more than lim.MaxDepth levels and
// lim.MaxNodes values before building them. encoding/json validates (and
// words the error); the tree is then built from the valid text directly,
// strings without escapes sharing the answer's memory, which is several
// times faster than json.Decoder.Token.
func parseJSON(s string, lim Limits) (*value, error) {
	if !json.Valid([]byte(s)) {
		var raw json.RawMessage
		if err := json.Unmarshal([]byte(s), &raw); err != nil {
			return nil, err
		}
		return nil, errors.New("invalid JSON")
	}
	p := &jsonScanner{s: s, lim: lim}
	return p.value(0)
}

// jsonScanner reads text json.Valid accepted.
type jsonScanner struct {
	s     string
	i     int
	lim   Limits
	nodes int
	slab  []value // values are allocated in blocks: one allocation per many
	// The children of the open containers, copied into exact slices when
	// their container closes: growing each container's own slices left
	// their discarded halves as garbage and up to half of each unused.
	vals []*value
	keys []string
}

func (p *jsonScanner) alloc(v value) *value {
	if len(p.slab) == 0 {
		p.slab = make([]value, 256)
	}
	n := &p.slab[0]
	*n = v
	p.slab = p.slab[1:]
	return n
}

func (p *jsonScanner) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonScanner) value(depth int) (*value, error) {
	if p.nodes++; p.nodes > p.lim.MaxNodes {
		return nil, fmt.Errorf("more than %d JSON values", p.lim.MaxNodes)
	}
	p.skipSpace()
	start := p.i
	v, err := p.scan(depth)
	if v != nil {
		v.off, v.end = start, p.i
	}
	return v, err
}

func (p *jsonScanner) scan(depth int) (*value, error) {
	switch c := p.s[p.i]; c {
	case 'n':
		p.i += 4
		return p.alloc(value{kind: kNull}), nil
	case 't':
		p.i += 4
		return p.alloc(value{kind: kBool, b: true}), nil
	case 'f':
		p.i += 5
		return p.alloc(value{kind: kBool}), nil
	case '"':
		s, err := p.str()
		return p.alloc(value{kind: kString, s: s}), err
	case '[', '{':
		if depth >= p.lim.MaxDepth {
			return nil, fmt.Errorf("JSON nested deeper than %d levels", p.lim.MaxDepth)
		}
		p.i++
		if c == '[' {
			return p.array(depth)
		}
		return p.object(depth)
	}
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("+-0123456789.eE", p.s[p.i]) >= 0 {
		p.i++
	}
	return p.alloc(value{kind: kNumber, s: p.s[start:p.i]}), nil
}

func (p *jsonScanner) array(depth int) (*value, error) {
	v := p.alloc(value{kind: kArray})
	p.skipSpace()
	if p.s[p.i] == ']' {
		p.i++
		return v, nil
	}
	base := len(p.vals)
	for {
		e, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.vals = append(p.vals, e)
		p.skipSpace()
		c := p.s[p.i]
		p.i++
		if c == ']' {
			v.arr = slices.Clone(p.vals[base:])
			p.vals = p.vals[:base]
			return v, nil
		}
	}
}

func (p *jsonScanner) object(depth int) (*value, error) {
	v := p.alloc(value{kind: kObject})
	var index map[string]int // for large objects, where a linear search per key would be quadratic
	p.skipSpace()
	if p.s[p.i] == '}' {
		p.i++
		return v, nil
	}
	base, kbase := len(p.vals), len(p.keys)
	for {
		p.skipSpace()
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		p.i++ // ':'
		e, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		at := -1
		if index != nil {
			if i, ok := index[k]; ok {
				at = i
			}
		} else {
			at = slices.Index(p.keys[kbase:], k)
		}
		if at >= 0 {
			p.vals[base+at] = e // the last of a repeated key wins, as in encoding/json
		} else {
			p.keys, p.vals = append(p.keys, k), append(p.vals, e)
			if n := len(p.keys) - kbase; index != nil {
				index[k] = n - 1
			} else if n > 16 {
				index = make(map[string]int, 32)
				for i, k := range p.keys[kbase:] {
					index[k] = i
				}
			}
		}
		p.skipSpace()
		c := p.s[p.i]
		p.i++
		if c == '}' {
			v.keys, v.arr = slices.Clone(p.keys[kbase:]), slices.Clone(p.vals[base:])
			p.keys, p.vals = p.keys[:kbase], p.vals[:base]
			return v, nil
		}
	}
}

// str reads a string at p.i. Plain strings are sliced from the answer;
// escapes and invalid UTF-8 go through encoding/json, so they decode
// exactly as it decodes them (invalid bytes become U+FFFD).
func (p *jsonScanner) str() (string, error) {
	start := p.i
	p.i++
	plain := true
	for {
		c := p.s[p.i]
		if c == '"' {
			break
		}
		if c == '\\' {
			plain = false
			p.i++
		} else if c >= utf8.RuneSelf {
			plain = false
		}
		p.i++
	}
	p.i++
	raw := p.s[start:p.i]
	if plain || (!strings.Contains(raw, "\\") && utf8.ValidString(raw)) {
		return raw[1 : len(raw)-1], nil
	}
	var out string
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return "", fmt.Errorf("decode string: %w", err)
	}
	return out, nil
}

// appendCanon appends a prefix-free canonical encoding of v: equal JSON
// values (key order and number spelling aside) encode the same, so their
// hashes are equal.
func appendCanon(b []byte, v *value) []byte {
	switch v.kind {
	case kNull:
		return append(b, 'n')
	case kBool:
		if v.b {
			return append(b, 't')
		}
		return append(b, 'f')
	case kNumber:
		b = append(b, 'd')
		b = jsonnum.AppendCanonical(b, v.s)
		return append(b, ';')
	case kString:
		b = append(b, 's')
		b = binary.AppendUvarint(b, uint64(len(v.s)))
		return append(b, v.s...)
	case kArray:
		b = append(b, '[')
		b = binary.AppendUvarint(b, uint64(len(v.arr)))
		for _, e := range v.arr {
			b = appendCanon(b, e)
		}
		return b
	}
	b = append(b, '{')
	b = binary.AppendUvarint(b, uint64(len(v.keys)))
	order := make([]int, len(v.keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return strings.Compare(v.keys[i], v.keys[j]) })
	for _, i := range order {
		b = binary.AppendUvarint(b, uint64(len(v.keys[i])))
		b = append(b, v.keys[i]...)
		b = appendCanon(b, v.arr[i])
	}
	return b
}

type digest = [sha256.Size]byte

// absent reports whether v says nothing: null, or the empty string that
// strict-schema models write where a chunk does not show a field (audit
// F6). Neither wins, conflicts or decides a node's shape; a node that only
// ever held them keeps the first one.
func absent(v *value) bool {
	return v.kind == kNull || v.kind == kString && v.s == ""
}

// shapeOf is the shape a value gives a node.
func shapeOf(v *value) shape {
	switch v.kind {
	case kObject:
		return shapeObject
	case kArray:
		return shapeArray
	}
	return shapeLeaf
}

// kindWord names a value's kind for a reason; kindName adds the article.
func kindWord(v *value) string {
	return [...]string{kNull: "null", kBool: "boolean", kNumber: "number", kString: "string",
		kArray: "array", kObject: "object"}[v.kind]
}

func kindName(v *value) string {
	switch v.kind {
	case kNull:
		return "null"
	case kArray, kObject:
		return "an " + kindWord(v)
	}
	return "a " + kindWord(v)
}

// shape is what a merged node has become: the first value at a path that
// is not absent decides it.
type shape uint8

const (
	shapeLeaf shape = iota
	shapeObject
	shapeArray
)

// mnode is a node of the merged tree. Objects merge by key, arrays
// concatenate, and a leaf collects every candidate that is not absent so
// the policy can decide once all chunks are in.
//
// A node is kept small: an answer giving every value its own key makes a
// leaf per key, and a merged record a leaf per field. What only objects and
// arrays use is in a branch, and a candidate is a copy of its value (its
// hash computed when a conflict or the majority needs it), so a leaf costs
// its 80 bytes and a 32-byte candidate (hunt-merge; it was a 152-byte node,
// a 48-byte candidate and a 96-byte value).
type mnode struct {
	shape   shape
	blank   bool // leaf: an absent value that was not null ("") came, shown when nothing else came
	solved  bool
	win     int    // leaf: index of the winner in cands, resolved once; 0 before
	src     int    // the source that gave the node its shape
	cands   []cand // leaf: values that are not absent, in chunk order
	others  []cand // values whose shape lost to the node's (an object where a string was first, …)
	*branch        // an object's or an array's; nil for a leaf
}

// branch is what an object or array node holds.
type branch struct {
	keys   []string
	fields map[string]*mnode
	elems  []*elem
	held   map[digest]int // an array of a merged record: how many elements of each value it holds
}

// cand is a value a node was given, detached from its parsed answer (see
// candOf): a scalar's kind and text, or a container (lazy) as its text.
type cand struct {
	kind kind
	b    bool
	lazy bool
	src  int
	s    string
}

// value is the candidate as a value to render or name.
func (c cand) value() *value {
	return &value{kind: c.kind, b: c.b, lazy: c.lazy, s: c.s}
}

// candHash is the hash of the value a candidate was made from (m.hash of
// it): a container is parsed again from its text.
func (m *jsonMerger) candHash(c cand) digest {
	if !c.lazy {
		return m.hash(&value{kind: c.kind, b: c.b, s: c.s})
	}
	var h digest
	parseValid(c.s, func(v *value) { h = m.hash(v) })
	return h
}

// elem is a run of n array elements as a chunk gave them, kept as their
// text (raw: the elements with the commas between), or, once content
// dedupe found duplicates of a record (n is 1), the record merged from
// all of them. A run is one small entry however many elements it holds:
// an array of a million tiny values costs its text, not a million
// entries (mergemem).
type elem struct {
	raw string
	n   int
	src int
	rec *mnode
}

type jsonMerger struct {
	opts     Options
	parts    []*part
	ans      *Answer
	root     *mnode
	buf      []byte
	dedupe   bool
	seen     map[digest]*elem
	prev     map[string][]digest // arrays of the previous chunk by path key
	cur      map[string][]digest
	prevRec  map[digest]*value // records of the previous chunk by dedupe key: the last copy of each
	curRec   map[digest]*value
	text     string      // the text the values being merged were parsed from
	follows  bool        // the current chunk directly follows the previous one in its file
	overlap  bool        // the current chunk repeats the previous one's last block
	ground   *grounder   // the repeated text, when the caller gave it
	left     []leftOut   // chunks not merged, or not merged whole
	leftAt   map[int]int // index in left by source, for chunks that lost values
	nodes    int         // fields of the merged tree, bounded by maxNodes
	maxNodes int
	capped   map[int]bool // sources that lost a field to maxNodes
}

// leftOut is a chunk that is not (wholly) in the merged content.
type leftOut struct {
	src    int
	reason string
	more   int // further values of the chunk that lost to another shape
}

// join says how a duplicate record's arrays join the kept record's.
type join uint8

const (
	// joinAppend concatenates: the first copy, or a copy in the chunk that
	// directly follows without an overlap.
	joinAppend join = iota
	// joinOverlap concatenates less the run at the head that repeats the
	// previous chunk's copy of the record (technical dedupe, as at the root).
	joinOverlap
	// joinUnion adds the elements the record does not already hold as
	// many times: a copy elsewhere (another file, a later chunk, the same
	// answer) is another view of the record, not its continuation.
	joinUnion
)

// recCtx carries a duplicate record's merge down its fields.
type recCtx struct {
	on   bool
	mode join
	prev *value // joinOverlap: the previous chunk's copy, at the same place
}

func (r recCtx) field(k string) recCtx {
	if r.prev != nil {
		if r.prev.kind == kObject {
			r.prev = r.prev.field(k)
		} else {
			r.prev = nil
		}
	}
	return r
}

func (m *jsonMerger) hash(v *value) digest {
	m.buf = appendCanon(m.buf[:0], v)
	return sha256.Sum256(m.buf)
}

func mergeJSON(g []*part, opts Options, lim Limits) Answer {
	var a Answer
	m := &jsonMerger{
		opts: opts, parts: g, ans: &a, root: &mnode{},
		dedupe:   opts.HasSchema && len(opts.DedupeBy) > 0,
		seen:     make(map[digest]*elem),
		maxNodes: lim.MaxMergedNodes,
	}
	// Sources are indexed within the group.
	for i, p := range g {
		p.src = i
	}
	root := rootShape(g, lim)
	var prev *part
	for _, p := range g {
		reason := p.skip
		var v *value
		if reason == "" {
			if pr := p.json(lim); pr.err != nil {
				reason = "not valid JSON: " + pr.err.Error()
			} else if !pr.absent && pr.shape != root {
				// A root of another shape has no place to merge into: the
				// chunk is left out whole, like invalid JSON (audit F4).
				reason = fmt.Sprintf("its root is %s where most chunks' roots are %s",
					pr.kindName, shapeArticle(root))
			} else {
				// Parsed again rather than kept from detection: only this
				// chunk's tree (and the previous one's records) is live.
				m.text = stripFence(p.Content)
				v, _ = parseJSON(m.text, lim)
			}
		}
		if reason != "" {
			m.left = append(m.left, leftOut{src: p.src, reason: reason})
			prev, m.prev, m.prevRec = nil, nil, nil
			continue
		}
		m.follows = p.follows(prev)
		m.overlap = m.follows && !p.NoOverlap
		m.ground = nil
		if m.overlap && p.Overlap != "" {
			m.ground = newGrounder(p.Overlap)
		}
		m.cur = make(map[string][]digest)
		m.curRec = nil
		if m.dedupe {
			m.curRec = make(map[digest]*value)
		}
		m.merge(m.root, v, p.src, "", recCtx{})
		prev, m.prev, m.prevRec = p, m.cur, m.curRec
	}
	// The merged content is about as long as its input: grown by appends,
	// its discarded copies summed to several times that (audit-merge2 F2).
	o := &out{max: -1}
	size := 0
	for _, p := range g {
		if p.skip == "" {
			size += len(p.Content)
		}
	}
	o.b.Grow(size)
	m.render(o, m.root)
	a.Content = o.b.String()
	m.walk(m.root, "")
	// Chunks left out while merging and chunks that lost values in the
	// walk are listed together, in chunk order, a chunk once: one that
	// lost fields to the bound and values to a shape gives both reasons.
	slices.SortStableFunc(m.left, func(x, y leftOut) int { return x.src - y.src })
	for i, l := range m.left {
		reason := l.reason
		switch {
		case l.more == 1:
			reason += ", and 1 more such value"
		case l.more > 1:
			reason += fmt.Sprintf(", and %d more such values", l.more)
		}
		if i > 0 && m.left[i-1].src == l.src {
			last := &a.IncompleteChunks[len(a.IncompleteChunks)-1]
			last.Reason += "; " + reason
			continue
		}
		a.incomplete(g[l.src], reason)
	}
	return a
}

// room counts a new field of the merged tree, or, past maxNodes, says
// there is none: the field is left out and its source listed once. A
// bound rather than a refusal of the chunk, as a chunk's new fields are
// only known while it merges; and the fields the tree holds already still
// merge, so a chunk that repeats them loses nothing.
func (m *jsonMerger) room(src int) bool {
	if m.nodes < m.maxNodes {
		m.nodes++
		return true
	}
	if !m.capped[src] {
		if m.capped == nil {
			m.capped = make(map[int]bool)
		}
		m.capped[src] = true
		m.left = append(m.left, leftOut{src: src,
			reason: fmt.Sprintf("left out fields past the merged answer's limit of %d fields", m.maxNodes)})
	}
	return false
}

// rootShape picks the shape the merged root takes: the one most chunks'
// roots have (ties to the earliest), so one odd answer cannot push out
// all the others. Answers that are absent, or not JSON, do not vote.
func rootShape(g []*part, lim Limits) shape {
	var count [3]int
	order := make([]shape, 0, 3)
	for _, p := range g {
		if p.skip != "" {
			continue
		}
		pr := p.json(lim)
		if pr.err != nil || pr.absent {
			continue
		}
		s := pr.shape
		if count[s] == 0 {
			order = append(order, s)
		}
		count[s]++
	}
	if len(order) == 0 {
		return shapeLeaf
	}
	best := order[0]
	for _, s := range order[1:] {
		if count[s] > count[best] {
			best = s
		}
	}
	return best
}

// shapeArticle names a shape for a reason.
func shapeArticle(s shape) string {
	switch s {
	case shapeObject:
		return "an object"
	case shapeArray:
		return "an array"
	}
	return "a scalar"
}

// merge adds v, from source src, to n at path key. Inside a record found
// to be a duplicate (rc.on), arrays join as rc says and there is no
// content dedupe.
func (m *jsonMerger) merge(n *mnode, v *value, src int, key string, rc recCtx) {
	empty := n.shape == shapeLeaf && len(n.cands) == 0 && len(n.others) == 0
	switch {
	case absent(v):
		// null and "" never win and never conflict: they only leave the key
		// present, "" shown if nothing else comes.
		if v.kind == kString && n.shape == shapeLeaf {
			n.blank = true
		}
	case v.kind == kObject && (empty || n.shape == shapeObject):
		if empty {
			n.shape, n.src = shapeObject, src
			n.branch = &branch{fields: make(map[string]*mnode, len(v.keys))}
		}
		for i, k := range v.keys {
			c := n.fields[k]
			if c == nil {
				if !m.room(src) {
					continue
				}
				c = &mnode{}
				n.fields[k] = c
				n.keys = append(n.keys, k)
			}
			m.merge(c, v.arr[i], src, childKey(key, k), rc.field(k))
		}
	case v.kind == kArray && (empty || n.shape == shapeArray):
		if empty {
			n.shape, n.src, n.branch = shapeArray, src, &branch{}
		}
		if rc.on {
			m.joinArray(n, v, src, rc)
		} else {
			m.appendArray(n, v, src, key)
		}
	case n.shape == shapeLeaf && v.kind != kObject && v.kind != kArray:
		n.cands = append(n.cands, candOf(v, m.text, src))
	default:
		n.others = append(n.others, candOf(v, m.text, src))
	}
}

// childKey is the path key of key's field k: each key length-prefixed, so
// that no two paths share one whatever their keys hold ({"a":{"b":…}} and
// {"a\u0000b":…} did with a NUL separator, audit-merge2 F3). Technical and
// content dedupe find an array's previous records by it.
func childKey(key, k string) string {
	var b strings.Builder
	b.Grow(len(key) + binary.MaxVarintLen64 + len(k))
	b.WriteString(key)
	var n [binary.MaxVarintLen64]byte
	b.Write(n[:binary.PutUvarint(n[:], uint64(len(k)))])
	b.WriteString(k)
	return b.String()
}

// appendArray concatenates a chunk's array, less the run at its head that
// repeats the previous chunk's tail at the same path (technical dedupe),
// less records whose dedupeBy fields were seen before (content dedupe).
func (m *jsonMerger) appendArray(n *mnode, v *value, src int, key string) {
	hs := make([]digest, len(v.arr))
	for i, e := range v.arr {
		hs[i] = m.hash(e)
	}
	m.cur[key] = hs
	skip := 0
	if prev, ok := m.prev[key]; ok && m.overlap {
		skip = m.pickOverlap(prev, hs, v.arr)
	}
	m.ans.DedupeRemovedTechnical += skip
	run := -1 // the first element of the run of plain elements being collected
	flush := func(end int) {
		if run >= 0 {
			n.elems = append(n.elems, &elem{raw: m.text[v.arr[run].off:v.arr[end-1].end], n: end - run, src: src})
			run = -1
		}
	}
	for i, e := range v.arr {
		var k digest
		keyed := false
		if m.dedupe && e.kind == kObject {
			k, keyed = m.dedupeKey(key, e)
		}
		if i >= skip {
			if keyed {
				flush(i)
				m.appendElem(n, &elem{raw: m.text[e.off:e.end], n: 1, src: src}, e, k)
			} else if run < 0 {
				run = i
			}
		}
		// Every keyed record of the chunk, removed here or not, is what the
		// next chunk's copy of it continues.
		if keyed {
			m.curRec[k] = e
		}
	}
	flush(len(v.arr))
}

// joinArray adds a duplicate record's array to the kept record's (F1: an
// invoice whose lines continue on the next chunk keeps all of them).
func (m *jsonMerger) joinArray(n *mnode, v *value, src int, rc recCtx) {
	if n.held == nil {
		n.held = make(map[digest]int, len(v.arr))
	}
	hs := make([]digest, len(v.arr))
	for i, e := range v.arr {
		hs[i] = m.hash(e)
	}
	skip := 0
	if rc.mode == joinOverlap && rc.prev != nil && rc.prev.kind == kArray {
		prev := make([]digest, len(rc.prev.arr))
		for i, e := range rc.prev.arr {
			prev[i] = m.hash(e)
		}
		skip = m.pickOverlap(prev, hs, v.arr)
		m.ans.DedupeRemovedTechnical += skip
	}
	var used map[digest]int
	if rc.mode == joinUnion {
		used = make(map[digest]int, len(v.arr))
	}
	for i := skip; i < len(v.arr); i++ {
		h := hs[i]
		if used != nil {
			if used[h]++; used[h] <= n.held[h] {
				continue // the record holds this copy already
			}
		}
		n.held[h]++
		n.elems = append(n.elems, &elem{raw: m.text[v.arr[i].off:v.arr[i].end], n: 1, src: src})
	}
}

// pickOverlap returns the length of the longest run where the previous
// chunk's array tail equals this chunk's head and, when the overlap text
// is known, the text accounts for every record of the run.
func (m *jsonMerger) pickOverlap(prev, hs []digest, elems []*value) int {
	ks := borders(prev, hs)
	if len(ks) == 0 {
		return 0
	}
	if m.ground == nil {
		return ks[0]
	}
	grounded := m.ground.groundedPrefix(hs[:ks[0]], elems)
	for _, k := range ks {
		if k <= grounded {
			return k
		}
	}
	return 0
}

// appendElem appends a record (e, parsed as v), or merges it into the
// record whose dedupe key k it shares.
func (m *jsonMerger) appendElem(n *mnode, e *elem, v *value, k digest) {
	first := m.seen[k]
	if first == nil {
		m.seen[k] = e
		n.elems = append(n.elems, e)
		return
	}
	if first.rec == nil {
		// The first copy, from an earlier chunk, is parsed again from its
		// text; what the record keeps of it points into that text.
		first.rec = &mnode{}
		text := m.text
		m.text = first.raw
		parseValid(first.raw, func(fv *value) {
			m.merge(first.rec, fv, first.src, "", recCtx{on: true, mode: joinAppend})
		})
		m.text = text
		first.raw = ""
	}
	// The first copy in a chunk that directly follows one holding the
	// record continues it; any other copy is another view of it.
	rc := recCtx{on: true, mode: joinUnion}
	if prev, ok := m.prevRec[k]; ok && m.follows && m.curRec[k] == nil {
		rc.mode = joinAppend
		if m.overlap {
			rc.mode, rc.prev = joinOverlap, prev
		}
	}
	m.merge(first.rec, v, e.src, "", rc)
	m.ans.DedupeRemovedContent++
}

// dedupeKey identifies a record by its array's path and its dedupeBy
// values; a record lacking one of them (or holding null or "") has no key.
func (m *jsonMerger) dedupeKey(key string, v *value) (digest, bool) {
	b := binary.AppendUvarint(m.buf[:0], uint64(len(key)))
	b = append(b, key...)
	for _, name := range m.opts.DedupeBy {
		f := v.field(name)
		if f == nil || absent(f) {
			m.buf = b
			return digest{}, false
		}
		b = appendCanon(b, f)
	}
	m.buf = b
	return sha256.Sum256(b), true
}

// winner resolves a leaf by the policy: the index of the kept candidate,
// or -1 when every value was null.
func (m *jsonMerger) winner(n *mnode) int {
	if len(n.cands) == 0 {
		return -1
	}
	if n.solved {
		return n.win
	}
	n.solved = true
	if m.opts.Policy != Majority || len(n.cands) < 2 {
		return 0
	}
	// The most frequent value; among equally frequent ones, the one that
	// appeared first.
	hs := make([]digest, len(n.cands))
	count := make(map[digest]int, len(n.cands))
	top := 0
	for i, c := range n.cands {
		hs[i] = m.candHash(c)
		count[hs[i]]++
		top = max(top, count[hs[i]])
	}
	for i := range n.cands {
		if count[hs[i]] == top {
			n.win = i
			break
		}
	}
	return n.win
}

// walk reports conflicts in document order.
func (m *jsonMerger) walk(n *mnode, path string) {
	switch n.shape {
	case shapeLeaf:
		w := m.winner(n)
		m.noteLost(n, path)
		if w < 0 || len(n.cands) == 1 && len(n.others) == 0 {
			return
		}
		vals := []cand{n.cands[w]}
		seen := make(map[digest]bool, len(n.cands)+len(n.others))
		seen[m.candHash(vals[0])] = true
		vals = m.appendDistinct(vals, n.cands, seen)
		vals = m.appendDistinct(vals, n.others, seen)
		m.ans.addConflict(path, len(vals),
			func(i int) string { return clipValue(func(o *out) { m.renderValue(o, vals[i].value()) }) },
			func(i int) ChunkRef { return m.parts[vals[i].src].ref })
	default:
		m.noteLost(n, path)
		if len(n.others) > 0 {
			vals := m.appendDistinct(nil, n.others, make(map[digest]bool, len(n.others)))
			m.ans.addConflict(path, len(vals)+1,
				func(i int) string {
					if i == 0 {
						return clipValue(func(o *out) { m.render(o, n) })
					}
					return clipValue(func(o *out) { m.renderValue(o, vals[i-1].value()) })
				},
				func(i int) ChunkRef {
					if i == 0 {
						return m.parts[n.src].ref
					}
					return m.parts[vals[i-1].src].ref
				})
		}
		if n.shape == shapeObject {
			for _, k := range n.keys {
				m.walk(n.fields[k], joinPath(path, fieldpath.Key(k)))
			}
			return
		}
		i := 0
		for _, e := range n.elems {
			if e.rec != nil {
				m.walk(e.rec, joinPath(path, strconv.Itoa(i)))
			}
			i += e.n
		}
	}
}

// noteLost lists the chunks whose values at n lost to the node's shape:
// they are only in the conflict, cut at MaxValueBytes (or not at all past
// the caps), so the answer is incomplete (audit F4).
func (m *jsonMerger) noteLost(n *mnode, path string) {
	for _, c := range n.others {
		if i, ok := m.leftAt[c.src]; ok {
			m.left[i].more++
			continue
		}
		if m.leftAt == nil {
			m.leftAt = make(map[int]int)
		}
		where := path
		if where == "" {
			where = "the root"
		}
		m.leftAt[c.src] = len(m.left)
		m.left = append(m.left, leftOut{src: c.src,
			reason: fmt.Sprintf("left out its %s at %s, where the merged answer holds %s",
				kindWord(c.value()), where, m.heldName(n))})
	}
}

// heldName names what a node holds, for a reason.
func (m *jsonMerger) heldName(n *mnode) string {
	if w := m.winner(n); n.shape == shapeLeaf && w >= 0 {
		return kindName(n.cands[w].value())
	}
	return shapeArticle(n.shape)
}

// appendDistinct appends the candidates whose value is not in seen yet
// (a set, not a scan: a duplicated record can bring thousands of values),
// adding them to it.
func (m *jsonMerger) appendDistinct(dst, cs []cand, seen map[digest]bool) []cand {
	for _, c := range cs {
		if h := m.candHash(c); !seen[h] {
			seen[h] = true
			dst = append(dst, c)
		}
	}
	return dst
}

func joinPath(path, seg string) string {
	if path == "" {
		return seg
	}
	return path + "." + seg
}

// out is a JSON writer that stops once max bytes are written (max < 0:
// no limit), so a conflict value costs at most that much work. A
// strings.Builder, so the merged content is not copied once written.
type out struct {
	b   strings.Builder
	max int
}

func (o *out) full() bool { return o.max >= 0 && o.b.Len() > o.max }

func (o *out) raw(s string) {
	if !o.full() {
		o.b.WriteString(s)
	}
}

// str writes s as a JSON string; invalid UTF-8 becomes U+FFFD. Runs that
// need no escape are written whole, up to the room max leaves.
func (o *out) str(s string) {
	o.b.WriteByte('"')
	for i := 0; i < len(s) && !o.full(); {
		end := len(s)
		if o.max >= 0 {
			end = min(end, i+o.max+1-o.b.Len())
		}
		j := i
		for j < end {
			if c := s[j]; c < utf8.RuneSelf {
				if c < 0x20 || c == '"' || c == '\\' {
					break
				}
				j++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[j:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			j += size
		}
		if j > i {
			o.b.WriteString(s[i:j])
			i = j
			continue
		}
		switch c := s[i]; {
		case c == '"' || c == '\\':
			o.b.WriteByte('\\')
			o.b.WriteByte(c)
		case c == '\n':
			o.b.WriteString(`\n`)
		case c == '\r':
			o.b.WriteString(`\r`)
		case c == '\t':
			o.b.WriteString(`\t`)
		case c < 0x20:
			o.b.WriteString(`\u00`)
			o.b.WriteByte("0123456789abcdef"[c>>4])
			o.b.WriteByte("0123456789abcdef"[c&0xf])
		default: // a byte that is not UTF-8
			o.b.WriteString(`\ufffd`)
		}
		i++
	}
	o.b.WriteByte('"')
}

func (m *jsonMerger) renderValue(o *out, v *value) {
	if o.full() {
		return
	}
	if v.lazy {
		parseValid(v.s, func(v *value) { m.renderValue(o, v) })
		return
	}
	switch v.kind {
	case kNull:
		o.raw("null")
	case kBool:
		o.raw(strconv.FormatBool(v.b))
	case kNumber:
		o.raw(v.s)
	case kString:
		o.str(v.s)
	case kArray:
		o.raw("[")
		for i, e := range v.arr {
			if i > 0 {
				o.raw(",")
			}
			m.renderValue(o, e)
		}
		o.raw("]")
	case kObject:
		o.raw("{")
		for i, k := range v.keys {
			if i > 0 {
				o.raw(",")
			}
			o.str(k)
			o.raw(":")
			m.renderValue(o, v.arr[i])
		}
		o.raw("}")
	}
}

func (m *jsonMerger) render(o *out, n *mnode) {
	if o.full() {
		return
	}
	switch n.shape {
	case shapeLeaf:
		if w := m.winner(n); w >= 0 {
			m.renderValue(o, n.cands[w].value())
		} else if n.blank {
			o.str("")
		} else {
			o.raw("null")
		}
	case shapeObject:
		o.raw("{")
		for i, k := range n.keys {
			if i > 0 {
				o.raw(",")
			}
			o.str(k)
			o.raw(":")
			m.render(o, n.fields[k])
		}
		o.raw("}")
	case shapeArray:
		o.raw("[")
		first := true
		for _, e := range n.elems {
			if e.rec != nil {
				if !first {
					o.raw(",")
				}
				first = false
				m.render(o, e.rec)
				continue
			}
			parseValid(e.raw, func(v *value) {
				if !first {
					o.raw(",")
				}
				first = false
				m.renderValue(o, v)
			})
		}
		o.raw("]")
	}
}

// clipValue renders a conflict value, cut to MaxValueBytes without
// splitting a UTF-8 character.
func clipValue(render func(*out)) string {
	o := &out{max: MaxValueBytes}
	render(o)
	return clip(o.b.String(), MaxValueBytes)
}

func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
