//go:build unix

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// crashDBEnv names the database a child of
// TestADeadlineMergeThatTakesItsProcessDownIsNotRunAtEveryStart sweeps.
const crashDBEnv = "DOCJOBS_TEST_DEADLINE_CRASH_DB"

// TestADeadlineMergeThatTakesItsProcessDownIsNotRunAtEveryStart: the
// deadline sweep runs at every start, takes the oldest overdue job first
// and merges the answers of a merging job it ends. A
// merge that took its process down was run again at every start and took
// every start down with it, the jobs behind it never ending (hunt-endings
// F2). Each start here is a child process that runs one sweep over the
// same SQLite database and kills itself (SIGKILL, before the ending
// commits) when the merge of the oldest job's answers gets as far as
// its unanswered chunk. The first three starts die there; the fourth ends
// that job without its answers merged, saying why, and the job behind it.
func TestADeadlineMergeThatTakesItsProcessDownIsNotRunAtEveryStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ctx := context.Background()
	path := migratedSQLitePath(t)
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// The oldest overdue job merges; one chunk of three never answered.
	merging := &job.Job{ID: "job-merge", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now().Add(-3 * time.Hour),
		Merge: job.Merge{Enabled: true, Scope: "MERGE_SCOPE_JOB", Format: "MERGE_FORMAT_TEXT"}}
	behind := &job.Job{ID: "job-behind", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/b.txt"},
		ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now().Add(-2 * time.Hour)}
	for _, j := range []*job.Job{merging, behind} {
		if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
			t.Fatal(err)
		}
	}
	ocr := job.OCRRow{JobID: merging.ID, File: merging.SourceURLs[0], Status: job.RowDone, Content: "text", OutputFormat: job.FormatPlain}
	rows := make([]job.LLMRow, 3)
	for c := range rows {
		rows[c] = job.LLMRow{JobID: merging.ID, File: ocr.File, ChunkIndex: c, ChunkTotal: 3, Status: job.RowPending, Input: "chunk"}
	}
	if _, err := st.FinishOCR(ctx, store.OCRDone{Row: ocr, LLM: rows}); err != nil {
		t.Fatal(err)
	}
	for c, content := range []string{"one", "two"} {
		r := rows[c]
		r.Status, r.Content = job.RowDone, content
		if _, err := st.FinishLLM(ctx, store.LLMDone{Row: r}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	var killed []bool
	for start := 1; start <= finalizeCrashes+1; start++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDeadlineSweepChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), crashDBEnv+"="+path)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err == nil:
			killed = append(killed, false)
		case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
			killed = append(killed, true)
		default:
			t.Fatalf("start %d: %v\n%s", start, err, out)
		}
	}
	if want := []bool{true, true, true, false}; !slices.Equal(killed, want) {
		t.Fatalf("starts killed by the merge: %v, want %v", killed, want)
	}

	st, err = sqlite.Open(ctx, sqlite.Config{Path: path, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := st.GetResult(ctx, "", merging.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantErr := "the answers were not merged: a process ended while merging them 3 times; each chunk's answer is in its row"
	if res.Job.Status != job.StatusComplete || res.Job.Error != wantErr {
		t.Errorf("merging job %s %q; want COMPLETE %q", res.Job.Status, res.Job.Error, wantErr)
	}
	var merged []struct {
		Content          string            `json:"content"`
		MergeIncomplete  bool              `json:"mergeIncomplete"`
		IncompleteChunks []json.RawMessage `json:"incompleteChunks"`
	}
	if err := json.Unmarshal(res.Merged, &merged); err != nil {
		t.Fatalf("merged %q: %v", res.Merged, err)
	}
	if len(merged) != 1 || merged[0].Content != "" || !merged[0].MergeIncomplete || len(merged[0].IncompleteChunks) != 3 {
		t.Errorf("merged %s; want one entry, no content, its 3 chunks listed as not merged", res.Merged)
	}
	if got, err := st.GetJob(ctx, "", behind.ID); err != nil || got.Status != job.StatusFailed {
		t.Errorf("the job behind it: %v (%v); want it ended by the deadline", got.Status, err)
	}
}

// TestDeadlineSweepChild is one start of
// TestADeadlineMergeThatTakesItsProcessDownIsNotRunAtEveryStart: a sweep
// over its database whose merge kills the process (crashOnMerge).
func TestDeadlineSweepChild(t *testing.T) {
	path := os.Getenv(crashDBEnv)
	if path == "" {
		t.Skip("a child of TestADeadlineMergeThatTakesItsProcessDownIsNotRunAtEveryStart")
	}
	ctx := context.Background()
	log := slog.New(crashOnMerge{slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})})
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &deadlineWorker{cfg: Config{JobDeadline: time.Hour}, deps: Deps{Store: st, Logger: log}}
	if err := w.Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// crashOnMerge kills its process when a merge reaches a chunk without an
// answer, as a merge that runs out of memory would die there. A merge
// given up leaves out the answered chunks before it (their reason is the
// merge's input limit, as for answers not read): it is let through.
type crashOnMerge struct{ slog.Handler }

// mergeGivenUp: this process's merge left an answered chunk out.
var mergeGivenUp atomic.Bool

func (h crashOnMerge) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "merge: chunk left unmerged" {
		r.Attrs(func(a slog.Attr) bool {
			switch {
			case a.Key != "reason":
			case strings.Contains(a.Value.String(), "input limit"):
				mergeGivenUp.Store(true)
			case strings.Contains(a.Value.String(), "no answer") && !mergeGivenUp.Load():
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
			return true
		})
	}
	return h.Handler.Handle(ctx, r)
}

func (h crashOnMerge) WithAttrs(as []slog.Attr) slog.Handler {
	return crashOnMerge{h.Handler.WithAttrs(as)}
}

func (h crashOnMerge) WithGroup(name string) slog.Handler {
	return crashOnMerge{h.Handler.WithGroup(name)}
}
