package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// createSized creates n jobs of account, job i with a response schema of
// sizes[i%len(sizes)] bytes, two by two created in the same microsecond (the
// id orders them), and returns their ids newest first.
func createSized(t *testing.T, s store.Store, account string, n int, sizes ...int) []string {
	t.Helper()
	type key struct {
		created time.Time
		id      string
	}
	keys := make([]key, n)
	for i := range n {
		j := newJob(account, 1)
		j.Created = baseTime.Add(time.Duration(i/2) * time.Microsecond)
		j.ResponseSchema = `{"description":"` + strings.Repeat("d", sizes[i%len(sizes)]) + `"}`
		createJob(t, s, j, store.CreateJobParams{})
		keys[i] = key{j.Created, j.ID}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	ids := make([]string, n)
	for i, k := range keys {
		ids[i] = k.id
	}
	return ids
}

// textBytes is a job's size for these tests: its schema, which is most of it.
func textBytes(j *job.Job) int { return len(j.ResponseSchema) }

// A list page is bounded in bytes as well as in jobs: its jobs' sizes add up
// to at most MaxBytes, or it holds one job; a shorter page carries a token,
// and paging on lists every job once, newest first. The store reads at most
// one job past the page (the one that did not fit), never a whole PageSize.
func testListJobsBoundedInBytes(t *testing.T, s Store) {
	const kib = 1 << 10
	want := createSized(t, s, "acct", 12, 10*kib, 30*kib, 5*kib)
	createSized(t, s, "other", 3, 100*kib)

	for _, tc := range []struct {
		name string
		size func(*job.Job) int // the answer's size of a job, nil: as stored
	}{
		{"sized as stored", nil},
		{"sized as the answer, like stored", textBytes},
		{"the answer larger than stored", func(j *job.Job) int { return 3 * textBytes(j) }},
		{"the answer smaller than stored", func(j *job.Job) int { return textBytes(j) / 4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := store.ListParams{AccountID: "acct", PageSize: 100, MaxBytes: 40 * kib}
			var got []string
			for pages := 0; ; pages++ {
				if pages > 100 {
					t.Fatal("listing does not end")
				}
				read, total := 0, 0
				p.Size = func(j *job.Job) int {
					read++
					if tc.size == nil {
						return 0
					}
					return tc.size(j)
				}
				page, err := s.ListJobs(ctx(t), p)
				noErr(t, "ListJobs", err)
				if len(page.Jobs) == 0 {
					t.Fatalf("page %d is empty, token %q", pages, page.NextPageToken)
				}
				for _, j := range page.Jobs {
					got = append(got, j.ID)
					if tc.size != nil {
						total += tc.size(j)
					} else {
						total += textBytes(j)
					}
				}
				if len(page.Jobs) > 1 && total > p.MaxBytes {
					t.Fatalf("page %d: %d jobs of %d bytes, bound %d", pages, len(page.Jobs), total, p.MaxBytes)
				}
				if read > len(page.Jobs)+1 {
					t.Fatalf("page %d: read %d jobs for a page of %d", pages, read, len(page.Jobs))
				}
				if page.NextPageToken == "" {
					break
				}
				p.PageToken = page.NextPageToken
			}
			equal(t, "ids paged through", got, want)
		})
	}

	t.Run("a job larger than the bound is a page of its own", func(t *testing.T) {
		p := store.ListParams{AccountID: "other", PageSize: 100, MaxBytes: 10 * kib, Size: textBytes}
		page, err := s.ListJobs(ctx(t), p)
		noErr(t, "ListJobs", err)
		if len(page.Jobs) != 1 || page.NextPageToken == "" {
			t.Fatalf("%d jobs, token %q; want 1 and a token", len(page.Jobs), page.NextPageToken)
		}
	})
	t.Run("the page size still bounds a page that fits", func(t *testing.T) {
		got := listAll(t, s, store.ListParams{AccountID: "acct", PageSize: 2, MaxBytes: 1 << 30, Size: textBytes}, nil)
		equal(t, "ids paged through", got, want)
		page, err := s.ListJobs(ctx(t), store.ListParams{AccountID: "acct", PageSize: 12, MaxBytes: 1 << 30, Size: textBytes})
		noErr(t, "ListJobs", err)
		equal(t, fmt.Sprintf("token of an exactly full last page of %d jobs", len(page.Jobs)), page.NextPageToken, "")
	})
	t.Run("the status filter applies", func(t *testing.T) {
		_, err := s.CancelJob(ctx(t), "acct", want[3])
		noErr(t, "CancelJob", err)
		got := listAll(t, s, store.ListParams{AccountID: "acct", Status: job.StatusCancelled, PageSize: 100, MaxBytes: 1, Size: textBytes}, nil)
		equal(t, "cancelled ids", got, want[3:4])
	})
}
