package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

type countingChat struct{ calls atomic.Int64 }

func (c *countingChat) Complete(_ context.Context, req provider.ChatRequest) (provider.ChatAnswer, error) {
	c.calls.Add(1)
	return provider.ChatAnswer{Content: `{"n":1}`, InputTokens: 10, OutputTokens: 2}, nil
}

type fixedChats struct{ chat provider.Chat }

func (f fixedChats) Chat(string, string, string) (provider.Chat, error) { return f.chat, nil }

func TestAnAnsweredChunkIsNotAskedAgain(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "db.sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	j := &job.Job{ID: "job-1", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
	if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	chat := &countingChat{}
	w := &modelWorker{deps: Deps{Store: st, Chats: fixedChats{chat}, Logger: slog.Default()}}
	row := job.LLMRow{JobID: j.ID, FileIndex: 0, ChunkIndex: 3, ChunkTotal: 5, Input: "chunk"}

	for range 2 { // the second answer is a retried River job
		r := row
		if err := w.answer(ctx, j, &r); err != nil || r.Content != `{"n":1}` || r.InputTokens != 10 || r.Status != job.RowDone {
			t.Fatalf("answer = %+v, %v", r, err)
		}
	}
	if n := chat.calls.Load(); n != 1 {
		t.Fatalf("provider asked %d times for one chunk, want once", n)
	}
	row.ChunkIndex = 4
	if err := w.answer(ctx, j, &row); err != nil || chat.calls.Load() != 2 {
		t.Fatalf("another chunk: %v, %d calls", err, chat.calls.Load())
	}
}

// flakyChat answers {"n":<call>} but refuses its second call with a 503.
type flakyChat struct{ calls atomic.Int64 }

func (c *flakyChat) Complete(context.Context, provider.ChatRequest) (provider.ChatAnswer, error) {
	n := c.calls.Add(1)
	if n == 2 {
		return provider.ChatAnswer{}, &provider.Error{Category: provider.CategoryServer, Status: 503}
	}
	return provider.ChatAnswer{Content: `{"ok":true}`, InputTokens: 10, OutputTokens: 2}, nil
}

func TestConsensusRunsThatAnsweredAreNotAskedAgain(t *testing.T) {
	for _, tc := range []struct {
		name         string
		final        bool
		wantCalls    int64
		wantVotable  int
		wantComplete bool
	}{
		{"a failed run is retried alone", false, 4, 3, true},
		{"on the last attempt it counts as unusable", true, 3, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t)
			j := &job.Job{ID: "job-k", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
				Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_THREE_RUNS", ResponseSchema: `{"type":"object"}`, Created: time.Now()}
			if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
				t.Fatal(err)
			}
			chat := &flakyChat{}
			w := &modelWorker{deps: Deps{Store: st, Chats: fixedChats{chat}, Logger: slog.Default()}}
			row := job.LLMRow{JobID: j.ID, ChunkTotal: 1, Input: "chunk"}

			err := w.vote(ctx, j, &row, 3, tc.final)
			if !tc.final {
				if pe := (*provider.Error)(nil); !errors.As(err, &pe) || !pe.Retryable() {
					t.Fatalf("first attempt: err = %v, want the retryable provider error", err)
				}
				row = job.LLMRow{JobID: j.ID, ChunkTotal: 1, Input: "chunk"}
				err = w.vote(ctx, j, &row, 3, tc.final)
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := chat.calls.Load(); n != tc.wantCalls {
				t.Errorf("provider calls = %d, want %d", n, tc.wantCalls)
			}
			var block struct {
				K, RunsVotable int
				MinAgreement   float64
				Incomplete     bool
			}
			if err := json.Unmarshal(row.Consensus, &block); err != nil {
				t.Fatalf("consensus block %s: %v", row.Consensus, err)
			}
			if block.K != 3 || block.RunsVotable != tc.wantVotable || block.Incomplete == tc.wantComplete {
				t.Errorf("block = %+v", block)
			}
			if row.Status != job.RowDone || row.Content != `{"ok":true}` || row.SchemaValid == nil || !*row.SchemaValid {
				t.Errorf("row = %+v", row)
			}
			if row.InputTokens != int64(10*tc.wantVotable) {
				t.Errorf("input tokens = %d, want the sum over the runs that answered", row.InputTokens)
			}
		})
	}
}

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "db.sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestTheChatRequestCarriesTheFirstPromptAndThePosition(t *testing.T) {
	j := &job.Job{Prompts: []string{"Extract the totals.", "never sent"}, ResponseSchema: `{"type":"object"}`}
	req := chatRequest(j, job.LLMRow{File: "http://x/v1/files/abc", ChunkIndex: 1, ChunkTotal: 3, Input: "the chunk"})
	if req.Schema == "" || req.User == "" {
		t.Fatalf("request = %+v", req)
	}
	for _, want := range []string{"Extract the totals.", "JSON"} {
		if !strings.Contains(req.System, want) {
			t.Errorf("system %q lacks %q", req.System, want)
		}
	}
	for _, want := range []string{"part 2 of 3", "the chunk", "abc"} {
		if !strings.Contains(req.User, want) {
			t.Errorf("user %q lacks %q", req.User, want)
		}
	}
	if strings.Contains(req.System+req.User, "never sent") {
		t.Error("the second prompt was sent")
	}
}
