package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
)

// Providers opens a vendor adapter for a slot, model and key.
type Providers interface {
	OCR(slot, model, key string) (provider.OCR, error)
}

// SecretOpener opens a sealed secret of a job.
type SecretOpener interface {
	Open(ciphertext []byte, account, jobID, field string) ([]byte, error)
}

// ocrFor returns the job's OCR provider for file i, behind the page cache.
// When it cannot be opened, the returned OCR fails every call with the
// reason, so files that need no provider still recognize.
func (w *recognizeWorker) ocrFor(ctx context.Context, j *job.Job, i int) provider.OCR {
	if w.deps.Providers == nil {
		return failingOCR{errors.New("no OCR providers are configured on this server")}
	}
	key, err := openSecret(ctx, w.deps, j, job.SecretOCRProviderKey)
	if err != nil {
		return failingOCR{err}
	}
	ocr, err := w.deps.Providers.OCR(j.OCR.Provider, j.OCR.Model, key)
	if err != nil {
		return failingOCR{fmt.Errorf("ocr.provider: %w", err)}
	}
	return &cachedOCR{store: w.deps.Store, jobID: j.ID, fileIndex: i, next: ocr}
}

// errNoSecret is returned when the job holds no such secret (none was
// given, or it was erased when the job ended).
var errNoSecret = errors.New("the provider key is no longer stored for this job")

// openSecret returns a job's secret in plaintext, for one provider call.
func openSecret(ctx context.Context, deps Deps, j *job.Job, field string) (string, error) {
	secrets, err := deps.Store.JobSecrets(ctx, j.ID)
	if err != nil {
		return "", fmt.Errorf("load %s: %w", field, err)
	}
	for _, s := range secrets {
		if s.Field != field {
			continue
		}
		if deps.Secrets == nil {
			return "", fmt.Errorf("%s cannot be opened on this server", field)
		}
		key, err := deps.Secrets.Open(s.Ciphertext, j.AccountID, j.ID, s.Field)
		if err != nil {
			return "", fmt.Errorf("%s cannot be opened (was the master key changed?)", field)
		}
		return string(key), nil
	}
	return "", errNoSecret
}

// failingOCR is a provider that could not be opened.
type failingOCR struct{ err error }

func (f failingOCR) Recognize(context.Context, provider.Document) (provider.Recognition, error) {
	return provider.Recognition{}, f.err
}

// PageCache keeps provider answers per page of a job's file.
type PageCache interface {
	PutOCRPage(ctx context.Context, jobID string, fileIndex int, key string, value []byte) error
	GetOCRPage(ctx context.Context, jobID string, fileIndex int, key string) ([]byte, error)
}

// cachedOCR stores every answer before returning it and answers from the
// store when the same page was already read: a recognize job retried after
// a crash does not pay the provider again for pages it already had.
type cachedOCR struct {
	store     PageCache
	jobID     string
	fileIndex int
	next      provider.OCR
}

func (c *cachedOCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	sum := sha256.Sum256(doc.Data)
	key := strconv.Itoa(doc.Page) + "/" + doc.MIME + "/" + doc.Format + "/" + hex.EncodeToString(sum[:12])
	if raw, err := c.store.GetOCRPage(ctx, c.jobID, c.fileIndex, key); err == nil {
		var rec provider.Recognition
		if json.Unmarshal(raw, &rec) == nil {
			return rec, nil
		}
	} else if !errors.Is(err, job.ErrNotFound) {
		return provider.Recognition{}, err
	}
	rec, err := c.next.Recognize(ctx, doc)
	if err != nil {
		return rec, err
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return rec, fmt.Errorf("keep page answer: %w", err)
	}
	if err := c.store.PutOCRPage(ctx, c.jobID, c.fileIndex, key, raw); err != nil {
		return rec, fmt.Errorf("keep page answer: %w", err)
	}
	return rec, nil
}
