package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/docjobs/docjobs/internal/store"
)

// PutOCRPage keeps one provider answer for a page of a job's file. Putting
// the same key again keeps the first answer: both came from the same input.
func (s *Store[TTx]) PutOCRPage(ctx context.Context, jobID string, fileIndex int, key string, value []byte) error {
	_, err := s.exec(ctx, s.backend.DB(), `INSERT INTO ocr_pages (job_id, file_index, key, value, created)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (job_id, file_index, key) DO NOTHING`,
		jobID, fileIndex, key, value, s.ts(s.nowUTC()))
	if err != nil {
		return fmt.Errorf("put ocr page %s/%d/%s: %w", jobID, fileIndex, key, err)
	}
	return nil
}

// GetOCRPage returns a kept provider answer, or ErrNotFound.
func (s *Store[TTx]) GetOCRPage(ctx context.Context, jobID string, fileIndex int, key string) ([]byte, error) {
	var value []byte
	err := s.queryRow(ctx, s.backend.DB(), `SELECT value FROM ocr_pages WHERE job_id = ? AND file_index = ? AND key = ?`,
		[]any{jobID, fileIndex, key}, &value)
	if errors.Is(err, errNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get ocr page %s/%d/%s: %w", jobID, fileIndex, key, err)
	}
	return value, nil
}
