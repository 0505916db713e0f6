package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
)

// barrierChat holds every call until k calls are in flight together, then
// lets them all answer {"ok":true}. Runs asked one after another never get
// there: the first waits for its context and fails with it.
type barrierChat struct {
	k               int64
	calls, inFlight atomic.Int64
	peak            atomic.Int64
	once            sync.Once
	all             chan struct{} // closed once k calls are in flight
}

func newBarrierChat(k int) *barrierChat {
	return &barrierChat{k: int64(k), all: make(chan struct{})}
}

func (c *barrierChat) Complete(ctx context.Context, _ provider.ChatRequest) (provider.ChatAnswer, error) {
	c.calls.Add(1)
	n := c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if n >= c.k {
		c.once.Do(func() { close(c.all) })
	}
	select {
	case <-c.all:
		return provider.ChatAnswer{Content: `{"ok":true}`, InputTokens: 10, OutputTokens: 2}, nil
	case <-ctx.Done():
		return provider.ChatAnswer{}, ctx.Err()
	}
}

// The k consensus runs of a chunk are asked at once, so a vote costs one
// provider latency, not k: each run's call is held until all k are in
// flight, which only concurrent runs reach before the context ends.
func TestConsensusRunsAreAskedAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    int
	}{
		{"two runs", 2},
		{"three runs", 3},
		{"five runs", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			j := &job.Job{ID: "job-k", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
				Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_THREE_RUNS", ResponseSchema: `{"type":"object"}`, Created: time.Now()}
			if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j}); err != nil {
				t.Fatal(err)
			}
			// Concurrent runs meet in milliseconds; the bound only ends the
			// wait of runs asked one by one.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			chat := newBarrierChat(tc.k)
			w := newFileWorker(Config{}.withDefaults(), Deps{Store: st, Logger: slog.Default()})
			row := job.LLMRow{JobID: j.ID, ChunkTotal: 1, Input: "chunk"}

			err := w.vote(ctx, j, chat, &row, tc.k, true, slog.New(slog.DiscardHandler))
			if peak := chat.peak.Load(); peak != int64(tc.k) {
				t.Fatalf("at most %d of the %d runs were in flight together (vote err: %v); want all %d asked at once",
					peak, tc.k, err, tc.k)
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := chat.calls.Load(); n != int64(tc.k) {
				t.Errorf("provider calls = %d, want %d", n, tc.k)
			}
			var block struct{ K, RunsVotable int }
			if err := json.Unmarshal(row.Consensus, &block); err != nil {
				t.Fatalf("consensus block %s: %v", row.Consensus, err)
			}
			if row.Status != job.RowDone || row.Content != `{"ok":true}` || block.K != tc.k || block.RunsVotable != tc.k {
				t.Errorf("row %s %q, block %+v; want DONE with all %d runs votable", row.Status, row.Content, block, tc.k)
			}
		})
	}
}
