package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// BenchmarkEndLook is one look for other processes' ends with nothing
// committed since the last: what a process pays every endPoll while a
// job's end is watched.
func BenchmarkEndLook(b *testing.B) {
	s, err := Open(b.Context(), Config{Path: filepath.Join(b.TempDir(), "docjobs.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := s.ends
	var conn *sql.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	ctx := context.Background()
	for b.Loop() {
		if _, err := p.version(ctx, &conn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecheckWatched is the read of the watched jobs a look makes
// when another connection committed: at most one per endPoll, paid on a
// busy database even for this process's own commits.
func BenchmarkRecheckWatched(b *testing.B) {
	for _, n := range []int{10, 500} {
		b.Run(fmt.Sprintf("%d jobs", n), func(b *testing.B) {
			s, err := Open(b.Context(), Config{Path: filepath.Join(b.TempDir(), "docjobs.db"), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for i := range n {
				j := &job.Job{ID: fmt.Sprintf("job-%d", i), AccountID: "acct", Status: job.StatusNew,
					SourceURLs: []string{"https://example.com/a"}, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
				if _, _, err := s.CreateJob(b.Context(), store.CreateJobParams{Job: j}); err != nil {
					b.Fatal(err)
				}
				_, stop := s.WatchEnd(j.ID)
				defer stop()
			}
			for b.Loop() {
				if err := s.RecheckWatched(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
