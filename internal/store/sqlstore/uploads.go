package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// ListUploads returns a page of an account's uploads, newest first, by
// keyset pagination on (created, id) as ListJobs: an upload made while a
// client pages sorts before its cursor, so pages neither skip nor repeat.
// The query walks files_uploads_account_created (migration 12) from the
// cursor and stops at the row after the page, however many uploads the
// account has.
func (s *Store[TTx]) ListUploads(ctx context.Context, p store.UploadListParams) (store.UploadPage, error) {
	size := p.PageSize
	if size <= 0 {
		size = defaultPageSize
	}
	where := ` WHERE account_id = ? AND job_id IS NULL`
	args := []any{p.AccountID}
	if p.PageToken != "" {
		cur, err := decodePageToken(p.PageToken, uploadsList, p.AccountID, "")
		if err != nil {
			return store.UploadPage{}, err
		}
		where += ` AND (created, id) < (?, ?)`
		args = append(args, s.ts(cur.created()), cur.ID)
	}
	rows, err := s.query(ctx, s.backend.DB(), `SELECT `+fileColumns+` FROM files`+where+
		` ORDER BY created DESC, id DESC LIMIT ?`, append(args, size+1)...)
	if err != nil {
		return store.UploadPage{}, fmt.Errorf("list uploads of %s: %w", p.AccountID, err)
	}
	defer rows.Close()

	var page store.UploadPage
	total, more := 0, false
	for rows.Next() {
		var (
			f     job.File
			jobID sql.NullString
		)
		if err := rows.Scan(&f.ID, &f.AccountID, &jobID, &f.Name, &f.Size, &f.ContentType, &f.Key, timeScan{&f.Created}); err != nil {
			return store.UploadPage{}, fmt.Errorf("list uploads of %s: %w", p.AccountID, err)
		}
		if len(page.Files) == size {
			more = true
			break
		}
		if p.MaxBytes > 0 && p.Size != nil {
			b := p.Size(f)
			if len(page.Files) > 0 && total+b > p.MaxBytes {
				more = true
				break
			}
			total += b
		}
		page.Files = append(page.Files, f)
	}
	if err := rows.Err(); err != nil {
		return store.UploadPage{}, fmt.Errorf("list uploads of %s: %w", p.AccountID, err)
	}
	if more {
		last := page.Files[len(page.Files)-1]
		page.NextPageToken = encodePageToken(uploadsList, p.AccountID, "", last.Created, last.ID)
	}
	return page, nil
}

// maxRecordedIDs bounds the ids one RecordedFileIDs query asks about, well
// inside SQLite's bound on a statement's parameters (32766).
const maxRecordedIDs = 1000

// RecordedFileIDs reports which of ids a file record holds (an upload or
// a job's copy, of any account), by the primary key, up to maxRecordedIDs
// at a time.
func (s *Store[TTx]) RecordedFileIDs(ctx context.Context, ids []string) (map[string]bool, error) {
	recorded := make(map[string]bool, len(ids))
	for len(ids) > 0 {
		batch := ids[:min(len(ids), maxRecordedIDs)]
		ids = ids[len(batch):]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(batch)), ", ")
		rows, err := s.query(ctx, s.backend.DB(), `SELECT id FROM files WHERE id IN (`+marks+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("recorded file ids: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("recorded file ids: %w", err)
			}
			recorded[id] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("recorded file ids: %w", err)
		}
	}
	return recorded, nil
}

// KnownJobIDs reports which of ids a job row, a job_file_removals row or a
// file record's job_id holds, each by its key or index (jobs' and
// job_file_removals' primary keys, files_job_id), up to maxRecordedIDs at
// a time.
func (s *Store[TTx]) KnownJobIDs(ctx context.Context, ids []string) (map[string]bool, error) {
	known := make(map[string]bool, len(ids))
	for len(ids) > 0 {
		batch := ids[:min(len(ids), maxRecordedIDs)]
		ids = ids[len(batch):]
		args := make([]any, 0, 3*len(batch))
		for range 3 {
			for _, id := range batch {
				args = append(args, id)
			}
		}
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(batch)), ", ")
		rows, err := s.query(ctx, s.backend.DB(), `SELECT id FROM jobs WHERE id IN (`+marks+`)
			UNION SELECT job_id FROM job_file_removals WHERE job_id IN (`+marks+`)
			UNION SELECT job_id FROM files WHERE job_id IS NOT NULL AND job_id IN (`+marks+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("known job ids: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("known job ids: %w", err)
			}
			known[id] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("known job ids: %w", err)
		}
	}
	return known, nil
}
