package worker

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
)

// forEachStorePair runs test with the store a worker process uses and the
// store another process ends jobs through: on PostgreSQL a second store
// on the same schema, with its own pool, as an API process has; on SQLite,
// which one process normally holds, the same store.
func forEachStorePair(t *testing.T, test func(t *testing.T, worker, api store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		st := openStore(t)
		test(t, st, st)
	})
	t.Run("postgres", func(t *testing.T) {
		url, schema := pgtest.Schema(t)
		test(t, openPostgresSchema(t, url, schema), openPostgresSchema(t, url, schema))
	})
}

// holdingChat counts the calls started and holds each until its context
// ends, as a slow provider does.
type holdingChat struct{ started atomic.Int64 }

func (c *holdingChat) Complete(ctx context.Context, _ provider.ChatRequest) (provider.ChatAnswer, error) {
	c.started.Add(1)
	<-ctx.Done()
	return provider.ChatAnswer{}, ctx.Err()
}

// The audit's scale-out finding: a cancel or delete taken by the API
// process let workers elsewhere start calls, with the erased key, until
// their next poll. With the poll an hour away, only the end's signal can
// stop the file here: no call starts once the end has committed, neither
// for the rows waiting for a place nor for those whose place frees.
func TestAJobEndedByAnotherProcessStartsNoMoreProviderCalls(t *testing.T) {
	ends := []struct {
		name string
		end  func(ctx context.Context, st store.Store, j *job.Job) error
	}{
		{"cancel", func(ctx context.Context, st store.Store, j *job.Job) error {
			_, err := st.CancelJob(ctx, j.AccountID, j.ID)
			return err
		}},
		{"delete", func(ctx context.Context, st store.Store, j *job.Job) error {
			_, err := st.DeleteJob(ctx, j.AccountID, j.ID)
			return err
		}},
		{"deadline", func(ctx context.Context, st store.Store, j *job.Job) error {
			_, err := st.ExpireJob(ctx, j.ID, "timed out", "job deadline exceeded")
			return err
		}},
	}
	for _, tt := range ends {
		t.Run(tt.name, func(t *testing.T) {
			forEachStorePair(t, func(t *testing.T, worker, api store.Store) {
				const chunks, places = 12, 2
				chat := &holdingChat{}
				j := recognizedJob(t, worker, "job-1", "a", chunks)
				warns := &warnings{}
				w := newFileWorker(Config{JobCheck: time.Hour, ModelWorkers: places}.withDefaults(),
					Deps{Store: worker, Chats: fixedChats{chat}, Logger: slog.New(warns)})
				done := make(chan error, 1)
				go func() { done <- workAttempt(w, j, 2) }()
				waitFor(t, func() bool { return chat.started.Load() == places })

				if err := tt.end(t.Context(), api, j); err != nil {
					t.Fatal(err)
				}
				startedAtEnd := chat.started.Load()
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("err = %v; a file of an ended job has nothing left to retry", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the file went on asking after its job ended in another process")
				}
				if got := chat.started.Load(); got != startedAtEnd || got != places {
					t.Fatalf("calls started = %d, %d of them once the end had committed; want the %d in flight only",
						got, got-startedAtEnd, places)
				}
				// A job ending is no fault of the file's: nothing to warn of.
				if got := warns.all(); len(got) != 0 {
					t.Errorf("warnings logged: %q", got)
				}
			})
		})
	}
}

// warnings is a slog handler that keeps the messages logged at WARN or
// above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}
