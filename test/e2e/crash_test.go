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
// which end with their last row. The webhooks are counted in the database
// after the server stops as well as at the receiver: a second delivery
// queued but not yet sent when the last expected one arrived is still a
// River job there, and one sent is a second 2xx attempt.
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
			// The receiver answers before the server records its attempt.
			recorded := time.Now().Add(30 * time.Second)
			for _, id := range ids {
				j := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id, keyA, nil)
				for j["webhook"].(map[string]any)["state"] != "delivered" && time.Now().Before(recorded) {
					time.Sleep(50 * time.Millisecond)
					j = s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id, keyA, nil)
				}
			}
			s.stop()

			webhooks := map[string]int{}
			hooks.mu.Lock()
			for _, d := range hooks.seen {
				webhooks[jobIDOf(string(d.body))]++
			}
			hooks.mu.Unlock()
			finalizes := countPerJob(t, dbURL, s.dataDir, riverJobsOf("finalize"))
			deliveries := countPerJob(t, dbURL, s.dataDir, riverJobsOf("webhook"))
			delivered := countPerJob(t, dbURL, s.dataDir, jobIDs(`SELECT job_id FROM webhook_attempts WHERE status BETWEEN 200 AND 299`))
			for _, id := range ids {
				want := 0
				if merges[id] {
					want = 1
				}
				if finalizes[id] != want {
					t.Errorf("job %s (merge %t): %d finalize steps, want %d", id, merges[id], finalizes[id], want)
				}
				if webhooks[id] != 1 || deliveries[id] != 1 || delivered[id] != 1 {
					t.Errorf("job %s: %d webhooks received, %d webhook deliveries queued, %d 2xx attempts recorded; want 1 of each",
						id, webhooks[id], deliveries[id], delivered[id])
				}
			}
		})
	}
}

// riverJobsOf selects the args of every River job of kind, as text, for
// countPerJob: River keeps args as JSONB in SQLite (json() turns them back
// into text) and in PostgreSQL.
func riverJobsOf(kind string) perJobQuery {
	return perJobQuery{
		sqlite:   `SELECT json(args) FROM river_job WHERE kind = '` + kind + `'`,
		postgres: `SELECT args::text FROM river_job WHERE kind = '` + kind + `'`,
		args:     true,
	}
}

// jobIDs is a query selecting docjobs job ids, which both databases read
// alike, for countPerJob.
func jobIDs(query string) perJobQuery {
	return perJobQuery{sqlite: query, postgres: query}
}

// perJobQuery selects one text column per counted row: a docjobs job id, or
// River job args naming one (args).
type perJobQuery struct {
	sqlite, postgres string
	args             bool
}

// countPerJob counts pq's rows per docjobs job, read straight from the
// database the server used.
func countPerJob(t *testing.T, dbURL, dataDir string, pq perJobQuery) map[string]int {
	t.Helper()
	var values []string
	if dbURL == "" {
		db, err := sql.Open("sqlite", filepath.Join(dataDir, "docjobs.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.Query(pq.sqlite)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			values = append(values, v)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	} else {
		conn, err := pgx.Connect(context.Background(), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		rows, err := conn.Query(context.Background(), pq.postgres)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			values = append(values, v)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[string]int{}
	for _, v := range values {
		if pq.args {
			v = jobIDOf(v)
		}
		counts[v]++
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
