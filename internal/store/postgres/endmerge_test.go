package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

func TestEndingMergesAreBounded(t *testing.T) {
	pgtest.URL(t)
	storetest.EndingMergesAreBounded(t, func(t *testing.T) (store.Store, storetest.EndMerges) {
		s, schema := openNamedSchema(t)
		// A connection of the test's own: the counts are in no store method.
		conn, err := pgx.Connect(t.Context(), pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(t.Context()) })
		jobs := pgx.Identifier{schema, "jobs"}.Sanitize()
		return s, storetest.EndMerges{
			Get: func(t *testing.T, jobID string) int {
				t.Helper()
				var n int
				if err := conn.QueryRow(t.Context(), `SELECT end_merges FROM `+jobs+` WHERE id = $1`, jobID).Scan(&n); err != nil {
					t.Fatalf("end_merges of %s: %v", jobID, err)
				}
				return n
			},
			Set: func(t *testing.T, jobID string, n int) {
				t.Helper()
				if _, err := conn.Exec(t.Context(), `UPDATE `+jobs+` SET end_merges = $1 WHERE id = $2`, n, jobID); err != nil {
					t.Fatalf("set end_merges of %s: %v", jobID, err)
				}
			},
		}
	})
}

func TestEndingMergesLeaveTheWriterFree(t *testing.T) {
	pgtest.URL(t)
	storetest.EndingMergesLeaveTheWriterFree(t, func(t *testing.T) (store.Store, func(func(string))) {
		s := openSchema(t)
		return s, s.SetEndMergeHook
	})
}

func TestEndingMergesSeeTheRowsTheEndingLeaves(t *testing.T) {
	pgtest.URL(t)
	storetest.EndingMergesSeeTheRowsTheEndingLeaves(t, func(t *testing.T) store.Store { return openSchema(t) })
}

func TestConcurrentEndingsOfAJobMergeOnce(t *testing.T) {
	pgtest.URL(t)
	storetest.ConcurrentEndingsOfAJobMergeOnce(t, func(t *testing.T) (store.Store, storetest.EndHooks) {
		s := openSchema(t)
		return s, func(merge, wait func(string)) {
			s.SetEndMergeHook(merge)
			s.SetEndWaitHook(wait)
		}
	})
}
