package worker

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/webhook"
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
// The key is opened only when a page needs the provider (text, HTML and
// office files never do); when it cannot be, that call fails with the reason.
func (w *fileWorker) ocrFor(j *job.Job, i int) *cachedOCR {
	return &cachedOCR{store: w.deps.Store, jobID: j.ID, fileIndex: i, next: &lazyOCR{open: func(ctx context.Context) (provider.OCR, error) {
		if w.deps.Providers == nil {
			return nil, errors.New("no OCR providers are configured on this server")
		}
		keys, err := openJobKeys(ctx, w.deps, j)
		if err != nil {
			return nil, err
		}
		key, err := keys.secret(job.SecretOCRProviderKey)
		if err != nil {
			return nil, err
		}
		ocr, err := w.deps.Providers.OCR(j.OCR.Provider, j.OCR.Model, key)
		if err != nil {
			return nil, fmt.Errorf("ocr.provider: %w", err)
		}
		// Inside the page cache, so that what it keeps is redacted too.
		return provider.RedactOCR(ocr, keys.redact), nil
	}}}
}

// lazyOCR opens its provider on the first call and keeps it (or the reason
// it could not) for the rest of the file; pages may ask concurrently.
type lazyOCR struct {
	open func(context.Context) (provider.OCR, error)
	once sync.Once
	ocr  provider.OCR
	err  error
}

func (l *lazyOCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	l.once.Do(func() { l.ocr, l.err = l.open(ctx) })
	if l.err != nil {
		return provider.Recognition{}, l.err
	}
	return l.ocr.Recognize(ctx, doc)
}

// Accepts opens the provider, as the call it comes before would; a
// provider that cannot be opened cannot tell, and the call then fails
// with the reason.
func (l *lazyOCR) Accepts(ctx context.Context, mime string) (ok, known bool) {
	l.once.Do(func() { l.ocr, l.err = l.open(ctx) })
	if l.err != nil {
		return false, false
	}
	return provider.Accepts(ctx, l.ocr, mime)
}

// errNoSecret is returned when the job holds no such secret (none was
// given, or it was erased when the job ended).
var errNoSecret = errors.New("the provider key is no longer stored for this job")

// unopenedSecret is a secret that is stored but cannot be opened on this
// server, as opposed to one the store failed to read. Its text names the
// field, never the secret.
type unopenedSecret string

func (e unopenedSecret) Error() string { return string(e) }

// jobKeys is a job's secrets opened together: the key a provider needs and
// every secret of the job for the redaction of its answers (a vendor may
// echo any key it was given, and the OCR answer is the model vendor's
// input). One read and one opening per secret serve both.
type jobKeys struct {
	plain  map[string]string // field → secret
	redact provider.Secrets
}

// openJobKeys reads and opens every secret the job holds. A Standard
// Webhooks secret is listed for redaction with its decoded key too, whose own
// spellings (hex, base64 at other alignments) differ from the secret's.
func openJobKeys(ctx context.Context, deps Deps, j *job.Job) (*jobKeys, error) {
	sealed, err := deps.Store.JobSecrets(ctx, j.ID)
	if err != nil {
		return nil, fmt.Errorf("load the job's secrets: %w", err)
	}
	k := &jobKeys{plain: make(map[string]string, len(sealed))}
	var all []string
	for _, s := range sealed {
		if deps.Secrets == nil {
			return nil, unopenedSecret(s.Field + " cannot be opened on this server")
		}
		secret, err := deps.Secrets.Open(s.Ciphertext, j.AccountID, j.ID, s.Field)
		if err != nil {
			return nil, unopenedSecret(s.Field + " cannot be opened (was the master key changed?)")
		}
		k.plain[s.Field] = string(secret)
		all = append(all, string(secret))
		if rest, ok := strings.CutPrefix(string(secret), webhook.SecretPrefix); ok && s.Field == job.SecretWebhookSecret {
			if key, err := base64.StdEncoding.DecodeString(rest); err == nil {
				all = append(all, string(key))
			}
		}
	}
	k.redact = provider.NewSecrets(all...)
	return k, nil
}

// secret is the job's secret in field, errNoSecret when it holds none.
func (k *jobKeys) secret(field string) (string, error) {
	s, ok := k.plain[field]
	if !ok {
		return "", errNoSecret
	}
	return s, nil
}

// PageCache keeps provider answers per page of a job's file.
type PageCache interface {
	PutOCRPage(ctx context.Context, jobID string, fileIndex int, key string, value []byte) error
	GetOCRPage(ctx context.Context, jobID string, fileIndex int, key string) ([]byte, error)
}

// cachedOCR stores every answer before returning it and answers from the
// store when the same page was already read: a file job retried after a
// crash does not pay the provider again for pages it already had.
type cachedOCR struct {
	store     PageCache
	jobID     string
	fileIndex int
	next      provider.OCR
	// answered counts the provider's answers (not the store's): a file
	// rate limited while pages are answered is making its way.
	answered atomic.Int64
	// kept counts the bytes of the pages' answers, which the converter
	// joins into the file's row (maxRecognizedBytes).
	kept atomic.Int64
}

// maxRecognizedBytes bounds what one file's pages bring back: their
// transcriptions, raw answers and requests, which the converter joins
// into the file's row. Each page's answer is bounded (a vision model's
// transcription 8 MiB, a raw answer 4 MiB), but not their number times
// that: an endpoint answering 8 MiB a page made a thousand-page file 8 GB
// of content in memory, and a row PostgreSQL refuses past 1 GB. A text
// file may be as large (the converter's own limit for text).
const maxRecognizedBytes = 100 << 20

// errRecognizedTooLarge fails a file whose pages passed maxRecognizedBytes.
var errRecognizedTooLarge = fmt.Errorf("the file's recognized text passed the %d MiB limit for one file", maxRecognizedBytes>>20)

func (c *cachedOCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	sum := sha256.Sum256(doc.Data)
	key := strconv.Itoa(doc.Page) + "/" + doc.MIME + "/" + doc.Format + "/" + hex.EncodeToString(sum[:12])
	rec, err := remembered(ctx, c.store, c.jobID, c.fileIndex, key, func() (provider.Recognition, error) {
		r, err := c.next.Recognize(ctx, doc)
		if err == nil {
			c.answered.Add(1)
		}
		return r, err
	})
	if err == nil && c.kept.Add(int64(len(rec.Text)+len(rec.RawData)+len(rec.Request))) > maxRecognizedBytes {
		return provider.Recognition{}, errRecognizedTooLarge
	}
	return rec, err
}

// Accepts passes the question on: the cache keeps answers, not types.
func (c *cachedOCR) Accepts(ctx context.Context, mime string) (ok, known bool) {
	return provider.Accepts(ctx, c.next, mime)
}

// remembered returns the answer kept under key for a job's file, or calls
// ask and keeps its answer before returning it: a provider is paid once per
// key, however often the River job that needs the answer runs.
func remembered[T any](ctx context.Context, cache PageCache, jobID string, fileIndex int, key string, ask func() (T, error)) (T, error) {
	var answer T
	raw, err := cache.GetOCRPage(ctx, jobID, fileIndex, key)
	switch {
	case err == nil:
		if json.Unmarshal(raw, &answer) == nil {
			return answer, nil
		}
	case !errors.Is(err, job.ErrNotFound):
		return answer, err
	}
	answer, err = ask()
	if err != nil {
		return answer, err
	}
	if raw, err = json.Marshal(answer); err != nil {
		return answer, fmt.Errorf("keep the answer: %w", err)
	}
	// The answer is paid for: it is kept even when ctx ended while it
	// came (the worker stopping, the job's time running out), so that the
	// next run reads it instead of paying again, and tried again as a
	// row's record is (retryWrite): one try lost every page answered while
	// the database was away for a moment.
	if _, err := retryWrite(ctx, func(ctx context.Context) (bool, error) {
		return true, cache.PutOCRPage(ctx, jobID, fileIndex, key, raw)
	}); err != nil {
		return answer, fmt.Errorf("keep the answer: %w", err)
	}
	return answer, nil
}
