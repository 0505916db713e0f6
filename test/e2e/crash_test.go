package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"
)

// TestKilledServerFinishesEveryJobExactlyOnceAfterRestart kills -9 the server
// while downloads are in flight and queued, restarts it on the same data, and
// expects every job to end within two minutes, exactly once: one webhook
// per job, one finalize step per job that merges and none for the others,
// which end with their last row.
func TestKilledServerFinishesEveryJobExactlyOnceAfterRestart(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			var requests atomic.Int64
			slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				select { // the first incarnation dies while this sleeps
				case <-time.After(3 * time.Second):
				case <-r.Context().Done():
					return
				}
				_, _ = io.WriteString(w, txtDoc)
			}))
			t.Cleanup(slow.Close)

			hooks := newReceiver(t)
			dbURL := b.databaseURL(t)
			s := startServer(t, dbURL)
			var ids []string
			merges := map[string]bool{}
			for i := range 6 {
				body := createBody(slow.URL+"/a.txt", slow.URL+"/b.txt")
				body["webhookUrl"] = hooks.srv.URL + "/hook"
				if i%2 == 0 {
					body["merge"] = map[string]any{"enabled": true}
				}
				id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, body)["id"].(string)
				ids, merges[id] = append(ids, id), i%2 == 0
			}
			deadline := time.Now().Add(20 * time.Second)
			for requests.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if requests.Load() == 0 {
				t.Fatal("no download started before the kill")
			}
			s.kill()

			restarted := time.Now()
			s.start()
			for _, id := range ids {
				j := s.waitTerminal(id, keyA, 2*time.Minute-time.Since(restarted))
				if j["status"] != "JOB_STATUS_COMPLETE" {
					t.Errorf("job %s ended %v: %v", id, j["status"], j["error"])
				}
			}
			t.Logf("all jobs terminal %s after restart", time.Since(restarted).Round(time.Millisecond))
			for range ids {
				hooks.wait(t, time.Minute)
			}
			s.stop()

			webhooks := map[string]int{}
			hooks.mu.Lock()
			for _, d := range hooks.seen {
				webhooks[jobIDOf(string(d.body))]++
			}
			hooks.mu.Unlock()
			finalizes := countFinalizes(t, dbURL, s.dataDir)
			for _, id := range ids {
				want := 0
				if merges[id] {
					want = 1
				}
				if finalizes[id] != want || webhooks[id] != 1 {
					t.Errorf("job %s (merge %t): %d finalize steps, %d webhooks; want %d and 1", id, merges[id], finalizes[id], webhooks[id], want)
				}
			}
		})
	}
}

// countFinalizes counts River finalize jobs per docjobs job, read straight
// from the database the server used.
func countFinalizes(t *testing.T, dbURL, dataDir string) map[string]int {
	t.Helper()
	// River keeps args as JSONB in SQLite; json() turns them back into text.
	const q = `SELECT json(args) FROM river_job WHERE kind = 'finalize'`
	var args []string
	if dbURL == "" {
		db, err := sql.Open("sqlite", filepath.Join(dataDir, "docjobs.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				t.Fatal(err)
			}
			args = append(args, a)
		}
	} else {
		conn, err := pgx.Connect(context.Background(), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		rows, err := conn.Query(context.Background(), `SELECT args::text FROM river_job WHERE kind = 'finalize'`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				t.Fatal(err)
			}
			args = append(args, a)
		}
	}
	counts := map[string]int{}
	for _, a := range args {
		counts[jobIDOf(a)]++
	}
	return counts
}

func jobIDOf(args string) string {
	var v struct {
		JobID string `json:"job_id"`
	}
	_ = json.Unmarshal([]byte(args), &v)
	return v.JobID
}
