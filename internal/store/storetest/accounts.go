package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
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

// testListAndDeleteAPIKeys: the stored keys can be listed (hashes only)
// and one removed by its hash, after which it opens nothing; the account
// stays with its settings.
func testListAndDeleteAPIKeys(t *testing.T, s Store) {
	keys, err := s.ListAPIKeys(ctx(t), "")
	noErr(t, "ListAPIKeys", err)
	equal(t, "keys of an empty store", len(keys), 0)

	before := time.Now().UTC().Truncate(time.Microsecond)
	put := func(account, key string) []byte {
		t.Helper()
		h := sha256.Sum256([]byte(key))
		noErr(t, "PutAPIKey", s.PutAPIKey(ctx(t), account, h[:]))
		time.Sleep(2 * time.Millisecond) // the next key is created later
		return h[:]
	}
	alice1 := put("alice", "key-1")
	bob := put("bob", "key-2")
	alice2 := put("alice", "key-3")
	after := time.Now().UTC()

	keys, err = s.ListAPIKeys(ctx(t), "")
	noErr(t, "ListAPIKeys", err)
	var got []string
	for _, k := range keys {
		got = append(got, k.AccountID+" "+hex.EncodeToString(k.Hash))
		if k.Created.Before(before) || k.Created.After(after) || k.Created.Location() != time.UTC {
			t.Errorf("key of %s created %v, want UTC within [%v, %v]", k.AccountID, k.Created, before, after)
		}
	}
	equal(t, "every key, by account then creation", got, []string{
		"alice " + hex.EncodeToString(alice1), "alice " + hex.EncodeToString(alice2), "bob " + hex.EncodeToString(bob),
	})
	keys, err = s.ListAPIKeys(ctx(t), "alice")
	noErr(t, "ListAPIKeys of alice", err)
	if len(keys) != 2 || !bytes.Equal(keys[0].Hash, alice1) || !bytes.Equal(keys[1].Hash, alice2) {
		t.Errorf("alice's keys: %+v, want key-1 then key-3", keys)
	}
	keys, err = s.ListAPIKeys(ctx(t), "ali")
	noErr(t, "ListAPIKeys of ali", err)
	equal(t, "keys of an account whose name starts another's", len(keys), 0)

	noErr(t, "SetAccountExtractionMode", s.SetAccountExtractionMode(ctx(t), "alice", job.ExtractionOCRAlways))
	account, err := s.DeleteAPIKey(ctx(t), alice1)
	noErr(t, "DeleteAPIKey", err)
	equal(t, "account of the deleted key", account, "alice")
	_, err = s.AccountByKeyHash(ctx(t), alice1)
	isErr(t, "AccountByKeyHash of a deleted key", err, store.ErrNotFound)
	_, err = s.DeleteAPIKey(ctx(t), alice1)
	isErr(t, "DeleteAPIKey again", err, store.ErrNotFound)
	unknown := sha256.Sum256([]byte("key-4"))
	_, err = s.DeleteAPIKey(ctx(t), unknown[:])
	isErr(t, "DeleteAPIKey of an unknown key", err, store.ErrNotFound)
	_, err = s.DeleteAPIKey(ctx(t), alice2[:8])
	isErr(t, "DeleteAPIKey of a hash's first bytes", err, store.ErrNotFound)

	for hash, want := range map[string]string{string(alice2): "alice", string(bob): "bob"} {
		got, err := s.AccountByKeyHash(ctx(t), []byte(hash))
		noErr(t, "AccountByKeyHash of a key left", err)
		equal(t, "account of a key left", got, want)
	}
	_, err = s.DeleteAPIKey(ctx(t), alice2)
	noErr(t, "DeleteAPIKey of alice's last key", err)
	keys, err = s.ListAPIKeys(ctx(t), "")
	noErr(t, "ListAPIKeys", err)
	if len(keys) != 1 || keys[0].AccountID != "bob" {
		t.Errorf("keys left: %+v, want bob's", keys)
	}
	exists, err := s.AccountExists(ctx(t), "alice")
	noErr(t, "AccountExists", err)
	equal(t, "an account without keys left exists", exists, true)
	mode, err := s.AccountExtractionMode(ctx(t), "alice")
	noErr(t, "AccountExtractionMode", err)
	equal(t, "mode of an account without keys left", mode, job.ExtractionOCRAlways)
}

// testAccountExists: an account exists once a key was stored for it, its
// mode set, or it made a job or an upload (one known only from
// DOCJOBS_API_KEYS has nothing else); a name no one used does not.
func testAccountExists(t *testing.T, s Store) {
	h := sha256.Sum256([]byte("k"))
	noErr(t, "PutAPIKey", s.PutAPIKey(ctx(t), "keyed", h[:]))
	noErr(t, "SetAccountExtractionMode", s.SetAccountExtractionMode(ctx(t), "moded", job.ExtractionOCRAlways))
	createJob(t, s, newJob("jobbed", 1), store.CreateJobParams{})
	noErr(t, "CreateFile", s.CreateFile(ctx(t), job.File{ID: newID("file"), AccountID: "uploaded", Key: "uploads/u"}))
	for _, tt := range []struct {
		account string
		want    bool
	}{
		{"keyed", true},
		{"moded", true},
		{"jobbed", true},
		{"uploaded", true},
		{"never", false},
		{"keye", false},
		{"Keyed", false},
	} {
		got, err := s.AccountExists(ctx(t), tt.account)
		noErr(t, "AccountExists", err)
		equal(t, "AccountExists("+tt.account+")", got, tt.want)
	}
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

// testRecordedFileIDs: uploads and job copies of every account are
// recorded; unknown and deleted ids are not; a batch larger than one query
// is answered whole.
func testRecordedFileIDs(t *testing.T, s Store) {
	up := job.File{ID: newID("file"), AccountID: "alice", Name: "u.txt", Key: "uploads/alice/u", Created: time.Now()}
	noErr(t, "CreateFile", s.CreateFile(ctx(t), up))
	theirs := job.File{ID: newID("file"), AccountID: "bob", Name: "b.txt", Key: "uploads/bob/b", Created: time.Now()}
	noErr(t, "CreateFile", s.CreateFile(ctx(t), theirs))
	j := newJob("alice", 1)
	createJob(t, s, j, store.CreateJobParams{})
	cp := job.File{ID: newID("file"), AccountID: "alice", JobID: j.ID, Key: "jobs/" + j.ID + "/0-c", Created: time.Now()}
	noErr(t, "CreateFile of a job copy", s.CreateFile(ctx(t), cp))
	gone := job.File{ID: newID("file"), AccountID: "alice", Name: "g.txt", Key: "uploads/alice/g", Created: time.Now()}
	noErr(t, "CreateFile", s.CreateFile(ctx(t), gone))
	noErr(t, "DeleteUpload", s.DeleteUpload(ctx(t), "alice", gone.ID))

	ids := []string{up.ID, theirs.ID, cp.ID, gone.ID, newID("file")}
	for i := range 2500 { // past one query's batch
		ids = append(ids, fmt.Sprintf("00000000-0000-7000-8000-%012d", i))
	}
	ids = append(ids, up.ID) // asked twice, and last
	got, err := s.RecordedFileIDs(ctx(t), ids)
	noErr(t, "RecordedFileIDs", err)
	equal(t, "recorded ids", got, map[string]bool{up.ID: true, theirs.ID: true, cp.ID: true})

	got, err = s.RecordedFileIDs(ctx(t), nil)
	noErr(t, "RecordedFileIDs of none", err)
	equal(t, "recorded ids of none", len(got), 0)
}

// testKnownJobIDs: a job, a deleted job whose files are still to be
// removed and a job id a file record holds are known, of any account; a
// deleted job whose removal is done and an id never used are not; a batch
// larger than one query is answered whole.
func testKnownJobIDs(t *testing.T, s Store) {
	live := newJob("alice", 1)
	createJob(t, s, live, store.CreateJobParams{})
	theirs := newJob("bob", 1)
	createJob(t, s, theirs, store.CreateJobParams{})
	pending := newJob("alice", 1)
	createJob(t, s, pending, store.CreateJobParams{})
	_, err := s.DeleteJob(ctx(t), "alice", pending.ID)
	noErr(t, "DeleteJob", err)
	removed := newJob("alice", 1)
	createJob(t, s, removed, store.CreateJobParams{})
	_, err = s.DeleteJob(ctx(t), "alice", removed.ID)
	noErr(t, "DeleteJob", err)
	noErr(t, "FileRemovalDone", s.FileRemovalDone(ctx(t), removed.ID))
	// A copy's record with no job row: the files' own index answers.
	copied := newID("job")
	noErr(t, "CreateFile of a job copy", s.CreateFile(ctx(t), job.File{ID: newID("file"), AccountID: "alice", JobID: copied,
		Key: "jobs/" + copied + "/0-c", Created: time.Now()}))

	ids := []string{live.ID, theirs.ID, pending.ID, removed.ID, copied, newID("job")}
	for i := range 2500 { // past one query's batch
		ids = append(ids, fmt.Sprintf("00000000-0000-7000-8000-%012d", i))
	}
	ids = append(ids, live.ID) // asked twice, and last
	got, err := s.KnownJobIDs(ctx(t), ids)
	noErr(t, "KnownJobIDs", err)
	equal(t, "known job ids", got, map[string]bool{live.ID: true, theirs.ID: true, pending.ID: true, copied: true})

	got, err = s.KnownJobIDs(ctx(t), nil)
	noErr(t, "KnownJobIDs of none", err)
	equal(t, "known job ids of none", len(got), 0)
}

// deleteRounds and deleters: how many keys testConcurrentDeletesOfOneKey
// deletes, and how many deletes race for each. A read of the row then a
// delete let two PostgreSQL transactions both read it (READ COMMITTED)
// and both report the key deleted in about a third of such rounds.
const (
	deleteRounds = 30
	deleters     = 4
)

// testConcurrentDeletesOfOneKey: deletes of one key racing each other have
// one winner, which returns the account; the others get ErrNotFound, so
// that a second `apikey revoke` says the key was revoked meanwhile rather
// than claim to have revoked it.
func testConcurrentDeletesOfOneKey(t *testing.T, s Store) {
	for round := range deleteRounds {
		h := sha256.Sum256(fmt.Appendf(nil, "raced-key-%d", round))
		noErr(t, "PutAPIKey", s.PutAPIKey(ctx(t), "alice", h[:]))
		var (
			wg       sync.WaitGroup
			start    = make(chan struct{})
			mu       sync.Mutex
			won, not int
		)
		for range deleters {
			wg.Go(func() {
				<-start
				account, err := s.DeleteAPIKey(ctx(t), h[:])
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && account == "alice":
					won++
				case errors.Is(err, store.ErrNotFound):
					not++
				default:
					t.Errorf("round %d: DeleteAPIKey = %q, %v; want alice or ErrNotFound", round, account, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if won != 1 || not != deleters-1 {
			t.Fatalf("round %d: %d of %d concurrent deletes of one key won, %d found nothing; want exactly one winner",
				round, won, deleters, not)
		}
	}
	keys, err := s.ListAPIKeys(ctx(t), "")
	noErr(t, "ListAPIKeys", err)
	equal(t, "keys left", len(keys), 0)
}
