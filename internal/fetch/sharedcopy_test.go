package fetch

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/blobtest"
	"github.com/docjobs/docjobs/internal/job"
)

func TestAJobStoresOneCopyOfAStoredFileItsSourcesNameManyTimes(t *testing.T) {
	forEachBucket(t, func(t *testing.T, open openBucket) {
		e := newEnvOn(t, open, Config{}, nil)
		ctx := context.Background()
		up := job.File{ID: "up1", AccountID: "acct", Name: "scan.txt", Size: 5, ContentType: "text/plain", Key: "uploads/acct/up1"}
		e.files[up.ID] = up
		if err := e.bucket.WriteAll(ctx, up.Key, []byte("scan!"), nil); err != nil {
			t.Fatal(err)
		}
		// One upload, under its URL and with a query the parser ignores,
		// listed five times; each file is fetched as its River job does,
		// the first one twice (a retry).
		sources := []string{"/v1/files/up1", "/v1/files/up1", "/v1/files/up1?x=1", "/v1/files/up1", "/v1/files/up1"}
		var results []Result
		for i, src := range append(sources, sources[0]) {
			res, err := e.f.Fetch(ctx, "acct", "job1", i%len(sources), publicURL+src)
			if err != nil {
				t.Fatalf("Fetch %d: %v", i, err)
			}
			results = append(results, res)
		}
		want := SharedCopyKey("job1", up.Key)
		ids := map[string]bool{}
		for i, res := range results {
			if res.Key != want || res.File.Key != want || !res.Shared {
				t.Errorf("file %d stored at %q (record %q, shared %v), want every file at %q", i, res.Key, res.File.Key, res.Shared, want)
			}
			ids[res.File.ID] = true
		}
		if len(ids) != len(results) {
			t.Errorf("%d records for %d files: each file has its own record and URL, naming the one copy", len(ids), len(results))
		}
		// Another job's copies of the upload, two records naming one
		// copy, are one stored file for a job that lists both.
		for _, id := range []string{"c1", "c2"} {
			e.files[id] = job.File{ID: id, AccountID: "acct", JobID: "job1", Name: "scan.txt", Size: 5, Key: want}
		}
		for i, id := range []string{"c1", "c2"} {
			if _, err := e.f.Fetch(ctx, "acct", "job2", i, publicURL+"/v1/files/"+id); err != nil {
				t.Fatal(err)
			}
		}
		wantKeys := []string{SharedCopyKey("job1", up.Key), SharedCopyKey("job2", want), up.Key}
		slices.Sort(wantKeys)
		if keys := blobtest.Keys(t, e.bucket, ""); !slices.Equal(keys, wantKeys) {
			t.Errorf("stored %q, want the upload and one copy per job, %q", keys, wantKeys)
		}
		if data, err := e.f.Read(ctx, want, 0); err != nil || string(data) != "scan!" {
			t.Errorf("Read of the copy = %q, %v", data, err)
		}
		if !strings.HasPrefix(want, JobKeyPrefix("job1")) {
			t.Errorf("the copy %q is outside the job's prefix, which its delete removes", want)
		}
	})
}
