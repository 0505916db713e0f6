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
	old.WebhookURL = "https://hooks.example.com/late"
	createJob(t, s, old, store.CreateJobParams{Secrets: []job.SealedSecret{
		{Field: job.SecretNeuralAPIKey, Ciphertext: []byte("n")},
		{Field: job.SecretOCRProviderKey, Ciphertext: []byte("k")},
		{Field: job.SecretWebhookSecret, Ciphertext: []byte("w")},
	}})
	// Without a webhook URL the deadline erases the webhook secret too:
	// nothing will ever need it.
	quiet := newJob("acct", 1)
	createJob(t, s, quiet, store.CreateJobParams{Secrets: []job.SealedSecret{
		{Field: job.SecretOCRProviderKey, Ciphertext: []byte("k")},
		{Field: job.SecretWebhookSecret, Ciphertext: []byte("w")},
	}})
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
	// The delivery is enqueued by ExpireJob's own transaction: it is there
	// when ExpireJob returns, with nothing else having run.
	equal(t, "webhook deliveries enqueued", webhookJobs(t, s, old.ID), 1)
	secrets, err := s.JobSecrets(ctx(t), old.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "secrets after the deadline (only the webhook's)", secrets,
		[]job.SealedSecret{{Field: job.SecretWebhookSecret, Ciphertext: []byte("w")}})

	applied, err = s.ExpireJob(ctx(t), quiet.ID, rowErr, "job deadline exceeded")
	noErr(t, "ExpireJob without a webhook", err)
	equal(t, "applied without a webhook", applied, true)
	secrets, err = s.JobSecrets(ctx(t), quiet.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "secrets after the deadline without a webhook URL", len(secrets), 0)
	equal(t, "webhook deliveries enqueued without a webhook URL", webhookJobs(t, s, quiet.ID), 0)

	applied, err = s.ExpireJob(ctx(t), old.ID, rowErr, "again")
	noErr(t, "ExpireJob again", err)
	equal(t, "applied again", applied, false)
	equal(t, "webhook deliveries after a second ExpireJob", webhookJobs(t, s, old.ID), 1)
	ids, err = s.OverdueJobs(ctx(t), cutoff, 10)
	noErr(t, "OverdueJobs", err)
	if slices.Contains(ids, old.ID) {
		t.Fatalf("an ended job is still overdue: %v", ids)
	}
}
