package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

const fileColumns = `id, account_id, job_id, name, size, content_type, key, created`

// CreateFile records a stored file: an upload (JobID "") or a job's copy.
func (s *Store[TTx]) CreateFile(ctx context.Context, f job.File) error {
	if f.Created.IsZero() {
		f.Created = s.nowUTC()
	}
	return s.insertFile(ctx, s.backend.DB(), f)
}

// CreateUpload records an upload unless the account's uploads with it would
// take more than maxBytes (0 = no limit); see store.Store.
func (s *Store[TTx]) CreateUpload(ctx context.Context, f job.File, maxBytes int64) error {
	if f.JobID != "" {
		return fmt.Errorf("create upload %s: a job's copy is not an upload", f.ID)
	}
	if maxBytes <= 0 {
		return s.CreateFile(ctx, f)
	}
	return s.inTx(ctx, func(_ TTx, q Querier) error {
		if err := s.lockAccount(ctx, q, f.AccountID); err != nil {
			return err
		}
		used, err := s.uploadBytes(ctx, q, f.AccountID)
		if err != nil {
			return err
		}
		if used+f.Size > maxBytes {
			return store.ErrUploadQuota
		}
		return s.insertFile(ctx, q, f)
	})
}

// UploadBytes is the total size of the account's uploads.
func (s *Store[TTx]) UploadBytes(ctx context.Context, accountID string) (int64, error) {
	return s.uploadBytes(ctx, s.backend.DB(), accountID)
}

// uploadBytes sums the account's uploads from files_uploads_account alone
// (migration 9), without reading the table.
func (s *Store[TTx]) uploadBytes(ctx context.Context, q Querier, accountID string) (int64, error) {
	var used int64
	err := s.queryRow(ctx, q, `SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM files WHERE account_id = ? AND job_id IS NULL`,
		[]any{accountID}, &used)
	if err != nil {
		return 0, fmt.Errorf("upload bytes of %s: %w", accountID, err)
	}
	return used, nil
}

func (s *Store[TTx]) insertFile(ctx context.Context, q Querier, f job.File) error {
	if f.ID == "" || f.AccountID == "" {
		return errors.New("insert file: id and account id are required")
	}
	if f.Created.IsZero() {
		f.Created = s.nowUTC()
	}
	_, err := s.exec(ctx, q, `INSERT INTO files (`+fileColumns+`) VALUES (`+placeholders(8)+`)`,
		f.ID, f.AccountID, nullString(f.JobID), f.Name, f.Size, f.ContentType, f.Key, s.ts(f.Created))
	if err != nil {
		return fmt.Errorf("insert file %s: %w", f.ID, err)
	}
	return nil
}

// GetFile returns a file of accountID ("" = any account).
func (s *Store[TTx]) GetFile(ctx context.Context, accountID, id string) (job.File, error) {
	query := `SELECT ` + fileColumns + ` FROM files WHERE id = ?`
	args := []any{id}
	if accountID != "" {
		query += ` AND account_id = ?`
		args = append(args, accountID)
	}
	var (
		f     job.File
		jobID sql.NullString
	)
	err := s.queryRow(ctx, s.backend.DB(), query, args,
		&f.ID, &f.AccountID, &jobID, &f.Name, &f.Size, &f.ContentType, &f.Key, timeScan{&f.Created})
	if errors.Is(err, errNoRows) {
		return job.File{}, store.ErrNotFound
	}
	if err != nil {
		return job.File{}, fmt.Errorf("get file %s: %w", id, err)
	}
	f.JobID = jobID.String
	return f, nil
}

// JobFileKeyRecorded reports whether a file record of job jobID names the
// blob key: files of a job that read one stored file share its copy.
func (s *Store[TTx]) JobFileKeyRecorded(ctx context.Context, jobID, key string) (bool, error) {
	var one int
	err := s.queryRow(ctx, s.backend.DB(), `SELECT 1 FROM files WHERE job_id = ? AND key = ? LIMIT 1`,
		[]any{jobID, key}, &one)
	if errors.Is(err, errNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("file records of job %s naming %s: %w", jobID, key, err)
	}
	return true, nil
}

// DeleteUpload removes the record of an upload (a file with no job) of
// accountID ("" = any account). A job's copy is not an upload: it gives
// ErrNotFound here, as a missing file or another account's does, and goes
// with its job.
func (s *Store[TTx]) DeleteUpload(ctx context.Context, accountID, id string) error {
	query := `DELETE FROM files WHERE id = ? AND job_id IS NULL`
	args := []any{id}
	if accountID != "" {
		query += ` AND account_id = ?`
		args = append(args, accountID)
	}
	n, err := s.exec(ctx, s.backend.DB(), query, args...)
	if err != nil {
		return fmt.Errorf("delete upload %s: %w", id, err)
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// ExpiredUploads lists up to limit uploads created before cutoff, oldest
// first. Job copies are not listed: they live as long as their job.
func (s *Store[TTx]) ExpiredUploads(ctx context.Context, cutoff time.Time, limit int) ([]job.File, error) {
	rows, err := s.query(ctx, s.backend.DB(), `SELECT `+fileColumns+` FROM files
		WHERE job_id IS NULL AND created < ? ORDER BY created, id LIMIT ?`, s.ts(cutoff), limit)
	if err != nil {
		return nil, fmt.Errorf("expired uploads: %w", err)
	}
	defer rows.Close()
	var out []job.File
	for rows.Next() {
		var (
			f     job.File
			jobID sql.NullString
		)
		if err := rows.Scan(&f.ID, &f.AccountID, &jobID, &f.Name, &f.Size, &f.ContentType, &f.Key, timeScan{&f.Created}); err != nil {
			return nil, fmt.Errorf("expired uploads: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("expired uploads: %w", err)
	}
	return out, nil
}

// PutAPIKey stores a key hash for an account, creating the account. Putting
// a hash again moves it to accountID.
func (s *Store[TTx]) PutAPIKey(ctx context.Context, accountID string, keyHash []byte) error {
	if accountID == "" || len(keyHash) == 0 {
		return errors.New("put api key: account and key hash are required")
	}
	return s.inTx(ctx, func(_ TTx, q Querier) error {
		now := s.ts(s.nowUTC())
		if err := s.ensureAccount(ctx, q, accountID); err != nil {
			return err
		}
		_, err := s.exec(ctx, q, `INSERT INTO api_keys (hash, account_id, created) VALUES (?, ?, ?)
			ON CONFLICT (hash) DO UPDATE SET account_id = excluded.account_id`, keyHash, accountID, now)
		if err != nil {
			return fmt.Errorf("put api key for %s: %w", accountID, err)
		}
		return nil
	})
}

func (s *Store[TTx]) ensureAccount(ctx context.Context, q Querier, accountID string) error {
	_, err := s.exec(ctx, q, `INSERT INTO accounts (id, extraction_mode, created) VALUES (?, '', ?)
		ON CONFLICT (id) DO NOTHING`, accountID, s.ts(s.nowUTC()))
	if err != nil {
		return fmt.Errorf("create account %s: %w", accountID, err)
	}
	return nil
}

// AccountByKeyHash returns the account owning a key hash, or ErrNotFound.
func (s *Store[TTx]) AccountByKeyHash(ctx context.Context, keyHash []byte) (string, error) {
	var account string
	err := s.queryRow(ctx, s.backend.DB(), `SELECT account_id FROM api_keys WHERE hash = ?`, []any{keyHash}, &account)
	if errors.Is(err, errNoRows) {
		return "", store.ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("account by key hash: %w", err)
	}
	return account, nil
}

// HasAPIKeys reports whether any key is stored.
func (s *Store[TTx]) HasAPIKeys(ctx context.Context) (bool, error) {
	var one int
	err := s.queryRow(ctx, s.backend.DB(), `SELECT 1 FROM api_keys LIMIT 1`, nil, &one)
	if errors.Is(err, errNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("has api keys: %w", err)
	}
	return true, nil
}

// ListAPIKeys lists the stored keys of accountID ("" = every account), by
// account, then creation, then hash.
func (s *Store[TTx]) ListAPIKeys(ctx context.Context, accountID string) ([]store.APIKey, error) {
	query := `SELECT hash, account_id, created FROM api_keys`
	var args []any
	if accountID != "" {
		query += ` WHERE account_id = ?`
		args = append(args, accountID)
	}
	rows, err := s.query(ctx, s.backend.DB(), query+` ORDER BY account_id, created, hash`, args...)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	defer rows.Close()
	var out []store.APIKey
	for rows.Next() {
		var k store.APIKey
		if err := rows.Scan(&k.Hash, &k.AccountID, timeScan{&k.Created}); err != nil {
			return nil, fmt.Errorf("list api keys: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return out, nil
}

// DeleteAPIKey removes the stored key with exactly keyHash and returns its
// account; see store.Store.
func (s *Store[TTx]) DeleteAPIKey(ctx context.Context, keyHash []byte) (string, error) {
	if len(keyHash) == 0 {
		return "", errors.New("delete api key: a key hash is required")
	}
	var account string
	err := s.inTx(ctx, func(_ TTx, q Querier) error {
		account = "" // a retried transaction starts over
		// One statement: the delete that removed the row is the one that
		// names its account. A SELECT then a DELETE let two concurrent
		// revokes on PostgreSQL (READ COMMITTED) both read the row, and
		// both claim it, the second deleting nothing.
		err := s.queryRow(ctx, q, `DELETE FROM api_keys WHERE hash = ? RETURNING account_id`, []any{keyHash}, &account)
		if errors.Is(err, errNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("delete api key: %w", err)
	}
	return account, nil
}

// AccountExists reports whether the account has a row, a job or an
// upload; see store.Store. Each probe reads one index entry (the primary
// key, jobs_account_created, files_uploads_account).
func (s *Store[TTx]) AccountExists(ctx context.Context, accountID string) (bool, error) {
	var found int
	err := s.queryRow(ctx, s.backend.DB(), `SELECT CASE WHEN
		EXISTS (SELECT 1 FROM accounts WHERE id = ?)
		OR EXISTS (SELECT 1 FROM jobs WHERE account_id = ?)
		OR EXISTS (SELECT 1 FROM files WHERE account_id = ? AND job_id IS NULL)
		THEN 1 ELSE 0 END`, []any{accountID, accountID, accountID}, &found)
	if err != nil {
		return false, fmt.Errorf("account %s exists: %w", accountID, err)
	}
	return found == 1, nil
}

// AccountExtractionMode is the account's default mode, HYBRID unless set
// (also for an account with no row).
func (s *Store[TTx]) AccountExtractionMode(ctx context.Context, accountID string) (string, error) {
	var mode string
	err := s.queryRow(ctx, s.backend.DB(), `SELECT extraction_mode FROM accounts WHERE id = ?`, []any{accountID}, &mode)
	if err != nil && !errors.Is(err, errNoRows) {
		return "", fmt.Errorf("extraction mode of %s: %w", accountID, err)
	}
	if mode == "" {
		mode = job.ExtractionHybrid
	}
	return mode, nil
}

// SetAccountExtractionMode sets the account's default mode, creating the account.
func (s *Store[TTx]) SetAccountExtractionMode(ctx context.Context, accountID, mode string) error {
	if accountID == "" {
		return errors.New("set extraction mode: account is required")
	}
	_, err := s.exec(ctx, s.backend.DB(), `INSERT INTO accounts (id, extraction_mode, created) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET extraction_mode = excluded.extraction_mode`,
		accountID, mode, s.ts(s.nowUTC()))
	if err != nil {
		return fmt.Errorf("set extraction mode of %s: %w", accountID, err)
	}
	return nil
}
