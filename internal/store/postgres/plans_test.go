package postgres_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

// A burst of answers commits in groups whose UPDATE of several rows is
// planned once per connection and reused, never planned again for its
// parameters at a bind: that planning took 1.5–3 ms a group, in the tail
// of every job (docs/benchmarks.md).
func TestAGroupOfAnswersReusesItsUpdatesPlan(t *testing.T) {
	s := openSchema(t)
	const waves, perWave = 8, 12
	_, rows := storetest.Recognized(t, s, "job-1", waves*perWave)
	for w := range waves {
		var wg sync.WaitGroup
		for _, r := range rows[w*perWave : (w+1)*perWave] {
			wg.Go(func() {
				r.Status, r.Content = job.RowDone, fmt.Sprintf(`{"chunk":%d}`, r.ChunkIndex)
				if _, err := s.FinishLLM(t.Context(), store.LLMDone{Row: r, EndWhenLast: true}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	generic, custom, err := postgres.GroupUpdatePlans(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if generic == 0 {
		t.Fatalf("no group of two or more answers was written (generic plans %d, custom %d)", generic, custom)
	}
	if custom != 0 {
		t.Errorf("the groups' UPDATEs were planned again for their parameters %d times (generic plans %d)", custom, generic)
	}
}
