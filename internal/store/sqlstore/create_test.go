package sqlstore_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
)

// A create's transaction is where every file of the job waits before it
// can start, and on PostgreSQL each statement in it is a round trip: its
// rows go in one statement per table, however many files the job has.
func TestACreatesRoundTripsDoNotGrowWithItsFiles(t *testing.T) {
	raw, schema := pgtest.Schema(t)
	proxied, roundTrips := pgtest.CountingRoundTrips(t, raw)
	s, err := postgres.Open(t.Context(), postgres.Config{URL: proxied, Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	n := 0
	create := func(files int) int64 {
		t.Helper()
		n++
		j := &job.Job{ID: fmt.Sprintf("job-%d", n), AccountID: "a", Status: job.StatusNew, Prompts: []string{"extract"},
			ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
		for i := range files {
			j.SourceURLs = append(j.SourceURLs, fmt.Sprintf("https://example.com/%d.txt", i))
		}
		secrets := []job.SealedSecret{{Field: job.SecretWebhookSecret, Ciphertext: []byte("sealed-1")}, {Field: job.SecretNeuralAPIKey, Ciphertext: []byte("sealed-2")}}
		before := roundTrips()
		if _, _, err := s.CreateJob(t.Context(), store.CreateJobParams{Job: j, Secrets: secrets}); err != nil {
			t.Fatalf("CreateJob of %d files: %v", files, err)
		}
		return roundTrips() - before
	}
	// The first create of each size prepares its statements.
	create(1)
	create(40)
	one, forty := create(1), create(40)
	if one == 0 {
		t.Fatal("no round trip counted for a create")
	}
	if forty != one {
		t.Errorf("a create of 40 files took %d round trips, of one file %d: want the same", forty, one)
	}
}
