package e2e

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/s3test"
)

// TestAJobOnS3StorageLeavesTheBucketEmptyOnceDeleted runs the binary with
// DOCJOBS_STORAGE_URL=s3://… against a real S3 server (versitygw, in this
// process): an upload of multipart size and a small one are stored and read
// back, an upload over the limit leaves nothing (not even an unfinished
// multipart upload), a job over the small upload and a downloaded source
// completes from its stored copies, and deleting the job and then the
// uploads empties the bucket.
//
// Not parallel: s3test.Start changes the working directory (t.Chdir), and
// its gateway is one per process.
func TestAJobOnS3StorageLeavesTheBucketEmptyOnceDeleted(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			srv := s3test.Start(t)
			storage := srv.Bucket(t, "docjobs")
			src := sources(t, map[string]string{"a.txt": txtDoc})
			s := startServer(t, b.databaseURL(t), append(s3test.Env(), "DOCJOBS_STORAGE_URL="+storage)...)
			// The documents' keys: serve also claims the bucket for its
			// database (docjobs-storage-owner), which stays.
			keys := func() []string {
				t.Helper()
				return slices.DeleteFunc(srv.Keys(t, "docjobs"), func(k string) bool { return k == "docjobs-storage-owner" })
			}

			small := upload(t, s, keyA, "notes.txt", 1<<10)
			// Past s3blob's 16 MiB multipart threshold, within the 20 MiB default limit.
			big := upload(t, s, keyA, "big.txt", 17<<20)
			for _, up := range []response{small, big} {
				if up.status != http.StatusOK {
					t.Fatalf("upload: %d %s", up.status, up.body)
				}
			}
			smallPath := strings.TrimPrefix(small.json(t)["url"].(string), s.base)
			bigPath := strings.TrimPrefix(big.json(t)["url"].(string), s.base)
			if r := s.do("GET", bigPath, keyA, nil); r.status != http.StatusOK || !bytes.Equal(r.body, bytes.Repeat([]byte("a"), 17<<20)) {
				t.Fatalf("download of the 17 MiB upload: %d, %d bytes", r.status, len(r.body))
			}
			if r := upload(t, s, keyA, "huge.txt", 21<<20); r.status != http.StatusRequestEntityTooLarge {
				t.Fatalf("upload over the limit: %d %s, want 413", r.status, r.body)
			}
			if got := keys(); len(got) != 2 || slices.ContainsFunc(got, func(k string) bool { return strings.HasPrefix(k, "upload:") }) {
				t.Fatalf("bucket after the uploads holds %q, want the two stored uploads only", got)
			}

			id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, createBody(s.base+smallPath, src+"/a.txt"))["id"].(string)
			j := s.waitTerminal(id, keyA, time.Minute)
			if j["status"] != "JOB_STATUS_COMPLETE" {
				t.Fatalf("job ended %v: %v", j["status"], j)
			}
			res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
			ocr := res["ocr"].([]any)
			if len(ocr) != 2 {
				t.Fatalf("%d ocr rows, want 2", len(ocr))
			}
			for i, want := range []string{strings.Repeat("a", 1<<10), "Revenue grew by 12 percent."} {
				row := ocr[i].(map[string]any)
				if row["status"] != "JOB_OCR_STATUS_DONE" || !strings.Contains(row["content"].(string), want) {
					t.Errorf("ocr[%d]: %v %v, content %.60q", i, row["status"], row["error"], row["content"])
				}
			}
			for _, f := range j["files"].([]any) {
				if r := s.do("GET", strings.TrimPrefix(f.(string), s.base), keyA, nil); r.status != http.StatusOK || len(r.body) == 0 {
					t.Errorf("the job's copy %v: %d, %d bytes", f, r.status, len(r.body))
				}
			}
			if got := keys(); len(got) != 4 {
				t.Fatalf("bucket with the job holds %q, want the two uploads and the job's two copies", got)
			}

			s.mustDo(http.StatusOK, "DELETE", "/v1/jobs/"+id, keyA, nil)
			if got := keys(); len(got) != 2 || slices.ContainsFunc(got, func(k string) bool { return strings.HasPrefix(k, "jobs/") }) {
				t.Fatalf("bucket after the job's delete holds %q, want the two uploads only", got)
			}
			s.mustDo(http.StatusOK, "DELETE", smallPath, keyA, nil)
			s.mustDo(http.StatusOK, "DELETE", bigPath, keyA, nil)
			if got := keys(); len(got) != 0 {
				t.Fatalf("bucket after every delete holds %q, want nothing", got)
			}
		})
	}
}
