package api

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

func TestPossibleID(t *testing.T) {
	tests := []struct {
		name string
		id   string
		want bool
	}{
		{"a UUIDv7 the service makes", "0197a8e2-3b4c-7d5e-8f60-123456789abc", true},
		{"letters, digits and - . _ ~", "Job-1.a_b~c", true},
		{"64 bytes", strings.Repeat("a", 64), true},
		{"empty", "", false},
		{"65 bytes", strings.Repeat("a", 65), false},
		{"NUL", "\x00", false},
		{"NUL after an id", "0197a8e2-3b4c-7d5e-8f60-123456789abc\x00", false},
		{"an invalid UTF-8 byte", "\xff", false},
		{"a slash", "a/b", false},
		{"a space", "a b", false},
		{"a non-ASCII letter", "é", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PossibleID(tt.id); got != tt.want {
				t.Errorf("PossibleID(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}

// lookups is a store that notes the ids it is asked to look up.
type lookups struct {
	storetest.Store
	mu  sync.Mutex
	ids []string
}

func (l *lookups) note(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = append(l.ids, id)
}

func (l *lookups) asked() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ids)
}

func (l *lookups) GetJob(ctx context.Context, accountID, id string) (*job.Job, error) {
	l.note(id)
	return l.Store.GetJob(ctx, accountID, id)
}

func (l *lookups) ResultRows(ctx context.Context, accountID, id string) (*job.Job, iter.Seq2[store.ResultRow, error], error) {
	l.note(id)
	return l.Store.ResultRows(ctx, accountID, id)
}

func (l *lookups) CancelJob(ctx context.Context, accountID, id string) (*job.Job, error) {
	l.note(id)
	return l.Store.CancelJob(ctx, accountID, id)
}

func (l *lookups) DeleteJob(ctx context.Context, accountID, id string) ([]string, error) {
	l.note(id)
	return l.Store.DeleteJob(ctx, accountID, id)
}

func (l *lookups) GetFile(ctx context.Context, accountID, id string) (job.File, error) {
	l.note(id)
	return l.Store.GetFile(ctx, accountID, id)
}

// The audit's finding: on PostgreSQL an id with NUL or a byte that is not
// UTF-8 answered 500 (the database refuses such text), on SQLite 404. No
// such id can exist: every method answers not found, on every store,
// without asking it; an id that could exist is still looked up.
func TestIDsTheServiceCannotHaveMadeAreNotFoundWithoutALookup(t *testing.T) {
	onEachStore(t, func(t *testing.T, open opener) {
		var st *lookups
		h := newHarnessOn(t, Config{}, func(t *testing.T, log *slog.Logger) storetest.Store {
			st = &lookups{Store: open(t, log)}
			return st
		})
		ctx := as("acme")
		for _, id := range []string{"\x00", "\xff", "a\x00b", "a/b", strings.Repeat("a", 65), "no such job"} {
			calls := map[string]func() error{
				"GetJob": func() error {
					_, err := h.svc.GetJob(ctx, &docjobsv1.GetJobRequest{Id: id})
					return err
				},
				"GetJobResult": func() error {
					_, err := h.svc.GetJobResult(ctx, &docjobsv1.GetJobResultRequest{Id: id})
					return err
				},
				"CancelJob": func() error {
					_, err := h.svc.CancelJob(ctx, &docjobsv1.CancelJobRequest{Id: id})
					return err
				},
				"DeleteJob": func() error {
					_, err := h.svc.DeleteJob(ctx, &docjobsv1.DeleteJobRequest{Id: id})
					return err
				},
			}
			for name, call := range calls {
				wantStatus(t, call(), codes.NotFound, "job not found")
				if got := st.asked(); len(got) != 0 {
					t.Fatalf("%s(%q) asked the store for %q", name, id, got)
				}
			}
			if _, _, err := h.svc.OpenFile(ctx, id); !errors.Is(err, ErrNotFound) {
				t.Errorf("OpenFile(%q) = %v, want ErrNotFound", id, err)
			}
			_, err := getFile(ctx, h.svc, id)
			wantStatus(t, err, codes.NotFound, "file not found")
			_, err = h.svc.DeleteFile(ctx, &docjobsv1.DeleteFileRequest{Id: id})
			wantStatus(t, err, codes.NotFound, "file not found")
			// A slash, escaped or not, makes the URL no upload URL at all.
			if !strings.Contains(id, "/") {
				_, err = h.svc.CreateJob(ctx, createRequest("https://example.com/a", FileURL(testPublicURL, url.PathEscape(id))))
				wantStatus(t, err, codes.InvalidArgument, "sourceUrls[1]: file not found")
			}
			if got := st.asked(); len(got) != 0 {
				t.Fatalf("the file calls with %q asked the store for %q", id, got)
			}
		}
		_, err := h.svc.GetJob(ctx, &docjobsv1.GetJobRequest{Id: "no-such-job"})
		wantStatus(t, err, codes.NotFound, "job not found")
		if got := st.asked(); !slices.Equal(got, []string{"no-such-job"}) {
			t.Fatalf("store asked for %q, want the possible id looked up", got)
		}
	})
}

// The audit's finding: a replay of a create whose upload was deleted since
// was refused with "file not found"; the spec returns the original job to
// an identical replay. A create that is no replay is still refused.
func TestAReplayFindsItsJobAfterItsUploadIsDeleted(t *testing.T) {
	onEachStore(t, func(t *testing.T, open opener) {
		h := newHarnessOn(t, Config{}, open)
		ctx := as("acme")
		f, u, err := h.svc.StoreUpload(ctx, "a.txt", strings.NewReader("hello"))
		if err != nil {
			t.Fatal(err)
		}
		req := createRequest("https://example.com/a", u)
		req.IdempotencyKey = "upload-key"
		first := h.create(t, "acme", req)
		if _, err := h.svc.DeleteFile(ctx, &docjobsv1.DeleteFileRequest{Id: f.ID}); err != nil {
			t.Fatal(err)
		}
		riverBefore := h.riverJobs(t)

		again, err := h.svc.CreateJob(ctx, proto.CloneOf(req))
		if err != nil {
			t.Fatalf("replay after the upload was deleted: %v", err)
		}
		if again.GetId() != first.GetId() {
			t.Fatalf("replay returned job %s, want %s", again.GetId(), first.GetId())
		}
		if n := h.riverJobs(t); n != riverBefore {
			t.Fatalf("%d River jobs after the replay, want %d", n, riverBefore)
		}

		refused := []struct {
			name, want string
			mutate     func(r *docjobsv1.CreateJobRequest)
		}{
			{"without a key", "sourceUrls[1]: file not found", func(r *docjobsv1.CreateJobRequest) { r.IdempotencyKey = "" }},
			{"with a key never used", "sourceUrls[1]: file not found", func(r *docjobsv1.CreateJobRequest) { r.IdempotencyKey = "new-key" }},
			{"with the key and other parameters", "idempotency key reused with different request parameters",
				func(r *docjobsv1.CreateJobRequest) { r.Title = "other" }},
		}
		for _, tt := range refused {
			t.Run("a create "+tt.name+" is refused", func(t *testing.T) {
				r := proto.CloneOf(req)
				tt.mutate(r)
				_, err := h.svc.CreateJob(ctx, r)
				wantStatus(t, err, codes.InvalidArgument, tt.want)
				if n := h.riverJobs(t); n != riverBefore {
					t.Fatalf("%d River jobs after a refused create, want %d", n, riverBefore)
				}
			})
		}
		page, err := h.svc.ListJobs(ctx, &docjobsv1.ListJobsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(page.GetJobs()); n != 1 {
			t.Fatalf("%d jobs, want the first only", n)
		}
	})
}
