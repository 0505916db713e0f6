package api

import (
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/blobtest"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

// openPostgres opens a store in a fresh schema of DOCJOBS_TEST_POSTGRES_URL,
// dropped after the test; the test is skipped when the variable is unset.
func openPostgres(t *testing.T, log *slog.Logger) storetest.Store {
	t.Helper()
	url, schema := pgtest.Schema(t)
	st, err := postgres.Open(t.Context(), postgres.Config{URL: url, Schema: schema, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// onEachStore runs fn on SQLite, and on PostgreSQL when it is configured.
func onEachStore(t *testing.T, fn func(t *testing.T, open opener)) {
	t.Helper()
	for _, db := range []struct {
		name string
		open opener
	}{{"sqlite", openSQLite}, {"postgres", openPostgres}} {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			fn(t, db.open)
		})
	}
}

const activeJobsMessage = "account has 2 jobs in progress, the most allowed (DOCJOBS_ACCOUNT_MAX_ACTIVE_JOBS); retry when some finish"

// wantActiveJobsLimit fails unless err is the refusal of a create past a
// limit of 2, with its RetryInfo.
func wantActiveJobsLimit(t *testing.T, err error) {
	t.Helper()
	wantStatus(t, err, codes.ResourceExhausted, activeJobsMessage)
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() == activeJobsRetryAfter {
			return
		}
	}
	t.Fatalf("details %v, want a RetryInfo of %s", st.Details(), activeJobsRetryAfter)
}

func TestCreateJobPastTheActiveJobsLimit(t *testing.T) {
	onEachStore(t, func(t *testing.T, open opener) {
		h := newHarnessOn(t, Config{AccountMaxActiveJobs: 2}, open)
		keyed := createRequest()
		keyed.IdempotencyKey = "first"
		first := h.create(t, "acme", keyed)
		h.create(t, "acme", createRequest())

		_, err := h.svc.CreateJob(as("acme"), createRequest())
		wantActiveJobsLimit(t, err)
		if !strings.Contains(h.logs.String(), `"msg":"job refused: active jobs limit"`) ||
			!strings.Contains(h.logs.String(), `"account_id":"acme"`) {
			t.Errorf("the refusal is not logged with its account:\n%s", h.logs.String())
		}

		t.Run("a replay at the limit returns the original job", func(t *testing.T) {
			again, err := h.svc.CreateJob(as("acme"), keyed)
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			if again.GetId() != first.GetId() {
				t.Fatalf("replay made job %s, want %s", again.GetId(), first.GetId())
			}
		})
		t.Run("another account is unaffected", func(t *testing.T) {
			h.create(t, "globex", createRequest())
		})
		t.Run("a job that ends makes room for one more", func(t *testing.T) {
			if _, err := h.svc.CancelJob(as("acme"), &docjobsv1.CancelJobRequest{Id: first.GetId()}); err != nil {
				t.Fatal(err)
			}
			h.create(t, "acme", createRequest())
			_, err := h.svc.CreateJob(as("acme"), createRequest())
			wantActiveJobsLimit(t, err)
		})
	})
}

func TestConcurrentCreatesNeverPassTheActiveJobsLimit(t *testing.T) {
	onEachStore(t, func(t *testing.T, open opener) {
		h := newHarnessOn(t, Config{AccountMaxActiveJobs: 2}, open)
		h.create(t, "acme", createRequest())
		const racing = 12
		var (
			wg               sync.WaitGroup
			mu               sync.Mutex
			admitted, denied int
		)
		start := make(chan struct{})
		for range racing {
			wg.Go(func() {
				<-start
				_, err := h.svc.CreateJob(as("acme"), createRequest())
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					admitted++
					return
				}
				if st, _ := status.FromError(err); st.Code() != codes.ResourceExhausted || st.Message() != activeJobsMessage {
					t.Errorf("racing create: %v", err)
				}
				denied++
			})
		}
		close(start)
		wg.Wait()
		if admitted != 1 || denied != racing-1 {
			t.Fatalf("admitted %d and denied %d of %d creates racing for the last place", admitted, denied, racing)
		}
		page, err := h.svc.ListJobs(as("acme"), &docjobsv1.ListJobsRequest{})
		if err != nil || len(page.GetJobs()) != 2 {
			t.Fatalf("the account has %d jobs (%v), want 2", len(page.GetJobs()), err)
		}
	})
}

// The message names the listing, so that an account at its quota can find
// what to delete.
const uploadQuotaMessage = "account uploads would exceed 100 bytes, the most allowed (DOCJOBS_ACCOUNT_MAX_UPLOAD_BYTES); delete uploads no longer needed (GET /v1/files, or ListFiles over gRPC, lists them)"

// untouchable is a body that fails the test if it is read.
type untouchable struct{ t *testing.T }

func (u untouchable) Read([]byte) (int, error) {
	u.t.Error("the body of an upload refused for the quota was read")
	return 0, io.EOF
}

func TestStoreUploadPastTheAccountQuota(t *testing.T) {
	onEachStore(t, func(t *testing.T, open opener) {
		h := newHarnessOn(t, Config{AccountMaxUploadBytes: 100}, open)
		ctx := as("acme")
		first, _, err := h.svc.StoreUpload(ctx, "a.txt", strings.NewReader(strings.Repeat("a", 60)))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = h.svc.StoreUpload(ctx, "b.txt", strings.NewReader(strings.Repeat("b", 41)))
		wantStatus(t, err, codes.ResourceExhausted, uploadQuotaMessage)
		if keys := blobtest.Keys(t, h.bucket, "uploads/"); len(keys) != 1 {
			t.Fatalf("stored after a refused upload: %v, want only the first upload", keys)
		}
		if _, _, err := h.svc.StoreUpload(ctx, "c.txt", strings.NewReader(strings.Repeat("c", 40))); err != nil {
			t.Fatalf("an upload reaching the quota exactly: %v", err)
		}

		t.Run("an account at its quota is refused before its body is read", func(t *testing.T) {
			_, _, err := h.svc.StoreUpload(ctx, "d.txt", untouchable{t})
			wantStatus(t, err, codes.ResourceExhausted, uploadQuotaMessage)
		})
		t.Run("the gRPC upload is refused alike", func(t *testing.T) {
			_, err := upload(ctx, h.svc, &docjobsv1.UploadFileRequest{Name: "e.txt", Content: []byte("e")})
			wantStatus(t, err, codes.ResourceExhausted, uploadQuotaMessage)
		})
		t.Run("another account is unaffected", func(t *testing.T) {
			if _, _, err := h.svc.StoreUpload(as("globex"), "g.txt", strings.NewReader(strings.Repeat("g", 100))); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("deleting an upload makes room", func(t *testing.T) {
			if _, err := h.svc.DeleteFile(ctx, &docjobsv1.DeleteFileRequest{Id: first.ID}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := h.svc.StoreUpload(ctx, "f.txt", strings.NewReader(strings.Repeat("f", 60))); err != nil {
				t.Fatalf("an upload after a delete: %v", err)
			}
		})
	})
}

func TestConcurrentUploadsNeverPassTheAccountQuota(t *testing.T) {
	onEachStore(t, func(t *testing.T, open opener) {
		h := newHarnessOn(t, Config{AccountMaxUploadBytes: 100}, open)
		const racing = 12
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			admitted int
		)
		start := make(chan struct{})
		for range racing {
			wg.Go(func() {
				<-start
				_, _, err := h.svc.StoreUpload(as("acme"), "x.txt", strings.NewReader(strings.Repeat("x", 30)))
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					admitted++
					return
				}
				if st, _ := status.FromError(err); st.Code() != codes.ResourceExhausted || st.Message() != uploadQuotaMessage {
					t.Errorf("racing upload: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if keys := blobtest.Keys(t, h.bucket, "uploads/"); admitted != 3 || len(keys) != 3 {
			t.Fatalf("admitted %d uploads of 30 bytes under a quota of 100, %d stored; want 3", admitted, len(keys))
		}
	})
}
