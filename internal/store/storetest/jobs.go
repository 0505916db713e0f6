package storetest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

func testCreateJobRoundTrip(t *testing.T, s Store) {
	in := &job.Job{
		ID:             newID("job"),
		AccountID:      "acct",
		Title:          "Quarterly report",
		Metadata:       map[string]string{"customer": "42", "empty": ""},
		Status:         job.StatusNew,
		SourceURLs:     []string{"https://example.com/a.pdf", "https://example.com/b.html"},
		Prompts:        []string{"Extract the total.", "Extract the date."},
		Neural:         job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_2", Model: "gpt", ChunkBudgetTokens: 1234},
		OCR:            job.OCR{Provider: "NEURAL_CLIENT_TYPE_PROVIDER_1", Model: "mistral-ocr-latest"},
		ExtractionMode: job.ExtractionOCRAlways,
		ResponseSchema: `{"type":"object"}`,
		ConsensusMode:  "CONSENSUS_MODE_THREE_RUNS",
		Merge: job.Merge{Enabled: true, Scope: "MERGE_SCOPE_FILE", ConflictPolicy: "MERGE_CONFLICT_POLICY_FIRST",
			DedupeBy: []string{"id", "name"}, Format: "MERGE_FORMAT_JSON"},
		WebhookURL:     "https://hooks.example.com/x",
		IdempotencyKey: "key-1",
		RequestHash:    "sha256:abc",
		Created:        baseTime,
		Updated:        baseTime.Add(time.Second),
	}
	got := createJob(t, s, in, store.CreateJobParams{})

	want := *in
	want.Files = in.SourceURLs // nothing stored yet
	want.Created = time.Date(2026, 3, 4, 3, 6, 7, 123456000, time.UTC)
	want.Updated = want.Created.Add(time.Second)
	want.Webhook.State = job.WebhookPending // it has a webhook URL
	equal(t, "CreateJob result", *got, want)
	equal(t, "GetJob", *getJob(t, s, in.ID), want)
	if loc := getJob(t, s, in.ID).Created.Location(); loc != time.UTC {
		t.Errorf("Created location = %v, want UTC", loc)
	}

	// Empty collections read back as nil, however they were written.
	bare := newJob("acct", 1)
	bare.Metadata, bare.Prompts = map[string]string{}, []string{}
	createJob(t, s, bare, store.CreateJobParams{})
	b := getJob(t, s, bare.ID)
	if b.Metadata != nil || b.Prompts != nil || b.Merge.DedupeBy != nil {
		t.Errorf("empty collections = %#v %#v %#v, want nil", b.Metadata, b.Prompts, b.Merge.DedupeBy)
	}
}

func testCreateJobWritesEverything(t *testing.T, s Store) {
	j := newJob("acct", 3)
	secrets := []job.SealedSecret{
		{Field: job.SecretNeuralAPIKey, Ciphertext: []byte{0, 1, 2, 255}},
		{Field: job.SecretWebhookSecret, Ciphertext: []byte("sealed-webhook")},
	}
	createJob(t, s, j, store.CreateJobParams{Secrets: secrets, Enqueue: []river.InsertManyParams{parked("first-stage")}})

	res := getResult(t, s, j.ID)
	equal(t, "OCR rows", len(res.OCR), 3)
	for i, r := range res.OCR {
		want := job.OCRRow{JobID: j.ID, FileIndex: i, File: j.SourceURLs[i], Status: job.RowPending,
			Created: res.Job.Created, Updated: res.Job.Created}
		equal(t, fmt.Sprintf("OCR row %d", i), r, want)
	}
	equal(t, "LLM rows", len(res.LLM), 0)

	got, err := s.JobSecrets(ctx(t), j.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "secrets (by field)", got, secrets)
	none, err := s.JobSecrets(ctx(t), "job_missing")
	noErr(t, "JobSecrets of a missing job", err)
	equal(t, "secrets of a missing job", len(none), 0)

	equal(t, "River jobs inserted with the job", parkedNotes(t, s), []string{"first-stage"})

	// Whether the webhook is signed is kept apart from its secret, which is
	// erased when the delivery ends; it follows the secrets given, not the
	// caller's flag.
	equal(t, "webhook signed with a webhook secret", getJob(t, s, j.ID).WebhookSigned, true)
	unsigned := newJob("acct", 1)
	unsigned.WebhookSigned = true
	createJob(t, s, unsigned, store.CreateJobParams{Secrets: []job.SealedSecret{{Field: job.SecretNeuralAPIKey, Ciphertext: []byte("n")}}})
	equal(t, "webhook signed without a webhook secret", getJob(t, s, unsigned.ID).WebhookSigned, false)
}

func testIdempotency(t *testing.T, s Store) {
	first := newJob("acct", 1)
	first.IdempotencyKey = "k"
	createJob(t, s, first, store.CreateJobParams{Enqueue: []river.InsertManyParams{parked("first")}})

	t.Run("same request replays the original job", func(t *testing.T) {
		again := newJob("acct", 1)
		again.IdempotencyKey = "k"
		got, replayed, err := s.CreateJob(ctx(t), store.CreateJobParams{Job: again,
			Secrets: []job.SealedSecret{{Field: job.SecretNeuralAPIKey, Ciphertext: []byte("x")}},
			Enqueue: []river.InsertManyParams{parked("replay")}})
		noErr(t, "CreateJob", err)
		if !replayed || got.ID != first.ID {
			t.Errorf("replayed = %v, id = %s; want true, %s", replayed, got.ID, first.ID)
		}
		_, err = s.GetJob(ctx(t), "", again.ID)
		isErr(t, "the replay's own job", err, store.ErrNotFound)
		secrets, err := s.JobSecrets(ctx(t), again.ID)
		noErr(t, "JobSecrets", err)
		equal(t, "the replay's secrets", len(secrets), 0)
	})
	t.Run("different request is refused", func(t *testing.T) {
		other := newJob("acct", 1)
		other.IdempotencyKey, other.RequestHash = "k", "hash-2"
		_, _, err := s.CreateJob(ctx(t), store.CreateJobParams{Job: other})
		isErr(t, "CreateJob", err, store.ErrIdempotencyMismatch)
	})
	t.Run("keys are per account", func(t *testing.T) {
		j := newJob("other-acct", 1)
		j.IdempotencyKey = "k"
		createJob(t, s, j, store.CreateJobParams{})
	})
	t.Run("no key never replays", func(t *testing.T) {
		createJob(t, s, newJob("acct", 1), store.CreateJobParams{})
		createJob(t, s, newJob("acct", 1), store.CreateJobParams{})
	})
	t.Run("replay only returns the job of the same request", func(t *testing.T) {
		again := newJob("acct", 1)
		again.IdempotencyKey = "k"
		got, replayed, err := s.CreateJob(ctx(t), store.CreateJobParams{Job: again, ReplayOnly: true,
			Enqueue: []river.InsertManyParams{parked("replay only")}})
		noErr(t, "CreateJob", err)
		if !replayed || got.ID != first.ID {
			t.Errorf("replayed = %v, id = %s; want true, %s", replayed, got.ID, first.ID)
		}
	})
	t.Run("replay only of a legacy hash returns the job", func(t *testing.T) {
		again := newJob("acct", 1)
		again.IdempotencyKey, again.RequestHash = "k", "keyed"
		got, replayed, err := s.CreateJob(ctx(t), store.CreateJobParams{Job: again, ReplayOnly: true, LegacyRequestHashes: []string{"older", first.RequestHash}})
		noErr(t, "CreateJob", err)
		if !replayed || got.ID != first.ID {
			t.Errorf("replayed = %v, id = %s; want true, %s", replayed, got.ID, first.ID)
		}
	})
	t.Run("replay only of a different request is refused", func(t *testing.T) {
		other := newJob("acct", 1)
		other.IdempotencyKey, other.RequestHash = "k", "hash-2"
		_, _, err := s.CreateJob(ctx(t), store.CreateJobParams{Job: other, ReplayOnly: true})
		isErr(t, "CreateJob", err, store.ErrIdempotencyMismatch)
	})
	t.Run("replay only creates nothing", func(t *testing.T) {
		for _, key := range []string{"unused", ""} {
			j := newJob("acct", 1)
			j.IdempotencyKey = key
			_, _, err := s.CreateJob(ctx(t), store.CreateJobParams{Job: j, ReplayOnly: true,
				Enqueue: []river.InsertManyParams{parked("replay only, new key")}})
			isErr(t, "CreateJob with key "+key, err, store.ErrNotFound)
			_, err = s.GetJob(ctx(t), "", j.ID)
			isErr(t, "the job of key "+key, err, store.ErrNotFound)
		}
	})
	equal(t, "River jobs (replays insert none)", parkedNotes(t, s), []string{"first"})
}

func testConcurrentIdempotency(t *testing.T, s Store) {
	const n = 20
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ids      = map[string]int{}
		replayed int
	)
	for i := range n {
		wg.Go(func() {
			j := newJob("acct", 1)
			j.IdempotencyKey = "same-key"
			got, rep, err := s.CreateJob(ctx(t), store.CreateJobParams{Job: j,
				Enqueue: []river.InsertManyParams{parked(fmt.Sprint("create ", i))}})
			if err != nil {
				t.Errorf("create %d: %v", i, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[got.ID]++
			if rep {
				replayed++
			}
		})
	}
	wg.Wait()
	equal(t, "distinct job ids", len(ids), 1)
	equal(t, "replayed creates", replayed, n-1)
	page, err := s.ListJobs(ctx(t), store.ListParams{AccountID: "acct", PageSize: 100})
	noErr(t, "ListJobs", err)
	equal(t, "jobs stored", len(page.Jobs), 1)
	equal(t, "River jobs stored", len(parkedNotes(t, s)), 1)
}

func testAccountIsolation(t *testing.T, s Store) {
	j := newJob("alice", 1)
	createJob(t, s, j, store.CreateJobParams{})

	_, err := s.GetJob(ctx(t), "alice", j.ID)
	noErr(t, "GetJob by its owner", err)
	_, err = s.GetJob(ctx(t), "", j.ID)
	noErr(t, "GetJob by a worker (any account)", err)

	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"GetJob", func() error { _, err := s.GetJob(ctx(t), "bob", j.ID); return err }},
		{"GetResult", func() error { _, err := s.GetResult(ctx(t), "bob", j.ID); return err }},
		{"CancelJob", func() error { _, err := s.CancelJob(ctx(t), "bob", j.ID); return err }},
		{"DeleteJob", func() error { _, err := s.DeleteJob(ctx(t), "bob", j.ID); return err }},
		{"GetJob of a missing job", func() error { _, err := s.GetJob(ctx(t), "", "job_missing"); return err }},
	} {
		isErr(t, tc.name+" by another account", tc.call(), store.ErrNotFound)
	}
	page, err := s.ListJobs(ctx(t), store.ListParams{AccountID: "bob", PageSize: 10})
	noErr(t, "ListJobs", err)
	equal(t, "jobs listed for another account", len(page.Jobs), 0)
	equal(t, "job after another account's cancel", getJob(t, s, j.ID).Status, job.StatusNew)
}

// createSpaced creates n jobs of account, one microsecond apart, pairs of them
// sharing a creation time so that the id breaks ties; it returns their ids
// newest first (the listing order).
func createSpaced(t *testing.T, s store.Store, account string, n int) []string {
	t.Helper()
	type key struct {
		created time.Time
		id      string
	}
	var keys []key
	for i := range n {
		j := newJob(account, 1)
		j.Created = baseTime.Add(time.Duration(i/2) * time.Microsecond)
		createJob(t, s, j, store.CreateJobParams{})
		keys = append(keys, key{truncUTC(j.Created), j.ID})
	}
	// Newest first: created descending, then id descending.
	for i := range keys {
		for k := i + 1; k < len(keys); k++ {
			a, b := keys[i], keys[k]
			if b.created.After(a.created) || (b.created.Equal(a.created) && b.id > a.id) {
				keys[i], keys[k] = b, a
			}
		}
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	return ids
}

func truncUTC(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// listAll pages through a listing and returns the ids in order.
func listAll(t *testing.T, s store.Store, p store.ListParams, between func()) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("listing does not end")
		}
		page, err := s.ListJobs(ctx(t), p)
		noErr(t, "ListJobs", err)
		if len(page.Jobs) > p.PageSize {
			t.Fatalf("page of %d jobs, size %d", len(page.Jobs), p.PageSize)
		}
		for _, j := range page.Jobs {
			ids = append(ids, j.ID)
		}
		if page.NextPageToken == "" {
			return ids
		}
		if between != nil {
			between()
		}
		p.PageToken = page.NextPageToken
	}
}

func testListJobsPages(t *testing.T, s Store) {
	want := createSpaced(t, s, "acct", 11)
	createSpaced(t, s, "other", 3)

	for _, size := range []int{1, 4, 11, 50} {
		got := listAll(t, s, store.ListParams{AccountID: "acct", PageSize: size}, nil)
		equal(t, fmt.Sprintf("ids with page size %d", size), got, want)
	}
	page, err := s.ListJobs(ctx(t), store.ListParams{AccountID: "acct", PageSize: 11})
	noErr(t, "ListJobs", err)
	equal(t, "token of an exactly full last page", page.NextPageToken, "")
}

func testListJobsStatusFilter(t *testing.T, s Store) {
	ids := createSpaced(t, s, "acct", 6)
	for _, id := range ids[:3] {
		_, err := s.CancelJob(ctx(t), "acct", id)
		noErr(t, "CancelJob", err)
	}
	got := listAll(t, s, store.ListParams{AccountID: "acct", Status: job.StatusCancelled, PageSize: 2}, nil)
	equal(t, "cancelled jobs", got, ids[:3])
	got = listAll(t, s, store.ListParams{AccountID: "acct", Status: job.StatusNew, PageSize: 2}, nil)
	equal(t, "new jobs", got, ids[3:])
	got = listAll(t, s, store.ListParams{AccountID: "acct", Status: job.StatusComplete, PageSize: 2}, nil)
	equal(t, "complete jobs", len(got), 0)
}

func testListJobsBadTokens(t *testing.T, s Store) {
	createSpaced(t, s, "acct", 3)
	createSpaced(t, s, "other", 3)
	page, err := s.ListJobs(ctx(t), store.ListParams{AccountID: "acct", PageSize: 1})
	noErr(t, "ListJobs", err)
	token := page.NextPageToken
	filtered, err := s.ListJobs(ctx(t), store.ListParams{AccountID: "acct", Status: job.StatusNew, PageSize: 1})
	noErr(t, "ListJobs", err)

	for _, tc := range []struct {
		name string
		p    store.ListParams
	}{
		{"not base64", store.ListParams{AccountID: "acct", PageToken: "!!!"}},
		{"not json", store.ListParams{AccountID: "acct", PageToken: base64.RawURLEncoding.EncodeToString([]byte("nope"))}},
		{"empty json", store.ListParams{AccountID: "acct", PageToken: base64.RawURLEncoding.EncodeToString([]byte("{}"))}},
		{"truncated", store.ListParams{AccountID: "acct", PageToken: token[:len(token)/2]}},
		{"another account", store.ListParams{AccountID: "other", PageToken: token}},
		{"another status filter", store.ListParams{AccountID: "acct", Status: job.StatusNew, PageToken: token}},
		{"filter dropped", store.ListParams{AccountID: "acct", PageToken: filtered.NextPageToken}},
		// Times no row can have: PostgreSQL refused those before 4713 BC
		// (an internal error, audit-api3 F4).
		{"a time before 4713 BC", store.ListParams{AccountID: "acct", PageToken: forgedToken("", "acct", -220752000000000000)}},
		{"the least time", store.ListParams{AccountID: "acct", PageToken: forgedToken("", "acct", math.MinInt64)}},
		{"a time before 1970", store.ListParams{AccountID: "acct", PageToken: forgedToken("", "acct", -1)}},
		{"a time after 9999", store.ListParams{AccountID: "acct", PageToken: forgedToken("", "acct", 253402300800000000)}},
		{"the greatest time", store.ListParams{AccountID: "acct", PageToken: forgedToken("", "acct", math.MaxInt64)}},
	} {
		tc.p.PageSize = 10
		_, err := s.ListJobs(ctx(t), tc.p)
		isErr(t, tc.name, err, store.ErrBadPageToken)
	}
	_, err = s.ListJobs(ctx(t), store.ListParams{AccountID: "acct", PageSize: 10, PageToken: token})
	noErr(t, "the token in its own listing", err)
	// The bounds themselves are times a row could have.
	for _, c := range []int64{0, 253402300799999999} {
		_, err = s.ListJobs(ctx(t), store.ListParams{AccountID: "acct", PageSize: 10, PageToken: forgedToken("", "acct", c)})
		noErr(t, fmt.Sprintf("a token at %d", c), err)
	}
}

// forgedToken is a page token made by hand, as a client can make one: the
// token is base64 JSON (sqlstore's pageToken) with kind k, account a and
// the time c in Unix microseconds.
func forgedToken(kind, account string, c int64) string {
	b, _ := json.Marshal(map[string]any{"k": kind, "a": account, "c": c, "i": "x"}) // plain map: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

func testListJobsConcurrentCreates(t *testing.T, s Store) {
	before := createSpaced(t, s, "acct", 25)

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			j := newJob("acct", 1) // created now: newer than every listed job
			if _, _, err := s.CreateJob(ctx(t), store.CreateJobParams{Job: j}); err != nil {
				t.Errorf("concurrent create: %v", err)
				return
			}
		}
	}()
	got := listAll(t, s, store.ListParams{AccountID: "acct", PageSize: 4}, func() { time.Sleep(2 * time.Millisecond) })
	close(stop)
	<-done

	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Errorf("job %s listed twice", id)
		}
		seen[id] = true
	}
	for _, id := range before {
		if !seen[id] {
			t.Errorf("job %s created before listing was not listed", id)
		}
	}
}

func testCancelJob(t *testing.T, s Store) {
	j := newJob("acct", 2)
	j.WebhookURL = "https://hooks.example.com/cancel"
	createJob(t, s, j, store.CreateJobParams{Secrets: []job.SealedSecret{
		{Field: job.SecretNeuralAPIKey, Ciphertext: []byte("n")},
		{Field: job.SecretOCRProviderKey, Ciphertext: []byte("o")},
		{Field: job.SecretWebhookSecret, Ciphertext: []byte("w")},
	}})
	before := time.Now().Add(-time.Second)

	got, err := s.CancelJob(ctx(t), "acct", j.ID)
	noErr(t, "CancelJob", err)
	equal(t, "returned status", got.Status, job.StatusCancelled)
	if got.Updated.Before(before) {
		t.Errorf("updated = %v, want now", got.Updated)
	}
	res := getResult(t, s, j.ID)
	equal(t, "stored job", *res.Job, *got)
	for _, r := range res.OCR {
		if r.Status != job.RowFailed || r.Error != "job cancelled" {
			t.Errorf("OCR row %d: %s %q, want FAILED \"job cancelled\"", r.FileIndex, r.Status, r.Error)
		}
	}
	secrets, err := s.JobSecrets(ctx(t), j.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "secrets left (only the webhook's)", secrets,
		[]job.SealedSecret{{Field: job.SecretWebhookSecret, Ciphertext: []byte("w")}})
	equal(t, "webhook deliveries enqueued", webhookJobs(t, s, j.ID), 1)

	// Without a webhook URL nothing will need the webhook secret.
	quiet := newJob("acct", 1)
	createJob(t, s, quiet, store.CreateJobParams{Secrets: []job.SealedSecret{{Field: job.SecretWebhookSecret, Ciphertext: []byte("w")}}})
	_, err = s.CancelJob(ctx(t), "acct", quiet.ID)
	noErr(t, "CancelJob without a webhook", err)
	secrets, err = s.JobSecrets(ctx(t), quiet.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "secrets left without a webhook URL", len(secrets), 0)
	equal(t, "webhook deliveries enqueued without a webhook URL", webhookJobs(t, s, quiet.ID), 0)

	_, err = s.CancelJob(ctx(t), "acct", j.ID)
	isErr(t, "cancelling again", err, store.ErrTerminal)
	_, err = s.CancelJob(ctx(t), "acct", "job_missing")
	isErr(t, "cancelling a missing job", err, store.ErrNotFound)
}

// testAFileNeverStoredNamesItsSourceURL ends a job of two files, one of
// them stored, in each way a job can end before its other file is: that file
// is named by its source URL in job.Files and in every row, so that no row
// of an ended job lacks its file.
func testAFileNeverStoredNamesItsSourceURL(t *testing.T, s Store) {
	tests := []struct {
		name string
		end  func(t *testing.T, j *job.Job)
	}{
		{"while the job runs", func(*testing.T, *job.Job) {}},
		{"once the job is cancelled", func(t *testing.T, j *job.Job) {
			_, err := s.CancelJob(ctx(t), j.AccountID, j.ID)
			noErr(t, "CancelJob", err)
		}},
		{"once the job passed its deadline", func(t *testing.T, j *job.Job) {
			applied, err := s.ExpireJob(ctx(t), j.ID, "provider error (category=timeout, status=0)", "job deadline exceeded")
			noErr(t, "ExpireJob", err)
			equal(t, "ExpireJob applied", applied, true)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob("acct", 2)
			createJob(t, s, j, store.CreateJobParams{})
			stored := doneRow(j, 1, "text")
			applied, err := s.FinishOCR(ctx(t), store.OCRDone{Row: stored, LLM: []job.LLMRow{noPromptRow(stored)}})
			noErr(t, "FinishOCR", err)
			equal(t, "FinishOCR applied", applied, true)
			tt.end(t, j)

			res := getResult(t, s, j.ID)
			equal(t, "job files", res.Job.Files, []string{j.SourceURLs[0], stored.File})
			for _, r := range res.OCR {
				equal(t, fmt.Sprintf("file of OCR row %d (%s)", r.FileIndex, r.Status), r.File, res.Job.Files[r.FileIndex])
			}
			for _, r := range res.LLM {
				equal(t, fmt.Sprintf("file of model row %d/%d (%s)", r.FileIndex, r.ChunkIndex, r.Status), r.File, res.Job.Files[r.FileIndex])
			}
		})
	}
}

func testDeleteJob(t *testing.T, s Store) {
	j := newJob("acct", 2)
	createJob(t, s, j, store.CreateJobParams{Secrets: []job.SealedSecret{{Field: job.SecretNeuralAPIKey, Ciphertext: []byte("k")}}})
	keep := newJob("acct", 1)
	createJob(t, s, keep, store.CreateJobParams{Secrets: []job.SealedSecret{{Field: job.SecretNeuralAPIKey, Ciphertext: []byte("k2")}}})
	files := []job.File{
		{ID: newID("file"), AccountID: "acct", JobID: j.ID, Name: "a.txt", Key: "blobs/a"},
		{ID: newID("file"), AccountID: "acct", JobID: j.ID, Name: "b.txt", Key: "blobs/b"},
		{ID: newID("file"), AccountID: "acct", JobID: keep.ID, Name: "c.txt", Key: "blobs/c"},
		{ID: newID("file"), AccountID: "acct", Name: "upload.txt", Key: "blobs/upload"},
	}
	for _, f := range files {
		noErr(t, "CreateFile", s.CreateFile(ctx(t), f))
	}

	keys, err := s.DeleteJob(ctx(t), "acct", j.ID)
	noErr(t, "DeleteJob", err)
	if len(keys) != 2 || !(keys[0] == "blobs/a" && keys[1] == "blobs/b" || keys[0] == "blobs/b" && keys[1] == "blobs/a") {
		t.Errorf("blob keys = %v, want blobs/a and blobs/b", keys)
	}
	_, err = s.GetJob(ctx(t), "", j.ID)
	isErr(t, "GetJob after delete", err, store.ErrNotFound)
	_, err = s.GetResult(ctx(t), "", j.ID)
	isErr(t, "GetResult after delete", err, store.ErrNotFound)
	secrets, err := s.JobSecrets(ctx(t), j.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "secrets after delete", len(secrets), 0)
	for _, f := range files[:2] {
		_, err := s.GetFile(ctx(t), "", f.ID)
		isErr(t, "job copy after delete", err, store.ErrNotFound)
	}
	for _, f := range files[2:] {
		_, err := s.GetFile(ctx(t), "acct", f.ID)
		noErr(t, "another job's file and the upload survive", err)
	}
	equal(t, "other job's rows", len(getResult(t, s, keep.ID).OCR), 1)
	secrets, err = s.JobSecrets(ctx(t), keep.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "other job's secrets", len(secrets), 1)

	_, err = s.DeleteJob(ctx(t), "acct", j.ID)
	isErr(t, "deleting again", err, store.ErrNotFound)
}

// testSharedCopy: the files of a job that read one stored file have a
// record each, naming one copy, which the delete returns once.
func testSharedCopy(t *testing.T, s Store) {
	j := newJob("acct", 3)
	createJob(t, s, j, store.CreateJobParams{})
	other := newJob("acct", 1)
	createJob(t, s, other, store.CreateJobParams{})
	shared, own := "jobs/"+j.ID+"/src-1", "jobs/"+j.ID+"/2-x"
	for _, f := range []job.File{
		{ID: newID("file"), AccountID: "acct", JobID: j.ID, Name: "a.txt", Key: shared},
		{ID: newID("file"), AccountID: "acct", JobID: j.ID, Name: "a.txt", Key: shared},
		{ID: newID("file"), AccountID: "acct", JobID: j.ID, Name: "b.txt", Key: own},
		{ID: newID("file"), AccountID: "acct", JobID: other.ID, Name: "c.txt", Key: "jobs/" + other.ID + "/src-1"},
	} {
		noErr(t, "CreateFile", s.CreateFile(ctx(t), f))
	}
	for _, tt := range []struct {
		job, key string
		want     bool
	}{
		{j.ID, shared, true},
		{j.ID, own, true},
		{j.ID, "jobs/" + j.ID + "/src-2", false},
		{other.ID, shared, false}, // another job's records do not count
		{other.ID, "jobs/" + other.ID + "/src-1", true},
	} {
		got, err := s.JobFileKeyRecorded(ctx(t), tt.job, tt.key)
		noErr(t, "JobFileKeyRecorded", err)
		equal(t, "JobFileKeyRecorded("+tt.key+")", got, tt.want)
	}
	keys, err := s.DeleteJob(ctx(t), "acct", j.ID)
	noErr(t, "DeleteJob", err)
	equal(t, "blob keys", strings.Join(keys, " "), own+" "+shared)
	got, err := s.JobFileKeyRecorded(ctx(t), j.ID, shared)
	noErr(t, "JobFileKeyRecorded", err)
	equal(t, "JobFileKeyRecorded after the delete", got, false)
}

func testDeleteJobRecordsFileRemoval(t *testing.T, s Store) {
	j := newJob("acct", 1)
	createJob(t, s, j, store.CreateJobParams{})
	keep := newJob("acct", 1)
	createJob(t, s, keep, store.CreateJobParams{})
	noErr(t, "CreateFile", s.CreateFile(ctx(t), job.File{ID: newID("file"), AccountID: "acct", JobID: j.ID, Name: "a.txt", Key: "jobs/" + j.ID + "/0-a"}))
	bare := newJob("acct", 1) // deleted before any file was stored
	createJob(t, s, bare, store.CreateJobParams{})

	before := time.Now().Add(-time.Minute)
	_, err := s.DeleteJob(ctx(t), "bob", j.ID)
	isErr(t, "DeleteJob of another account's job", err, store.ErrNotFound)
	_, err = s.DeleteJob(ctx(t), "acct", j.ID)
	noErr(t, "DeleteJob", err)
	_, err = s.DeleteJob(ctx(t), "", bare.ID) // as retention deletes
	noErr(t, "DeleteJob", err)

	later := time.Now().Add(time.Hour)
	pending, err := s.PendingFileRemovals(ctx(t), later, 10)
	noErr(t, "PendingFileRemovals", err)
	byJob := map[string]store.FileRemoval{}
	for _, r := range pending {
		if r.Deleted.Before(before) || r.Deleted.After(later) {
			t.Errorf("removal of %s deleted at %v, want about now", r.JobID, r.Deleted)
		}
		r.Deleted = time.Time{}
		byJob[r.JobID] = r
	}
	equal(t, "removals", byJob, map[string]store.FileRemoval{
		j.ID:    {JobID: j.ID, AccountID: "acct", Keys: []string{"jobs/" + j.ID + "/0-a"}},
		bare.ID: {JobID: bare.ID, AccountID: "acct"},
	})
	// The sweep leaves a fresh delete to the request that made it.
	pending, err = s.PendingFileRemovals(ctx(t), before, 10)
	noErr(t, "PendingFileRemovals before the deletes", err)
	equal(t, "removals of jobs deleted before a minute ago", len(pending), 0)
	pending, err = s.PendingFileRemovals(ctx(t), later, 1)
	noErr(t, "PendingFileRemovals", err)
	equal(t, "removals within a limit of 1", len(pending), 1)

	noErr(t, "FileRemovalDone", s.FileRemovalDone(ctx(t), j.ID))
	noErr(t, "FileRemovalDone again", s.FileRemovalDone(ctx(t), j.ID))
	pending, err = s.PendingFileRemovals(ctx(t), later, 10)
	noErr(t, "PendingFileRemovals", err)
	if len(pending) != 1 || pending[0].JobID != bare.ID {
		t.Errorf("removals after one is done = %+v, want only %s", pending, bare.ID)
	}
}

func testMarkRunning(t *testing.T, s Store) {
	j := newJob("acct", 1)
	createJob(t, s, j, store.CreateJobParams{})
	noErr(t, "MarkRunning", s.MarkRunning(ctx(t), j.ID))
	equal(t, "status", getJob(t, s, j.ID).Status, job.StatusRunning)
	noErr(t, "MarkRunning a running job", s.MarkRunning(ctx(t), j.ID))

	_, err := s.CancelJob(ctx(t), "acct", j.ID)
	noErr(t, "CancelJob", err)
	noErr(t, "MarkRunning a cancelled job", s.MarkRunning(ctx(t), j.ID))
	equal(t, "status after MarkRunning of a cancelled job", getJob(t, s, j.ID).Status, job.StatusCancelled)

	isErr(t, "MarkRunning a missing job", s.MarkRunning(ctx(t), "job_missing"), store.ErrNotFound)
}

func testJobCounts(t *testing.T, s Store) {
	counts, err := s.JobCountsByStatus(ctx(t))
	noErr(t, "JobCountsByStatus", err)
	equal(t, "counts of an empty store", counts, map[job.Status]int{
		job.StatusNew: 0, job.StatusRunning: 0, job.StatusComplete: 0, job.StatusFailed: 0, job.StatusCancelled: 0,
	})
	ids := createSpaced(t, s, "acct", 4)
	noErr(t, "MarkRunning", s.MarkRunning(ctx(t), ids[0]))
	_, err = s.CancelJob(ctx(t), "acct", ids[1])
	noErr(t, "CancelJob", err)
	counts, err = s.JobCountsByStatus(ctx(t))
	noErr(t, "JobCountsByStatus", err)
	equal(t, "counts", counts, map[job.Status]int{
		job.StatusNew: 2, job.StatusRunning: 1, job.StatusComplete: 0, job.StatusFailed: 0, job.StatusCancelled: 1,
	})
}

func testWebhookAttemptsAndRetention(t *testing.T, s Store) {
	j := newJob("acct", 1)
	j.WebhookURL = "https://hooks.example.com/x"
	createJob(t, s, j, store.CreateJobParams{Secrets: []job.SealedSecret{
		{Field: job.SecretWebhookSecret, Ciphertext: []byte("w")}}})
	_, err := s.CancelJob(ctx(t), "acct", j.ID)
	noErr(t, "CancelJob", err)
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

	d, err := s.RecordWebhookAttempt(ctx(t), store.WebhookAttempt{JobID: j.ID, Status: 500, Error: "receiver answered 500",
		At: at, Duration: time.Second, State: job.WebhookPending})
	noErr(t, "first attempt", err)
	equal(t, "after a failed attempt", d, job.WebhookDelivery{State: job.WebhookPending, Attempts: 1, LastStatus: 500,
		LastError: "receiver answered 500", LastAttemptAt: at})
	secrets, err := s.JobSecrets(ctx(t), j.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "the secret while retries follow", len(secrets), 1)
	ids, err := s.ExpiredJobs(ctx(t), time.Now().Add(time.Hour), 10)
	noErr(t, "ExpiredJobs", err)
	if slices.Contains(ids, j.ID) {
		t.Error("a job whose webhook is still being delivered expired")
	}

	d, err = s.RecordWebhookAttempt(ctx(t), store.WebhookAttempt{JobID: j.ID, Status: 200,
		At: at.Add(time.Minute), State: job.WebhookDelivered})
	noErr(t, "second attempt", err)
	want := job.WebhookDelivery{State: job.WebhookDelivered, Attempts: 2, LastStatus: 200,
		LastAttemptAt: at.Add(time.Minute), DeliveredAt: at.Add(time.Minute)}
	equal(t, "after delivery", d, want)
	equal(t, "stored summary", getJob(t, s, j.ID).Webhook, want)
	// A worker whose record committed but whose answer was lost (a cut
	// connection) records the same attempt again: it is not counted twice.
	d, err = s.RecordWebhookAttempt(ctx(t), store.WebhookAttempt{JobID: j.ID, Status: 200,
		At: at.Add(time.Minute), State: job.WebhookDelivered})
	noErr(t, "the second attempt recorded again", err)
	equal(t, "after the same attempt recorded again", d, want)
	equal(t, "stored summary after the same attempt recorded again", getJob(t, s, j.ID).Webhook, want)
	secrets, err = s.JobSecrets(ctx(t), j.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "secrets once delivered", len(secrets), 0)

	ids, err = s.ExpiredJobs(ctx(t), time.Now().Add(time.Hour), 1000)
	noErr(t, "ExpiredJobs", err)
	if !slices.Contains(ids, j.ID) {
		t.Error("a finished, delivered job is not listed for retention")
	}
	ids, err = s.ExpiredJobs(ctx(t), time.Now().Add(-time.Hour), 1000)
	noErr(t, "ExpiredJobs", err)
	if slices.Contains(ids, j.ID) {
		t.Error("a job changed after the cutoff is listed for retention")
	}
	_, err = s.RecordWebhookAttempt(ctx(t), store.WebhookAttempt{JobID: "job_missing", State: job.WebhookFailed, At: at})
	isErr(t, "attempt of a deleted job", err, store.ErrNotFound)
}
