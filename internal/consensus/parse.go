package consensus

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/docjobs/docjobs/internal/jsonnum"
)

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindObject
	kindArray
)

// node is one JSON value of one run's answer.
type node struct {
	kind kind
	// nulls says a key inside is written null. Null and absence are one
	// value, so equal values may differ in it; the agreed answer writes
	// such a key (agreedAs).
	nulls bool
	// id is the value's identity, shared by equal values of every run: the
	// vote compares ids, never text. See interner.
	id int32
	// raw is a scalar's literal as the run wrote it (invalid UTF-8 replaced),
	// so the agreed answer repeats the run's own spelling ("1.0" stays "1.0").
	raw string
	// vals holds an object's values aligned with its keys, or an array's
	// elements.
	vals    []*node
	*object // objects only; scalars stay small, answers have many
}

// object is what only objects have.
type object struct {
	// keys (ids) and their literals (quotes and escapes as written) in the
	// run's order, duplicates removed (the last one wins).
	keys  []int32
	names []string
	// feats is the (key, value id) pairs whose value is not null, sorted by
	// key: the object's identity and what similarity compares.
	feats []feat
}

type feat struct{ key, val int32 }

// none reports whether n votes as null: absent (nil) or a JSON null.
func none(n *node) bool { return n == nil || n.kind == kindNull }

// idOf is n's identity; absence votes as null.
func idOf(n *node) int32 {
	if n == nil {
		return nullID
	}
	return n.id
}

// nullID is the identity of null, interned first.
const nullID int32 = 0

// interner gives equal values one id across all runs of a vote (hash
// consing): scalars by canonical text, containers by their children's ids.
// Equality is then exact and costs one comparison however deep the value.
type interner struct {
	ids      map[string]int32
	keyIDs   map[string]int32
	keyNames []string // decoded key by key id, for paths
	buf      []byte
}

func newInterner() *interner {
	in := &interner{ids: map[string]int32{}, keyIDs: map[string]int32{}}
	in.intern([]byte{'z'}) // nullID
	return in
}

func (in *interner) intern(canon []byte) int32 {
	if id, ok := in.ids[string(canon)]; ok {
		return id
	}
	id := int32(len(in.ids))
	in.ids[string(canon)] = id
	return id
}

func (in *interner) key(name string) int32 {
	if id, ok := in.keyIDs[name]; ok {
		return id
	}
	id := int32(len(in.keyNames))
	in.keyIDs[name] = id
	in.keyNames = append(in.keyNames, name)
	return id
}

// parser turns one answer into a tree, enforcing the limits as it goes so a
// hostile answer stops costing work at the limit. It reads only text that
// json.Valid accepted, so it checks no syntax; string escapes are decoded by
// encoding/json itself, so values mean exactly what the standard decoder
// reads.
type parser struct {
	src   string
	pos   int
	in    *interner
	lim   Limits
	nodes int
	slab  []node // nodes are allocated in blocks: answers have many
	// Children of the open containers, copied into exact slices when their
	// container closes.
	vals  []*node
	keys  []int32
	names []string
}

// parse builds the tree of answer, which must be valid JSON.
func parse(answer string, lim Limits, in *interner) (*node, error) {
	p := &parser{src: answer, in: in, lim: lim}
	return p.value(0)
}

func (p *parser) alloc() *node {
	if len(p.slab) == cap(p.slab) {
		p.slab = make([]node, 0, 256)
	}
	p.slab = p.slab[:len(p.slab)+1]
	return &p.slab[len(p.slab)-1]
}

func (p *parser) space() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (*node, error) {
	p.space()
	if p.nodes++; p.nodes > p.lim.MaxNodes {
		return nil, &limitError{fmt.Sprintf("answer has more than %d JSON values", p.lim.MaxNodes)}
	}
	in := p.in
	n := p.alloc()
	switch c := p.src[p.pos]; c {
	case '{', '[':
		if depth+1 > p.lim.MaxDepth {
			return nil, &limitError{fmt.Sprintf("answer is nested deeper than %d levels", p.lim.MaxDepth)}
		}
		p.pos++
		if c == '{' {
			return n, p.object(n, depth+1)
		}
		return n, p.array(n, depth+1)
	case '"':
		raw, text, err := p.str()
		if err != nil {
			return nil, err
		}
		in.buf = append(append(in.buf[:0], 's'), text...)
		*n = node{kind: kindString, id: in.intern(in.buf), raw: raw}
	case 't':
		p.pos += len("true")
		*n = node{kind: kindBool, id: in.intern([]byte{'t'}), raw: "true"}
	case 'f':
		p.pos += len("false")
		*n = node{kind: kindBool, id: in.intern([]byte{'f'}), raw: "false"}
	case 'n':
		p.pos += len("null")
		*n = node{kind: kindNull, id: nullID, raw: "null"}
	default:
		start := p.pos
		for p.pos < len(p.src) && strings.IndexByte("+-0123456789.eE", p.src[p.pos]) >= 0 {
			p.pos++
		}
		raw := p.src[start:p.pos]
		in.buf = jsonnum.AppendCanonical(append(in.buf[:0], 'n'), raw)
		*n = node{kind: kindNumber, id: in.intern(in.buf), raw: raw}
	}
	return n, nil
}

// str reads a string literal: as written (for output) and decoded (for
// identity).
func (p *parser) str() (raw, text string, err error) {
	start := p.pos
	escaped, ascii := false, true
	for p.pos++; p.src[p.pos] != '"'; p.pos++ {
		switch c := p.src[p.pos]; {
		case c == '\\':
			escaped = true
			p.pos++ // the escaped character is never the closing quote
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	p.pos++
	raw = p.src[start:p.pos]
	if !ascii {
		raw = validUTF8(raw)
	}
	if !escaped {
		return raw, raw[1 : len(raw)-1], nil
	}
	if err := json.Unmarshal([]byte(raw), &text); err != nil {
		return "", "", fmt.Errorf("decoding string at offset %d: %w", start, err)
	}
	return raw, text, nil
}

func (p *parser) object(n *node, depth int) error {
	*n = node{kind: kindObject, object: &object{}}
	base, kbase := len(p.vals), len(p.keys) // arrays push values only
	p.space()
	for p.src[p.pos] != '}' {
		p.space()
		raw, name, err := p.str()
		if err != nil {
			return err
		}
		p.space()
		p.pos++ // ':'
		val, err := p.value(depth)
		if err != nil {
			return err
		}
		p.keys = append(p.keys, p.in.key(name))
		p.names = append(p.names, raw)
		p.vals = append(p.vals, val)
		p.space()
		if p.src[p.pos] == ',' {
			p.pos++
		}
	}
	p.pos++ // '}'
	n.keys = slices.Clone(p.keys[kbase:])
	n.names = slices.Clone(p.names[kbase:])
	n.vals = slices.Clone(p.vals[base:])
	p.keys, p.names, p.vals = p.keys[:kbase], p.names[:kbase], p.vals[:base]

	n.dedupe()
	n.feats = make([]feat, 0, len(n.keys))
	for i, k := range n.keys {
		if n.vals[i].kind != kindNull { // null and absent are one value
			n.feats = append(n.feats, feat{k, n.vals[i].id})
		}
		n.nulls = n.nulls || n.vals[i].kind == kindNull || n.vals[i].nulls
	}
	slices.SortFunc(n.feats, func(a, b feat) int { return int(a.key) - int(b.key) })
	in := p.in
	in.buf = append(in.buf[:0], 'o')
	for _, f := range n.feats {
		in.buf = binary.LittleEndian.AppendUint32(in.buf, uint32(f.key))
		in.buf = binary.LittleEndian.AppendUint32(in.buf, uint32(f.val))
	}
	n.id = in.intern(in.buf)
	return nil
}

// dedupe drops all but the last of repeated keys, as encoding/json reads them.
func (n *node) dedupe() {
	if len(n.keys) < 2 {
		return
	}
	last := make(map[int32]int, len(n.keys))
	for i, k := range n.keys {
		last[k] = i
	}
	if len(last) == len(n.keys) {
		return
	}
	j := 0
	for i, k := range n.keys {
		if last[k] == i {
			n.keys[j], n.names[j], n.vals[j] = k, n.names[i], n.vals[i]
			j++
		}
	}
	n.keys, n.names, n.vals = n.keys[:j], n.names[:j], n.vals[:j]
}

func (p *parser) array(n *node, depth int) error {
	*n = node{kind: kindArray}
	base := len(p.vals)
	p.space()
	for p.src[p.pos] != ']' {
		val, err := p.value(depth)
		if err != nil {
			return err
		}
		p.vals = append(p.vals, val)
		p.space()
		if p.src[p.pos] == ',' {
			p.pos++
		}
	}
	p.pos++ // ']'
	n.vals = slices.Clone(p.vals[base:])
	p.vals = p.vals[:base]
	in := p.in
	in.buf = append(in.buf[:0], 'a')
	for _, e := range n.vals {
		in.buf = binary.LittleEndian.AppendUint32(in.buf, uint32(e.id))
		n.nulls = n.nulls || e.nulls
	}
	n.id = in.intern(in.buf)
	return nil
}

// validUTF8 replaces every invalid byte of a literal with U+FFFD, as
// encoding/json decodes it. Such bytes can only sit inside strings, so the
// literal stays JSON and means what the decoder read.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
