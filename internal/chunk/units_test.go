package chunk

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// unitList behaves as a slice of units does under the splitter's edits
// (appends, insertions, a unit replaced by its parts, truncation), across
// its pages' boundaries.
func TestUnitListEditsAsASliceDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var l unitList
	var want []unit
	next := int32(0)
	fresh := func(k int) []unit {
		us := make([]unit, k)
		for i := range us {
			next++
			us[i] = unit{start: next}
		}
		return us
	}
	// A thousand steps under -race still make each edit hundreds of times.
	for step := range raceOr(3000, 1000) {
		switch op := rng.IntN(10); {
		case op < 5 || len(want) == 0: // push a run
			for _, u := range fresh(1 + rng.IntN(3*unitPage/2)) {
				l.push(u)
				want = append(want, u)
			}
		case op < 7: // replace one unit by several (splice), or insert
			i := rng.IntN(len(want))
			j := i + rng.IntN(2)
			us := fresh(rng.IntN(unitPage + 2))
			l.replace(i, j, us...)
			want = slices.Replace(want, i, j, us...)
		case op < 8: // replace several by fewer
			i := rng.IntN(len(want))
			j := min(len(want), i+rng.IntN(2*unitPage))
			us := fresh(rng.IntN(3))
			l.replace(i, j, us...)
			want = slices.Replace(want, i, j, us...)
		default: // truncate
			n := rng.IntN(len(want) + 1)
			l.truncate(n)
			want = want[:n]
		}
		if l.len() != len(want) {
			t.Fatalf("step %d: %d units, want %d", step, l.len(), len(want))
		}
		if k := rng.IntN(len(want) + 1); !slices.Equal(l.copyOut(k), want[k:]) {
			t.Fatalf("step %d: the units from %d differ from the slice's", step, k)
		}
		for i := range want {
			if *l.at(i) != want[i] {
				t.Fatalf("step %d: unit %d is %v, want %v", step, i, *l.at(i), want[i])
			}
		}
		// Five pages are as many page boundaries as twenty: every edit
		// above spans at most two pages, and the full walk each step is
		// what the test's time goes on (seconds under -race at twenty).
		if len(want) > 5*unitPage {
			l.truncate(unitPage / 3)
			want = want[:unitPage/3]
		}
	}
}
