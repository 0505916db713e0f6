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
	llmColumnsLean = `job_id, file_index, prompt_index, chunk_index, chunk_total, file, status, skip_reason,
	content, model, '', '', error, duration_ns, schema_valid, schema_errors, consensus,
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

// nextOCRRow reads the job's first OCR row after file index after (-1 for
// the first row); ok=false when there is none.
func (s *Store[TTx]) nextOCRRow(ctx context.Context, q Querier, jobID string, after int) (r job.OCRRow, ok bool, err error) {
	rows, err := s.query(ctx, q, `SELECT `+ocrColumns+` FROM ocr_rows WHERE job_id = ? AND file_index > ?
		ORDER BY file_index LIMIT 1`, jobID, after)
	if err != nil {
		return job.OCRRow{}, false, fmt.Errorf("ocr row of %s after file %d: %w", jobID, after, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return job.OCRRow{}, false, fmt.Errorf("ocr row of %s after file %d: %w", jobID, after, err)
		}
		return job.OCRRow{}, false, nil
	}
	if r, err = scanOCRRow(rows); err != nil {
		return job.OCRRow{}, false, err
	}
	rows.Close()
	return r, true, rows.Err()
}

// llmKey is a model row's place in a job's result order.
type llmKey struct{ file, prompt, chunk int }

// nextLLMRow reads the job's first model row after key (all -1 for the
// first row) in result order; ok=false when there is none.
func (s *Store[TTx]) nextLLMRow(ctx context.Context, q Querier, jobID string, after llmKey) (r job.LLMRow, ok bool, err error) {
	rows, err := s.query(ctx, q, `SELECT `+llmColumns+` FROM llm_rows WHERE job_id = ?
		AND (file_index, prompt_index, chunk_index) > (?, ?, ?)
		ORDER BY file_index, prompt_index, chunk_index LIMIT 1`, jobID, after.file, after.prompt, after.chunk)
	if err != nil {
		return job.LLMRow{}, false, fmt.Errorf("model row of %s after %v: %w", jobID, after, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return job.LLMRow{}, false, fmt.Errorf("model row of %s after %v: %w", jobID, after, err)
		}
		return job.LLMRow{}, false, nil
	}
	if r, err = scanLLMRow(rows); err != nil {
		return job.LLMRow{}, false, err
	}
	rows.Close()
	return r, true, rows.Err()
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
