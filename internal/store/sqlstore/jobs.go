package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/jobmerge"
	"github.com/docjobs/docjobs/internal/store"
)

const jobColumns = `id, account_id, title, metadata, status, error, source_urls, files, prompts,
	neural_type, neural_model, neural_chunk_budget_tokens, ocr_provider, ocr_model,
	extraction_mode, response_schema, consensus_mode,
	merge_enabled, merge_scope, merge_conflict_policy, merge_dedupe_by, merge_format,
	webhook_url, idempotency_key, request_hash, created, updated,
	webhook_state, webhook_attempts, webhook_last_status, webhook_last_error, webhook_last_attempt_at,
	webhook_delivered_at, webhook_signed`

// jobArgs are the values of jobColumns for j, in order.
func (s *Store[TTx]) jobArgs(j *job.Job) ([]any, error) {
	metadata, err := jsonText(j.Metadata)
	if err != nil {
		return nil, err
	}
	sources, err := jsonText(j.SourceURLs)
	if err != nil {
		return nil, err
	}
	files, err := jsonText(j.Files)
	if err != nil {
		return nil, err
	}
	prompts, err := jsonText(j.Prompts)
	if err != nil {
		return nil, err
	}
	dedupe, err := jsonText(j.Merge.DedupeBy)
	if err != nil {
		return nil, err
	}
	return []any{
		j.ID, j.AccountID, j.Title, metadata, string(j.Status), j.Error, sources, files, prompts,
		j.Neural.Type, j.Neural.Model, j.Neural.ChunkBudgetTokens, j.OCR.Provider, j.OCR.Model,
		j.ExtractionMode, j.ResponseSchema, j.ConsensusMode,
		j.Merge.Enabled, j.Merge.Scope, j.Merge.ConflictPolicy, dedupe, j.Merge.Format,
		j.WebhookURL, j.IdempotencyKey, j.RequestHash, s.ts(j.Created), s.ts(j.Updated),
		j.Webhook.State, j.Webhook.Attempts, j.Webhook.LastStatus, j.Webhook.LastError,
		s.tsOrNull(j.Webhook.LastAttemptAt), s.tsOrNull(j.Webhook.DeliveredAt), j.WebhookSigned,
	}, nil
}

// scanJob scans one row of jobColumns.
func scanJob(rows Rows) (*job.Job, error) {
	var (
		j      job.Job
		status string
	)
	err := rows.Scan(
		&j.ID, &j.AccountID, &j.Title, jsonScan{&j.Metadata}, &status, &j.Error,
		jsonScan{&j.SourceURLs}, jsonScan{&j.Files}, jsonScan{&j.Prompts},
		&j.Neural.Type, &j.Neural.Model, &j.Neural.ChunkBudgetTokens, &j.OCR.Provider, &j.OCR.Model,
		&j.ExtractionMode, &j.ResponseSchema, &j.ConsensusMode,
		&j.Merge.Enabled, &j.Merge.Scope, &j.Merge.ConflictPolicy, jsonScan{&j.Merge.DedupeBy}, &j.Merge.Format,
		&j.WebhookURL, &j.IdempotencyKey, &j.RequestHash, timeScan{&j.Created}, timeScan{&j.Updated},
		&j.Webhook.State, &j.Webhook.Attempts, &j.Webhook.LastStatus, &j.Webhook.LastError,
		timeScan{&j.Webhook.LastAttemptAt}, timeScan{&j.Webhook.DeliveredAt}, &j.WebhookSigned,
	)
	if err != nil {
		return nil, fmt.Errorf("scan job: %w", err)
	}
	j.Status = job.Status(status)
	j.Metadata = emptyMapToNil(j.Metadata)
	j.SourceURLs = emptyToNil(j.SourceURLs)
	j.Files = emptyToNil(j.Files)
	j.Prompts = emptyToNil(j.Prompts)
	j.Merge.DedupeBy = emptyToNil(j.Merge.DedupeBy)
	return &j, nil
}

// getJob reads one job; accountID "" matches any account. lock is the
// dialect's clause that locks the row (Dialect.ForUpdate or ForDelete), ""
// to read it unlocked: every transaction that changes a job or its rows
// locks it first (the lock order, locks.go), so they serialize per job.
func (s *Store[TTx]) getJob(ctx context.Context, q Querier, accountID, id string, lock string) (*job.Job, error) {
	query := `SELECT ` + jobColumns + ` FROM jobs WHERE id = ?`
	args := []any{id}
	if accountID != "" {
		query += ` AND account_id = ?`
		args = append(args, accountID)
	}
	query += lock
	rows, err := s.query(ctx, q, query, args...)
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("get job %s: %w", id, err)
		}
		return nil, store.ErrNotFound
	}
	j, err := scanJob(rows)
	if err != nil {
		return nil, err
	}
	rows.Close()
	return j, rows.Err()
}

// CreateJob inserts the job, its PENDING OCR rows, its secrets and the first
// River jobs in one transaction; see store.Store.
func (s *Store[TTx]) CreateJob(ctx context.Context, p store.CreateJobParams) (*job.Job, bool, error) {
	if p.Job == nil || p.Job.ID == "" || p.Job.AccountID == "" {
		return nil, false, errors.New("create job: job id and account id are required")
	}
	j := *p.Job
	j.Created = truncate(j.Created)
	if j.Created.IsZero() {
		j.Created = s.nowUTC()
	}
	j.Updated = truncate(j.Updated)
	if j.Updated.IsZero() {
		j.Updated = j.Created
	}
	if j.WebhookURL != "" && j.Webhook.State == "" {
		j.Webhook.State = job.WebhookPending
	}
	if j.Status == "" {
		j.Status = job.StatusNew
	}
	// Kept apart from the secret itself, which is erased when the delivery
	// ends: should the secret go missing before, the worker knows the
	// request was meant to be signed and does not send it unsigned.
	j.WebhookSigned = slices.ContainsFunc(p.Secrets, func(s job.SealedSecret) bool {
		return s.Field == job.SecretWebhookSecret
	})
	// Files is index-aligned with SourceURLs from the start: a file names
	// its source URL until its stored copy replaces it, and keeps naming it
	// if it is never stored (docs/decisions.md).
	files := slices.Clone(j.SourceURLs)
	for i, f := range j.Files {
		if i < len(files) && f != "" {
			files[i] = f
		}
	}
	j.Files = emptyToNil(files)

	args, err := s.jobArgs(&j)
	if err != nil {
		return nil, false, fmt.Errorf("create job %s: %w", j.ID, err)
	}

	if p.ReplayOnly {
		if j.IdempotencyKey == "" {
			return nil, false, store.ErrNotFound
		}
		return s.replay(ctx, &j, p.LegacyRequestHashes)
	}

	var (
		duplicate bool
		woken     []string
	)
	err = s.inTx(ctx, func(tx TTx, q Querier) error {
		duplicate, woken = false, nil // a retried transaction starts over
		if p.MaxActiveJobs > 0 {
			replay, err := s.checkActiveJobs(ctx, q, j.AccountID, j.IdempotencyKey, p.MaxActiveJobs)
			if err != nil {
				return err
			}
			if replay {
				duplicate = true
				return errReplay
			}
		}
		_, err := s.exec(ctx, q, `INSERT INTO jobs (`+jobColumns+`) VALUES (`+placeholders(len(args))+`)`, args...)
		if err != nil {
			if j.IdempotencyKey != "" && s.dialect.IsUniqueViolation(err) {
				duplicate = true
			}
			return fmt.Errorf("insert job: %w", err)
		}
		// A statement per batch of rows, not per row: on PostgreSQL each
		// statement is a round trip inside the transaction every file of
		// the job waits for (docs/benchmarks.md, sixteenth session).
		for first := 0; first < len(j.SourceURLs); first += createRowsBatch {
			n := min(createRowsBatch, len(j.SourceURLs)-first)
			args := make([]any, 0, 6*n)
			for i := first; i < first+n; i++ {
				args = append(args, j.ID, i, j.Files[i], string(job.RowPending), s.ts(j.Created), s.ts(j.Created))
			}
			_, err := s.exec(ctx, q, `INSERT INTO ocr_rows (job_id, file_index, file, status, created, updated)
				VALUES `+valueRows(n, 6), args...)
			if err != nil {
				return fmt.Errorf("insert ocr rows %d-%d: %w", first, first+n-1, err)
			}
		}
		if len(p.Secrets) > 0 {
			args := make([]any, 0, 3*len(p.Secrets))
			for _, sec := range p.Secrets {
				args = append(args, j.ID, sec.Field, sec.Ciphertext)
			}
			_, err := s.exec(ctx, q, `INSERT INTO job_secrets (job_id, field, ciphertext) VALUES `+valueRows(len(p.Secrets), 3), args...)
			if err != nil {
				return fmt.Errorf("insert secrets: %w", err)
			}
		}
		return s.insertRiverJobs(ctx, tx, p.Enqueue, &woken)
	})
	if err == nil {
		s.wake(ctx, woken)
		return &j, false, nil
	}
	if !duplicate {
		return nil, false, fmt.Errorf("create job %s: %w", j.ID, err)
	}

	// The unique index on (account, idempotency key) decided, or the limit
	// check found the key taken: another create committed first. Its
	// transaction is over, so the read sees it.
	existing, replayed, err := s.replay(ctx, &j, p.LegacyRequestHashes)
	if errors.Is(err, store.ErrNotFound) {
		// The violation was of another unique constraint (the id).
		return nil, false, fmt.Errorf("create job %s: duplicate job id", j.ID)
	}
	return existing, replayed, err
}

// replay returns the job of j's idempotency key when j's request hash (or
// the legacy one) is the job's: ErrIdempotencyMismatch when it is not,
// ErrNotFound when the key names no job.
func (s *Store[TTx]) replay(ctx context.Context, j *job.Job, legacyHashes []string) (*job.Job, bool, error) {
	existing, err := s.jobByIdempotencyKey(ctx, j.AccountID, j.IdempotencyKey)
	if err != nil {
		return nil, false, err
	}
	if existing.RequestHash != j.RequestHash && !slices.Contains(legacyHashes, existing.RequestHash) {
		return nil, false, store.ErrIdempotencyMismatch
	}
	return existing, true, nil
}

// errReplay ends a create transaction that found its idempotency key
// taken; CreateJob then answers as for a unique violation.
var errReplay = errors.New("idempotency key already used")

// activeStatuses are the job statuses that count against an account's
// limit of active jobs: every status that is not terminal.
var activeStatuses = []any{string(job.StatusNew), string(job.StatusRunning)}

// checkActiveJobs locks the account and returns ErrActiveJobsLimit when it
// has limit jobs that have not ended, unless key already names one of its
// jobs (replay=true): a replay creates nothing, so the limit does not
// apply to it. It runs in the create's transaction, which on SQLite
// already holds the write lock.
func (s *Store[TTx]) checkActiveJobs(ctx context.Context, q Querier, accountID, key string, limit int) (replay bool, err error) {
	if err := s.lockAccount(ctx, q, accountID); err != nil {
		return false, err
	}
	// LIMIT bounds the work to the limit however many jobs are active;
	// jobs_account_status_created answers it from the index.
	var n int
	err = s.queryRow(ctx, q, `SELECT COUNT(*) FROM (SELECT 1 FROM jobs
		WHERE account_id = ? AND status IN (?, ?) LIMIT ?) active`,
		[]any{accountID, activeStatuses[0], activeStatuses[1], limit}, &n)
	if err != nil {
		return false, fmt.Errorf("count active jobs: %w", err)
	}
	if n < limit {
		return false, nil
	}
	if key != "" {
		var one int
		err := s.queryRow(ctx, q, `SELECT 1 FROM jobs WHERE account_id = ? AND idempotency_key = ?`,
			[]any{accountID, key}, &one)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, errNoRows) {
			return false, fmt.Errorf("look up idempotency key: %w", err)
		}
	}
	return false, store.ErrActiveJobsLimit
}

// lockAccount takes the dialect's lock on one account until the
// transaction ends.
func (s *Store[TTx]) lockAccount(ctx context.Context, q Querier, accountID string) error {
	if s.dialect.AccountLock == "" {
		return nil
	}
	if _, err := s.exec(ctx, q, s.dialect.AccountLock, accountID); err != nil {
		return fmt.Errorf("lock account %s: %w", accountID, err)
	}
	return nil
}

func (s *Store[TTx]) jobByIdempotencyKey(ctx context.Context, accountID, key string) (*job.Job, error) {
	rows, err := s.query(ctx, s.backend.DB(),
		`SELECT `+jobColumns+` FROM jobs WHERE account_id = ? AND idempotency_key = ?`, accountID, key)
	if err != nil {
		return nil, fmt.Errorf("job by idempotency key: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("job by idempotency key: %w", err)
		}
		return nil, store.ErrNotFound
	}
	return scanJob(rows)
}

// GetJob returns a job of accountID ("" = any account).
func (s *Store[TTx]) GetJob(ctx context.Context, accountID, id string) (*job.Job, error) {
	return s.getJob(ctx, s.backend.DB(), accountID, id, "")
}

// ListJobs returns a page of an account's jobs, newest first, by keyset
// pagination on (created, id): jobs created while a client pages sort before
// its cursor, so pages neither skip nor repeat. With p.MaxBytes it first
// lists the keys and stored sizes of up to a page of jobs (octet_length
// reads a value's length without the value on both engines), then reads
// only the jobs whose sizes fit, checking each against p.Size as it is read;
// see store.ListParams.
func (s *Store[TTx]) ListJobs(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	size := p.PageSize
	if size <= 0 {
		size = defaultPageSize
	}
	where := ` WHERE account_id = ?`
	args := []any{p.AccountID}
	if p.Status != "" {
		where += ` AND status = ?`
		args = append(args, string(p.Status))
	}
	if p.PageToken != "" {
		cur, err := decodePageToken(p.PageToken, jobsList, p.AccountID, p.Status)
		if err != nil {
			return store.ListPage{}, err
		}
		where += ` AND (created, id) < (?, ?)`
		args = append(args, s.ts(cur.created()), cur.ID)
	}
	const order = ` ORDER BY created DESC, id DESC`

	var page store.ListPage
	if p.MaxBytes <= 0 {
		more, err := s.listJobs(ctx, `SELECT `+jobColumns+` FROM jobs`+where+order+` LIMIT ?`, append(args, size+1),
			func(j *job.Job) bool {
				if len(page.Jobs) == size {
					return false
				}
				page.Jobs = append(page.Jobs, j)
				return true
			})
		if err != nil {
			return store.ListPage{}, err
		}
		if more {
			last := page.Jobs[len(page.Jobs)-1]
			page.NextPageToken = encodePageToken(jobsList, p.AccountID, p.Status, last.Created, last.ID)
		}
		return page, nil
	}

	for {
		sizes, err := s.listSizes(ctx, `SELECT id, created, `+storedJobBytes+` FROM jobs`+where+order+` LIMIT ?`, append(args, size+1))
		if err != nil {
			return store.ListPage{}, err
		}
		n, total := 0, 0
		for n < min(len(sizes), size) && (n == 0 || total+sizes[n].bytes <= p.MaxBytes) {
			total += sizes[n].bytes
			n++
		}
		if n == 0 {
			return page, nil
		}
		first, last := sizes[0], sizes[n-1]
		// Between the two reads a job may be deleted (the page is shorter)
		// or take the status filtered on (it may then push the page past n
		// jobs or p.MaxBytes: both are checked again as the jobs are read).
		more := len(sizes) > n
		total = 0
		cut, err := s.listJobs(ctx, `SELECT `+jobColumns+` FROM jobs`+where+
			` AND (created, id) <= (?, ?) AND (created, id) >= (?, ?)`+order+` LIMIT ?`,
			append(args, s.ts(first.created), first.id, s.ts(last.created), last.id, n+1),
			func(j *job.Job) bool {
				if len(page.Jobs) == n {
					return false
				}
				if p.Size != nil {
					b := p.Size(j)
					if len(page.Jobs) > 0 && total+b > p.MaxBytes {
						return false
					}
					total += b
				}
				page.Jobs = append(page.Jobs, j)
				return true
			})
		if err != nil {
			return store.ListPage{}, err
		}
		if len(page.Jobs) > 0 {
			if more || cut {
				j := page.Jobs[len(page.Jobs)-1]
				page.NextPageToken = encodePageToken(jobsList, p.AccountID, p.Status, j.Created, j.ID)
			}
			return page, nil
		}
		if !more {
			return page, nil
		}
		// Every job sized for this page was deleted since: a page without
		// jobs would end a client's listing, so list on after them.
		where += ` AND (created, id) < (?, ?)`
		args = append(args, s.ts(last.created), last.id)
	}
}

// storedJobBytes is the SQL for the bytes of a job's text columns plus
// jobFixedBytes: what ListJobs can know of a job's size before reading it.
// The JSON the lists and metadata are stored in is about as long as their
// protobuf encoding (longer where JSON escapes).
const storedJobBytes = `octet_length(title) + octet_length(metadata) + octet_length(error) +
	octet_length(source_urls) + octet_length(files) + octet_length(prompts) + octet_length(response_schema) +
	octet_length(merge_dedupe_by) + octet_length(webhook_url) + octet_length(webhook_last_error) +
	octet_length(idempotency_key) + octet_length(neural_model) + octet_length(ocr_model) + ` + jobFixedBytes

// jobFixedBytes stands for the fields of a job whose size does not vary
// much (id, account, enums, times, counters) in storedJobBytes.
const jobFixedBytes = "256"

// jobSize is a job's key and the size storedJobBytes gives it.
type jobSize struct {
	id      string
	created time.Time
	bytes   int
}

// listSizes runs query, which selects id, created and storedJobBytes.
func (s *Store[TTx]) listSizes(ctx context.Context, query string, args []any) ([]jobSize, error) {
	rows, err := s.query(ctx, s.backend.DB(), query, args...)
	if err != nil {
		return nil, fmt.Errorf("list job sizes: %w", err)
	}
	defer rows.Close()
	var out []jobSize
	for rows.Next() {
		var js jobSize
		if err := rows.Scan(&js.id, timeScan{&js.created}, &js.bytes); err != nil {
			return nil, fmt.Errorf("list job sizes: %w", err)
		}
		out = append(out, js)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list job sizes: %w", err)
	}
	return out, nil
}

// listJobs runs query, which selects jobColumns, handing each job to keep
// until it returns false; cut reports that it did while rows remained
// (the row it refused is one of them).
func (s *Store[TTx]) listJobs(ctx context.Context, query string, args []any, keep func(*job.Job) bool) (cut bool, err error) {
	rows, err := s.query(ctx, s.backend.DB(), query, args...)
	if err != nil {
		return false, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return false, err
		}
		if !keep(j) {
			return true, nil
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("list jobs: %w", err)
	}
	return false, nil
}

const defaultPageSize = 50

// GetResult returns the job with its OCR rows by file index and its model
// rows by file, prompt and chunk index, all read in one snapshot.
func (s *Store[TTx]) GetResult(ctx context.Context, accountID, id string) (*job.Result, error) {
	var res *job.Result
	err := s.inSnapshot(ctx, func(q Querier) error {
		var err error
		if res, err = s.result(ctx, q, accountID, id, ocrColumns, llmColumns); err != nil {
			return err
		}
		var merged string
		if err := s.queryRow(ctx, q, `SELECT merged FROM jobs WHERE id = ?`, []any{id}, &merged); err != nil {
			return fmt.Errorf("merged answers of job %s: %w", id, err)
		}
		if merged != "" {
			res.Merged = []byte(merged)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// ResultRows reads the job of accountID ("" = any account) and returns
// its result's rows as the caller asks for them, as one snapshot; see
// store.Store and resultSnapshot for how. The rows are read in batches of
// about a megabyte (eachResultRow), each batch by a query closed before
// its rows are yielded, rather than through one cursor or one transaction:
// either would hold a connection (one of SQLite's four readers, or a
// PostgreSQL connection), and a snapshot that stops SQLite's WAL
// checkpoints or PostgreSQL's vacuum, for as long as the slowest client
// takes to read a result of gigabytes.
func (s *Store[TTx]) ResultRows(ctx context.Context, accountID, id string) (*job.Job, iter.Seq2[store.ResultRow, error], error) {
	snap, err := s.resultSnapshot(ctx, accountID, id)
	if err != nil {
		return nil, nil, err
	}
	db := s.backend.DB()
	seq := func(yield func(store.ResultRow, error) bool) {
		// Rows short of the snapshot's counts are an error (resultShort):
		// a result missing rows must not look whole.
		fail := func(err error) { yield(store.ResultRow{}, err) }
		n := 0
		stopped, err := eachResultRow(ctx, s, db, id, ocrResultTable, snap.pickOCR, func(r *job.OCRRow) bool {
			n++
			return yield(store.ResultRow{OCR: r}, nil)
		})
		if err == nil && !stopped && n != snap.ocrRows {
			err = s.resultShort(ctx, id, "OCR", n, snap.ocrRows)
		}
		if err != nil {
			fail(err)
			return
		}
		if stopped {
			return
		}
		n = 0
		stopped, err = eachResultRow(ctx, s, db, id, llmResultTable, snap.pickLLM, func(r *job.LLMRow) bool {
			n++
			return yield(store.ResultRow{LLM: r}, nil)
		})
		if err == nil && !stopped && n != snap.llmRows {
			err = s.resultShort(ctx, id, "model", n, snap.llmRows)
		}
		if err != nil {
			fail(err)
			return
		}
		if stopped || !snap.merged {
			return
		}
		// Stored with the job's end, in the snapshot already: it no longer
		// changes, and is read only now so as not to be held all along.
		var merged string
		if err := s.queryRow(ctx, db, `SELECT merged FROM jobs WHERE id = ?`, []any{id}, &merged); err != nil {
			if errors.Is(err, errNoRows) {
				err = store.ErrNotFound
			}
			fail(fmt.Errorf("merged answers of job %s: %w", id, err))
			return
		}
		yield(store.ResultRow{Merged: []byte(merged)}, nil)
	}
	return snap.job, seq, nil
}

// resultSnapshot is what ResultRows reads of a job in one read-only
// transaction (inSnapshot), so that the rows it yields later are the
// database as it was then. It holds the job, how many rows of each table
// there were (per file for model rows) and the rows then still PENDING, in
// full; not the other rows, which it reads later, a batch at a time, as
// they were: a row changes only from PENDING to a terminal status, once
// (every UPDATE of a row requires PENDING: FinishOCR, FinishLLM,
// failPendingRows), a file's model rows are all inserted by the one
// transaction that ends its OCR row (FinishOCR, failPendingRows), the
// merged answers are stored by the transaction that ends the job, and rows
// are deleted only with their job. So a row terminal in the snapshot reads
// the same later, a file without model rows then gets its rows later
// (and they are left out), and a deletion is seen as rows missing.
//
// The transaction lasts as long as these reads: on a finished job, two
// counts and two empty lookups of the pending indexes; on a running one,
// its pending rows too, which carry no answer or exchange (a model row's
// chunk is in input, not read). It holds what finalize's ResultToFinish
// holds of a job, at most.
type resultSnapshot struct {
	job        *job.Job
	merged     bool // the job has merged answers
	ocrRows    int
	ocrPending map[int64]*job.OCRRow
	llmRows    int
	llmFiles   map[int64]int // model rows of each file index that had any
	llmPending map[[3]int64]*job.LLMRow
}

func (s *Store[TTx]) resultSnapshot(ctx context.Context, accountID, id string) (*resultSnapshot, error) {
	var snap *resultSnapshot
	err := s.inSnapshot(ctx, func(q Querier) error {
		j, err := s.getJob(ctx, q, accountID, id, "")
		if err != nil {
			return err
		}
		snap = &resultSnapshot{job: j, ocrPending: map[int64]*job.OCRRow{}, llmFiles: map[int64]int{},
			llmPending: map[[3]int64]*job.LLMRow{}}
		var mergedBytes int64
		err = s.queryRow(ctx, q, `SELECT octet_length(merged), (SELECT COUNT(*) FROM ocr_rows WHERE job_id = ?)
			FROM jobs WHERE id = ?`, []any{id, id}, &mergedBytes, &snap.ocrRows)
		if err != nil {
			return fmt.Errorf("result of job %s: %w", id, err)
		}
		snap.merged = mergedBytes > 0
		rows, err := s.query(ctx, q, `SELECT file_index, COUNT(*) FROM llm_rows WHERE job_id = ? GROUP BY file_index`, id)
		if err != nil {
			return fmt.Errorf("model rows of job %s: %w", id, err)
		}
		for rows.Next() {
			var file int64
			var n int
			if err := rows.Scan(&file, &n); err != nil {
				rows.Close()
				return fmt.Errorf("model rows of job %s: %w", id, err)
			}
			snap.llmFiles[file] = n
			snap.llmRows += n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("model rows of job %s: %w", id, err)
		}
		// Read by the partial indexes of pending rows: nothing to read
		// once the job has ended.
		if err := pendingRows(ctx, s, q, id, ocrResultTable, func(r job.OCRRow) {
			snap.ocrPending[int64(r.FileIndex)] = &r
		}); err != nil {
			return err
		}
		return pendingRows(ctx, s, q, id, llmResultTable, func(r job.LLMRow) {
			snap.llmPending[[3]int64{int64(r.FileIndex), int64(r.PromptIndex), int64(r.ChunkIndex)}] = &r
		})
	})
	return snap, err
}

// pickOCR and pickLLM say how eachResultRow yields the row with key k:
// the snapshot's copy of a row then pending, nothing for a row not there
// then, or (read) the row as the database has it, unchanged since.
func (snap *resultSnapshot) pickOCR(k [3]int64) (*job.OCRRow, bool) {
	if r, ok := snap.ocrPending[k[0]]; ok {
		return r, false
	}
	return nil, true
}

func (snap *resultSnapshot) pickLLM(k [3]int64) (*job.LLMRow, bool) {
	if snap.llmFiles[k[0]] == 0 {
		return nil, false
	}
	if r, ok := snap.llmPending[k]; ok {
		return r, false
	}
	return nil, true
}

// resultShort is the error of a result whose rows of a table came to n
// where the snapshot had want: the job was deleted while it was read
// (store.ErrNotFound), or, were the rules resultSnapshot relies on ever
// broken, a result that cannot be given as one snapshot.
func (s *Store[TTx]) resultShort(ctx context.Context, id, table string, n, want int) error {
	var one int
	err := s.queryRow(ctx, s.backend.DB(), `SELECT 1 FROM jobs WHERE id = ?`, []any{id}, &one)
	switch {
	case errors.Is(err, errNoRows):
		return fmt.Errorf("job %s was deleted while its result was read (%d of %d %s rows read): %w",
			id, n, want, table, store.ErrNotFound)
	case err != nil:
		return fmt.Errorf("result of job %s: %w", id, err)
	}
	return fmt.Errorf("result of job %s: %d %s rows where its snapshot had %d", id, n, table, want)
}

// ResultToFinish reads what ending job id needs: the job and its rows,
// without the recognized text and the provider exchanges, and the answers
// within maxContent bytes; see store.Store.
func (s *Store[TTx]) ResultToFinish(ctx context.Context, id string, maxContent int64) (*job.Result, error) {
	res, err := s.result(ctx, s.backend.DB(), "", id, ocrColumnsLean, llmColumnsLean)
	if err != nil {
		return nil, err
	}
	if err := s.answerContents(ctx, s.backend.DB(), id, res.LLM, maxContent); err != nil {
		return nil, err
	}
	return res, nil
}

// result reads the job and its rows with the given column lists, on db.
func (s *Store[TTx]) result(ctx context.Context, db Querier, accountID, id, ocrCols, llmCols string) (*job.Result, error) {
	j, err := s.getJob(ctx, db, accountID, id, "")
	if err != nil {
		return nil, err
	}
	res := &job.Result{Job: j}
	if res.OCR, err = s.ocrRows(ctx, db, id, ocrCols); err != nil {
		return nil, err
	}
	if res.LLM, err = s.llmRows(ctx, db, id, llmCols); err != nil {
		return nil, err
	}
	return res, nil
}

// CancelJob marks a non-terminal job CANCELLED and its pending rows FAILED.
// The provider keys are erased with it: no stage will call a provider for
// this job again. The webhook secret stays for the cancellation webhook.
func (s *Store[TTx]) CancelJob(ctx context.Context, accountID, id string) (*job.Job, error) {
	var (
		j       *job.Job
		erased  bool
		woken   []string
		errText = "job cancelled"
	)
	// Counted before the merge: a merge that takes the process down leaves
	// the job as it was (countEndMerge).
	try, err := s.countEndMerge(ctx, accountID, id)
	if err != nil {
		return nil, fmt.Errorf("cancel job %s: %w", id, err)
	}
	// Merged before the transaction, so that the merge does not hold the
	// job row and SQLite's writer (mergeBefore); merged again while rows
	// move under it, then inside the transaction.
	// One ending of a merging job at a time merges in this process (lockEnd).
	unlock := func() {}
	if try.merges {
		if unlock, err = s.lockEnd(ctx, id); err != nil {
			s.giveBack(ctx, try, id)
			return nil, fmt.Errorf("cancel job %s: %w", id, err)
		}
	}
	for outside := 1; ; outside++ {
		var pre *endMerge
		if pre, err = s.mergeBefore(ctx, accountID, id, try); err != nil {
			break
		}
		err = s.inTx(ctx, func(tx TTx, q Querier) error {
			var err error
			erased, woken = false, nil // a retried transaction starts over
			// FOR UPDATE, not the fan-in's NO KEY UPDATE: it waits for a
			// FinishOCR that is inserting a file's rows, whose first row
			// failPendingRows would otherwise insert too (the lock order, locks.go).
			j, err = s.getJob(ctx, q, accountID, id, s.dialect.ForDelete)
			if err != nil {
				return err
			}
			if j.Status.Terminal() {
				return store.ErrTerminal
			}
			merged, ready, err := s.endMerged(ctx, q, j, pre, outside >= endMergeOutside)
			if err != nil {
				return err
			}
			now := s.nowUTC()
			if err := s.failPendingRows(ctx, q, j, errText, now); err != nil {
				return err
			}
			if !ready {
				if merged, err = s.mergeEnded(ctx, q, j, try.unmerged); err != nil {
					return err
				}
			}
			// A cancel says nothing in error, unless its answers were not merged.
			reason := j.Error
			if try.unmerged && j.Merge.Enabled {
				reason = unmergedReason("", try.tries)
			}
			if _, err := s.exec(ctx, q, `UPDATE jobs SET status = ?, error = ?, merged = ?, updated = ? WHERE id = ?`,
				string(job.StatusCancelled), reason, string(merged), s.ts(now), id); err != nil {
				return fmt.Errorf("cancel job: %w", err)
			}
			if erased, err = s.eraseProviderKeys(ctx, q, id); err != nil {
				return err
			}
			webhookErased, err := s.onTerminal(ctx, tx, q, j, &woken)
			erased = erased || webhookErased
			j.Status, j.Error, j.Updated = job.StatusCancelled, reason, now
			return err
		})
		if !errors.Is(err, errRowsMoved) {
			break
		}
	}
	unlock()
	if err != nil {
		s.giveBack(ctx, try, id)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTerminal) {
			return nil, err
		}
		return nil, fmt.Errorf("cancel job %s: %w", id, err)
	}
	s.wake(ctx, woken)
	s.ends.ended(id)
	s.logUnmerged(ctx, try, id, "a cancel")
	if erased {
		s.afterErase(ctx, id)
	}
	return j, nil
}

// mergeEnded computes the merged answers of job j, whose pending rows the
// transaction q has just failed, for the cancel or the deadline that ends
// it there; nil when j does not merge. A job with merge.enabled has
// merged[] whatever status it ends with (spec: "present only when the job
// set merge.enabled"): the answers its DONE rows hold, with every other
// chunk listed in incompleteChunks, as finalize does for a job whose rows
// failed. The ending merges before its transaction when it can
// (mergeBefore); this is the merge inside it, for a job whose rows kept
// moving under the merges made before, and it holds the job row (and
// SQLite's writer) for as long as the merge takes.
func (s *Store[TTx]) mergeEnded(ctx context.Context, q Querier, j *job.Job, unmerged bool) ([]byte, error) {
	if !j.Merge.Enabled {
		return nil, nil
	}
	llm, err := s.llmRows(ctx, q, j.ID, llmColumnsLean)
	if err != nil {
		return nil, err
	}
	return s.mergeRows(ctx, q, j, llm, unmerged)
}

// mergeRows merges the answers of job j's model rows llm (all terminal),
// reading them on q within the merge's input limit (jobmerge.InputBudget,
// the answers past it not even read).
//
// unmerged (the tries are spent: countEndMerge) reads no answer: every
// answered chunk is left out, as merge leaves out those past its input
// limit, so merged[] is still there with each of them listed as not
// merged, and the rows keep every answer (finalize does the same).
func (s *Store[TTx]) mergeRows(ctx context.Context, q Querier, j *job.Job, llm []job.LLMRow, unmerged bool) ([]byte, error) {
	if unmerged {
		for i := range llm {
			if llm[i].Status == job.RowDone {
				llm[i].ContentUnread = true
			}
		}
	} else if err := s.answerContents(ctx, q, j.ID, llm, jobmerge.InputBudget); err != nil {
		return nil, err
	}
	if s.endMergeHook != nil {
		s.endMergeHook(j.ID)
	}
	merged, err := jobmerge.Answers(&job.Result{Job: j, LLM: llm}, s.logger.With("job_id", j.ID, "account_id", j.AccountID))
	if err != nil {
		return nil, fmt.Errorf("merge answers of %s: %w", j.ID, err)
	}
	return merged, nil
}

// failPendingRows ends the PENDING OCR and model rows of job j as FAILED.
// A file still being recognized has no model rows yet (they are inserted
// with its recognition), so it gets the one SKIPPED row ocr_failed that
// every file whose recognition FAILED has (DESIGN §4).
func (s *Store[TTx]) failPendingRows(ctx context.Context, q Querier, j *job.Job, errText string, now time.Time) error {
	jobID := j.ID
	skipped, err := s.filesInRecognition(ctx, q, j)
	if err != nil {
		return err
	}
	if err := s.insertLLMRows(ctx, q, skipped, now); err != nil {
		return err
	}
	for _, table := range []string{"ocr_rows", "llm_rows"} {
		_, err := s.exec(ctx, q, `UPDATE `+table+` SET status = ?, error = ?, updated = ? WHERE job_id = ? AND `+isPending,
			string(job.RowFailed), errText, s.ts(now), jobID)
		if err != nil {
			return fmt.Errorf("fail pending %s: %w", table, err)
		}
	}
	return nil
}

// filesInRecognition returns the SKIPPED ocr_failed model row that
// failPendingRows gives each file of job j still being recognized (its OCR
// row pending, no model row yet), by file.
func (s *Store[TTx]) filesInRecognition(ctx context.Context, q Querier, j *job.Job) ([]job.LLMRow, error) {
	rows, err := s.query(ctx, q, `SELECT file_index, file FROM ocr_rows o WHERE job_id = ? AND `+isPending+`
		AND NOT EXISTS (SELECT 1 FROM llm_rows l WHERE l.job_id = o.job_id AND l.file_index = o.file_index)
		ORDER BY file_index`, j.ID)
	if err != nil {
		return nil, fmt.Errorf("files still being recognized: %w", err)
	}
	defer rows.Close()
	var skipped []job.LLMRow
	for rows.Next() {
		ocr := job.OCRRow{JobID: j.ID, Status: job.RowFailed}
		if err := rows.Scan(&ocr.FileIndex, &ocr.File); err != nil {
			return nil, fmt.Errorf("files still being recognized: %w", err)
		}
		skipped = append(skipped, job.SkippedLLMRow(ocr, job.SkipOCRFailed, j.Neural.Model))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("files still being recognized: %w", err)
	}
	return skipped, nil
}

// eraseProviderKeys deletes the job's provider keys, keeping its webhook
// secret; it reports whether anything was deleted.
func (s *Store[TTx]) eraseProviderKeys(ctx context.Context, q Querier, jobID string) (bool, error) {
	n, err := s.exec(ctx, q, `DELETE FROM job_secrets WHERE job_id = ? AND field <> ?`, jobID, job.SecretWebhookSecret)
	if err != nil {
		return false, fmt.Errorf("erase provider keys: %w", err)
	}
	return n > 0, nil
}

// DeleteJob removes the job with its rows, secrets, file records and the
// River rows River has finished of it (dropRiverRows), records that its
// stored files are to be removed, and returns the blob keys of those
// files.
func (s *Store[TTx]) DeleteJob(ctx context.Context, accountID, id string) ([]string, error) {
	var keys []string
	err := s.inTx(ctx, func(_ TTx, q Querier) error {
		keys = nil // a retried transaction starts over
		// FOR UPDATE from the start: deleting the job row needs it, and
		// taking it last, over a weaker lock, waited for the KEY SHARE of
		// a FinishOCR inserting rows that itself waited for this lock (the
		// lock order, locks.go).
		j, err := s.getJob(ctx, q, accountID, id, s.dialect.ForDelete)
		if err != nil {
			return err
		}
		// Distinct: the files of a job that read one stored file share its
		// copy, which is removed once.
		rows, err := s.query(ctx, q, `SELECT DISTINCT key FROM files WHERE job_id = ? ORDER BY key`, id)
		if err != nil {
			return fmt.Errorf("list job files: %w", err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return fmt.Errorf("scan file key: %w", err)
			}
			keys = append(keys, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list job files: %w", err)
		}
		for _, table := range []string{"files", "job_secrets", "llm_rows", "ocr_pages", "ocr_rows", "webhook_attempts"} {
			if _, err := s.exec(ctx, q, `DELETE FROM `+table+` WHERE job_id = ?`, id); err != nil {
				return fmt.Errorf("delete %s: %w", table, err)
			}
		}
		if _, err := s.exec(ctx, q, `DELETE FROM jobs WHERE id = ?`, id); err != nil {
			return fmt.Errorf("delete job: %w", err)
		}
		if err := s.dropRiverRows(ctx, q, id); err != nil {
			return err
		}
		if err := s.recordFileRemoval(ctx, q, j.AccountID, id, keys); err != nil {
			return err
		}
		return s.notifyEnd(ctx, q, id)
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("delete job %s: %w", id, err)
	}
	s.ends.ended(id)
	s.afterErase(ctx, id)
	return keys, nil
}

// JobSecrets returns the sealed secrets of a job, by field name.
func (s *Store[TTx]) JobSecrets(ctx context.Context, jobID string) ([]job.SealedSecret, error) {
	rows, err := s.query(ctx, s.backend.DB(),
		`SELECT field, ciphertext FROM job_secrets WHERE job_id = ? ORDER BY field`, jobID)
	if err != nil {
		return nil, fmt.Errorf("job secrets %s: %w", jobID, err)
	}
	defer rows.Close()
	var out []job.SealedSecret
	for rows.Next() {
		var sec job.SealedSecret
		if err := rows.Scan(&sec.Field, &sec.Ciphertext); err != nil {
			return nil, fmt.Errorf("scan secret: %w", err)
		}
		out = append(out, sec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("job secrets %s: %w", jobID, err)
	}
	return out, nil
}

// MarkRunning moves a NEW job to RUNNING; a job in any other status is left
// alone. ErrNotFound when the job does not exist (it was deleted).
func (s *Store[TTx]) MarkRunning(ctx context.Context, jobID string) error {
	db := s.backend.DB()
	n, err := s.exec(ctx, db, `UPDATE jobs SET status = ?, updated = ? WHERE id = ? AND status = ?`,
		string(job.StatusRunning), s.ts(s.nowUTC()), jobID, string(job.StatusNew))
	if err != nil {
		return fmt.Errorf("mark job %s running: %w", jobID, err)
	}
	if n > 0 {
		return nil
	}
	var one int
	err = s.queryRow(ctx, db, `SELECT 1 FROM jobs WHERE id = ?`, []any{jobID}, &one)
	if errors.Is(err, errNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("mark job %s running: %w", jobID, err)
	}
	return nil
}

// JobCountsByStatus counts jobs per status; every status is present.
func (s *Store[TTx]) JobCountsByStatus(ctx context.Context) (map[job.Status]int, error) {
	counts := map[job.Status]int{
		job.StatusNew: 0, job.StatusRunning: 0, job.StatusComplete: 0, job.StatusFailed: 0, job.StatusCancelled: 0,
	}
	rows, err := s.query(ctx, s.backend.DB(), `SELECT status, COUNT(*) FROM jobs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			status string
			n      int
		)
		if err := rows.Scan(&status, &n); err != nil {
			return nil, fmt.Errorf("scan job count: %w", err)
		}
		counts[job.Status(status)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	return counts, nil
}

// placeholders returns "?, ?, …" for n arguments.
// createRowsBatch bounds the OCR rows one INSERT of a create writes: six
// values a row stay far below SQLite's and PostgreSQL's parameter limits,
// and a job has at most a hundred files (the API's limit).
const createRowsBatch = 100

// valueRows is rows groups of cols placeholders: "(?, ?), (?, ?)".
func valueRows(rows, cols int) string {
	one := "(" + placeholders(cols) + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
}

func placeholders(n int) string {
	b := make([]byte, 0, 3*n)
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '?')
	}
	return string(b)
}
