package consensus

import (
	"fmt"
	"math/bits"
	"slices"
)

// cluster is a set of elements, at most one per run, that the vote treats
// as one element of the array. Its members are a linked list in
// clusters.members.
type cluster struct {
	mask       uint32 // bit r: the r-th run of the set has an element here
	head, tail int32  // its members
	parent     int32  // union-find; a root is its own parent
	nextCopy   int32  // the cluster of the next copy of the same value, or -1
	merged     bool   // holds more than one distinct value
	first      *node  // the value of its earliest member
}

type member struct {
	run  int32 // position in the set
	n    *node
	next int32 // the next member of the cluster, or -1
}

// clusters is the matching state of one array vote.
type clusters struct {
	cs      []cluster
	members []member
}

// pair is two candidate clusters and how similar their values are:
// shared/union, compared exactly by cross-multiplying.
type pair struct {
	a, b          int32
	shared, union int32
}

// array votes arrays element by element. Elements are matched across runs,
// not by position, so a run that drops, adds or reorders an element does not
// shift the others: equal elements first (the j-th copy of a value in one
// run with the j-th copy in the others), then the most similar remaining
// objects. An element is kept when a majority of the runs here has it (a tie
// goes to the side of the earliest run). Kept elements follow the order of
// the run the others agree with most (see placing); matched objects that
// differ are voted field by field. Elements not all runs have form one entry
// at the array's path.
func (v *voter) array(set []int, arrs []*node, keep bool) (*out, error) {
	width := len(set)
	all := uint32(1)<<width - 1

	total := 0
	for _, a := range arrs {
		total += len(a.vals)
	}
	cl := &clusters{cs: make([]cluster, 0, total), members: make([]member, 0, total)}
	of := make([][]int32, width) // of[r][p]: the cluster of element p of run r
	firstCopy := make(map[int32]int32, len(arrs[0].vals))
	lastCopy := make(map[int32]int32, len(arrs[0].vals)) // in the current run: the cluster of the previous copy
	for r, a := range arrs {
		of[r] = make([]int32, len(a.vals))
		clear(lastCopy)
		for p, e := range a.vals {
			c := int32(-1)
			prev, again := lastCopy[e.id]
			if again {
				c = cl.cs[prev].nextCopy
			} else if f, ok := firstCopy[e.id]; ok {
				c = f
			}
			if c < 0 { // no earlier run had this many copies
				c = cl.add(e)
				if again {
					cl.cs[prev].nextCopy = c
				} else {
					firstCopy[e.id] = c
				}
			}
			lastCopy[e.id] = c
			cl.join(c, int32(r), e)
			of[r][p] = c
		}
	}
	if err := v.match(cl, all); err != nil {
		return nil, err
	}
	cs := cl.cs

	// Place every group after the element that precedes it in the first
	// run, in placing order, that has it: a linked list, head at index
	// len(cs).
	next := make([]int32, len(cs)+1)
	for i := range next {
		next[i] = -1
	}
	placed := make([]bool, len(cs))
	disputed := false
	for _, r := range placing(cl, of, width) {
		prev := int32(len(cs))
		for _, c := range of[r] {
			g := cl.find(c)
			if !placed[g] {
				placed[g] = true
				next[g], next[prev] = next[prev], g
				disputed = disputed || cs[g].mask != all
			}
			prev = g
		}
	}

	var e *entry
	if keep && disputed {
		e = v.open()
	}
	res := &out{kind: kindArray}
	var vars variantList
	worst := width
	for g := next[len(cs)]; g != -1; g = next[g] {
		c := &cs[g]
		runs := bits.OnesCount32(c.mask)
		kept := keeps(c.mask, width)
		var val *out
		if kept {
			v.path = append(v.path, seg{key: -1, index: len(res.vals)})
			var err error
			val, err = v.element(set, cl, g, keep)
			v.path = v.path[:len(v.path)-1]
			if err != nil {
				return nil, err
			}
			res.vals = append(res.vals, val)
		}
		if c.mask == all {
			continue
		}
		side := runs // runs behind the winner: having the element, or lacking it
		if !kept {
			side = width - runs
		}
		worst = min(worst, side)
		v.agree(keep, side)
		if e == nil {
			continue
		}
		vr := variant{runs: runs, first: set[bits.TrailingZeros32(c.mask)], included: kept, o: val}
		if !vars.wants(vr) {
			vars.dropped++
			continue
		}
		if val == nil && c.merged { // shown as what its runs agree on; nothing below is kept
			var err error
			if vr.o, err = v.element(set, cl, g, false); err != nil {
				return nil, err
			}
		} else if val == nil {
			vr.n = c.first
		}
		vars.add(vr)
	}
	if e != nil {
		e.worst, e.variants, e.dropped = worst, vars.kept, vars.dropped
		v.record(e)
	}
	return res, nil
}

// keeps reports whether an element that the runs in mask have is kept: a
// majority of the width runs has it, or exactly half including the earliest.
func keeps(mask uint32, width int) bool {
	runs := bits.OnesCount32(mask)
	return 2*runs > width || (2*runs == width && mask&1 != 0)
}

// placing orders the runs (positions in the set) for placing elements: the
// run whose order of the kept elements agrees most with the other runs'
// first, so the agreed order is the majority's, not that of whichever run
// was answered first (audit-merge F9). Two runs agree on a pair of kept
// elements both have when both put them in the same order; a run scores the
// pairs it agrees on minus those it disagrees on, summed over the other
// runs. When more than half of the runs hold the same elements in one
// order, one of them scores highest: a run's score is then a constant minus
// twice its Kendall distances to the others summed, and by the triangle
// inequality that sum is smallest for the majority's order. Equal scores
// keep run order: a tie goes to the earliest run, so with two runs (which
// always score alike) the first run's order is kept. The cost is O(k² n log
// n) for k runs of n kept elements, linear where runs agree on the order.
func placing(cl *clusters, of [][]int32, width int) []int {
	order := make([]int, width)
	for r := range order {
		order[r] = r
	}
	if width < 3 {
		return order
	}
	// pos[r][g]: the place of kept group g among run r's kept elements, or -1.
	n := len(cl.cs)
	pos := make([][]int32, width)
	seqs := make([][]int32, width)
	for r := range of {
		pos[r] = make([]int32, n)
		for g := range pos[r] {
			pos[r][g] = -1
		}
		seqs[r] = make([]int32, 0, len(of[r]))
		for _, c := range of[r] {
			if g := cl.find(c); keeps(cl.cs[g].mask, width) {
				pos[r][g] = int32(len(seqs[r]))
				seqs[r] = append(seqs[r], g)
			}
		}
	}
	score := make([]int64, width)
	var common, scratch []int32
	for r := range width {
		for s := r + 1; s < width; s++ {
			common = common[:0]
			for _, g := range seqs[r] {
				if p := pos[s][g]; p >= 0 {
					common = append(common, p)
				}
			}
			c := int64(len(common))
			scratch = slices.Grow(scratch[:0], len(common))[:len(common)]
			agreement := c*(c-1)/2 - 2*inversions(common, scratch)
			score[r] += agreement
			score[s] += agreement
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case score[a] > score[b]:
			return -1
		case score[a] < score[b]:
			return 1
		}
		return 0
	})
	return order
}

// inversions counts the pairs of a that are out of ascending order (a's
// values are distinct), by merge sort in O(n log n). It reorders a and tmp,
// which must be as long as a and not share its memory.
func inversions(a, tmp []int32) int64 {
	if slices.IsSorted(a) { // the common case: the runs agree on the order
		return 0
	}
	var count int64
	for width := 1; width < len(a); width *= 2 {
		for lo := 0; lo < len(a); lo += 2 * width {
			mid, hi := min(lo+width, len(a)), min(lo+2*width, len(a))
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if a[i] < a[j] {
					tmp[k] = a[i]
					i++
				} else {
					tmp[k] = a[j]
					count += int64(mid - i) // a[j] belongs before every one of a[i:mid]
					j++
				}
				k++
			}
			k += copy(tmp[k:], a[i:mid])
			copy(tmp[k:], a[j:hi])
		}
		a, tmp = tmp, a
	}
	return count
}

// add makes an empty cluster for values equal to n.
func (cl *clusters) add(n *node) int32 {
	i := int32(len(cl.cs))
	cl.cs = append(cl.cs, cluster{head: -1, tail: -1, parent: i, nextCopy: -1, first: n})
	return i
}

// join adds element n of run r to cluster c.
func (cl *clusters) join(c, r int32, n *node) {
	m := int32(len(cl.members))
	cl.members = append(cl.members, member{run: r, n: n, next: -1})
	k := &cl.cs[c]
	if k.tail < 0 {
		k.head = m
	} else {
		cl.members[k.tail].next = m
	}
	k.tail = m
	k.mask |= 1 << r
}

// union merges the clusters rooted at a and b. The lower index stays the
// root: it was made first, by the earliest run.
func (cl *clusters) union(a, b int32) {
	if b < a {
		a, b = b, a
	}
	ka, kb := &cl.cs[a], &cl.cs[b]
	kb.parent = a
	ka.mask |= kb.mask
	cl.members[ka.tail].next = kb.head
	ka.tail = kb.tail
	ka.merged = true
}

// find is the root of cluster i, halving paths as it goes.
func (cl *clusters) find(i int32) int32 {
	cs := cl.cs
	for cs[i].parent != i {
		cs[i].parent = cs[cs[i].parent].parent
		i = cs[i].parent
	}
	return i
}

// element votes the members of group g, an element of the array.
func (v *voter) element(set []int, cl *clusters, g int32, keep bool) (*out, error) {
	c := &cl.cs[g]
	nulls := false
	for m := c.head; m >= 0; m = cl.members[m].next {
		nulls = nulls || cl.members[m].n.nulls
	}
	if !c.merged && !nulls {
		v.agree(keep, bits.OnesCount32(c.mask))
		return &out{n: c.first}, nil // its earliest run's text
	}
	var byRun [MaxRuns]*node
	for m := c.head; m >= 0; m = cl.members[m].next {
		byRun[cl.members[m].run] = cl.members[m].n
	}
	var sub []int
	var vals []*node
	for r, n := range byRun[:len(set)] {
		if n != nil {
			sub, vals = append(sub, set[r]), append(vals, n)
		}
	}
	if !c.merged {
		v.agree(keep, bits.OnesCount32(c.mask))
		return agreedAs(vals), nil // and the null keys later runs wrote
	}
	if c.first.kind == kindArray { // matched tuples, all of one length
		return v.tuple(sub, vals, keep)
	}
	return v.vote(sub, vals, keep)
}

// tuple votes arrays of one length that were matched as one element (rows
// written as tuples) cell by cell, by position: a run that differs in one
// cell disputes that cell, at its own path, as a field of matched objects
// is disputed (hunt-tuples). Voting the cells as array elements instead
// would match them by value and shift the columns. A cell that is itself
// an array is voted by the rules of any value, so a list of tuples inside
// a tuple is matched in turn. Every run has every cell, so no cell is
// left out: a null that wins is written, keeping the columns in place.
func (v *voter) tuple(set []int, tuples []*node, keep bool) (*out, error) {
	res := &out{kind: kindArray, vals: make([]*out, 0, len(tuples[0].vals))}
	for i := range tuples[0].vals {
		col := make([]*node, len(tuples))
		for r, t := range tuples {
			col[r] = t.vals[i]
		}
		v.path = append(v.path, seg{key: -1, index: i})
		val, err := v.vote(set, col, keep)
		v.path = v.path[:len(v.path)-1]
		if err != nil {
			return nil, err
		}
		res.vals = append(res.vals, val)
	}
	return res, nil
}

// tupleFeats is what similarity compares for an array element: its
// non-null cells keyed by position. Positions are negative keys (-1 for
// the first cell), so a tuple never shares a feature with an object, whose
// key ids are not negative; sorted by key like an object's feats.
func tupleFeats(n *node) []feat {
	var fs []feat
	for i := len(n.vals) - 1; i >= 0; i-- {
		if e := n.vals[i]; e.kind != kindNull { // null and absent are one value, as in objects
			fs = append(fs, feat{key: -1 - int32(i), val: e.id})
		}
	}
	return fs
}

// match merges clusters of similar objects that no run has twice, most
// similar pairs first. Similarity is the share of keys whose values are
// equal: shared / union, both counted over keys with a non-null value. Pairs
// below one half, or sharing nothing, are never merged. Arrays of one length
// (tuples) are matched the same way, their positions standing for keys
// (tupleFeats); arrays of different lengths never are.
//
// Comparing every pair is quadratic, so pairs are found through an index
// (prefix filtering, as in set-similarity joins): each object is indexed by
// the rarest half of its key-value pairs plus one. Two objects at least half
// similar must share one of those, so no pair that could merge is missed,
// and elements with a distinctive field (an id, a line number) meet only
// their few look-alikes. The work is charged against MaxMatchCost as it
// happens (see charge), so hostile arrays of look-alikes stop at the budget.
func (v *voter) match(cl *clusters, all uint32) error {
	cs := cl.cs
	var cands []int32
	var candFeats [][]feat
	for i, c := range cs {
		if c.mask == all {
			continue
		}
		var fs []feat
		switch c.first.kind {
		case kindObject:
			fs = c.first.feats
		case kindArray:
			fs = tupleFeats(c.first)
		}
		if len(fs) > 0 {
			cands = append(cands, int32(i))
			candFeats = append(candFeats, fs)
		}
	}
	if len(cands) < 2 {
		return nil
	}
	feats := func(x int) []feat { return candFeats[x] }

	freq := map[feat]int32{}
	for x := range cands {
		for _, f := range feats(x) {
			freq[f]++
		}
	}
	index := map[feat][]int32{} // a prefix feature → candidates (positions in cands), ascending
	prefixes := make([][]feat, len(cands))
	for x := range cands {
		p := slices.Clone(feats(x))
		slices.SortFunc(p, func(a, b feat) int {
			if d := int(freq[a]) - int(freq[b]); d != 0 {
				return d
			}
			if a.key != b.key {
				return int(a.key) - int(b.key)
			}
			return int(a.val) - int(b.val)
		})
		p = p[:len(p)/2+1]
		prefixes[x] = p
		for _, f := range p {
			index[f] = append(index[f], int32(x))
		}
	}

	var pairs []pair
	seen := make([]int32, len(cands)) // seen[y] == x+1: y already weighed against x
	for x := range cands {
		a := &cs[cands[x]]
		for _, f := range prefixes[x] {
			post := index[f]
			from, _ := slices.BinarySearch(post, int32(x)+1) // each pair once, from its lower side
			if err := v.charge(int64(len(post) - from)); err != nil {
				return err
			}
			for _, y := range post[from:] {
				if seen[y] == int32(x)+1 {
					continue
				}
				seen[y] = int32(x) + 1
				b := &cs[cands[y]]
				if a.mask&b.mask != 0 {
					continue
				}
				if a.first.kind == kindArray && len(a.first.vals) != len(b.first.vals) {
					continue // tuples of other lengths: their columns may not line up
				}
				if err := v.charge(int64(len(feats(x)) + len(feats(int(y))) + 1)); err != nil {
					return err
				}
				shared, union := similarity(feats(x), feats(int(y)))
				if 2*shared >= union {
					if err := v.charge(pairCost); err != nil {
						return err
					}
					pairs = append(pairs, pair{a: cands[x], b: cands[y], shared: int32(shared), union: int32(union)})
				}
			}
		}
	}
	slices.SortFunc(pairs, func(p, q pair) int {
		if d := int64(q.shared)*int64(p.union) - int64(p.shared)*int64(q.union); d != 0 {
			return int(max(-1, min(1, d))) // more similar first
		}
		if p.a != q.a {
			return int(p.a - q.a)
		}
		return int(p.b - q.b)
	})
	for _, p := range pairs {
		a, b := cl.find(p.a), cl.find(p.b)
		if a != b && cs[a].mask&cs[b].mask == 0 {
			cl.union(a, b)
		}
	}
	return nil
}

// pairCost is what keeping a similar pair costs on top of comparing it: its
// memory and its share of the sort.
const pairCost = 24

// charge spends steps of the matching budget, failing once it is exceeded.
// It counts one step per index entry visited, the key counts of both
// objects plus one per comparison, and pairCost per similar pair kept.
func (v *voter) charge(steps int64) error {
	v.spent += steps
	if v.spent > v.lim.MaxMatchCost {
		return &limitError{fmt.Sprintf("matching array elements at %q went over the budget of %d steps",
			v.pathString(), v.lim.MaxMatchCost)}
	}
	return nil
}

// similarity counts the keys (for tuples, positions) two elements share
// with equal values, and the keys either has, ignoring null values.
func similarity(x, y []feat) (shared, union int) {
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i].key < y[j].key:
			i++
		case x[i].key > y[j].key:
			j++
		default:
			if x[i].val == y[j].val {
				shared++
			}
			i++
			j++
		}
		union++
	}
	return shared, union + (len(x) - i) + (len(y) - j)
}
