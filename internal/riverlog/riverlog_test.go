package riverlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/logtest"
)

// newLog is a riverlog logger writing JSON lines a test reads while timers write them.
func newLog(window time.Duration) (*slog.Logger, *logtest.Buffer) {
	out := &logtest.Buffer{}
	return New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}), window), out
}

func TestRiversJobIDIsRenamed(t *testing.T) {
	log, out := newLog(time.Minute)
	log.Info("jobexecutor.JobExecutor: Job errored; retrying", "job_id", 14, "job_kind", "webhook")
	log.With("job_id", 15).Warn("with attrs")
	log.WithGroup("g").Info("grouped", "job_id", 16)
	recs := out.Records(t)
	if len(recs) != 3 {
		t.Fatalf("got %d lines, want 3: %v", len(recs), recs)
	}
	for i, want := range []float64{14, 15} {
		if _, ok := recs[i]["job_id"]; ok || recs[i]["river_job_id"] != want {
			t.Errorf("line %d = %v; want river_job_id %v and no job_id", i, recs[i], want)
		}
	}
	if g, _ := recs[2]["g"].(map[string]any); g["river_job_id"] != float64(16) || g["job_id"] != nil {
		t.Errorf("grouped line = %v; want g.river_job_id 16", recs[2])
	}
}

func TestRepeatedErrorsAreSummedUpOnceAWindow(t *testing.T) {
	const window = 100 * time.Millisecond
	log, out := newLog(window)
	down := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	for range 50 {
		log.Error("producer: Error fetching jobs", "err", down, "queue", "file")
		log.Error("producer: Error fetching jobs", "err", down, "queue", "finalize")
	}
	recs := out.Records(t)
	if len(recs) != 2 || recs[0]["queue"] != "file" || recs[1]["queue"] != "finalize" || recs[0]["repeated"] != nil {
		t.Fatalf("at once: %v; want the first line of each queue, in full", recs)
	}

	// The failure goes on: one summary per line and window, nothing more.
	time.Sleep(window + window/2)
	log.Error("producer: Error fetching jobs", "err", down, "queue", "file")
	recs = out.Records(t)
	if len(recs) != 4 {
		t.Fatalf("after a window: %d lines %v; want the two summaries", len(recs), recs)
	}
	for _, r := range recs[2:] {
		if r["repeated"] != float64(49) || r["within"] != window.String() || r["level"] != "ERROR" ||
			r["msg"] != "producer: Error fetching jobs" || r["err"] != down.Error() {
			t.Errorf("summary %v; want the line with repeated 49 within %s", r, window)
		}
	}

	// The failure ends: one more summary (of the repeat above), then a
	// quiet window forgets the line and its next occurrence is in full.
	time.Sleep(3 * window)
	recs = out.Records(t)
	if len(recs) != 5 || recs[4]["repeated"] != float64(1) || recs[4]["queue"] != "file" {
		t.Fatalf("after the failure: %v; want one summary of 1 repeat", recs)
	}
	log.Error("producer: Error fetching jobs", "err", down, "queue", "file")
	recs = out.Records(t)
	if len(recs) != 6 || recs[5]["repeated"] != nil {
		t.Fatalf("a new failure: %v; want it in full", recs)
	}
}

func TestInfoLinesAndDifferentErrorsAreNotCollapsed(t *testing.T) {
	log, out := newLog(time.Minute)
	for range 3 {
		log.Info("producer: started")
	}
	log.Error("Job errored", "job_id", 1, "error", "a")
	log.Error("Job errored", "job_id", 2, "error", "a")
	if got := len(out.Records(t)); got != 5 {
		t.Errorf("got %d lines, want 5 (info lines and errors of different jobs all written)", got)
	}
}

// River logs a maintenance service's failure with the service's context;
// once that context is cancelled the process is stopping, and an error that
// is only the cancellation is part of a clean stop, not a failure.
func TestACancellationDuringAStopIsNotAnError(t *testing.T) {
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	running := context.Background()
	cases := []struct {
		name      string
		ctx       context.Context
		err       any
		wantLevel string
	}{
		{"cancelled while stopping", stopped, "context canceled", "INFO"},
		{"wrapped cancellation while stopping", stopped, "begin: context canceled", "INFO"},
		{"cancellation as an error value while stopping", stopped, fmt.Errorf("begin: %w", context.Canceled), "INFO"},
		{"real error while stopping", stopped, "dial tcp 127.0.0.1:5432: connect: connection refused", "ERROR"},
		{"cancellation while running", running, "context canceled", "ERROR"},
		{"no error attribute while stopping", stopped, nil, "ERROR"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, out := newLog(time.Minute)
			args := []any{"queue", "file"}
			if c.err != nil {
				args = append(args, "error", c.err)
			}
			log.ErrorContext(c.ctx, "maintenance.PeriodicJobEnqueuer: Error starting transaction", args...)
			recs := out.Records(t)
			if len(recs) != 1 || recs[0]["level"] != c.wantLevel {
				t.Fatalf("got %v; want one line at %s", recs, c.wantLevel)
			}
		})
	}
}
