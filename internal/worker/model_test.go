package worker

import (
	"context"
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

	for range 2 { // the second ask is a retried River job
		a, err := w.ask(ctx, j, row)
		if err != nil || a.Content != `{"n":1}` || a.InputTokens != 10 {
			t.Fatalf("ask = %+v, %v", a, err)
		}
	}
	if n := chat.calls.Load(); n != 1 {
		t.Fatalf("provider asked %d times for one chunk, want once", n)
	}
	row.ChunkIndex = 4
	if _, err := w.ask(ctx, j, row); err != nil || chat.calls.Load() != 2 {
		t.Fatalf("another chunk: %v, %d calls", err, chat.calls.Load())
	}
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
