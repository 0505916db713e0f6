package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

// openOn opens one more store, with its own pool and listener, on schema:
// another process of the same deployment.
func openOn(t *testing.T, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.URL(t), Schema: schema, Logger: quiet})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// signalledSoon reports whether ch closes before a generous bound; the
// notification takes milliseconds.
func signalledSoon(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

func signalledNow(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A job ended through one store (an API process) signals the watchers of
// every other store on the schema (the workers), and only the ends of the
// jobs they watch, in their own schema.
func TestAnEndCommittedByAnotherProcessSignalsItsWatchers(t *testing.T) {
	for _, tt := range storetest.JobEnds {
		t.Run(tt.Name, func(t *testing.T) {
			worker, schema := openNamedSchema(t)
			t.Cleanup(func() { worker.Close() })
			api := openOn(t, schema)
			// Another deployment sharing the database, with a job of the
			// same id.
			elsewhere, elsewhereSchema := openNamedSchema(t)
			t.Cleanup(func() { elsewhere.Close() })
			elsewhereAPI := openOn(t, elsewhereSchema)

			j, rows := storetest.Recognized(t, worker, "job-1", 1)
			twin, _ := storetest.Recognized(t, elsewhere, "job-1", 1)
			marker, _ := storetest.Recognized(t, elsewhere, "job-3", 1)
			markerEnded, stopMarker := elsewhere.WatchEnd(marker.ID)
			defer stopMarker()
			live, _ := storetest.Recognized(t, worker, "job-2", 1)
			ended, stop := worker.WatchEnd(j.ID)
			defer stop()
			other, stopOther := worker.WatchEnd(live.ID)
			defer stopOther()
			twinEnded, stopTwin := elsewhere.WatchEnd(twin.ID)
			defer stopTwin()

			tt.End(t, api, j, rows)
			if !signalledSoon(ended) {
				t.Fatal("the end committed by another process did not reach this one's watcher")
			}
			// A listener hears announcements in commit order: once the
			// other deployment has heard an end committed after job-1's,
			// it has heard job-1's too, and must have let it pass.
			if _, err := elsewhereAPI.CancelJob(t.Context(), marker.AccountID, marker.ID); err != nil {
				t.Fatal(err)
			}
			if !signalledSoon(markerEnded) {
				t.Fatal("the other deployment did not hear its own end")
			}
			if signalledNow(other) || signalledNow(twinEnded) {
				t.Errorf("signalled: another job %t, the same id in another schema %t; want neither",
					signalledNow(other), signalledNow(twinEnded))
			}
		})
	}
}

// The listening connection can be lost (a restart of the database, a
// proxy's idle cut): the listener connects again, and what ended while it
// was away still reaches the watchers.
func TestEndsReachWatchersAcrossALostListeningConnection(t *testing.T) {
	worker, schema := openNamedSchema(t)
	t.Cleanup(func() { worker.Close() })
	api := openOn(t, schema)
	j, _ := storetest.Recognized(t, worker, "job-1", 1)
	ended, stop := worker.WatchEnd(j.ID)
	defer stop()

	pid := postgres.EndListenerPID(worker)
	if pid == 0 {
		t.Fatal("the store is not listening")
	}
	conn, err := pgx.Connect(t.Context(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), `SELECT pg_terminate_backend($1)`, int(pid)); err != nil {
		t.Fatal(err)
	}
	// Ended while the listener may be away: heard when it is back, or
	// found by its recheck of the watched jobs once it listens again.
	if _, err := api.CancelJob(t.Context(), j.AccountID, j.ID); err != nil {
		t.Fatal(err)
	}
	if !signalledSoon(ended) {
		t.Fatal("the cancel did not reach the watcher after the listening connection was lost")
	}
	// And it listens again.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if p := postgres.EndListenerPID(worker); p != 0 && p != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the listener did not connect again")
		}
	}
	next, _ := storetest.Recognized(t, worker, "job-2", 1)
	nextEnded, stopNext := worker.WatchEnd(next.ID)
	defer stopNext()
	if _, err := api.DeleteJob(t.Context(), next.AccountID, next.ID); err != nil {
		t.Fatal(err)
	}
	if !signalledSoon(nextEnded) {
		t.Fatal("a delete after the reconnection did not reach the watcher")
	}
}
