// Package fetch turns a job's source URL into a stored file of the job: a
// stored file of the same account (an upload, or another job's copy) is
// copied within storage, anything else is downloaded through the SSRF-safe
// client, capped in size and time; either way the job's copy is saved into
// the bucket under the job's prefix. Errors are sentences fit for an OCR
// row's error field; they never carry user credentials or storage internals.
package fetch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gabriel-vasile/mimetype"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/outbound"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultMaxBytes int64 = 100 << 20
	DefaultTimeout        = 5 * time.Minute
	// DefaultStallTimeout is Config.StallTimeout's default. A server that
	// has answered nothing for half a minute is not about to: outbound's
	// transport gives response headers the same 30 s, and a working server
	// does not pause that long between bytes of a file it is sending.
	DefaultStallTimeout = 30 * time.Second
)

// filesPath is the API path under which stored files are served.
const filesPath = "/v1/files/"

// userAgent identifies our downloads to the servers we fetch from.
const userAgent = "docjobs-fetcher/1"

// errAttemptLimit is the cause of a download cut off by Config.Timeout.
var errAttemptLimit = errors.New("the download attempt's time limit ran out")

// errStalled is the cause of a download cut off by Config.StallTimeout.
var errStalled = errors.New("the download received nothing for its stall limit")

// errHeadersLate is the cause of a download cut off by Config.StallTimeout
// while its response's headers were coming in: some of them arrived, not
// all, within the limit from the request's start.
var errHeadersLate = errors.New("the response's headers were not complete within the stall limit")

// headerTimeoutText is in the error of a request the transport ended at
// its ResponseHeaderTimeout, HTTP/1 ("net/http: …") and HTTP/2 ("http2:
// …") alike. The error type is unexported, so the text is all there is.
const headerTimeoutText = "timeout awaiting response headers"

// sniffLen is what mimetype needs to recognize a type.
const sniffLen = 3072

// maxNameLen bounds a stored file name, in bytes.
const maxNameLen = 255

// Config configures a Fetcher.
type Config struct {
	// PublicURL is DOCJOBS_PUBLIC_URL; {PublicURL}/v1/files/{id} is the URL
	// of a stored file.
	PublicURL string
	// MaxBytes caps a download; 0 means DefaultMaxBytes.
	MaxBytes int64
	// Timeout caps one download from request to last byte; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// StallTimeout ends a download that receives no byte for this long
	// between bytes of the body, and one whose response headers are not
	// complete this long after the request's start (connect, TLS and the
	// server's wait before its headers included; again for each redirect).
	// 0 means DefaultStallTimeout. Without it a server that sends its
	// headers, or part of them, and then nothing holds a download place
	// for the whole Timeout.
	StallTimeout time.Duration
}

// FileGetter finds a stored file of an account; it returns job.ErrNotFound
// for a missing file and for another account's.
type FileGetter interface {
	GetFile(ctx context.Context, accountID, id string) (job.File, error)
}

// Deps are the Fetcher's collaborators.
type Deps struct {
	// Client downloads external URLs: outbound.NewClient, with a Timeout no
	// shorter than Config.Timeout (or negative) so large files finish.
	Client *http.Client
	Bucket *blob.Bucket
	Files  FileGetter
	// NewID returns a fresh file id.
	NewID func() string
}

// Result describes the stored file of one source URL.
type Result struct {
	// URL is the URL of the job's stored copy, {PublicURL}/v1/files/{id}.
	URL string
	// File is the new record to store for the job's copy, with JobID set;
	// nil only for a zero Result (the fetch failed).
	File        *job.File
	Key         string // blob key of the bytes
	Name        string
	ContentType string
	Size        int64
	// Data are a download's bytes, not stored yet: Save stores them at Key,
	// and must before File is recorded. Nil for a copy of a stored file,
	// which is in storage already and which Read returns.
	Data []byte
	// Shared is true for a copy of a stored file (SharedCopyKey): other
	// files of the job may read it, and name it in their records.
	Shared bool
}

// Error is a failed fetch. Error() is a sentence for the OCR row; Err is
// the cause, for logs and errors.Is (job.ErrNotFound,
// outbound.ErrForbiddenAddress, context.Canceled…).
type Error struct {
	Msg string
	// Retryable is true when trying again later may succeed (server errors,
	// 429, timeouts, network failures, storage hiccups).
	Retryable bool
	Err       error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// Fetcher stores the source files of jobs. It is safe for concurrent use.
type Fetcher struct {
	cfg    Config
	public *url.URL
	deps   Deps
	// headerTimeout is the client transport's ResponseHeaderTimeout, 0
	// when unknown, for the message of a request the transport ends there.
	headerTimeout time.Duration
}

// New returns a Fetcher.
func New(cfg Config, deps Deps) (*Fetcher, error) {
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxBytes < 0 {
		return nil, errors.New("fetch: MaxBytes must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("fetch: Timeout must not be negative")
	}
	if cfg.StallTimeout == 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	if cfg.StallTimeout < 0 {
		return nil, errors.New("fetch: StallTimeout must not be negative")
	}
	public, err := url.Parse(strings.TrimRight(cfg.PublicURL, "/"))
	if err != nil || (public.Scheme != "http" && public.Scheme != "https") || public.Host == "" {
		return nil, fmt.Errorf("fetch: PublicURL %q is not an absolute http(s) URL", cfg.PublicURL)
	}
	cfg.PublicURL = public.String()
	switch {
	case deps.Client == nil:
		return nil, errors.New("fetch: Deps.Client is required")
	case deps.Bucket == nil:
		return nil, errors.New("fetch: Deps.Bucket is required")
	case deps.Files == nil:
		return nil, errors.New("fetch: Deps.Files is required")
	case deps.NewID == nil:
		return nil, errors.New("fetch: Deps.NewID is required")
	}
	f := &Fetcher{cfg: cfg, public: public, deps: deps}
	if t, ok := deps.Client.Transport.(*http.Transport); ok {
		f.headerTimeout = t.ResponseHeaderTimeout
	}
	return f, nil
}

// FileURL is the public URL of the stored file id.
func (f *Fetcher) FileURL(id string) string {
	return f.cfg.PublicURL + filesPath + url.PathEscape(id)
}

// OwnFileID reports whether raw is one of our stored-file URLs
// ({PublicURL}/v1/files/{id}, query ignored) and returns the id.
func (f *Fetcher) OwnFileID(raw string) (string, bool) {
	return OwnFileURLID(f.public, raw)
}

// OwnFileURLID reports whether raw is a stored-file URL of the service at
// public ({public}/v1/files/{id}, scheme and host without case, query
// ignored) and returns the id. A URL with user information is not: the API
// refuses it as it refuses credentials in any URL, and the worker would
// download it. The API and the worker share this one parser, so that a
// source the API accepted as an upload is one the worker reads as such.
func OwnFileURLID(public *url.URL, raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return "", false
	}
	if !strings.EqualFold(u.Scheme, public.Scheme) || !strings.EqualFold(u.Host, public.Host) {
		return "", false
	}
	rest, ok := strings.CutPrefix(u.Path, strings.TrimRight(public.Path, "/")+filesPath)
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	return rest, true
}

// Fetch stores sourceURL as file index of job jobID of accountID.
// Every error is an *Error.
func (f *Fetcher) Fetch(ctx context.Context, accountID, jobID string, index int, sourceURL string) (Result, error) {
	if id, ok := f.OwnFileID(sourceURL); ok {
		return f.own(ctx, accountID, jobID, id)
	}
	return f.download(ctx, accountID, jobID, index, sourceURL)
}

// own copies a stored file of the account for the job, without a request
// to ourselves.
func (f *Fetcher) own(ctx context.Context, accountID, jobID, id string) (Result, error) {
	display := f.FileURL(id)
	file, err := f.deps.Files.GetFile(ctx, accountID, id)
	if errors.Is(err, job.ErrNotFound) {
		return Result{}, &Error{Msg: fmt.Sprintf("source file %s not found", display), Err: err}
	}
	if err != nil {
		return Result{}, &Error{Msg: fmt.Sprintf("looking up source file %s failed", display), Retryable: true, Err: err}
	}
	// The job stores its own copy of an upload, as of any other source: the
	// upload may be deleted by its owner or expire by retention, and a copy
	// stored for another job goes when that job is deleted; the job's file
	// must outlive both. One copy per job and stored file, whichever of the
	// job's sources name it: one upload listed a hundred times was a
	// hundred copies, bytes that no quota counted.
	key := SharedCopyKey(jobID, file.Key)
	stored, err := f.deps.Bucket.Exists(ctx, key)
	if err != nil {
		return Result{}, &Error{Msg: fmt.Sprintf("copying source file %s failed", display), Retryable: true, Err: err}
	}
	// Two files of the job may both find no copy and both make it: the
	// bucket replaces a key whole, with the same bytes, so a reader of
	// the first copy reads it to its end.
	if !stored {
		if err := f.deps.Bucket.Copy(ctx, key, file.Key, &blob.CopyOptions{BeforeCopy: PrivateFile}); err != nil {
			if gcerrors.Code(err) == gcerrors.NotFound {
				return Result{}, &Error{Msg: fmt.Sprintf("source file %s not found", display), Err: errors.Join(job.ErrNotFound, err)}
			}
			return Result{}, &Error{Msg: fmt.Sprintf("copying source file %s failed", display), Retryable: true, Err: err}
		}
	}
	newID := f.deps.NewID()
	rec := &job.File{
		ID: newID, AccountID: accountID, JobID: jobID, Name: file.Name, Size: file.Size,
		ContentType: file.ContentType, Key: key, Created: time.Now().UTC(),
	}
	return Result{URL: f.FileURL(newID), File: rec, Key: key, Name: rec.Name, ContentType: rec.ContentType, Size: rec.Size, Shared: true}, nil
}

// SharedCopyKey is the key of job jobID's copy of the stored file at
// sourceKey: one key per job and stored bytes, so that every source of
// the job naming those bytes (an upload under any of its URLs, another
// job's copies of one upload) reads the one copy, and a retry of a file
// finds the copy an earlier attempt made. The source key is hashed: it
// holds slashes, and an account's name.
func SharedCopyKey(jobID, sourceKey string) string {
	sum := sha256.Sum256([]byte(sourceKey))
	return JobKeyPrefix(jobID) + "src-" + hex.EncodeToString(sum[:16])
}

func objectKey(jobID string, index int, id string) string {
	return JobKeyPrefix(jobID) + strconv.Itoa(index) + "-" + id
}

// JobKeyPrefix is the blob prefix under which a job's copies are stored, so
// that deleting a job can also remove copies a crash left unrecorded.
func JobKeyPrefix(jobID string) string {
	return "jobs/" + jobID + "/"
}

// download reads an external URL into memory, for Save to store.
func (f *Fetcher) download(ctx context.Context, accountID, jobID string, index int, sourceURL string) (Result, error) {
	if err := outbound.CheckURL(sourceURL); err != nil {
		return Result{}, &Error{Msg: "source URL " + err.Error()}
	}
	u, _ := url.Parse(sourceURL) // CheckURL parsed it
	display := outbound.Display(u)

	ctx, cancel := context.WithTimeoutCause(ctx, f.cfg.Timeout, errAttemptLimit)
	defer cancel()
	ctx, stall := watchStall(ctx, f.cfg.StallTimeout)
	defer stall.stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Result{}, &Error{Msg: fmt.Sprintf("source URL %s is not valid", display), Err: err}
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "*/*")

	resp, err := f.deps.Client.Do(req)
	if err != nil {
		return Result{}, f.requestError(ctx, display, err)
	}
	defer resp.Body.Close()
	stall.gotHeaders()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Result{}, &Error{
			Msg:       fmt.Sprintf("download of %s failed: the server answered HTTP %s", display, statusText(resp.StatusCode)),
			Retryable: retryableStatus(resp.StatusCode),
		}
	}
	if resp.ContentLength > f.cfg.MaxBytes {
		return Result{}, f.tooLarge(display)
	}

	body := bufio.NewReaderSize(stallReader{r: resp.Body, watch: stall}, sniffLen)
	head, err := body.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return Result{}, f.requestError(ctx, display, err)
	}
	contentType := storedContentType(resp.Header.Get("Content-Type"))
	if contentType == "" {
		contentType = mimetype.Detect(head).String()
	}

	// The download is kept in memory and stored by Save, so that the caller
	// can recognize the file while it is written: creating a file costs up to
	// a millisecond of kernel time on ext4 (docs/benchmarks.md). Recognition
	// reads the whole file into memory anyway, within the same limit.
	data, err := io.ReadAll(io.LimitReader(body, f.cfg.MaxBytes+1))
	if err != nil {
		return Result{}, f.requestError(ctx, display, err)
	}
	n := int64(len(data))
	if n > f.cfg.MaxBytes {
		return Result{}, f.tooLarge(display)
	}
	id := f.deps.NewID()
	key := objectKey(jobID, index, id)
	rec := &job.File{
		ID: id, AccountID: accountID, JobID: jobID, Name: fileName(resp), Size: n,
		ContentType: contentType, Key: key, Created: time.Now().UTC(),
	}
	return Result{URL: f.FileURL(id), File: rec, Key: key, Name: rec.Name, ContentType: contentType, Size: n, Data: data}, nil
}

// maxMediaTypeLen bounds the media type a download is stored under: a
// type and a subtype of at most 127 characters each (RFC 6838 4.2).
const maxMediaTypeLen = 255

// maxCharsetLen bounds the charset a download is stored under: IANA's
// charset names have at most 40 characters (RFC 2978 2.3).
const maxCharsetLen = 40

// storedContentType is the content type a download is stored and recorded
// under, from the source's Content-Type header: its media type and its
// charset (the converter decodes text by it), nothing else. "" when the
// header names no type worth keeping (none, malformed, a generic binary
// type, a media type past maxMediaTypeLen), for the caller to sniff one.
//
// The header is the source server's to write, up to the client's 64 KiB
// of headers, and was kept whole: it went into the file's record, into
// the Content-Type of GET /v1/files/{id}, and to S3 as the object's
// Content-Type, where a request's headers may take 8 KiB (AWS; versitygw
// refuses 7 KB), so such a download could never be stored and its file
// was downloaded, recognized and asked again at every attempt.
func storedContentType(header string) string {
	mt, params, err := mime.ParseMediaType(header)
	if err != nil || mt == "application/octet-stream" || mt == "binary/octet-stream" || len(mt) > maxMediaTypeLen {
		return ""
	}
	var keep map[string]string
	if cs := params["charset"]; cs != "" && len(cs) <= maxCharsetLen {
		keep = map[string]string{"charset": cs}
	}
	if ct := mime.FormatMediaType(mt, keep); ct != "" {
		return ct
	}
	return mime.FormatMediaType(mt, nil) // a charset it cannot write
}

// Save stores the bytes of a download (r.Data) at r.Key; a file that is
// stored already needs nothing. A half-written file is never left behind:
// the bucket writes it whole or not at all.
func (f *Fetcher) Save(ctx context.Context, r Result) error {
	if r.Data == nil {
		return nil
	}
	if err := f.deps.Bucket.WriteAll(ctx, r.Key, r.Data, &blob.WriterOptions{ContentType: r.ContentType, BeforeWrite: PrivateFile}); err != nil {
		return storageError(err)
	}
	return nil
}

// Discard deletes the copy Fetch made for a job (r.File set) whose record
// was not written, so that nothing of it stays stored. Only the job's copy
// is deleted, never the upload or other file it was copied from. A shared
// copy (r.Shared) may be named by another file's record: the caller makes
// sure none does, nor can any more.
func (f *Fetcher) Discard(ctx context.Context, r Result) error {
	if r.File == nil {
		return nil
	}
	if err := f.deps.Bucket.Delete(ctx, r.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("discard stored file %s: %w", r.Key, err)
	}
	return nil
}

func (f *Fetcher) tooLarge(display string) *Error {
	return &Error{Msg: fmt.Sprintf("download of %s failed: the file is larger than the %s limit", display, formatBytes(f.cfg.MaxBytes))}
}

// requestError turns a client or body-read error into a sentence.
func (f *Fetcher) requestError(ctx context.Context, display string, err error) *Error {
	var (
		opErr   *net.OpError
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		urlErr  *url.Error
	)
	if errors.As(err, &urlErr) {
		// The client's error names the URL it asked (a redirect's
		// location too) in full; it is kept as the cause, which a log
		// may print.
		urlErr.URL = outbound.DisplayString(urlErr.URL)
	}
	switch {
	case errors.Is(err, outbound.ErrForbiddenAddress):
		msg := fmt.Sprintf("download of %s refused: the host resolves to a private or reserved address", display)
		if errors.As(err, &opErr) && opErr.Addr != nil {
			if host, _, splitErr := net.SplitHostPort(opErr.Addr.String()); splitErr == nil {
				msg = fmt.Sprintf("download of %s refused: %s is a private or reserved address", display, host)
			}
		}
		return &Error{Msg: msg, Err: err}
	case errors.Is(err, outbound.ErrTooManyRedirects), errors.Is(err, outbound.ErrBadRedirect):
		return &Error{Msg: fmt.Sprintf("download of %s failed: %s", display, innermost(err)), Err: err}
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errAttemptLimit):
		return &Error{Msg: fmt.Sprintf("download of %s timed out after %s, the limit per download attempt", display, f.cfg.Timeout),
			Retryable: true, Err: errors.Join(context.DeadlineExceeded, err)}
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errStalled):
		// A timeout like the attempt limit's, retried alike. The client's
		// error is left out: it is context.Canceled (the watch cancels),
		// which would read as the caller's cancellation.
		return &Error{Msg: fmt.Sprintf("download of %s timed out: it stalled, nothing arrived for %s, the limit on a stalled download", display, f.cfg.StallTimeout),
			Retryable: true, Err: errors.Join(context.DeadlineExceeded, errStalled)}
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errHeadersLate):
		return f.headersLate(display, f.cfg.StallTimeout, errHeadersLate)
	case ctx.Err() != nil:
		// The caller's context ended: its cause (a deadline of its own, a
		// shutdown) is the caller's to name, so it is wrapped, and the
		// attempt's limit, which was not what ran out, is not blamed.
		msg := fmt.Sprintf("download of %s was cancelled", display)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			msg = fmt.Sprintf("download of %s timed out", display)
		}
		return &Error{Msg: msg, Retryable: true, Err: errors.Join(ctx.Err(), context.Cause(ctx), err)}
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return &Error{Msg: fmt.Sprintf("download of %s failed: host %s not found", display, dnsErr.Name), Err: err}
		}
		return &Error{Msg: fmt.Sprintf("download of %s failed: cannot resolve host %s", display, dnsErr.Name), Retryable: true, Err: err}
	case errors.As(err, &certErr):
		return &Error{Msg: fmt.Sprintf("download of %s failed: the server's TLS certificate is not valid", display), Err: err}
	case isTimeout(err) && strings.Contains(err.Error(), headerTimeoutText):
		// The transport's own limit on the headers, counted from the
		// request written, ended it before the stall watch did (a stall
		// limit longer than the transport's).
		return f.headersLate(display, f.headerTimeout, err)
	case isTimeout(err):
		return &Error{Msg: fmt.Sprintf("download of %s timed out", display), Retryable: true, Err: err}
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return &Error{Msg: fmt.Sprintf("download of %s failed: could not connect to the server", display), Retryable: true, Err: err}
	}
	return &Error{Msg: fmt.Sprintf("download of %s failed: the connection broke off", display), Retryable: true, Err: err}
}

// headersLate is the error of a download whose response headers were not
// complete within limit (0: unknown), the stall watch's or the
// transport's: the same rule, a response's headers in 30 s, so the same
// sentence whichever fired first.
func (f *Fetcher) headersLate(display string, limit time.Duration, cause error) *Error {
	within := "in time"
	if limit > 0 {
		within = "within " + limit.String()
	}
	return &Error{Msg: fmt.Sprintf("download of %s timed out: no complete headers arrived %s, the limit on waiting for a response's headers", display, within),
		Retryable: true, Err: errors.Join(context.DeadlineExceeded, cause)}
}

// stallWatch cancels a download's context when its limit passes with no
// progress: with errStalled when no byte has arrived for the limit, with
// errHeadersLate when a response's headers, begun, are not complete the
// limit after its request started. A deadline cannot be pushed back, so it
// is a timer that the start of each request (a redirect's too), the end
// of its headers and every read of the body that brings bytes re-arm.
//
// The first header byte does not re-arm it: the transport tells of no
// later one, so a server that sends its status line, or a header line now
// and then, and then nothing would be cut by the transport's
// ResponseHeaderTimeout instead (30 s after the request was written, so
// before the re-armed watch), with a message that named no limit.
type stallWatch struct {
	limit  time.Duration
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	timer   *time.Timer
	started bool // bytes of the current response's headers arrived, not all
}

// watchStall returns ctx under a stall watch that starts now, and the
// watch; the request must be made with the returned context.
func watchStall(ctx context.Context, limit time.Duration) (context.Context, *stallWatch) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &stallWatch{limit: limit, cancel: cancel}
	w.timer = time.AfterFunc(limit, w.fire)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		// Each request's start, a redirect's too: the one before is over.
		GetConn: func(string) { w.rearm(false) },
		GotFirstResponseByte: func() {
			w.mu.Lock()
			w.started = true
			w.mu.Unlock()
		},
	})
	return ctx, w
}

// fire cancels the download with the cause for the state it is in. A
// timer that fired already cancelled it; cancelling again changes nothing
// (the first cause stays).
func (w *stallWatch) fire() {
	w.mu.Lock()
	cause := errStalled
	if w.started {
		cause = errHeadersLate
	}
	w.mu.Unlock()
	w.cancel(cause)
}

// rearm starts the limit again; started says whether a response's headers
// are under way.
func (w *stallWatch) rearm(started bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = started
	w.timer.Reset(w.limit)
}

// gotHeaders re-arms the watch once the final response's headers are all
// in: from here only the body's bytes count.
func (w *stallWatch) gotHeaders() { w.rearm(false) }

// received re-arms the watch at bytes of the body.
func (w *stallWatch) received() { w.rearm(false) }

// stop ends the watch, and its context, once the download is over.
func (w *stallWatch) stop() {
	w.timer.Stop()
	w.cancel(context.Canceled)
}

// stallReader tells its watch of every read that brought bytes.
type stallReader struct {
	r     io.Reader
	watch *stallWatch
}

func (s stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.watch.received()
	}
	return n, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// innermost is the text of the deepest error in a chain, which for the
// client's *url.Error is the cause without the URL (that may carry a query
// we already show once).
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		if _, ok := err.(*url.Error); !ok {
			return err.Error()
		}
		err = next
	}
}

func storageError(err error) *Error {
	return &Error{Msg: "storing the downloaded file failed", Retryable: true, Err: err}
}

func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooEarly ||
		code == http.StatusTooManyRequests || code >= 500
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d-byte", n)
}

// fileName picks the stored file's name: Content-Disposition's filename,
// else the last segment of the final URL's path, else "download".
func fileName(resp *http.Response) string {
	if cd := resp.Header.Get("Content-Disposition"); cd != "" {
		if _, params, err := mime.ParseMediaType(cd); err == nil {
			if name := cleanName(params["filename"]); name != "" {
				return name
			}
		}
	}
	if resp.Request != nil && resp.Request.URL != nil {
		if name := cleanName(path.Base(resp.Request.URL.Path)); name != "" {
			return name
		}
	}
	return "download"
}

// cleanName reduces a server-chosen name to a harmless base name: no
// directories, no control characters, valid UTF-8, at most maxNameLen bytes.
func cleanName(name string) string {
	name = strings.ToValidUTF8(name, "")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if name == "." || name == ".." {
		return ""
	}
	if len(name) > maxNameLen {
		// Keep the extension, which carries the type.
		ext := path.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		stem := name[:maxNameLen-len(ext)]
		for !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
		name = stem + ext
	}
	return name
}

// Read returns the stored file at key, refusing one larger than max bytes
// (max <= 0 means Config.MaxBytes).
func (f *Fetcher) Read(ctx context.Context, key string, max int64) ([]byte, error) {
	if max <= 0 {
		max = f.cfg.MaxBytes
	}
	r, err := f.deps.Bucket.NewReader(ctx, key, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, &Error{Msg: "the stored file is missing", Err: errors.Join(job.ErrNotFound, err)}
		}
		return nil, &Error{Msg: "reading the stored file failed", Retryable: true, Err: err}
	}
	defer r.Close()
	if r.Size() > max {
		return nil, &Error{Msg: fmt.Sprintf("the file is larger than the %s limit", formatBytes(max))}
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, &Error{Msg: "reading the stored file failed", Retryable: true, Err: err}
	}
	if int64(len(data)) > max {
		return nil, &Error{Msg: fmt.Sprintf("the file is larger than the %s limit", formatBytes(max))}
	}
	return data, nil
}

// RemoveJobFiles deletes a deleted job's stored files: keys (from the
// store) and anything else under the job's prefix, such as a copy whose
// record was never written or, on file:// storage (no_tmp_dir), the
// temporary file of a write a crash cut off. It keeps going past failures and returns them
// with their keys, for the caller to log: the job is gone either way.
//
// dir is the directory of a file:// bucket (BucketDir), "" for any other:
// fileblob removes a job's files but not the folder they were in, which
// would be left behind for every deleted job.
func RemoveJobFiles(ctx context.Context, bucket *blob.Bucket, dir, jobID string, keys []string) []error {
	var errs []error
	it := bucket.List(&blob.ListOptions{Prefix: JobKeyPrefix(jobID)})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("list stored files of job %s: %w", jobID, err))
			break
		}
		keys = append(keys, obj.Key)
	}
	slices.Sort(keys)
	for _, key := range slices.Compact(keys) {
		if err := bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			errs = append(errs, fmt.Errorf("delete stored file %s: %w", key, err))
		}
	}
	if dir != "" && len(errs) == 0 && !strings.ContainsAny(jobID, `/\.`) {
		// os.Remove takes only an empty directory: a file written since
		// stays, and so does its folder.
		folder := filepath.Join(dir, "jobs", jobID)
		if err := os.Remove(folder); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the folder of job %s: %w", jobID, err))
		}
	}
	return errs
}

// RemoveUploadFolder removes, on file:// storage (dir from BucketDir; ""
// does nothing), the folder of the upload key uploads/<account>/<id>
// once the upload is deleted and nothing else is in it: fileblob removes
// a file but not its folder, which stayed, empty, for every account whose
// last upload went. A folder holding another upload, or the temporary
// file of one being written, is not empty and stays; that is no error.
// (An upload whose writer made the folder just before it is removed and
// creates its temporary file just after fails, and its client retries:
// a window of microseconds, against an empty folder per account for ever.)
func RemoveUploadFolder(dir, key string) error {
	rest, ok := strings.CutPrefix(key, "uploads/")
	if dir == "" || !ok {
		return nil
	}
	account, _, ok := strings.Cut(rest, "/")
	if !ok || account == "" || account == "." || account == ".." || strings.ContainsAny(account, `/\`) {
		return nil
	}
	folder := filepath.Join(dir, "uploads", account)
	err := os.Remove(folder)
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		return nil
	}
	return fmt.Errorf("remove the upload folder of %s: %w", account, err)
}

// Removals is the record of deleted jobs whose stored files are still to
// be removed (store.Store.FileRemovalDone).
type Removals interface {
	FileRemovalDone(ctx context.Context, jobID string) error
}

// RemoveDeletedJob removes the stored files of deleted job jobID as
// RemoveJobFiles does and, once nothing of it is left, clears the job's
// removal record. A failure keeps the record, for the sweep to try again:
// the job's rows are gone, and the record is all that still names its
// files.
func RemoveDeletedJob(ctx context.Context, bucket *blob.Bucket, dir string, removals Removals, jobID string, keys []string) []error {
	errs := RemoveJobFiles(ctx, bucket, dir, jobID, keys)
	if len(errs) > 0 {
		return errs
	}
	if err := removals.FileRemovalDone(ctx, jobID); err != nil {
		return []error{err}
	}
	return nil
}

// BucketDir returns the directory a file:// storage URL stores its keys
// under, "" for any other storage: the URL's directory, and in it the
// folder its prefix= names (prefix=dep-f/ stores uploads/… in
// <dir>/dep-f/uploads/…). The folder removals it is given to
// (RemoveJobFiles, RemoveUploadFolder, the removal sweep) act only under
// it, never on another deployment's folders outside the prefix. A prefix
// that names no folder of its own is "" too, and those removals do not
// happen (the empty folders stay, as on S3, where there are none): one
// without a trailing "/" (prefix=x stores xuploads/…), and one whose
// folder fileblob would not name as written (an empty, "." or ".."
// segment, a control character, an escape-like "__0x").
func BucketDir(storageURL string) string {
	u, dir, ok := fileURL(storageURL)
	if !ok {
		return ""
	}
	prefix := u.Query().Get("prefix")
	if prefix == "" {
		return dir
	}
	folder, ok := strings.CutSuffix(prefix, "/")
	if !ok {
		return ""
	}
	for part := range strings.SplitSeq(folder, "/") {
		if part == "" || part == "." || part == ".." || strings.Contains(part, "__0x") ||
			strings.ContainsFunc(part, func(r rune) bool { return r < 32 }) {
			return ""
		}
	}
	return filepath.Join(dir, filepath.FromSlash(folder))
}

// RootDir returns the directory a file:// storage URL names, whatever its
// prefix=, "" for any other storage: the one that must exist for the
// storage to be usable (fileblob makes the folders under it, the
// prefix's with the first key written).
func RootDir(storageURL string) string {
	_, dir, _ := fileURL(storageURL)
	return dir
}

// fileURL parses a file:// storage URL of this host and returns the
// directory it names, as fileblob reads it: file:///abs/dir and
// file://localhost/abs/dir, or file://./rel/dir, relative to the working
// directory (made absolute here, as fileblob makes it at open). The
// relative form was taken for another host's: every folder removal and
// the sweep's file://-only parts were skipped, so the staged writes a
// crash left under uploads/ stayed for good.
func fileURL(storageURL string) (*url.URL, string, bool) {
	u, err := url.Parse(storageURL)
	if err != nil || u.Scheme != "file" {
		return nil, "", false
	}
	switch u.Host {
	case "", "localhost":
		return u, filepath.FromSlash(u.Path), true
	case ".":
		dir, err := filepath.Abs(filepath.FromSlash(strings.TrimPrefix(u.Path, "/")))
		if err != nil {
			return nil, "", false
		}
		return u, dir, true
	}
	return nil, "", false
}
