package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/job"
)

// uploadN stores n uploads of account named f0.txt, f1.txt, … and returns
// them newest first, as ListFiles lists them.
func (h *harness) uploadN(t *testing.T, account string, n int) []job.File {
	t.Helper()
	files := make([]job.File, n)
	for i := range n {
		f, _, err := h.svc.StoreUpload(as(account), fmt.Sprintf("f%d.txt", i), strings.NewReader(strings.Repeat("x", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		files[n-1-i] = f
	}
	return files
}

// listFiles pages through ListFiles of account with pageSize and returns
// the files listed, failing on a page over the size asked.
func (h *harness) listFiles(t *testing.T, account string, pageSize int32) []*docjobsv1.UploadedFile {
	t.Helper()
	var files []*docjobsv1.UploadedFile
	token := ""
	for pages := 0; ; pages++ {
		if pages > 200 {
			t.Fatal("listing does not end")
		}
		page, err := h.svc.ListFiles(as(account), &docjobsv1.ListFilesRequest{PageSize: pageSize, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if pageSize > 0 && len(page.GetFiles()) > int(pageSize) {
			t.Fatalf("page %d: %d files, %d asked", pages, len(page.GetFiles()), pageSize)
		}
		files = append(files, page.GetFiles()...)
		if token = page.GetNextPageToken(); token == "" {
			return files
		}
	}
}

func fileIDs(files []*docjobsv1.UploadedFile) []string {
	ids := make([]string, len(files))
	for i, f := range files {
		ids[i] = f.GetId()
	}
	return ids
}

func TestListFilesListsTheAccountsUploadsNewestFirst(t *testing.T) {
	h := newHarness(t, Config{})
	want := h.uploadN(t, "acme", 3)
	h.uploadN(t, "globex", 2)
	// A job's stored copy is the job's, not an upload: it is not listed.
	j := h.create(t, "acme", createRequest())
	cp := job.File{ID: "copy-1", AccountID: "acme", JobID: j.GetId(), Name: "a.txt", Key: "jobs/" + j.GetId() + "/src-1"}
	if err := h.store.CreateFile(context.Background(), cp); err != nil {
		t.Fatal(err)
	}

	page, err := h.svc.ListFiles(as("acme"), &docjobsv1.ListFilesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.GetFiles()) != 3 || page.GetNextPageToken() != "" {
		t.Fatalf("%d files, token %q; want the 3 uploads of acme and no token", len(page.GetFiles()), page.GetNextPageToken())
	}
	for i, got := range page.GetFiles() {
		f := want[i]
		wantFile := &docjobsv1.UploadedFile{Id: f.ID, Url: FileURL(testPublicURL, f.ID), Name: f.Name, SizeBytes: f.Size,
			ContentType: f.ContentType, Created: got.GetCreated()}
		if !proto.Equal(got, wantFile) || !got.GetCreated().AsTime().Equal(f.Created.Truncate(time.Microsecond)) {
			t.Errorf("file %d = %v, want %v created %v", i, got, wantFile, f.Created)
		}
	}
	// The url is the one the upload answered, usable as a source.
	if _, err := h.svc.CreateJob(as("acme"), createRequest(page.GetFiles()[0].GetUrl())); err != nil {
		t.Errorf("a job on a listed url: %v", err)
	}
}

func TestListFilesPages(t *testing.T) {
	h := newHarness(t, Config{})
	want := h.uploadN(t, "acme", 101)
	h.uploadN(t, "globex", 1)
	wantIDs := make([]string, len(want))
	for i, f := range want {
		wantIDs[i] = f.ID
	}

	t.Run("the default page holds 50 files", func(t *testing.T) {
		page, err := h.svc.ListFiles(as("acme"), &docjobsv1.ListFilesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.GetFiles()) != 50 || page.GetNextPageToken() == "" {
			t.Fatalf("%d files, token %q; want 50 and a token", len(page.GetFiles()), page.GetNextPageToken())
		}
	})
	t.Run("a page size over 100 is clamped to 100", func(t *testing.T) {
		page, err := h.svc.ListFiles(as("acme"), &docjobsv1.ListFilesRequest{PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.GetFiles()) != 100 {
			t.Fatalf("%d files, want 100", len(page.GetFiles()))
		}
	})
	for _, size := range []int32{0, 7, 100} {
		t.Run(fmt.Sprintf("pages of %d neither lose nor repeat files and hide other accounts", size), func(t *testing.T) {
			if got := fileIDs(h.listFiles(t, "acme", size)); strings.Join(got, ",") != strings.Join(wantIDs, ",") {
				t.Fatalf("listed %v,\nwant %v", got, wantIDs)
			}
		})
	}
	t.Run("a file deleted is listed no more", func(t *testing.T) {
		if _, err := h.svc.DeleteFile(as("acme"), &docjobsv1.DeleteFileRequest{Id: want[5].ID}); err != nil {
			t.Fatal(err)
		}
		got := fileIDs(h.listFiles(t, "acme", 100))
		if want := append(append([]string{}, wantIDs[:5]...), wantIDs[6:]...); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("listed %v after a delete", got)
		}
	})
}

func TestListFilesRefusals(t *testing.T) {
	h := newHarness(t, Config{})
	h.uploadN(t, "acme", 3)
	h.uploadN(t, "globex", 3)
	h.create(t, "acme", createRequest())
	h.create(t, "acme", createRequest())
	page, err := h.svc.ListFiles(as("acme"), &docjobsv1.ListFilesRequest{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := h.svc.ListJobs(as("acme"), &docjobsv1.ListJobsRequest{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name    string
		account string
		req     *docjobsv1.ListFilesRequest
		msg     string
	}{
		{"a negative page size", "acme", &docjobsv1.ListFilesRequest{PageSize: -1}, "pageSize: must not be negative"},
		{"a corrupt page token", "acme", &docjobsv1.ListFilesRequest{PageToken: "not-a-token"}, "pageToken: invalid"},
		{"another account's page token", "globex", &docjobsv1.ListFilesRequest{PageToken: page.GetNextPageToken()}, "pageToken: invalid"},
		{"a page token of the jobs' listing", "acme", &docjobsv1.ListFilesRequest{PageToken: jobs.GetNextPageToken()}, "pageToken: invalid"},
	} {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			_, err := h.svc.ListFiles(as(tt.account), tt.req)
			wantStatus(t, err, codes.InvalidArgument, tt.msg)
		})
	}
	t.Run("a page token of the files' listing is refused by the jobs'", func(t *testing.T) {
		_, err := h.svc.ListJobs(as("acme"), &docjobsv1.ListJobsRequest{PageToken: page.GetNextPageToken()})
		wantStatus(t, err, codes.InvalidArgument, "pageToken: invalid")
	})
	t.Run("an account without uploads lists none", func(t *testing.T) {
		page, err := h.svc.ListFiles(as("initech"), &docjobsv1.ListFilesRequest{})
		if err != nil || len(page.GetFiles()) != 0 || page.GetNextPageToken() != "" {
			t.Fatalf("%v, %v; want no files and no token", page, err)
		}
	})
}

// A files page is bounded in bytes as a jobs page is: with a bound below a
// few files' answer, pages end early with a token and list every file.
func TestListFilesPagesAreBoundedInBytes(t *testing.T) {
	const bound = 600
	h := newHarness(t, Config{MaxListPageBytes: bound})
	want := h.uploadN(t, "acme", 12)
	var got []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("listing does not end")
		}
		page, err := h.svc.ListFiles(as("acme"), &docjobsv1.ListFilesRequest{PageSize: 100, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(page.GetFiles()); n == 0 || n == 12 || (n > 1 && proto.Size(page) > bound+200) {
			t.Fatalf("page %d: %d files in %d bytes; want at least one, not all, within the bound", pages, n, proto.Size(page))
		}
		got = append(got, fileIDs(page.GetFiles())...)
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	for i, f := range want {
		if i >= len(got) || got[i] != f.ID {
			t.Fatalf("paged through %v, want the 12 uploads newest first", got)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("paged through %d files, want %d", len(got), len(want))
	}
}
