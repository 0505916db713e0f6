package consensus

import (
	"slices"
)

// out is a node of the agreed answer: either a run's value taken whole (n),
// or an object or array put together from votes below it.
type out struct {
	n     *node
	kind  kind // kindObject or kindArray when n is nil
	names []string
	vals  []*out
}

// voter walks the runs' trees side by side and records what it decided.
type voter struct {
	in      *interner
	lim     Limits
	votable int   // runs that vote: the denominator of every agreement
	minRuns int   // fewest runs behind any winner kept in the answer
	spent   int64 // similarity matching work so far, against lim.MaxMatchCost
	report  report
	path    []seg // where the walk is, for naming entries
}

// seg is one step of a path: an object key, or an index of the agreed array.
type seg struct {
	key   int32 // -1 for an array index
	index int
}

// variant is a competing value: one run's value (n), an agreed value (o), or
// null/absent (neither). Its text is written only if it survives the caps.
type variant struct {
	runs     int
	first    int // earliest run behind it: the tie-breaker
	seq      int // order of arrival, the last tie-breaker
	included bool
	n        *node
	o        *out
}

// agree records that a winner kept in the answer has runs behind it.
func (v *voter) agree(keep bool, runs int) {
	if keep && runs < v.minRuns {
		v.minRuns = runs
	}
}

// open starts an entry at the current path. It takes its place in document
// order now, before the values below it are voted, so that a value comes
// before its insides; it is recorded once its variants are known.
func (v *voter) open() *entry {
	v.report.seq++
	return &entry{path: v.pathString(), order: v.report.seq}
}

// record files a finished entry.
func (v *voter) record(e *entry) { v.report.add(*e) }

// byRuns orders variants by runs behind them, most first, then by earliest
// run, then by arrival: the first variant is the winner.
func byRuns(a, b variant) int {
	if a.runs != b.runs {
		return b.runs - a.runs
	}
	if a.first != b.first {
		return a.first - b.first
	}
	return a.seq - b.seq
}

// vote decides the value at the current path. set holds the runs that vote
// here (run indexes, ascending) and vals their values, nil where a run lacks
// the key. keep is false when the result is only shown as a losing variant:
// nothing below is then recorded. A nil result means the key is omitted: the
// value is null or absent and no run behind it wrote the key.
func (v *voter) vote(set []int, vals []*node, keep bool) (*out, error) {
	if unanimous(vals) {
		v.agree(keep, len(set))
		return agreedAs(vals), nil
	}

	var objects, arrays, nones int
	for _, n := range vals {
		switch {
		case none(n):
			nones++
		case n.kind == kindObject:
			objects++
		case n.kind == kindArray:
			arrays++
		}
	}
	present := len(vals) - nones
	if objects == present || arrays == present {
		return v.presence(set, vals, keep)
	}
	// Scalars, and clashes of kinds: every distinct value is one variant.
	return v.whole(set, vals, keep), nil
}

// written is the first value of vals a run wrote, nil when no run wrote
// the key. presence uses it for the runs that lack a container: a null that
// wins a dispute is written when any run behind it wrote its key, so a schema
// that requires a nullable key (strict mode's shape) is met by the agreed
// answer of runs that meet it, whichever run came first (audit-merge F3).
func written(vals []*node) *node {
	for _, n := range vals {
		if n != nil {
			return n
		}
	}
	return nil
}

// agreedAs is the agreed answer of vals that are one value (absent
// counting as null): the earliest run's text, with the null keys it left
// out that a later run wrote, at any depth. A null is written when any run
// wrote its key, as for a null that wins a dispute (audit-merge2 F4): runs
// that conform to a strict schema, which requires every key, then agree on
// an answer that conforms whichever run came first. Nil means the key is
// omitted: no run wrote it.
func agreedAs(vals []*node) *out {
	first := vals[0]
	if none(first) {
		if n := written(vals); n != nil {
			return &out{n: n}
		}
		return nil
	}
	if first.kind != kindObject && first.kind != kindArray ||
		!slices.ContainsFunc(vals[1:], func(n *node) bool { return n.nulls }) {
		return &out{n: first} // nothing to add: the earliest run's text
	}
	col := make([]*node, len(vals))
	o := &out{kind: first.kind}
	if first.kind == kindArray { // equal arrays: equal elements in order
		for i := range first.vals {
			for r, n := range vals {
				col[r] = n.vals[i]
			}
			o.vals = append(o.vals, agreedAs(col))
		}
		return o
	}
	at := make([]map[int32]int, len(vals))
	for r, n := range vals {
		at[r] = make(map[int32]int, len(n.keys))
		for i, k := range n.keys {
			at[r][k] = i
		}
	}
	for i, k := range first.keys {
		for r, n := range vals {
			col[r] = nil
			if j, ok := at[r][k]; ok {
				col[r] = n.vals[j]
			}
		}
		o.names = append(o.names, first.names[i])
		o.vals = append(o.vals, agreedAs(col))
	}
	// Keys the earliest run lacks are null wherever they are written (the
	// values are equal), in the order later runs first wrote them.
	added := map[int32]bool{}
	for _, n := range vals[1:] {
		for i, k := range n.keys {
			if _, ok := at[0][k]; !ok && !added[k] {
				added[k] = true
				o.names = append(o.names, n.names[i])
				o.vals = append(o.vals, &out{n: n.vals[i]})
			}
		}
	}
	return o
}

// unanimous reports whether all vals are one value (absent counting as null).
func unanimous(vals []*node) bool {
	id := idOf(vals[0])
	for _, n := range vals[1:] {
		if idOf(n) != id {
			return false
		}
	}
	return true
}

// whole votes whole values against each other.
func (v *voter) whole(set []int, vals []*node, keep bool) *out {
	vars := make([]variant, 0, len(vals))
	slot := make([]int32, 0, len(vals)) // the id of each variant
	for i, n := range vals {
		id := idOf(n)
		j := slices.Index(slot, id)
		if j < 0 {
			j = len(vars)
			slot = append(slot, id)
			vars = append(vars, variant{first: set[i]})
		}
		if vars[j].n == nil {
			vars[j].n = n // the null variant holds an explicit null once a run wrote one (see written)
		}
		vars[j].runs++
	}
	slices.SortFunc(vars, byRuns) // at most MaxRuns: no caps to apply
	vars[0].included = true
	v.agree(keep, vars[0].runs)
	if keep {
		e := v.open()
		e.worst, e.variants = vars[0].runs, vars
		v.record(e)
	}
	if vars[0].n == nil {
		return nil // a winning null no run wrote: included, key omitted (spec)
	}
	return &out{n: vars[0].n} // a value, or a winning null some run behind it wrote
}

// presence votes a container that some runs lack: having it (shown as what
// those runs agree it holds) against not having it, always two variants.
// Differences inside are entries of their own, at their own paths.
func (v *voter) presence(set []int, vals []*node, keep bool) (*out, error) {
	var have, lack []int
	var haveVals, lackVals []*node
	for i, n := range vals {
		if none(n) {
			lack = append(lack, set[i])
			lackVals = append(lackVals, n)
		} else {
			have = append(have, set[i])
			haveVals = append(haveVals, n)
		}
	}
	if len(lack) == 0 {
		return v.container(have, haveVals, keep)
	}
	wins := len(have) > len(lack) || (len(have) == len(lack) && have[0] < lack[0])
	var e *entry
	if keep {
		e = v.open()
	}
	inside, err := v.container(have, haveVals, keep && wins)
	if err != nil {
		return nil, err
	}
	vars := []variant{
		{runs: len(have), first: have[0], included: wins, o: inside},
		{runs: len(lack), first: lack[0], included: !wins},
	}
	slices.SortFunc(vars, byRuns)
	v.agree(keep, vars[0].runs)
	if keep {
		e.worst, e.variants = vars[0].runs, vars
		v.record(e)
	}
	if !wins {
		if n := written(lackVals); n != nil {
			return &out{n: n}, nil // a run behind the winning null wrote it
		}
		return nil, nil
	}
	return inside, nil
}

// container votes values that are all objects or all arrays.
func (v *voter) container(set []int, vals []*node, keep bool) (*out, error) {
	if unanimous(vals) {
		v.agree(keep, len(set))
		return agreedAs(vals), nil
	}
	if vals[0].kind == kindArray {
		return v.array(set, vals, keep)
	}
	return v.object(set, vals, keep)
}

// object votes objects key by key over the union of their keys, in the
// earliest run's key order, then keys new in later runs in their order.
func (v *voter) object(set []int, objs []*node, keep bool) (*out, error) {
	slot := map[int32]int{}
	var keys []int32
	var names []string
	for _, o := range objs {
		for i, k := range o.keys {
			if _, ok := slot[k]; !ok {
				slot[k] = len(keys)
				keys = append(keys, k)
				names = append(names, o.names[i])
			}
		}
	}
	width := len(set)
	cells := make([]*node, len(keys)*width)
	for r, o := range objs {
		for i, k := range o.keys {
			cells[slot[k]*width+r] = o.vals[i]
		}
	}
	res := &out{kind: kindObject}
	for i, k := range keys {
		v.path = append(v.path, seg{key: k})
		val, err := v.vote(set, cells[i*width:(i+1)*width], keep)
		v.path = v.path[:len(v.path)-1]
		if err != nil {
			return nil, err
		}
		if val != nil {
			res.names = append(res.names, names[i])
			res.vals = append(res.vals, val)
		}
	}
	return res, nil
}
