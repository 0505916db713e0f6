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
