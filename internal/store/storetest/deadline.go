package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

func testExpireJobFailsWhatIsLeftOnce(t *testing.T, s Store) {
	old := newJob("acct", 2)
	createJob(t, s, old, store.CreateJobParams{Secrets: []job.SealedSecret{{Field: job.SecretOCRProviderKey, Ciphertext: []byte("k")}}})
	cutoff := time.Now().Add(time.Second)
	ids, err := s.OverdueJobs(ctx(t), cutoff, 10)
	noErr(t, "OverdueJobs", err)
	if !slices.Contains(ids, old.ID) {
		t.Fatalf("overdue = %v, want %s", ids, old.ID)
	}

	const rowErr = "provider error (category=timeout, status=0)"
	applied, err := s.ExpireJob(ctx(t), old.ID, rowErr, "job deadline exceeded")
	noErr(t, "ExpireJob", err)
	equal(t, "applied", applied, true)
	res := getResult(t, s, old.ID)
	equal(t, "job status", res.Job.Status, job.StatusFailed)
	equal(t, "job error", res.Job.Error, "job deadline exceeded")
	for _, r := range res.OCR {
		equal(t, "row status", r.Status, job.RowFailed)
		equal(t, "row error", r.Error, rowErr)
	}
	secrets, err := s.JobSecrets(ctx(t), old.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "provider keys after the deadline", len(secrets), 0)

	applied, err = s.ExpireJob(ctx(t), old.ID, rowErr, "again")
	noErr(t, "ExpireJob again", err)
	equal(t, "applied again", applied, false)
	ids, err = s.OverdueJobs(ctx(t), cutoff, 10)
	noErr(t, "OverdueJobs", err)
	if slices.Contains(ids, old.ID) {
		t.Fatalf("an ended job is still overdue: %v", ids)
	}
}
