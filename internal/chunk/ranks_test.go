package chunk

import (
	"runtime"
	"testing"

	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

func TestRankTableAnswersAsTheMapItWasBuiltFrom(t *testing.T) {
	m := map[string]int{"a": 0, "ab": 7, "abc": 3, "\x00": 12, "é": 1 << 30}
	rt, err := newRankTable(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(rt.ends) != len(m) {
		t.Fatalf("holds %d ranks, want %d", len(rt.ends), len(m))
	}
	tests := []struct {
		name   string
		key    string
		rank   int
		absent bool
	}{
		{name: "first key", key: "a", rank: 0},
		{name: "key that is a prefix of another", key: "ab", rank: 7},
		{name: "key that extends another", key: "abc", rank: 3},
		{name: "NUL byte", key: "\x00", rank: 12},
		{name: "multi-byte key with a large rank", key: "é", rank: 1 << 30},
		{name: "missing key sharing a prefix", key: "abcd", absent: true},
		{name: "empty key", key: "", absent: true},
		{name: "half of a multi-byte key", key: "\xc3", absent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := rt.get(tt.key)
			if ok == tt.absent || (ok && r != tt.rank) {
				t.Fatalf("get(%q) = %d, %v; want %d, %v", tt.key, r, ok, tt.rank, !tt.absent)
			}
		})
	}
}

func TestRankTableRefusesRanksItCannotHold(t *testing.T) {
	for _, r := range []int{-1, 1 << 31} {
		if _, err := newRankTable(map[string]int{"x": r}); err == nil {
			t.Errorf("rank %d accepted", r)
		}
	}
}

// Every o200k_base and cl100k_base rank is found as the loader gave it,
// and byte strings next to them are not.
func TestRankTableHoldsEveryRankOfTheEncodings(t *testing.T) {
	for _, name := range []string{EncodingO200K, EncodingCL100K} {
		t.Run(name, func(t *testing.T) {
			m, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe(bpeFiles[name].file)
			if err != nil {
				t.Fatal(err)
			}
			rt := fastEncoder(t, name).fast.ranks
			if len(rt.ends) != len(m) {
				t.Fatalf("table holds %d ranks, the file %d", len(rt.ends), len(m))
			}
			for k, want := range m {
				if got, ok := rt.get(k); !ok || got != want {
					t.Fatalf("get(%q) = %d, %v; want %d", k, got, ok, want)
				}
				if _, inMap := m[k+"\xff\xfe"]; !inMap {
					if _, ok := rt.get(k + "\xff\xfe"); ok {
						t.Fatalf("get(%q) found a rank that is not in the file", k+"\xff\xfe")
					}
				}
			}
		})
	}
}

// BenchmarkGCWithO200KLoaded is the cost of one full collection of a
// process that holds o200k_base, the collection the ranks' layout is for.
func BenchmarkGCWithO200KLoaded(b *testing.B) {
	enc := fastEncoder(b, EncodingO200K)
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
	}
	runtime.KeepAlive(enc)
}
