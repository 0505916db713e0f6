package chunk

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
)

// rankTable holds an encoding's mergeable ranks without a single pointer
// per entry. A map[string]int of o200k_base's 200,000 byte strings is as
// many objects that every garbage collection of the process must mark: it
// made a collection cost about 5 ms more CPU (measured 2026-11-23), paid by
// whatever the service was doing then. Here the keys sit end to end in one
// byte slice and an open-addressing index of entry numbers finds them, so
// the collector sees four pointer-free arrays.
type rankTable struct {
	seed  maphash.Seed
	keys  []byte   // every key, end to end
	ends  []uint32 // ends[i]: end of key i in keys; it starts at ends[i-1]
	ranks []int32  // ranks[i]: rank of key i
	slots []uint32 // entry number + 1 by hash, linear probing; 0 is empty
	mask  uint64
}

func newRankTable(m map[string]int) (*rankTable, error) {
	size := 0
	for k, r := range m {
		if r < 0 || r > math.MaxInt32 {
			return nil, fmt.Errorf("rank %d of %q out of range", r, k)
		}
		size += len(k)
	}
	if size > math.MaxUint32 || len(m) >= math.MaxUint32/2 {
		return nil, fmt.Errorf("%d ranks of %d bytes: too large", len(m), size)
	}
	// At most half full, so a miss ends after a short probe.
	nslots := uint64(1) << bits.Len(uint(2*len(m)))
	t := &rankTable{
		seed:  maphash.MakeSeed(),
		keys:  make([]byte, 0, size),
		ends:  make([]uint32, 0, len(m)),
		ranks: make([]int32, 0, len(m)),
		slots: make([]uint32, nslots),
		mask:  nslots - 1,
	}
	for k, r := range m {
		t.keys = append(t.keys, k...)
		t.ends = append(t.ends, uint32(len(t.keys)))
		t.ranks = append(t.ranks, int32(r))
		i := maphash.String(t.seed, k) & t.mask
		for t.slots[i] != 0 {
			i = (i + 1) & t.mask
		}
		t.slots[i] = uint32(len(t.ends))
	}
	return t, nil
}

// get returns the rank of key and whether it has one.
func (t *rankTable) get(key string) (int, bool) {
	for i := maphash.String(t.seed, key) & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i]
		if e == 0 {
			return 0, false
		}
		e--
		start := uint32(0)
		if e > 0 {
			start = t.ends[e-1]
		}
		if string(t.keys[start:t.ends[e]]) == key {
			return int(t.ranks[e]), true
		}
	}
}
