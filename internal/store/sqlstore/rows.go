package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/docjobs/docjobs/internal/job"
)

const ocrColumns = `job_id, file_index, file, status, content, output_format, model, request, raw_data,
	error, duration_ns, created, updated`

// The lean column lists read the same fields without the recognized text
// and the rows' exchanges with the provider (request, raw data): a job's
// end reads every row but none of those, which are most of the bytes of a
// row (the request carries the whole chunk).
const (
	ocrColumnsLean = `job_id, file_index, file, status, '', output_format, model, '', '',
	error, duration_ns, created, updated`
	// llmColumnsLean leaves out the answers too: ResultToFinish reads
	// them apart, within a byte budget (answerContents).
	llmColumnsLean = `job_id, file_index, prompt_index, chunk_index, chunk_total, file, status, skip_reason,
	'', model, '', '', error, duration_ns, schema_valid, schema_errors, consensus,
	created, updated, input_tokens, output_tokens, overlap`
)

// ocrRows reads the job's OCR rows with columns, ocrColumns or
// ocrColumnsLean.
func (s *Store[TTx]) ocrRows(ctx context.Context, q Querier, jobID, columns string) ([]job.OCRRow, error) {
	rows, err := s.query(ctx, q, `SELECT `+columns+` FROM ocr_rows WHERE job_id = ? ORDER BY file_index`, jobID)
	if err != nil {
		return nil, fmt.Errorf("ocr rows of %s: %w", jobID, err)
	}
	defer rows.Close()
	var out []job.OCRRow
	for rows.Next() {
		r, err := scanOCRRow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ocr rows of %s: %w", jobID, err)
	}
	return out, nil
}

// scanOCRRow scans one row of ocrColumns or ocrColumnsLean.
func scanOCRRow(rows Rows) (job.OCRRow, error) {
	var (
		r      job.OCRRow
		status string
		dur    int64
	)
	err := rows.Scan(&r.JobID, &r.FileIndex, &r.File, &status, &r.Content, &r.OutputFormat, &r.Model,
		&r.Request, &r.RawData, &r.Error, &dur, timeScan{&r.Created}, timeScan{&r.Updated})
	if err != nil {
		return job.OCRRow{}, fmt.Errorf("scan ocr row: %w", err)
	}
	r.Status, r.Duration = job.RowStatus(status), time.Duration(dur)
	return r, nil
}

const llmColumns = `job_id, file_index, prompt_index, chunk_index, chunk_total, file, status, skip_reason,
	content, model, request, raw_data, error, duration_ns, schema_valid, schema_errors, consensus,
	created, updated, input_tokens, output_tokens, overlap`

// llmRows reads the job's model rows with columns, llmColumns or
// llmColumnsLean.
func (s *Store[TTx]) llmRows(ctx context.Context, q Querier, jobID, columns string) ([]job.LLMRow, error) {
	rows, err := s.query(ctx, q, `SELECT `+columns+` FROM llm_rows WHERE job_id = ?
		ORDER BY file_index, prompt_index, chunk_index`, jobID)
	if err != nil {
		return nil, fmt.Errorf("model rows of %s: %w", jobID, err)
	}
	defer rows.Close()
	var out []job.LLMRow
	for rows.Next() {
		r, err := scanLLMRow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("model rows of %s: %w", jobID, err)
	}
	return out, nil
}

// scanLLMRow scans one row of llmColumns or llmColumnsLean.
func scanLLMRow(rows Rows) (job.LLMRow, error) {
	var (
		r         job.LLMRow
		status    string
		dur       int64
		valid     sql.NullBool
		consensus sql.NullString
	)
	err := rows.Scan(&r.JobID, &r.FileIndex, &r.PromptIndex, &r.ChunkIndex, &r.ChunkTotal, &r.File,
		&status, &r.SkipReason, &r.Content, &r.Model, &r.Request, &r.RawData, &r.Error, &dur,
		&valid, jsonScan{&r.SchemaErrors}, &consensus, timeScan{&r.Created}, timeScan{&r.Updated},
		&r.InputTokens, &r.OutputTokens, &r.Overlap)
	if err != nil {
		return job.LLMRow{}, fmt.Errorf("scan model row: %w", err)
	}
	r.Status, r.Duration, r.SchemaValid = job.RowStatus(status), time.Duration(dur), boolPtr(valid)
	r.SchemaErrors = emptyToNil(r.SchemaErrors)
	if consensus.Valid {
		r.Consensus = []byte(consensus.String)
	}
	return r, nil
}

// Result rows are read in batches (ResultRows): a first query lists the
// keys and text sizes of up to resultSizePage rows, then each batch of
// consecutive rows whose content, request and raw data add up to at most
// resultBatchBytes (or one larger row alone) is read by one keyset query on
// the primary key and closed before its rows are yielded. A query per row
// took 2,000 queries (74 µs each on SQLite) for a job of 2,000 small model
// rows; batches take a few, while a row of 20 MiB is still read alone.
const (
	resultSizePage   = 512
	resultBatchBytes = 1 << 20
)

// resultTable is how ResultRows reads one table of rows of type R.
type resultTable[R any] struct {
	table   string
	keys    string // the primary key after job_id, in result order
	nkeys   int
	columns string
	scan    func(Rows) (R, error)
	// key is a row's key, its keys in order, then zeros.
	key func(*R) [3]int64
}

var (
	ocrResultTable = resultTable[job.OCRRow]{
		table: "ocr_rows", keys: "file_index", nkeys: 1, columns: ocrColumns, scan: scanOCRRow,
		key: func(r *job.OCRRow) [3]int64 { return [3]int64{int64(r.FileIndex)} },
	}
	llmResultTable = resultTable[job.LLMRow]{
		table: "llm_rows", keys: "file_index, prompt_index, chunk_index", nkeys: 3, columns: llmColumns, scan: scanLLMRow,
		key: func(r *job.LLMRow) [3]int64 {
			return [3]int64{int64(r.FileIndex), int64(r.PromptIndex), int64(r.ChunkIndex)}
		},
	}
)

// pendingRows hands each PENDING row of the job's table t to keep.
func pendingRows[TTx, R any](ctx context.Context, s *Store[TTx], q Querier, jobID string, t resultTable[R], keep func(R)) error {
	rows, err := s.query(ctx, q, `SELECT `+t.columns+` FROM `+t.table+` WHERE job_id = ? AND `+isPending, jobID)
	if err != nil {
		return fmt.Errorf("pending %s of %s: %w", t.table, jobID, err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := t.scan(rows)
		if err != nil {
			return err
		}
		keep(r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pending %s of %s: %w", t.table, jobID, err)
	}
	return nil
}

// eachResultRow yields the job's rows of table t in result order, reading
// them in batches; it stops early when yield returns false (stopped=true).
// No query is open while yield runs. pick says, for each row key listed,
// whether the row is read from the database (read), yielded as the copy
// it returns, or (nil, false) left out: ResultRows picks by its snapshot.
// A batch holds only rows to read: a row picked otherwise ends it, and one
// a batch meets that its listing did not pick (committed since) is left
// out.
func eachResultRow[TTx, R any](ctx context.Context, s *Store[TTx], q Querier, jobID string, t resultTable[R],
	pick func(k [3]int64) (copied *R, read bool), yield func(*R) bool,
) (stopped bool, err error) {
	tuple := "(" + placeholders(t.nkeys) + ")"
	after := make([]any, t.nkeys)
	for i := range after {
		after[i] = -1 // every index is >= 0
	}
	for {
		sizes, err := resultSizes(ctx, s, q, jobID, t, tuple, after)
		if err != nil {
			return false, err
		}
		if len(sizes) == 0 {
			return false, nil
		}
		for len(sizes) > 0 {
			if copied, read := pick(sizes[0].k); !read {
				after, sizes = sizes[0].key, sizes[1:]
				if copied != nil {
					r := *copied
					if !yield(&r) {
						return true, nil
					}
				}
				continue
			}
			n, total := 0, int64(0)
			for n < len(sizes) && (n == 0 || total+sizes[n].bytes <= resultBatchBytes) {
				if _, read := pick(sizes[n].k); !read {
					break
				}
				total += sizes[n].bytes
				n++
			}
			last := sizes[n-1].key
			sizes = sizes[n:]
			batch, err := resultBatch(ctx, s, q, jobID, t, tuple, after, last)
			if err != nil {
				return false, err
			}
			after = last
			for i := range batch {
				// The caller gets its own copy, and the batch lets go of
				// the row as soon as it is handed over.
				r := batch[i]
				batch[i] = *new(R)
				if _, read := pick(t.key(&r)); !read {
					continue
				}
				if !yield(&r) {
					return true, nil
				}
			}
		}
	}
}

// rowSize is a row's key, as query arguments (key) and as numbers (k),
// and the bytes of its text columns.
type rowSize struct {
	key   []any
	k     [3]int64
	bytes int64
}

// resultSizes lists the keys and sizes of up to resultSizePage rows after
// after; nil when there are none. octet_length reads a value's length
// without the value on both engines.
func resultSizes[TTx, R any](ctx context.Context, s *Store[TTx], q Querier, jobID string, t resultTable[R], tuple string,
	after []any,
) ([]rowSize, error) {
	rows, err := s.query(ctx, q, `SELECT `+t.keys+`,
		octet_length(content) + octet_length(request) + octet_length(raw_data) FROM `+t.table+`
		WHERE job_id = ? AND (`+t.keys+`) > `+tuple+` ORDER BY `+t.keys+` LIMIT `+fmt.Sprint(resultSizePage),
		append([]any{jobID}, after...)...)
	if err != nil {
		return nil, fmt.Errorf("sizes of %s of %s: %w", t.table, jobID, err)
	}
	defer rows.Close()
	var out []rowSize
	for rows.Next() {
		var size rowSize
		dest := make([]any, 0, t.nkeys+1)
		for i := range t.nkeys {
			dest = append(dest, &size.k[i])
		}
		if err := rows.Scan(append(dest, &size.bytes)...); err != nil {
			return nil, fmt.Errorf("sizes of %s of %s: %w", t.table, jobID, err)
		}
		for _, k := range size.k[:t.nkeys] {
			size.key = append(size.key, k)
		}
		out = append(out, size)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sizes of %s of %s: %w", t.table, jobID, err)
	}
	return out, nil
}

// resultBatch reads the rows after after up to and including last.
func resultBatch[TTx, R any](ctx context.Context, s *Store[TTx], q Querier, jobID string, t resultTable[R], tuple string,
	after, last []any,
) ([]R, error) {
	args := append(append([]any{jobID}, after...), last...)
	rows, err := s.query(ctx, q, `SELECT `+t.columns+` FROM `+t.table+` WHERE job_id = ?
		AND (`+t.keys+`) > `+tuple+` AND (`+t.keys+`) <= `+tuple+` ORDER BY `+t.keys, args...)
	if err != nil {
		return nil, fmt.Errorf("%s of %s: %w", t.table, jobID, err)
	}
	defer rows.Close()
	var out []R
	for rows.Next() {
		r, err := t.scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s of %s: %w", t.table, jobID, err)
	}
	return out, nil
}

// llmInsertBatch is how many model rows one INSERT writes: a file's chunks
// go in a few statements instead of one round trip each, inside the
// transaction that holds the job row's lock. 32 rows of 23 values stay
// far below SQLite's and PostgreSQL's parameter limits.
const llmInsertBatch = 32

// insertLLMRows inserts rows, PENDING unless they say otherwise.
func (s *Store[TTx]) insertLLMRows(ctx context.Context, q Querier, rows []job.LLMRow, now time.Time) error {
	const columns = 23
	row := "(" + placeholders(columns) + ")"
	for len(rows) > 0 {
		batch := rows[:min(len(rows), llmInsertBatch)]
		rows = rows[len(batch):]
		values := make([]string, len(batch))
		args := make([]any, 0, columns*len(batch))
		for i, r := range batch {
			if r.Created.IsZero() {
				r.Created = now
			}
			if r.Updated.IsZero() {
				r.Updated = now
			}
			if r.Status == "" {
				r.Status = job.RowPending
			}
			schemaErrors, err := jsonText(r.SchemaErrors)
			if err != nil {
				return err
			}
			values[i] = row
			args = append(args, r.JobID, r.FileIndex, r.PromptIndex, r.ChunkIndex, r.ChunkTotal, r.File, string(r.Status),
				r.SkipReason, r.Content, r.Model, r.Request, r.RawData, r.Error, int64(r.Duration), nullBool(r.SchemaValid),
				schemaErrors, nullJSON(r.Consensus), s.ts(r.Created), s.ts(r.Updated), r.InputTokens, r.OutputTokens,
				r.Overlap, r.Input)
		}
		if _, err := s.exec(ctx, q, `INSERT INTO llm_rows (`+llmColumns+`, input) VALUES `+strings.Join(values, ", "), args...); err != nil {
			first := batch[0]
			return fmt.Errorf("insert model rows %d/%d/%d…: %w", first.FileIndex, first.PromptIndex, first.ChunkIndex, err)
		}
	}
	return nil
}

// anyPending reports whether an OCR or model row of the job is PENDING.
// isPending selects PENDING rows. It is a literal, not a bound parameter,
// because it is the predicate of the partial indexes ocr_rows_pending and
// llm_rows_pending: against a bound status SQLite re-plans the statement
// at every execution to see whether the index applies, which cost the
// model stage 10% of its CPU on the one writer connection.
const isPending = `status = 'PENDING'`

func (s *Store[TTx]) anyPending(ctx context.Context, q Querier, jobID string) (bool, error) {
	var n int
	err := s.queryRow(ctx, q, `SELECT
		(SELECT COUNT(*) FROM ocr_rows WHERE job_id = ? AND `+isPending+`) +
		(SELECT COUNT(*) FROM llm_rows WHERE job_id = ? AND `+isPending+`)`,
		[]any{jobID, jobID}, &n)
	if err != nil {
		return false, fmt.Errorf("count pending rows: %w", err)
	}
	return n > 0, nil
}

// answerContents sets the Content of the DONE rows of llm, the job's model
// rows in result order, reading them in that order while the contents read
// stay within budget bytes (<= 0: no limit). A row whose content would pass
// the budget is not read, and is marked ContentUnread; later, smaller ones
// still are, as merge takes answers (merge.Limits.MaxTotalBytes). Sizes come
// first (octet_length reads no value), so an answer left out is never
// loaded: a job's answers may be up to 100,000 times the provider's
// response limit, and finalize runs beside every other account's work.
func (s *Store[TTx]) answerContents(ctx context.Context, q Querier, jobID string, llm []job.LLMRow, budget int64) error {
	const keys = "file_index, prompt_index, chunk_index"
	done := string(job.RowDone)
	rows, err := s.query(ctx, q, `SELECT `+keys+`, octet_length(content) FROM llm_rows
		WHERE job_id = ? AND status = ? ORDER BY `+keys, jobID, done)
	if err != nil {
		return fmt.Errorf("answer sizes of %s: %w", jobID, err)
	}
	type answer struct {
		key  [3]int
		size int64
		at   int // index in llm
	}
	var answers []answer
	at := make(map[[3]int]int, len(llm))
	for i, r := range llm {
		at[[3]int{r.FileIndex, r.PromptIndex, r.ChunkIndex}] = i
	}
	for rows.Next() {
		var a answer
		if err := rows.Scan(&a.key[0], &a.key[1], &a.key[2], &a.size); err != nil {
			rows.Close()
			return fmt.Errorf("answer sizes of %s: %w", jobID, err)
		}
		i, ok := at[a.key]
		if !ok || llm[i].Status != job.RowDone {
			continue // a row that changed between the reads is left as first read
		}
		a.at = i
		answers = append(answers, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("answer sizes of %s: %w", jobID, err)
	}

	var total, left int64
	prefix := 0 // answers[:prefix] are all read: one range query
	for i, a := range answers {
		if budget > 0 && total+a.size > budget {
			if prefix == i {
				left = budget - total
			}
			llm[a.at].ContentUnread = true
			continue
		}
		total += a.size
		if prefix == i {
			prefix++
		}
	}
	byKey := func(query string, args ...any) error {
		rows, err := s.query(ctx, q, query, args...)
		if err != nil {
			return fmt.Errorf("answers of %s: %w", jobID, err)
		}
		defer rows.Close()
		for rows.Next() {
			var k [3]int
			var content string
			if err := rows.Scan(&k[0], &k[1], &k[2], &content); err != nil {
				return fmt.Errorf("answers of %s: %w", jobID, err)
			}
			if i, ok := at[k]; ok && llm[i].Status == job.RowDone && !llm[i].ContentUnread {
				llm[i].Content = content
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("answers of %s: %w", jobID, err)
		}
		return nil
	}
	if prefix > 0 {
		last := answers[prefix-1].key
		if err := byKey(`SELECT `+keys+`, content FROM llm_rows WHERE job_id = ? AND status = ?
			AND (`+keys+`) <= (?, ?, ?) ORDER BY `+keys, jobID, done, last[0], last[1], last[2]); err != nil {
			return err
		}
	}
	if prefix < len(answers) {
		// The rest that fit is each no larger than what the budget had
		// left after the first that did not: only rows that small are read,
		// and those not kept are dropped one at a time.
		first := answers[prefix].key
		if err := byKey(`SELECT `+keys+`, content FROM llm_rows WHERE job_id = ? AND status = ?
			AND (`+keys+`) > (?, ?, ?) AND octet_length(content) <= ? ORDER BY `+keys,
			jobID, done, first[0], first[1], first[2], left); err != nil {
			return err
		}
	}
	return nil
}
