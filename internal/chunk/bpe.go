package chunk

import (
	"container/heap"
	"math"
	"strings"
	"sync"
	"unicode/utf8"
)

// Piece-count cache bounds. Words repeat, so most pieces that are not a
// single token are counted once; the cache is dropped whole when full, which
// bounds its memory at about maxCachedPieces*(maxCachedPieceLen+40) bytes
// (~6 MB) per encoding however hostile the text.
const (
	maxCachedPieceLen = 64
	maxCachedPieces   = 1 << 16
)

// bpeCounter counts tokens for the encodings whose pre-tokenizer is
// hand-written (see pretokenize.go), using the encoding's mergeable ranks.
type bpeCounter struct {
	ranks *rankTable
	next  func(s string, i int) int

	mu    sync.RWMutex
	cache map[string]int
}

func newBPECounter(ranks *rankTable, next func(string, int) int) *bpeCounter {
	return &bpeCounter{ranks: ranks, next: next, cache: make(map[string]int)}
}

// count returns len(EncodeOrdinary(s)) of tiktoken-go for this encoding.
func (b *bpeCounter) count(s string) int {
	if !utf8.ValidString(s) {
		s = replaceInvalid(s)
	}
	n := 0
	for i := 0; i < len(s); {
		e := b.next(s, i)
		if e < 0 { // no pre-token starts here; regexp2 moves on one rune
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			continue
		}
		n += b.pieceCount(s[i:e])
		i = e
	}
	return n
}

// replaceInvalid replaces every invalid byte of s with U+FFFD, one each, as
// the []rune conversion inside tiktoken-go does (strings.ToValidUTF8 would
// replace a whole run with one).
func replaceInvalid(s string) string {
	out := make([]byte, 0, len(s)+len(s)/2)
	for _, r := range s {
		out = utf8.AppendRune(out, r)
	}
	return string(out)
}

func (b *bpeCounter) pieceCount(p string) int {
	if len(p) == 1 {
		return 1
	}
	if _, ok := b.ranks.get(p); ok {
		return 1
	}
	if len(p) > maxCachedPieceLen {
		return bpeMergeCountLong(p, b.ranks)
	}
	b.mu.RLock()
	n, ok := b.cache[p]
	b.mu.RUnlock()
	if ok {
		return n
	}
	n = bpeMergeCount(p, b.ranks)
	b.mu.Lock()
	if len(b.cache) >= maxCachedPieces {
		clear(b.cache)
	}
	// Clone: p points into the caller's document, which the cache must
	// not keep alive.
	b.cache[strings.Clone(p)] = n
	b.mu.Unlock()
	return n
}

// bpeMergeCount returns how many tokens tiktoken-go's bytePairMerge leaves
// for piece. It is the same algorithm (repeatedly merge the adjacent pair of
// lowest rank, the leftmost one on ties) so that the count is identical, not
// merely equivalent in the usual case.
func bpeMergeCount(piece string, ranks *rankTable) int {
	type part struct{ start, rank int }
	var stack [maxCachedPieceLen + 1]part
	var parts []part
	if len(piece)+1 <= len(stack) {
		parts = stack[:len(piece)+1]
	} else {
		parts = make([]part, len(piece)+1)
	}
	for i := range parts {
		parts[i] = part{i, math.MaxInt}
	}
	rankOf := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := ranks.get(piece[parts[i].start:parts[i+skip+2].start]); ok {
				return r
			}
		}
		return math.MaxInt
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rankOf(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIdx := math.MaxInt, -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < minRank {
				minRank, minIdx = parts[i].rank, i
			}
		}
		if minIdx < 0 {
			break
		}
		i := minIdx
		parts[i].rank = rankOf(i, 1)
		if i > 0 {
			parts[i-1].rank = rankOf(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	return len(parts) - 1
}

// bpeMergeCountLong is bpeMergeCount in O(n log n) for long pieces (a
// megabyte of letters without a space is one piece, and the quadratic scan
// would take hours on it). A heap ordered by (rank, start) pops the pair the
// linear scan would pick: the lowest rank, the leftmost on ties, because
// parts never reorder. Entries made stale by a merge are skipped when
// popped; a stale entry never equals a live one, since ranks are unique per
// byte string and a merge changes the byte string of every pair it touches.
func bpeMergeCountLong(piece string, ranks *rankTable) int {
	n := len(piece)
	next := make([]int, n+1) // next[i]: start of the part after the part at i; n ends
	rank := make([]int, n)   // rank of the pair starting at part i
	dead := make([]bool, n)
	for i := range next {
		next[i] = i + 1
	}
	prev := make([]int, n+1)
	for i := range prev {
		prev[i] = i - 1
	}
	pairRank := func(i int) int {
		j := next[i]
		if j >= n {
			return math.MaxInt
		}
		if r, ok := ranks.get(piece[i:next[j]]); ok {
			return r
		}
		return math.MaxInt
	}
	h := make(mergeHeap, 0, n)
	for i := 0; i < n; i++ {
		rank[i] = pairRank(i)
		if rank[i] != math.MaxInt {
			h = append(h, mergeEntry{rank[i], i})
		}
	}
	heap.Init(&h)
	parts := n
	for h.Len() > 0 {
		e := heap.Pop(&h).(mergeEntry)
		i := e.start
		if dead[i] || rank[i] != e.rank {
			continue
		}
		j := next[i]
		dead[j] = true
		next[i] = next[j]
		prev[next[j]] = i
		parts--
		if rank[i] = pairRank(i); rank[i] != math.MaxInt {
			heap.Push(&h, mergeEntry{rank[i], i})
		}
		if i > 0 {
			p := prev[i]
			if rank[p] = pairRank(p); rank[p] != math.MaxInt {
				heap.Push(&h, mergeEntry{rank[p], p})
			}
		}
	}
	return parts
}

type mergeEntry struct{ rank, start int }

type mergeHeap []mergeEntry

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].start < h[j].start
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(mergeEntry)) }
func (h *mergeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
