package storetest

import (
	"fmt"
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

// A file still being recognized when its job ends has no model rows yet:
// it gets the one SKIPPED row ocr_failed of every file whose recognition
// FAILED (DESIGN §4), while a recognized file's pending chunks just fail.
func testEndingAJobGivesFilesStillBeingRecognizedTheirOCRFailedRow(t *testing.T, s Store) {
	for _, end := range []struct {
		name string
		end  func(j *job.Job) error
		err  string
	}{
		{"deadline", func(j *job.Job) error {
			_, err := s.ExpireJob(ctx(t), j.ID, "provider error (category=timeout, status=0)", "job deadline exceeded")
			return err
		}, "provider error (category=timeout, status=0)"},
		{"cancel", func(j *job.Job) error {
			_, err := s.CancelJob(ctx(t), "acct", j.ID)
			return err
		}, "job cancelled"},
	} {
		t.Run(end.name, func(t *testing.T) {
			j := newJob("acct", 3)
			j.Prompts = []string{"Extract."}
			j.Neural.Model = "gpt-4.1"
			createJob(t, s, j, store.CreateJobParams{})
			ocr := doneRow(j, 1, "text")
			_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: []job.LLMRow{pendingChunk(j, ocr, 0, 2), pendingChunk(j, ocr, 1, 2)}})
			noErr(t, "FinishOCR of file 1", err)

			noErr(t, "ending the job", end.end(j))
			res := getResult(t, s, j.ID)
			type row struct {
				File, Chunk, Total    int
				Status, Reason, Model string
				Error                 string
			}
			var got []row
			for _, r := range res.LLM {
				got = append(got, row{r.FileIndex, r.ChunkIndex, r.ChunkTotal, string(r.Status), r.SkipReason, r.Model, r.Error})
			}
			equal(t, "model rows", got, []row{
				{0, 0, 1, "SKIPPED", job.SkipOCRFailed, "gpt-4.1", ""},
				{1, 0, 2, "FAILED", "", "m", end.err},
				{1, 1, 2, "FAILED", "", "m", end.err},
				{2, 0, 1, "SKIPPED", job.SkipOCRFailed, "gpt-4.1", ""},
			})
			for _, i := range []int{0, 2} {
				equal(t, fmt.Sprint("OCR row ", i), [2]string{string(res.OCR[i].Status), res.OCR[i].Error}, [2]string{"FAILED", end.err})
			}
			for _, r := range res.LLM {
				equal(t, fmt.Sprint("file of the model row of file ", r.FileIndex), r.File, res.OCR[r.FileIndex].File)
			}
		})
	}
}
