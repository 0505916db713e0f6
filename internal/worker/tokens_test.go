package worker

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
)

// absurdUsageChat answers every run with the usage it is given, as runs
// kept by an older binary (which took counts as vendors gave them) can.
type absurdUsageChat struct{ in, out int64 }

func (c absurdUsageChat) Complete(context.Context, provider.ChatRequest) (provider.ChatAnswer, error) {
	return provider.ChatAnswer{Content: `{"n":1}`, InputTokens: c.in, OutputTokens: c.out, Request: "req", RawData: "raw"}, nil
}

func TestConsensusTokensAddWithoutWrappingAround(t *testing.T) {
	tests := []struct {
		name            string
		in, out         int64
		wantIn, wantOut int64
	}{
		{"counts add", 10, 2, 30, 6},
		{"a sum past int64 stays at its largest", math.MaxInt64 / 2, math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{"negative counts add nothing", -5, math.MinInt64, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t)
			j := &job.Job{ID: "job-t", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
				Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_THREE_RUNS", Created: time.Now()}
			if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
				t.Fatal(err)
			}
			w := newFileWorker(Config{}.withDefaults(), Deps{Store: st, Logger: slog.New(slog.DiscardHandler)})
			row := job.LLMRow{JobID: j.ID, ChunkTotal: 1, Input: "chunk"}
			if err := w.vote(ctx, j, absurdUsageChat{in: tt.in, out: tt.out}, &row, 3, false, slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			if row.InputTokens != tt.wantIn || row.OutputTokens != tt.wantOut {
				t.Errorf("tokens %d/%d, want %d/%d", row.InputTokens, row.OutputTokens, tt.wantIn, tt.wantOut)
			}
		})
	}
}
