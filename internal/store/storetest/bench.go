package storetest

import (
	"math"
	"testing"

	"github.com/docjobs/docjobs/internal/store"
)

// BenchmarkCreateJob measures one create of a one-file job in a store
// holding 1000 active jobs of one account (the default limit): without a
// limit of active jobs; under one, by an account with none active (the
// lock and an empty count); and under one, by the account with 1000 (the
// count at its longest). Run it with a small fixed count
// (-benchtime=200x): each create in that account adds an active job, so
// its count grows with the iterations.
func BenchmarkCreateJob(b *testing.B, open func(b *testing.B) store.Store) {
	for _, bc := range []struct {
		name     string
		limit    int
		ownEmpty bool // each create in an account of its own
	}{
		{"no limit", 0, false},
		{"limit, none active", math.MaxInt32, true},
		{"limit, 1000 active", math.MaxInt32, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b)
			defer s.Close()
			c := b.Context()
			for range 1000 {
				if _, _, err := s.CreateJob(c, store.CreateJobParams{Job: newJob("acct", 1)}); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				account := "acct"
				if bc.ownEmpty {
					account = newID("acct")
				}
				if _, _, err := s.CreateJob(c, store.CreateJobParams{Job: newJob(account, 1), MaxActiveJobs: bc.limit}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
