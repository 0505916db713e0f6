package storetest

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

func testFiles(t *testing.T, s Store) {
	upload := job.File{ID: newID("file"), AccountID: "alice", Name: "scan.pdf", Size: 12345,
		ContentType: "application/pdf", Key: "uploads/scan", Created: baseTime}
	noErr(t, "CreateFile", s.CreateFile(ctx(t), upload))
	want := upload
	want.Created = truncUTC(baseTime)

	got, err := s.GetFile(ctx(t), "alice", upload.ID)
	noErr(t, "GetFile by its owner", err)
	equal(t, "upload", got, want)
	got, err = s.GetFile(ctx(t), "", upload.ID)
	noErr(t, "GetFile by any account", err)
	equal(t, "upload", got, want)
	_, err = s.GetFile(ctx(t), "bob", upload.ID)
	isErr(t, "GetFile by another account", err, store.ErrNotFound)
	_, err = s.GetFile(ctx(t), "alice", "file_missing")
	isErr(t, "GetFile of a missing file", err, store.ErrNotFound)

	j := newJob("alice", 1)
	createJob(t, s, j, store.CreateJobParams{})
	cp := job.File{ID: newID("file"), AccountID: "alice", JobID: j.ID, Name: "a.txt", Key: "jobs/a"}
	noErr(t, "CreateFile of a job copy", s.CreateFile(ctx(t), cp))
	got, err = s.GetFile(ctx(t), "alice", cp.ID)
	noErr(t, "GetFile", err)
	equal(t, "job copy's job", got.JobID, j.ID)
	if time.Since(got.Created) > time.Minute {
		t.Errorf("a zero Created became %v, want now", got.Created)
	}
	if err := s.CreateFile(ctx(t), upload); err == nil {
		t.Error("CreateFile with an existing id succeeded")
	}
}

func testAPIKeys(t *testing.T, s Store) {
	has, err := s.HasAPIKeys(ctx(t))
	noErr(t, "HasAPIKeys", err)
	equal(t, "HasAPIKeys of an empty store", has, false)

	h1, h2 := sha256.Sum256([]byte("key-1")), sha256.Sum256([]byte("key-2"))
	noErr(t, "PutAPIKey", s.PutAPIKey(ctx(t), "alice", h1[:]))
	noErr(t, "PutAPIKey", s.PutAPIKey(ctx(t), "bob", h2[:]))
	noErr(t, "PutAPIKey again (static keys at every start)", s.PutAPIKey(ctx(t), "alice", h1[:]))

	has, err = s.HasAPIKeys(ctx(t))
	noErr(t, "HasAPIKeys", err)
	equal(t, "HasAPIKeys", has, true)
	for hash, want := range map[[32]byte]string{h1: "alice", h2: "bob"} {
		got, err := s.AccountByKeyHash(ctx(t), hash[:])
		noErr(t, "AccountByKeyHash", err)
		equal(t, "account", got, want)
	}
	unknown := sha256.Sum256([]byte("key-3"))
	_, err = s.AccountByKeyHash(ctx(t), unknown[:])
	isErr(t, "AccountByKeyHash of an unknown key", err, store.ErrNotFound)

	// A static key moved to another account follows the configuration.
	noErr(t, "PutAPIKey", s.PutAPIKey(ctx(t), "carol", h1[:]))
	got, err := s.AccountByKeyHash(ctx(t), h1[:])
	noErr(t, "AccountByKeyHash", err)
	equal(t, "account of a moved key", got, "carol")
}

func testExtractionMode(t *testing.T, s Store) {
	for _, account := range []string{"unknown", "keyed"} {
		if account == "keyed" {
			h := sha256.Sum256([]byte("k"))
			noErr(t, "PutAPIKey", s.PutAPIKey(ctx(t), account, h[:]))
		}
		mode, err := s.AccountExtractionMode(ctx(t), account)
		noErr(t, "AccountExtractionMode", err)
		equal(t, "default mode of "+account, mode, job.ExtractionHybrid)
	}
	noErr(t, "SetAccountExtractionMode", s.SetAccountExtractionMode(ctx(t), "keyed", job.ExtractionOCRAlways))
	noErr(t, "SetAccountExtractionMode", s.SetAccountExtractionMode(ctx(t), "new", job.ExtractionOCRAlways))
	for _, account := range []string{"keyed", "new"} {
		mode, err := s.AccountExtractionMode(ctx(t), account)
		noErr(t, "AccountExtractionMode", err)
		equal(t, "mode of "+account, mode, job.ExtractionOCRAlways)
	}
	noErr(t, "SetAccountExtractionMode", s.SetAccountExtractionMode(ctx(t), "keyed", job.ExtractionHybrid))
	mode, err := s.AccountExtractionMode(ctx(t), "keyed")
	noErr(t, "AccountExtractionMode", err)
	equal(t, "mode set back", mode, job.ExtractionHybrid)
	h := sha256.Sum256([]byte("k"))
	got, err := s.AccountByKeyHash(ctx(t), h[:])
	noErr(t, "AccountByKeyHash", err)
	equal(t, "key survives a mode change", got, "keyed")
	noErr(t, "Ping", s.Ping(ctx(t)))
}

func testDeleteUpload(t *testing.T, s Store) {
	upload := job.File{ID: newID("file"), AccountID: "alice", Name: "scan.pdf", Key: "uploads/alice/scan"}
	noErr(t, "CreateFile", s.CreateFile(ctx(t), upload))
	j := newJob("alice", 1)
	createJob(t, s, j, store.CreateJobParams{})
	cp := job.File{ID: newID("file"), AccountID: "alice", JobID: j.ID, Name: "scan.pdf", Key: "jobs/" + j.ID + "/0-c"}
	noErr(t, "CreateFile of the job's copy", s.CreateFile(ctx(t), cp))

	isErr(t, "DeleteUpload by another account", s.DeleteUpload(ctx(t), "bob", upload.ID), store.ErrNotFound)
	isErr(t, "DeleteUpload of a job copy", s.DeleteUpload(ctx(t), "alice", cp.ID), store.ErrNotFound)
	isErr(t, "DeleteUpload of a missing file", s.DeleteUpload(ctx(t), "alice", "file_missing"), store.ErrNotFound)
	_, err := s.GetFile(ctx(t), "alice", upload.ID)
	noErr(t, "the upload after refused deletes", err)

	noErr(t, "DeleteUpload by its owner", s.DeleteUpload(ctx(t), "alice", upload.ID))
	_, err = s.GetFile(ctx(t), "", upload.ID)
	isErr(t, "GetFile after DeleteUpload", err, store.ErrNotFound)
	isErr(t, "deleting again", s.DeleteUpload(ctx(t), "alice", upload.ID), store.ErrNotFound)
	got, err := s.GetFile(ctx(t), "alice", cp.ID)
	noErr(t, "the job's copy survives", err)
	equal(t, "the job's copy's job", got.JobID, j.ID)

	other := job.File{ID: newID("file"), AccountID: "bob", Key: "uploads/bob/x"}
	noErr(t, "CreateFile", s.CreateFile(ctx(t), other))
	noErr(t, "DeleteUpload by any account (retention)", s.DeleteUpload(ctx(t), "", other.ID))
}

func testExpiredUploads(t *testing.T, s Store) {
	now := time.Now().UTC()
	upload := func(account string, age time.Duration) job.File {
		f := job.File{ID: newID("file"), AccountID: account, Name: "u.txt", Size: 3, ContentType: "text/plain",
			Key: "uploads/" + account + "/" + newID("k"), Created: now.Add(-age)}
		noErr(t, "CreateFile", s.CreateFile(ctx(t), f))
		f.Created = truncUTC(f.Created)
		return f
	}
	oldest := upload("alice", 72*time.Hour)
	older := upload("bob", 48*time.Hour)
	old := upload("alice", 25*time.Hour)
	fresh := upload("alice", time.Hour)
	// A job's copy as old as the oldest upload is the job's: it is never
	// listed, however old, and goes with its job.
	j := newJob("alice", 1)
	createJob(t, s, j, store.CreateJobParams{})
	cp := job.File{ID: newID("file"), AccountID: "alice", JobID: j.ID, Key: "jobs/" + j.ID + "/0-c", Created: now.Add(-96 * time.Hour)}
	noErr(t, "CreateFile of a job copy", s.CreateFile(ctx(t), cp))

	cutoff := now.Add(-24 * time.Hour)
	got, err := s.ExpiredUploads(ctx(t), cutoff, 10)
	noErr(t, "ExpiredUploads", err)
	equal(t, "expired uploads, oldest first", got, []job.File{oldest, older, old})

	got, err = s.ExpiredUploads(ctx(t), cutoff, 2)
	noErr(t, "ExpiredUploads with a limit", err)
	equal(t, "first batch", got, []job.File{oldest, older})
	for _, f := range got {
		noErr(t, "DeleteUpload", s.DeleteUpload(ctx(t), "", f.ID))
	}
	got, err = s.ExpiredUploads(ctx(t), cutoff, 2)
	noErr(t, "ExpiredUploads after the first batch", err)
	equal(t, "second batch", got, []job.File{old})

	for _, f := range []job.File{fresh, cp} {
		_, err := s.GetFile(ctx(t), "alice", f.ID)
		noErr(t, "a fresh upload and a job copy stay", err)
	}
}
