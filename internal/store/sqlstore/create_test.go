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
	"github.com/docjobs/docjobs/internal/store/storetest"
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

// The finish of a job's last row ends the job in its own transaction,
// which the job's end waits for. Having found no row pending, it does not
// look for pending rows to fail.
func TestAJobsEndAddsAtMostSevenRoundTripsToItsLastRowsFinish(t *testing.T) {
	raw, schema := pgtest.Schema(t)
	proxied, roundTrips := pgtest.CountingRoundTrips(t, raw)
	s, err := postgres.Open(t.Context(), postgres.Config{URL: proxied, Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	finish := func(row job.LLMRow) int64 {
		t.Helper()
		row.Status, row.Content = job.RowDone, `{"n":1}`
		before := roundTrips()
		if _, err := s.FinishLLM(t.Context(), store.LLMDone{Row: row, EndWhenLast: true}); err != nil {
			t.Fatal(err)
		}
		return roundTrips() - before
	}
	var notLast, last int64
	// The first job prepares the statements.
	for _, id := range []string{"job-warm", "job-1"} {
		j, rows := storetest.Recognized(t, s, id, 2)
		notLast, last = finish(rows[0]), finish(rows[1])
		if got, err := s.GetJob(t.Context(), "", j.ID); err != nil || got.Status != job.StatusComplete {
			t.Fatalf("job after its last row: %v, %v; want it complete", got, err)
		}
	}
	// The end: the pending count, the job read, its OCR rows, its update,
	// the keys erased, the webhook's secret (when it has one), the
	// announcement. Looking for pending rows to fail as well made it nine.
	if added := last - notLast; added > 7 {
		t.Errorf("the job's end added %d round trips to its last row's finish (%d against %d), want at most 7", added, last, notLast)
	}
}
