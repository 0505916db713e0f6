package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/api"
	"github.com/docjobs/docjobs/internal/job"
)

// Files stores uploads and opens stored files for the calling account (the
// account is in ctx, see auth.Account); *api.Service implements it. Both
// answer job.ErrNotFound (or a NotFound status) for a file of another
// account; StoreUpload answers api.ErrTooLarge above the limit.
type Files interface {
	// StoreUpload streams body to storage under the client's name, which it
	// cleans (api.UploadName). It fails when body holds more than the upload
	// limit; the returned string is the file's URL.
	StoreUpload(ctx context.Context, name string, body io.Reader) (job.File, string, error)
	// OpenFile opens a stored file; the caller closes the reader.
	OpenFile(ctx context.Context, id string) (job.File, io.ReadCloser, error)
}

const (
	// multipartSlack is what the body may hold beyond the file: boundaries,
	// part headers and small form fields.
	multipartSlack = 1 << 20
	// fileFormField is the multipart field that carries the upload.
	fileFormField = "file"
	// uploadRoute is the upload's path, and its route label: its error
	// answers have no details (writeUploadError), whoever writes them.
	uploadRoute = "/v1/jobs/upload"
)

// uploadResponse is the spec's upload result; its names are snake_case.
type uploadResponse struct {
	URL       string `json:"url"`
	Name      string `json:"name"`
	SizeBytes int64  `json:"size_bytes"`
}

// tooLarge is the answer to an upload above the limit: RESOURCE_EXHAUSTED,
// like every "too much" answer, but HTTP 413 rather than 429 because
// retrying the same file will not help.
func (s *Server) tooLarge() error {
	return &runtime.HTTPStatusError{
		HTTPStatus: http.StatusRequestEntityTooLarge,
		Err:        status.Errorf(codes.ResourceExhausted, "file exceeds the upload limit of %d bytes", s.cfg.UploadMaxBytes),
	}
}

// upload handles POST /v1/jobs/upload. The body is read as a stream with
// mime/multipart.Reader (never ParseMultipartForm, which would buffer the
// file in memory or on disk) and the file part goes straight to storage.
//
// The form holds exactly one file. The answer waits for the end of the body:
// a second "file" part is 400, and the file stored from the first is deleted
// (it cannot be known before it is read); other parts are skipped and named
// in the Docjobs-Warning header, as ignored JSON fields are, after any query
// parameters (the route takes none). A body that
// breaks off after the file also deletes it: the client never learns its
// id, so nothing else could.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" || params["boundary"] == "" {
		s.writeUploadError(w, r, status.Error(codes.InvalidArgument,
			`request must be multipart/form-data with the file in form field "file"`))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.UploadMaxBytes+multipartSlack)
	idle := newIdleDeadline(http.NewResponseController(w).SetReadDeadline, s.cfg.IOIdleTimeout)
	mr, err := r.MultipartReader()
	if err != nil {
		s.writeUploadError(w, r, status.Error(codes.InvalidArgument, "malformed multipart body"))
		return
	}
	u := &uploadForm{}
	// The route takes no query parameters: they are named with the
	// skipped parts, as the gateway's routes name theirs.
	for _, name := range queryKeys(r) {
		u.ignore(name)
	}
	fail := func(err error) {
		s.discardUpload(r, u.stored)
		u.warn(w)
		s.writeUploadError(w, r, err)
	}
	for {
		idle.extend()
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fail(s.readError(err))
			return
		}
		if part.FormName() != fileFormField {
			// Skipped, and named in the warning; MaxBytesReader bounds what
			// they cost.
			u.ignore(part.FormName())
			if _, err := io.Copy(io.Discard, &idleReader{r: part, idle: idle}); err != nil {
				fail(s.readError(err))
				return
			}
			continue
		}
		if u.stored != nil {
			fail(status.Error(codes.InvalidArgument, "file: exactly one file per upload"))
			return
		}
		body := &uploadReader{r: &idleReader{r: part, idle: idle}, max: s.cfg.UploadMaxBytes}
		f, url, err := s.deps.Files.StoreUpload(r.Context(), part.FileName(), body)
		switch {
		case body.exceeded, errors.Is(err, api.ErrTooLarge):
			fail(s.tooLarge())
			return
		case err != nil && body.err != nil:
			// The client's body broke off or was malformed; storage only
			// passed that on.
			fail(s.readError(body.err))
			return
		case err != nil:
			fail(err)
			return
		}
		u.stored = &storedUpload{file: f, url: url}
	}
	if u.stored == nil {
		fail(status.Error(codes.InvalidArgument, `multipart form field "file" is missing`))
		return
	}
	u.warn(w)
	writeJSON(w, http.StatusOK, uploadResponse{URL: u.stored.url, Name: u.stored.file.Name, SizeBytes: u.stored.file.Size})
}

// uploadForm is what an upload's form held so far.
type uploadForm struct {
	stored  *storedUpload // the file part, once stored
	ignored []string      // names of the other parts, each once, at most maxIgnored
	more    int           // further other parts past maxIgnored
}

type storedUpload struct {
	file job.File
	url  string
}

func (u *uploadForm) ignore(name string) {
	if name == "" {
		name = `""` // a part without a name still says it was there
	}
	switch {
	case slices.Contains(u.ignored, name):
	case len(u.ignored) < maxIgnored:
		u.ignored = append(u.ignored, name)
	default:
		u.more++
	}
}

// warn sets the Docjobs-Warning header naming the skipped parts.
func (u *uploadForm) warn(w http.ResponseWriter) {
	if len(u.ignored) > 0 {
		w.Header().Set(WarningHeader, warningHeader(u.ignored, u.more))
	}
}

// discardUpload deletes a stored upload whose request is answered with an
// error, so that it does not count against the account's quota unseen. It
// runs even if the client went away; a failure is logged, the client's
// answer stays the error that caused it.
func (s *Server) discardUpload(r *http.Request, stored *storedUpload) {
	if stored == nil {
		return
	}
	ctx := context.WithoutCancel(r.Context())
	if _, err := s.deps.Service.DeleteFile(ctx, &docjobsv1.DeleteFileRequest{Id: stored.file.ID}); err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "deleting a refused upload failed",
			append(requestAttrs(ctx), slog.String("file_id", stored.file.ID), slog.String("error", err.Error()))...)
	}
}

// idleCut is the answer to an upload that sent nothing for IOIdleTimeout:
// DEADLINE_EXCEEDED over both transports, HTTP 408 (the client was too
// slow, not an upstream: not the 504 the code maps to elsewhere).
func (s *Server) idleCut() error {
	return &runtime.HTTPStatusError{
		HTTPStatus: http.StatusRequestTimeout,
		Err:        s.idleStatus().Err(),
	}
}

func (s *Server) idleStatus() *status.Status {
	return status.Newf(codes.DeadlineExceeded, "the upload sent nothing for %s", s.cfg.IOIdleTimeout)
}

// readError classifies an error reading the request body.
func (s *Server) readError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return s.tooLarge()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) { // the idle read deadline
		return s.idleCut()
	}
	return status.Error(codes.InvalidArgument, "malformed or incomplete multipart body")
}

// uploadReader passes at most max bytes through and remembers whether the
// file was larger, so the answer is 413 whatever storage made of the error.
type uploadReader struct {
	r        io.Reader
	max, n   int64
	exceeded bool
	err      error // a read error other than EOF and exceeding
}

// errUploadTooLarge is what storage reads once the file passes the limit.
var errUploadTooLarge = errors.New("upload exceeds the size limit")

func (u *uploadReader) Read(p []byte) (int, error) {
	if u.exceeded {
		return 0, errUploadTooLarge
	}
	n, err := u.r.Read(p)
	u.n += int64(n)
	if u.n > u.max {
		u.exceeded = true
		return 0, errUploadTooLarge
	}
	if err != nil && !errors.Is(err, io.EOF) {
		u.err = err
	}
	return n, err
}

// download handles GET /v1/files/{id}: the file streams from storage with
// its length and an attachment disposition, so a stored HTML file is saved,
// never rendered on our origin.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	f, body, err := s.deps.Files.OpenFile(r.Context(), r.PathValue("id"))
	if errors.Is(err, job.ErrNotFound) {
		err = errFileNotFound // as GetFile says it, not the store's bare "not found"
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer func() { _ = body.Close() }()

	h := w.Header()
	ct := f.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	if f.Size >= 0 {
		h.Set("Content-Length", strconv.FormatInt(f.Size, 10))
	}
	disposition := mime.FormatMediaType("attachment", map[string]string{"filename": f.Name})
	if disposition == "" { // a name FormatMediaType cannot encode
		disposition = "attachment"
	}
	h.Set("Content-Disposition", disposition)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	idle := newIdleDeadline(http.NewResponseController(w).SetWriteDeadline, s.cfg.IOIdleTimeout)
	n, err := io.Copy(&idleWriter{w: w, idle: idle}, body)
	if err != nil {
		// The status is sent; all we can do is log and let the short body
		// (Content-Length) tell the client.
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "download interrupted",
			append(requestAttrs(r.Context()), slog.String("error", err.Error()), slog.Int64("bytes", n))...)
	}
}

// idleDeadline moves a connection deadline forward while bytes move, at most
// once a second (or half the timeout, if shorter) so that a transfer of
// small reads does not pay a timer update each time.
type idleDeadline struct {
	set          func(time.Time) error
	timeout, gap time.Duration
	last         time.Time
}

func newIdleDeadline(set func(time.Time) error, timeout time.Duration) *idleDeadline {
	return &idleDeadline{set: set, timeout: timeout, gap: min(time.Second, timeout/2)}
}

// extend reports whether it moved the deadline (to last + timeout).
func (d *idleDeadline) extend() bool {
	now := time.Now()
	if now.Sub(d.last) < d.gap {
		return false
	}
	d.last = now
	_ = d.set(now.Add(d.timeout)) // ErrNotSupported: the server's own timeouts still apply
	return true
}

type idleReader struct {
	r    io.Reader
	idle *idleDeadline
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.idle.extend()
	return r.r.Read(p)
}

type idleWriter struct {
	w    io.Writer
	idle *idleDeadline
}

func (w *idleWriter) Write(p []byte) (int, error) {
	w.idle.extend()
	return w.w.Write(p)
}
