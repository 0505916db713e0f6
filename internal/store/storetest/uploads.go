package storetest

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// createUploads records n uploads of account, two by two created in the
// same microsecond (the id orders them), upload i named with
// nameBytes[i%len(nameBytes)] bytes (16 without), and returns them as
// ListUploads gives them: newest first, times in UTC microseconds.
func createUploads(t *testing.T, s store.Store, account string, n int, nameBytes ...int) []job.File {
	t.Helper()
	if len(nameBytes) == 0 {
		nameBytes = []int{16}
	}
	files := make([]job.File, n)
	for i := range n {
		id := newID("file")
		f := job.File{ID: id, AccountID: account, Name: strings.Repeat("n", nameBytes[i%len(nameBytes)]),
			Size: int64(100 + i), ContentType: "text/plain; charset=utf-8", Key: "uploads/" + account + "/" + id,
			Created: baseTime.Add(time.Duration(i/2) * time.Microsecond)}
		noErr(t, "CreateUpload", s.CreateUpload(ctx(t), f, 0))
		f.Created = truncUTC(f.Created)
		files[i] = f
	}
	slices.SortFunc(files, func(a, b job.File) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return files
}

// listUploads pages through ListUploads from p and returns every upload
// listed, in order.
func listUploads(t *testing.T, s store.Store, p store.UploadListParams) []job.File {
	t.Helper()
	var files []job.File
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("listing does not end")
		}
		page, err := s.ListUploads(ctx(t), p)
		noErr(t, "ListUploads", err)
		if len(page.Files) > p.PageSize {
			t.Fatalf("page of %d uploads, size %d", len(page.Files), p.PageSize)
		}
		if len(page.Files) == 0 && page.NextPageToken != "" {
			t.Fatalf("page %d is empty but has a token", pages)
		}
		files = append(files, page.Files...)
		if page.NextPageToken == "" {
			return files
		}
		p.PageToken = page.NextPageToken
	}
}

// An account's uploads are listed newest first with every field, a page at
// a time; another account's uploads and the account's job copies never are.
func testListUploadsPages(t *testing.T, s Store) {
	want := createUploads(t, s, "acct", 11)
	createUploads(t, s, "other", 3)
	j := newJob("acct", 1)
	createJob(t, s, j, store.CreateJobParams{})
	noErr(t, "CreateFile of a job copy", s.CreateFile(ctx(t), job.File{ID: newID("file"), AccountID: "acct", JobID: j.ID,
		Name: "copy.txt", Key: "jobs/" + j.ID + "/src-c", Created: baseTime.Add(time.Hour)}))

	for _, size := range []int{1, 4, 11, 50} {
		got := listUploads(t, s, store.UploadListParams{AccountID: "acct", PageSize: size})
		equal(t, fmt.Sprintf("uploads with page size %d", size), got, want)
	}
	page, err := s.ListUploads(ctx(t), store.UploadListParams{AccountID: "acct", PageSize: 11})
	noErr(t, "ListUploads", err)
	equal(t, "token of an exactly full last page", page.NextPageToken, "")

	page, err = s.ListUploads(ctx(t), store.UploadListParams{AccountID: "nobody", PageSize: 10})
	noErr(t, "ListUploads of an account without uploads", err)
	equal(t, "uploads of an account without any", len(page.Files), 0)
	equal(t, "its token", page.NextPageToken, "")

	noErr(t, "DeleteUpload", s.DeleteUpload(ctx(t), "acct", want[0].ID))
	got := listUploads(t, s, store.UploadListParams{AccountID: "acct", PageSize: 50})
	equal(t, "uploads after the newest was deleted", got, want[1:])
}

// A page token is good only for the listing, account and filter it was
// minted for: another account's, or one of ListJobs, is refused both ways.
func testListUploadsBadTokens(t *testing.T, s Store) {
	createUploads(t, s, "acct", 3)
	createUploads(t, s, "other", 3)
	createSpaced(t, s, "acct", 3)
	page, err := s.ListUploads(ctx(t), store.UploadListParams{AccountID: "acct", PageSize: 1})
	noErr(t, "ListUploads", err)
	token := page.NextPageToken
	jobs, err := s.ListJobs(ctx(t), store.ListParams{AccountID: "acct", PageSize: 1})
	noErr(t, "ListJobs", err)

	for _, tc := range []struct {
		name  string
		token string
		acct  string
	}{
		{"not base64", "!!!", "acct"},
		{"empty json", base64.RawURLEncoding.EncodeToString([]byte("{}")), "acct"},
		{"truncated", token[:len(token)/2], "acct"},
		{"another account", token, "other"},
		{"a token of the jobs' listing", jobs.NextPageToken, "acct"},
		{"a time before 4713 BC", forgedToken("uploads", "acct", -220752000000000000), "acct"},
		{"a time after 9999", forgedToken("uploads", "acct", 253402300800000000), "acct"},
	} {
		_, err := s.ListUploads(ctx(t), store.UploadListParams{AccountID: tc.acct, PageSize: 10, PageToken: tc.token})
		isErr(t, tc.name, err, store.ErrBadPageToken)
	}
	_, err = s.ListJobs(ctx(t), store.ListParams{AccountID: "acct", PageSize: 10, PageToken: token})
	isErr(t, "an uploads' token in the jobs' listing", err, store.ErrBadPageToken)
	_, err = s.ListUploads(ctx(t), store.UploadListParams{AccountID: "acct", PageSize: 10, PageToken: token})
	noErr(t, "the token in its own listing", err)
}

// With MaxBytes a page ends before the upload that would pass it, holding
// at least one; the store sizes at most one upload past the page.
func testListUploadsBoundedInBytes(t *testing.T, s Store) {
	want := createUploads(t, s, "acct", 12, 100, 300, 50)
	nameBytes := func(f job.File) int { return len(f.Name) }

	p := store.UploadListParams{AccountID: "acct", PageSize: 100, MaxBytes: 400}
	var got []job.File
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("listing does not end")
		}
		sized := 0
		p.Size = func(f job.File) int { sized++; return nameBytes(f) }
		page, err := s.ListUploads(ctx(t), p)
		noErr(t, "ListUploads", err)
		total := 0
		for _, f := range page.Files {
			total += nameBytes(f)
		}
		if len(page.Files) == 0 || (len(page.Files) > 1 && total > p.MaxBytes) {
			t.Fatalf("page %d: %d uploads of %d bytes, bound %d", pages, len(page.Files), total, p.MaxBytes)
		}
		if sized > len(page.Files)+1 {
			t.Fatalf("page %d: sized %d uploads for a page of %d", pages, sized, len(page.Files))
		}
		got = append(got, page.Files...)
		if page.NextPageToken == "" {
			break
		}
		p.PageToken = page.NextPageToken
	}
	equal(t, "uploads paged through", got, want)

	page, err := s.ListUploads(ctx(t), store.UploadListParams{AccountID: "acct", PageSize: 100, MaxBytes: 10, Size: nameBytes})
	noErr(t, "ListUploads", err)
	if len(page.Files) != 1 || page.NextPageToken == "" {
		t.Fatalf("%d uploads, token %q; want an upload over the bound alone on its page, and a token", len(page.Files), page.NextPageToken)
	}
}
