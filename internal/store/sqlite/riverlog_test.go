package sqlite_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

type failingArgs struct{}

func (failingArgs) Kind() string { return "sqlite_test_failing" }

type failingWorker struct {
	river.WorkerDefaults[failingArgs]
}

func (failingWorker) Work(context.Context, *river.Job[failingArgs]) error {
	return errors.New("provider down")
}

// logBuffer is a log a test reads while River writes it.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// River's own lines name its integer job ids river_job_id: job_id is
// docjobs' UUID.
func TestRiversLinesNameItsJobIDRiverJobID(t *testing.T) {
	var logs logBuffer
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "docjobs.db"),
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	workers := river.NewWorkers()
	river.AddWorker(workers, failingWorker{})
	stop, err := s.Work(t.Context(), store.WorkConfig{Workers: workers,
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}}, FetchPollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop(context.Background()) }()
	j := &job.Job{ID: uuid.NewString(), AccountID: "acct", Status: job.StatusNew,
		Neural:         job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_1", Model: "m", ChunkBudgetTokens: job.DefaultChunkBudgetTokens},
		ExtractionMode: job.ExtractionHybrid, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", RequestHash: "h",
		Created: time.Now(), SourceURLs: []string{"https://example.com/a.txt"}}
	if _, _, err := s.CreateJob(t.Context(), store.CreateJobParams{Job: j,
		Enqueue: []river.InsertManyParams{{Args: failingArgs{}}}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "Job errored") {
		if time.Now().After(deadline) {
			t.Fatalf("River logged no failed job in 10s:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	line := regexp.MustCompile(`.*Job errored.*`).FindString(logs.String())
	if strings.Contains(line, `"job_id"`) || !regexp.MustCompile(`"river_job_id":\d+`).MatchString(line) {
		t.Errorf("River's line %s; want its id as river_job_id and no job_id", line)
	}
}
