package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

func TestEndingMergesAreBounded(t *testing.T) {
	storetest.EndingMergesAreBounded(t, func(t *testing.T) (store.Store, storetest.EndMerges) {
		path := filepath.Join(t.TempDir(), "docjobs.db")
		s := open(t, sqlite.Config{Path: path})
		// A connection of the test's own: the counts are in no store
		// method. The store writes only while one of its methods runs.
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return s, storetest.EndMerges{
			Get: func(t *testing.T, jobID string) int {
				t.Helper()
				var n int
				if err := db.QueryRow(`SELECT end_merges FROM jobs WHERE id = ?`, jobID).Scan(&n); err != nil {
					t.Fatalf("end_merges of %s: %v", jobID, err)
				}
				return n
			},
			Set: func(t *testing.T, jobID string, n int) {
				t.Helper()
				if _, err := db.Exec(`UPDATE jobs SET end_merges = ? WHERE id = ?`, n, jobID); err != nil {
					t.Fatalf("set end_merges of %s: %v", jobID, err)
				}
			},
		}
	})
}

func TestEndingMergesLeaveTheWriterFree(t *testing.T) {
	storetest.EndingMergesLeaveTheWriterFree(t, func(t *testing.T) (store.Store, func(func(string))) {
		s := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "docjobs.db")})
		return s, s.SetEndMergeHook
	})
}

func TestEndingMergesSeeTheRowsTheEndingLeaves(t *testing.T) {
	storetest.EndingMergesSeeTheRowsTheEndingLeaves(t, func(t *testing.T) store.Store {
		return open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "docjobs.db")})
	})
}

func TestConcurrentEndingsOfAJobMergeOnce(t *testing.T) {
	storetest.ConcurrentEndingsOfAJobMergeOnce(t, func(t *testing.T) (store.Store, storetest.EndHooks) {
		s := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "docjobs.db")})
		return s, func(merge, wait func(string)) {
			s.SetEndMergeHook(merge)
			s.SetEndWaitHook(wait)
		}
	})
}
