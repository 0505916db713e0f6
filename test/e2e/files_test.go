package e2e

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDeletingAnUploadLeavesTheJobsCopy deletes an upload through
// DELETE /v1/files/{id}: another account cannot, a job's copy goes only with
// its job, and a job that read the upload keeps its own copy.
func TestDeletingAnUploadLeavesTheJobsCopy(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := startServer(t, b.databaseURL(t))
			up := upload(t, s, keyA, "contract.txt", 1<<10)
			if up.status != http.StatusOK {
				t.Fatalf("upload: %d %s", up.status, up.body)
			}
			uploadURL := up.json(t)["url"].(string)
			uploadPath := strings.TrimPrefix(uploadURL, s.base)
			id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(uploadURL))["id"].(string)
			j := s.waitTerminal(id, keyA, time.Minute)
			if j["status"] != "JOB_STATUS_COMPLETE" {
				t.Fatalf("job from the upload ended %v: %v", j["status"], j)
			}
			copyPath := strings.TrimPrefix(j["files"].([]any)[0].(string), s.base)
			if copyPath == uploadPath {
				t.Fatalf("job.files[0] is the upload itself (%s), want the job's own copy", copyPath)
			}

			wantError := func(what string, r response, status int, message string) {
				t.Helper()
				if r.status != status {
					t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, status)
				}
				if m := r.json(t)["message"]; m != message {
					t.Errorf("%s: message %q, want %q", what, m, message)
				}
			}
			wantError("delete as another account", s.do("DELETE", uploadPath, keyB, nil), http.StatusNotFound, "file not found")
			wantError("delete of an unknown file", s.do("DELETE", "/v1/files/no-such-file", keyA, nil), http.StatusNotFound, "file not found")
			wantError("delete of the job's copy", s.do("DELETE", copyPath, keyA, nil), http.StatusConflict,
				"file is a stored copy of job "+id+" and is deleted with its job")
			if r := s.do("DELETE", uploadPath, "", nil); r.status != http.StatusUnauthorized {
				t.Errorf("delete without a key: %d, want 401", r.status)
			}
			if r := s.do("GET", uploadPath, keyA, nil); r.status != http.StatusOK {
				t.Fatalf("the upload after refused deletes: %d", r.status)
			}

			if got := s.mustDo(http.StatusOK, "DELETE", uploadPath, keyA, nil); len(got) != 0 {
				t.Errorf("delete answered %v, want {}", got)
			}
			if r := s.do("GET", uploadPath, keyA, nil); r.status != http.StatusNotFound {
				t.Errorf("download after delete: %d, want 404", r.status)
			}
			wantError("create from the deleted upload", s.do("POST", "/v1/jobs", keyA, createBody(uploadURL)),
				http.StatusBadRequest, "sourceUrls[0]: file not found")
			wantError("delete again", s.do("DELETE", uploadPath, keyA, nil), http.StatusNotFound, "file not found")
			if b.name == "sqlite" { // the default storage is under the data directory
				left, err := filepath.Glob(filepath.Join(s.dataDir, "files", "uploads", "*", "*"))
				if err != nil || len(left) != 0 {
					t.Errorf("upload storage after delete holds %v (%v)", left, err)
				}
			}

			// The job keeps its copy, and its result, until it is deleted.
			if r := s.do("GET", copyPath, keyA, nil); r.status != http.StatusOK || len(r.body) != 1<<10 {
				t.Errorf("the job's copy after the upload was deleted: %d, %d bytes", r.status, len(r.body))
			}
			s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)
			s.mustDo(http.StatusOK, "DELETE", "/v1/jobs/"+id, keyA, nil)
			if r := s.do("GET", copyPath, keyA, nil); r.status != http.StatusNotFound {
				t.Errorf("the job's copy after the job was deleted: %d, want 404", r.status)
			}
			if b.name == "sqlite" {
				if _, err := os.Stat(filepath.Join(s.dataDir, "files", "jobs", id)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the deleted job's folder: %v, want it gone", err)
				}
			}
		})
	}
}

// TestRetentionDeletesOldUploads: DOCJOBS_RETENTION applies to uploads from
// the time they were uploaded.
func TestRetentionDeletesOldUploads(t *testing.T) {
	t.Parallel()
	s := startServer(t, "", "DOCJOBS_RETENTION=2s")
	up := upload(t, s, keyA, "notes.txt", 1<<10)
	if up.status != http.StatusOK {
		t.Fatalf("upload: %d %s", up.status, up.body)
	}
	path := strings.TrimPrefix(up.json(t)["url"].(string), s.base)
	deadline := time.Now().Add(30 * time.Second)
	for s.do("GET", path, keyA, nil).status != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("the upload outlived its retention by 28s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := rowCount(t, "", s.dataDir, `SELECT COUNT(*) FROM files WHERE account_id = ?`, "acct-a"); n != 0 {
		t.Errorf("%d file records left", n)
	}
	if left, err := filepath.Glob(filepath.Join(s.dataDir, "files", "uploads", "*", "*")); err != nil || len(left) != 0 {
		t.Errorf("upload storage after retention holds %v (%v)", left, err)
	}
}

// TestStorageWorksWithTMPDIROnAnotherFilesystem runs the default file://
// storage with TMPDIR on a filesystem other than the data directory's (a
// tmpfs /tmp, as Debian 13 mounts it): uploads and downloaded sources are
// stored, because fileblob stages each write next to its target
// (no_tmp_dir) instead of in TMPDIR, whence the rename into place failed
// with "invalid cross-device link". Nothing is left in TMPDIR either, so no
// partial upload sits there readable by other users.
func TestStorageWorksWithTMPDIROnAnotherFilesystem(t *testing.T) {
	t.Parallel()
	tmp := otherFilesystemDir(t, os.TempDir()) // t.TempDir, the data directory, is under os.TempDir
	src := sources(t, map[string]string{"a.txt": txtDoc})
	s := startServer(t, "", "TMPDIR="+tmp)

	up := upload(t, s, keyA, "notes.txt", 1<<10)
	if up.status != http.StatusOK {
		t.Fatalf("upload: %d %s", up.status, up.body)
	}
	uploadURL := up.json(t)["url"].(string)
	if r := s.do("GET", strings.TrimPrefix(uploadURL, s.base), keyA, nil); r.status != http.StatusOK || len(r.body) != 1<<10 {
		t.Fatalf("download of the upload: %d, %d bytes", r.status, len(r.body))
	}
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(uploadURL, src+"/a.txt"))["id"].(string)
	j := s.waitTerminal(id, keyA, time.Minute)
	res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
	for _, row := range res["ocr"].([]any) {
		if r := row.(map[string]any); r["status"] != "JOB_OCR_STATUS_DONE" {
			t.Errorf("file %v: %v %v", r["file"], r["status"], r["error"])
		}
	}
	if j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job ended %v: %v", j["status"], j)
	}
	left, err := os.ReadDir(tmp)
	if err != nil || len(left) != 0 {
		t.Errorf("TMPDIR holds %v (%v), want nothing", left, err)
	}
	temps, err := filepath.Glob(filepath.Join(s.dataDir, "files", "*", "*", "*.tmp"))
	if err != nil || len(temps) != 0 {
		t.Errorf("temporary files left next to stored files: %v (%v)", temps, err)
	}
}

// otherFilesystemDir returns a fresh directory on a filesystem other than
// the one holding dir, or skips the test when the machine has none.
func otherFilesystemDir(t *testing.T, dir string) string {
	t.Helper()
	var ref syscall.Stat_t
	if err := syscall.Stat(dir, &ref); err != nil {
		t.Fatal(err)
	}
	for _, candidate := range []string{"/dev/shm", "/run/user/" + strconv.Itoa(os.Getuid()), "/run"} {
		var st syscall.Stat_t
		if syscall.Stat(candidate, &st) != nil || st.Dev == ref.Dev {
			continue
		}
		d, err := os.MkdirTemp(candidate, "docjobs-e2e-tmpdir-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	t.Skipf("no writable directory on a filesystem other than %s's (tried /dev/shm, /run/user/UID, /run)", dir)
	return ""
}
