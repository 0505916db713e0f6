package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docjobs/docjobs/internal/job"
)

// endMergeCrashes is how many tries at merging a job's answers in the
// transaction that ends it (a cancel, the deadline) may end with their
// process before the job is ended without them; the worker's
// finalizeCrashes for the same merge in finalize. A merge that takes its
// process down (at the merge's 64 MiB input limit it peaked at about
// 1.2 GB, and hostile shapes still reach several GB) rolls the ending back, and the deadline sweep, which runs at
// every start and takes the oldest overdue job first, ran it again at
// every start: the node crash-looped (hunt-endings F2).
const endMergeCrashes = 3

// endMergeGiveBackWait bounds giving a try back once its ending failed.
const endMergeGiveBackWait = 5 * time.Second

// endMergeTry is the try at merging an ending job's answers that a cancel
// or the deadline is about to make.
type endMergeTry struct {
	// unmerged: the job merges, and endMergeCrashes earlier tries ended
	// with their process: end it without reading or merging its answers.
	unmerged bool
	// tries is how many earlier tries there were, for the job's error.
	tries int
	// counted: this try was counted, and is given back if the ending
	// fails short of a crash (giveBack).
	counted bool
}

// countEndMerge counts a try at merging the answers of job id (of account
// accountID unless "") before the transaction that ends it merges them, in
// a short transaction of its own: the count must outlive a merge that
// takes its process down, which rolls the ending back. A job that does not
// merge, is terminal or is not there costs one read and writes nothing, as
// does one whose tries are spent (it ends unmerged). Every caller counts,
// so concurrent cancels of one merging job each count a try.
func (s *Store[TTx]) countEndMerge(ctx context.Context, accountID, id string) (endMergeTry, error) {
	query := `SELECT merge_enabled, end_merges FROM jobs WHERE id = ? AND status IN (?, ?)`
	args := []any{id, string(job.StatusNew), string(job.StatusRunning)}
	if accountID != "" {
		query += ` AND account_id = ?`
		args = append(args, accountID)
	}
	var (
		merges bool
		tries  int
	)
	err := s.queryRow(ctx, s.backend.DB(), query, args, &merges, &tries)
	if errors.Is(err, errNoRows) {
		return endMergeTry{}, nil // the ending transaction says what it is
	}
	if err != nil {
		return endMergeTry{}, fmt.Errorf("merge tries of %s: %w", id, err)
	}
	if !merges {
		return endMergeTry{}, nil
	}
	if tries >= endMergeCrashes {
		return endMergeTry{unmerged: true, tries: tries}, nil
	}
	var n int64
	err = s.inTx(ctx, func(_ TTx, q Querier) error {
		var err error
		n, err = s.exec(ctx, q, `UPDATE jobs SET end_merges = end_merges + 1 WHERE id = ? AND status IN (?, ?)`,
			id, string(job.StatusNew), string(job.StatusRunning))
		return err
	})
	if err != nil {
		return endMergeTry{}, fmt.Errorf("count a merge try of %s: %w", id, err)
	}
	return endMergeTry{tries: tries, counted: n == 1}, nil
}

// giveBack uncounts try after its ending failed with an error (a stop, the
// database): only a try its process did not survive counts toward the
// bound. A give-back that fails leaves one try too many counted, which is
// logged.
func (s *Store[TTx]) giveBack(ctx context.Context, try endMergeTry, id string) {
	if !try.counted {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endMergeGiveBackWait)
	defer cancel()
	err := s.inTx(ctx, func(_ TTx, q Querier) error {
		_, err := s.exec(ctx, q, `UPDATE jobs SET end_merges = end_merges - 1 WHERE id = ? AND end_merges > 0`, id)
		return err
	})
	if err != nil {
		s.logger.WarnContext(ctx, "store: a merge try of an ending job that failed was not given back; it counts as one that ended with its process",
			"job_id", id, "err", err)
	}
}

// logUnmerged says that end ended job id without merging its answers,
// when try was given up and the job merges.
func (s *Store[TTx]) logUnmerged(ctx context.Context, try endMergeTry, id, end string) {
	if try.unmerged {
		s.logger.ErrorContext(ctx, "store: merging this job's answers ended with its process too often; "+end+" ended it without merging them",
			"job_id", id, "crashes", try.tries)
	}
}

// unmergedReason is what the error of a job ended without its answers
// merged says, after reason (the status's own) when there is one.
func unmergedReason(reason string, tries int) string {
	msg := fmt.Sprintf("the answers were not merged: a process ended while merging them %d times; each chunk's answer is in its row", tries)
	if reason == "" {
		return msg
	}
	return reason + "; " + msg
}
