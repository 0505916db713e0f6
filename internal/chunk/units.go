package chunk

// unitList holds a split's units in pages of unitPage, so that it grows
// without copying them. A slice grown by append copies every unit at each
// growth (by a quarter, once large) and leaves the old arrays to the
// collector: for 3,990,000 one-token words 731 MB were allocated for 128
// MB of units, and the heap peaked near three times what it held. The
// first page grows as a slice does, so a small text holds no more than
// its units; the others are allocated whole and never move.
type unitList struct {
	pages [][]unit // each full (unitPage units) but the last
	n     int
}

// unitPage is a power of two, so that at divides by shifting: 128 KB.
const unitPage = 4096

func (l *unitList) len() int { return l.n }

// at returns unit i; the pointer holds until units are inserted or
// removed before it.
func (l *unitList) at(i int) *unit {
	return &l.pages[uint(i)/unitPage][uint(i)%unitPage]
}

func (l *unitList) push(u unit) {
	if k := len(l.pages); k == 0 || len(l.pages[k-1]) == unitPage {
		capacity := unitPage
		if k == 0 {
			capacity = 16
		}
		l.pages = append(l.pages, make([]unit, 0, capacity))
	}
	last := &l.pages[len(l.pages)-1]
	*last = append(*last, u)
	l.n++
}

// truncate removes the units from n on.
func (l *unitList) truncate(n int) {
	if n >= l.n {
		return
	}
	keep := (n + unitPage - 1) / unitPage // pages still holding a unit
	clear(l.pages[keep:])
	l.pages = l.pages[:keep]
	if keep > 0 {
		l.pages[keep-1] = l.pages[keep-1][:n-(keep-1)*unitPage]
	}
	l.n = n
}

// copyOut returns a copy of the units from first on.
func (l *unitList) copyOut(first int) []unit {
	out := make([]unit, 0, l.n-first)
	for i := first; i < l.n; {
		page := l.pages[uint(i)/unitPage][uint(i)%unitPage:]
		out = append(out, page...)
		i += len(page)
	}
	return out
}

// replace puts us in the place of the units [i, j), moving those after
// them a page's run at a time.
func (l *unitList) replace(i, j int, us ...unit) {
	n := l.n
	grow := len(us) - (j - i)
	for range grow {
		l.push(unit{})
	}
	switch {
	case grow > 0: // up, from the back
		for to := n + grow; to > j+grow; {
			dst, src := l.before(to), l.before(to-grow)
			m := min(len(dst), len(src), to-(j+grow))
			copy(dst[len(dst)-m:], src[len(src)-m:])
			to -= m
		}
	case grow < 0: // down, from the front
		for from := j; from < n; {
			dst, src := l.from(from+grow), l.from(from)
			m := min(len(dst), len(src), n-from)
			copy(dst[:m], src[:m])
			from += m
		}
	}
	for k, u := range us {
		*l.at(i + k) = u
	}
	l.truncate(n + grow)
}

// from returns the units from i to the end of i's page.
func (l *unitList) from(i int) []unit {
	return l.pages[uint(i)/unitPage][uint(i)%unitPage:]
}

// before returns the units from the start of i-1's page to i.
func (l *unitList) before(i int) []unit {
	return l.pages[uint(i-1)/unitPage][:uint(i-1)%unitPage+1]
}
