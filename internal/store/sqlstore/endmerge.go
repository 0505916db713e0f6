package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// endMergeCrashes is how many tries at merging a job's answers for the
// cancel or the deadline that ends it (mergeBefore, mergeEnded) may end
// with their process before the job is ended without them; the worker's
// finalizeCrashes for the same merge in finalize. A merge that takes its
// process down (at the merge's 64 MiB input limit it peaked at about
// 1.2 GB, and hostile shapes still reach several GB) leaves the job unended, and the deadline sweep, which runs at
// every start and takes the oldest overdue job first, ran it again at
// every start: the node crash-looped (hunt-endings F2).
const endMergeCrashes = 3

// endMergeGiveBackWait bounds giving a try back once its ending failed.
const endMergeGiveBackWait = 5 * time.Second

// SetEndMergeHook makes fn run just before each merge of a job's answers
// that a cancel or the deadline makes (mergeEnded), with the job's id: a
// test blocks there to see what the merge holds while it runs. For tests
// only; set it before the store ends any job.
func (s *Store[TTx]) SetEndMergeHook(fn func(jobID string)) { s.endMergeHook = fn }

// SetEndWaitHook makes fn run when a cancel or the deadline of a merging
// job waits for another ending of that job to end first (lockEnd), with
// the job's id. For tests only; set it before the store ends any job.
func (s *Store[TTx]) SetEndWaitHook(fn func(jobID string)) { s.endWaitHook = fn }

// endLocks holds, per job, the right to merge its answers for a cancel or
// the deadline. Inside the ending transaction the merge was serialized by
// the job row's lock: a second cancel waited there and then found the job
// ended. Merged before the transaction (mergeBefore), concurrent endings
// would each merge at once, each up to the merge's peak memory (about
// 1.2 GB at its input limit), so they take turns here; the one that waited
// then finds the job ended without merging. Other processes' endings of
// the job are not held (they merge alone, as before the merge moved).
type endLocks struct {
	mu   sync.Mutex
	jobs map[string]*endLock
}

type endLock struct {
	token chan struct{} // holds one value while an ending holds the lock
	users int           // holders and waiters; the entry goes at 0
}

// lockEnd takes job id's end lock, waiting (until ctx ends) while another
// ending of it in this process holds it; the caller calls unlock.
func (s *Store[TTx]) lockEnd(ctx context.Context, id string) (unlock func(), err error) {
	l := &s.endLocks
	l.mu.Lock()
	if l.jobs == nil {
		l.jobs = make(map[string]*endLock)
	}
	e := l.jobs[id]
	if e == nil {
		e = &endLock{token: make(chan struct{}, 1)}
		l.jobs[id] = e
	}
	e.users++
	l.mu.Unlock()
	leave := func() {
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.jobs, id)
		}
		l.mu.Unlock()
	}
	select {
	case e.token <- struct{}{}:
	default:
		if s.endWaitHook != nil {
			s.endWaitHook(id)
		}
		select {
		case e.token <- struct{}{}:
		case <-ctx.Done():
			leave()
			return nil, fmt.Errorf("wait for another ending of %s: %w", id, ctx.Err())
		}
	}
	return func() {
		<-e.token
		leave()
	}, nil
}

// endMergeTry is the try at merging an ending job's answers that a cancel
// or the deadline is about to make.
type endMergeTry struct {
	// merges: the job merges and was live when counted; a cancel or the
	// deadline of any other merges nothing (mergeBefore is skipped).
	merges bool
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
// accountID unless "") before the cancel or deadline ending it merges them, in
// a short transaction of its own: the count must outlive a merge that
// takes its process down, which leaves the job unended. A job that does not
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
		return endMergeTry{merges: true, unmerged: true, tries: tries}, nil
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
	return endMergeTry{merges: true, tries: tries, counted: n == 1}, nil
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

// endMergeOutside is how many merges a cancel or the deadline makes before
// its transaction (mergeBefore), each redone when the job's rows moved
// under it, before it merges inside the transaction: a job whose answers
// keep landing ends all the same, holding the writer as it did before.
const endMergeOutside = 2

// errRowsMoved: a row of the job being ended moved after mergeBefore
// merged its answers, so that merge is not what its rows hold.
var errRowsMoved = errors.New("the job's rows moved while its answers were merged")

// rowCounts are the counts of a job's rows that every change a merge of
// its answers could see moves: rows are only inserted (model rows, with
// their file's recognition) and only go from PENDING to terminal, once,
// and every column a merge reads is set by one of those. The counts only
// grow, so the same counts read at two times mean that no row moved in
// between. A job's rows are deleted only with the job.
type rowCounts struct {
	llm, llmEnded, ocrEnded int64
}

// countRows reads job id's rowCounts on q.
func (s *Store[TTx]) countRows(ctx context.Context, q Querier, id string) (rowCounts, error) {
	var c rowCounts
	err := s.queryRow(ctx, q, `SELECT (SELECT COUNT(*) FROM llm_rows WHERE job_id = ?),
		(SELECT COUNT(*) FROM llm_rows WHERE job_id = ? AND NOT (`+isPending+`)),
		(SELECT COUNT(*) FROM ocr_rows WHERE job_id = ? AND NOT (`+isPending+`))`,
		[]any{id, id, id}, &c.llm, &c.llmEnded, &c.ocrEnded)
	if err != nil {
		return rowCounts{}, fmt.Errorf("row counts of %s: %w", id, err)
	}
	return c, nil
}

// endMerge is a merge of an ending job's answers made before the
// transaction that ends it (mergeBefore).
type endMerge struct {
	merged []byte
	// counts are the job's rows as the merge read them.
	counts rowCounts
}

// mergeBefore merges the answers of job id (of account accountID unless
// "") as a cancel or the deadline ending it now would store them, outside
// any transaction: a merge takes seconds at the merge's input limit, and
// inside the ending transaction it held the job row, and SQLite's one
// writer, for all that time (hunt mergetx). Its pending rows are taken as
// failed, and each file still being recognized as given its ocr_failed
// row, as failPendingRows will make them. nil when the job does not merge,
// has ended or is not there (read by countEndMerge as try, or here): the
// ending transaction says which.
//
// The counts are read first: the ending transaction stores the merge only
// if it reads the same ones, so no row moved between them, and every read
// here saw the rows that transaction ends.
func (s *Store[TTx]) mergeBefore(ctx context.Context, accountID, id string, try endMergeTry) (*endMerge, error) {
	if !try.merges {
		return nil, nil // countEndMerge read it: no second read
	}
	db := s.backend.DB()
	j, err := s.getJob(ctx, db, accountID, id, "")
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !j.Merge.Enabled || j.Status.Terminal() {
		return nil, nil
	}
	counts, err := s.countRows(ctx, db, id)
	if err != nil {
		return nil, err
	}
	llm, err := s.llmRows(ctx, db, id, llmColumnsLean)
	if err != nil {
		return nil, err
	}
	skipped, err := s.filesInRecognition(ctx, db, j)
	if err != nil {
		return nil, err
	}
	merged, err := s.mergeRows(ctx, db, j, endedRows(llm, skipped), try.unmerged)
	if err != nil {
		return nil, err
	}
	return &endMerge{merged: merged, counts: counts}, nil
}

// endedRows is model rows llm as failPendingRows leaves them: the pending
// ones FAILED, and the ocr_failed rows skipped inserted, in the order
// llmRows reads them (file, prompt, chunk).
func endedRows(llm, skipped []job.LLMRow) []job.LLMRow {
	for i := range llm {
		if llm[i].Status == job.RowPending {
			llm[i].Status = job.RowFailed
		}
	}
	if len(skipped) == 0 {
		return llm
	}
	rows := append(llm, skipped...)
	slices.SortStableFunc(rows, func(a, b job.LLMRow) int {
		return cmp.Or(cmp.Compare(a.FileIndex, b.FileIndex), cmp.Compare(a.PromptIndex, b.PromptIndex),
			cmp.Compare(a.ChunkIndex, b.ChunkIndex))
	})
	return rows
}

// endMerged returns what the ending transaction q, which holds job j's
// row, stores as j's merged answers: pre's merge when j's rows are as it
// read them (q has not failed any yet), else errRowsMoved to have the
// ending merge again before a new transaction, unless last, when it merges
// inside q after failPendingRows (merge inside: mergeEnded). ready is
// false when the merge is left to mergeEnded.
func (s *Store[TTx]) endMerged(ctx context.Context, q Querier, j *job.Job, pre *endMerge, last bool) (merged []byte, ready bool, err error) {
	if pre == nil || !j.Merge.Enabled {
		return nil, false, nil
	}
	counts, err := s.countRows(ctx, q, j.ID)
	if err != nil {
		return nil, false, err
	}
	if counts == pre.counts {
		return pre.merged, true, nil
	}
	if !last {
		return nil, false, errRowsMoved
	}
	return nil, false, nil
}
