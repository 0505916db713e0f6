package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// ErrTooLarge is returned by StoreUpload when the body holds more than the
// upload limit; nothing is kept.
var ErrTooLarge = errors.New("file exceeds the upload limit")

// ErrNotFound is returned by OpenFile for a missing file or one of another
// account.
var ErrNotFound = store.ErrNotFound

// maxFileNameBytes bounds an upload's name; a longer one is cut, not refused.
const maxFileNameBytes = 255

// filesPath is the path, under PublicURL, of stored files.
const filesPath = "/v1/files/"

// FileURL is the URL of stored file id under publicURL.
func FileURL(publicURL, id string) string {
	return strings.TrimRight(publicURL, "/") + filesPath + id
}

// ParseFileURL returns the id of the stored file raw names when raw is a
// file URL of this service (same scheme and host as publicURL, path
// {publicURL path}/v1/files/{id}).
func ParseFileURL(publicURL, raw string) (id string, ok bool) {
	pub, err := url.Parse(strings.TrimRight(publicURL, "/"))
	if err != nil {
		return "", false
	}
	return parseFileURL(pub, raw)
}

// parseFileURL is the worker's parser (fetch.OwnFileURLID), so that the
// API takes as an upload exactly the sources the worker reads from storage.
func parseFileURL(pub *url.URL, raw string) (string, bool) {
	return fetch.OwnFileURLID(pub, raw)
}

// StoreUpload streams body to storage as a new file of the calling account
// and records it under the client's name cleaned by UploadName, so that both
// transports store the same name for the same bytes. It never holds the whole body: bytes go from body to the
// bucket writer as they come. A body over the upload limit gives ErrTooLarge
// and leaves nothing behind. The returned string is the file's URL, usable
// in sourceUrls. Other errors are gRPC status errors.
func (s *Service) StoreUpload(ctx context.Context, name string, body io.Reader) (job.File, string, error) {
	return s.storeUpload(ctx, name, body, uploadTimeLimit)
}

// uploadTimeLimit bounds how long one upload may take, from its first byte
// read to its last: past it the upload is refused (DEADLINE_EXCEEDED, HTTP
// 408) and nothing is kept. The idle cut (server.Config.IOIdleTimeout, a
// fixed minute) bounds silence only, and a client sending empty gRPC messages, or a trickle,
// kept an upload open for ever. The removal sweep removes staged writes and
// unrecorded uploads an hour old, and ages an S3 object by when its upload
// began: a bound well under that hour (this, plus one idle cut for the read
// in progress, plus recordTimeout) is what makes everything it removes
// dead. 30 minutes passes the default 20 MiB limit at 12 kB/s.
const uploadTimeLimit = 30 * time.Minute

// recordTimeout bounds the recording of an upload whose bytes are stored,
// for the same reason: no record commits long after its bytes were written.
const recordTimeout = time.Minute

// errUploadTimeLimit is what storage reads from a body past the time limit.
var errUploadTimeLimit = errors.New("upload time limit passed")

// timeLimited fails every read once its deadline has passed.
type timeLimited struct {
	r        io.Reader
	deadline time.Time
}

func (t *timeLimited) Read(p []byte) (int, error) {
	if !time.Now().Before(t.deadline) {
		return 0, errUploadTimeLimit
	}
	return t.r.Read(p)
}

// uploadTooSlow is the answer to an upload past limit: DEADLINE_EXCEEDED,
// HTTP 408 as for the idle cut (the client was too slow, no upstream was).
func uploadTooSlow(limit time.Duration) error {
	return &runtime.HTTPStatusError{
		HTTPStatus: http.StatusRequestTimeout,
		Err:        status.Errorf(codes.DeadlineExceeded, "the upload took longer than %s, the most one may take", limit),
	}
}

// maxUploadFolder bounds an account's folder under uploads/: a path
// segment, and so a file name on local storage, where most file systems
// take 255 bytes (NAME_MAX). An account name escaped past it (86 or more
// characters outside ASCII, within the 255 bytes an account name may
// have) could never upload there: every write failed as an internal error.
const maxUploadFolder = 200

// UploadFolder is the folder under uploads/ that holds acct's uploads: its
// name path-escaped, or, when that is longer than maxUploadFolder, the
// SHA-256 of the name. The folder only groups the keys (each upload's
// record names its key and account), so an account of that hash's text
// sharing it would change nothing.
func UploadFolder(acct string) string {
	if esc := url.PathEscape(acct); len(esc) <= maxUploadFolder {
		return esc
	}
	return "sha256-" + sha256Hex(acct)
}

// storeUpload is StoreUpload with the time limit given.
func (s *Service) storeUpload(ctx context.Context, name string, body io.Reader, limit time.Duration) (job.File, string, error) {
	acct, err := account(ctx)
	if err != nil {
		return job.File{}, "", err
	}
	name = UploadName(name)

	id := s.newID()
	key := "uploads/" + UploadFolder(acct) + "/" + id
	attrs := []slog.Attr{slog.String("account_id", acct), slog.String("file_id", id)}

	// An account already at its quota is refused before a byte is read or
	// stored; the quota is checked again, race-safe, when the upload is
	// recorded below.
	if limit := s.cfg.AccountMaxUploadBytes; limit > 0 {
		used, err := s.store.UploadBytes(ctx, acct)
		if err != nil {
			return job.File{}, "", s.internal(ctx, "StoreUpload", fmt.Errorf("upload bytes: %w", err), attrs...)
		}
		if used >= limit {
			return job.File{}, "", s.uploadQuota(ctx, attrs)
		}
	}

	// The first bytes decide the content type; Peek reads no more than that.
	src := &readErrs{r: &timeLimited{r: body, deadline: time.Now().Add(limit)}}
	br := bufio.NewReaderSize(src, 512)
	head, err := br.Peek(512)
	if errors.Is(err, errUploadTimeLimit) {
		return job.File{}, "", uploadTooSlow(limit)
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return job.File{}, "", uploadReadError(err)
	}
	contentType := http.DetectContentType(head)

	// Cancelling wctx before Close aborts the write (discardWrite does so
	// only when the write cannot be finished).
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mpu s3Upload
	beforeWrite := func(as func(any) bool) error {
		if err := fetch.PrivateFile(as); err != nil {
			return err
		}
		return mpu.capture(as)
	}
	w, err := s.bucket.NewWriter(wctx, key, &blob.WriterOptions{ContentType: contentType, BeforeWrite: beforeWrite})
	if err != nil {
		return job.File{}, "", s.internal(ctx, "StoreUpload", fmt.Errorf("open writer: %w", err), attrs...)
	}
	n, copyErr := io.Copy(w, io.LimitReader(br, s.cfg.UploadMaxBytes+1))
	if copyErr != nil || n > s.cfg.UploadMaxBytes {
		s.discardWrite(ctx, w, cancel, &mpu, key, attrs)
		if errors.Is(src.err, errUploadTimeLimit) {
			s.log.LogAttrs(ctx, slog.LevelInfo, "upload refused: time limit",
				append(attrs, slog.Duration("limit", limit), slog.Int64("bytes", n))...)
			return job.File{}, "", uploadTooSlow(limit)
		}
		if src.err != nil {
			return job.File{}, "", uploadReadError(src.err)
		}
		if copyErr != nil {
			return job.File{}, "", s.internal(ctx, "StoreUpload", fmt.Errorf("write: %w", copyErr), attrs...)
		}
		return job.File{}, "", fmt.Errorf("%w of %d bytes", ErrTooLarge, s.cfg.UploadMaxBytes)
	}
	if err := w.Close(); err != nil {
		s.removePartial(ctx, key, attrs)
		return job.File{}, "", s.internal(ctx, "StoreUpload", fmt.Errorf("close writer: %w", err), attrs...)
	}

	f := job.File{
		ID:          id,
		AccountID:   acct,
		Name:        name,
		Size:        n,
		ContentType: contentType,
		Key:         key,
		Created:     time.Now().UTC(),
	}
	rctx, rcancel := context.WithTimeout(ctx, recordTimeout)
	defer rcancel()
	if err := s.store.CreateUpload(rctx, f, s.cfg.AccountMaxUploadBytes); err != nil {
		if errors.Is(err, store.ErrUploadQuota) {
			s.removePartial(ctx, key, attrs)
			return job.File{}, "", s.uploadQuota(ctx, append(attrs, slog.Int64("bytes", n)))
		}
		if recorded, lookErr := s.uploadRecorded(ctx, acct, id); lookErr == nil && recorded {
			// The commit went through and only its answer was lost (a
			// connection cut at COMMIT): the upload is the account's.
			s.log.LogAttrs(ctx, slog.LevelWarn, "file uploaded; its record's commit answered an error",
				append(attrs, slog.Int64("bytes", n), slog.String("error", err.Error()))...)
			return f, FileURL(s.cfg.PublicURL, id), nil
		} else if lookErr == nil {
			s.removePartial(ctx, key, attrs)
		}
		// When the record cannot be looked up, the bytes stay: deleting
		// them could leave a record without its file, while bytes without
		// a record are the sweep's (worker.sweepUploads).
		return job.File{}, "", s.internal(ctx, "StoreUpload", fmt.Errorf("record file: %w", err), attrs...)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "file uploaded", append(attrs, slog.Int64("bytes", n))...)
	return f, FileURL(s.cfg.PublicURL, id), nil
}

// uploadRecorded reports whether the upload id of acct has its record, for
// a CreateUpload that answered an error: an error need not mean that
// nothing committed.
func (s *Service) uploadRecorded(ctx context.Context, acct, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	_, err := s.store.GetFile(ctx, acct, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	default:
		return false, err
	}
}

// uploadQuota is the answer to an upload past AccountMaxUploadBytes:
// RESOURCE_EXHAUSTED, HTTP 429, not the 413 of a file over the upload
// limit. The same file is accepted once the account deletes uploads (or
// retention expires them), so it is the account's state that refuses it,
// not the request; 413 would tell a client to give up on the file. It
// carries no Retry-After: nothing frees room on a schedule the service can
// name (with DOCJOBS_RETENTION 0, nothing ever does), and a client retrying
// blindly would only be refused again.
func (s *Service) uploadQuota(ctx context.Context, attrs []slog.Attr) error {
	s.log.LogAttrs(ctx, slog.LevelInfo, "upload refused: account upload quota",
		append(attrs, slog.Int64("limit", s.cfg.AccountMaxUploadBytes))...)
	return status.Errorf(codes.ResourceExhausted,
		"account uploads would exceed %d bytes, the most allowed (DOCJOBS_ACCOUNT_MAX_UPLOAD_BYTES); delete uploads no longer needed (GET /v1/files, or ListFiles over gRPC, lists them)",
		s.cfg.AccountMaxUploadBytes)
}

// UploadName is the name a file is stored under, from the name its client
// gave (a multipart filename or UploadFileRequest.name): the last path
// element, without control characters, U+FFFD and bytes that are not UTF-8,
// without surrounding white space, cut at 255 bytes on a character boundary.
// An empty name, "." and ".." become "upload".
func UploadName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	// strings.Map reads an invalid byte as U+FFFD, which is dropped too.
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	for len(name) > maxFileNameBytes {
		_, size := utf8.DecodeLastRuneInString(name)
		name = strings.TrimRightFunc(name[:len(name)-size], unicode.IsSpace)
	}
	if name == "" || name == "." || name == ".." {
		return "upload"
	}
	return name
}

// uploadReadError reports a body that could not be read. The cause stays
// wrapped, so the HTTP layer can tell its own reader's errors (a broken or
// oversized client body) from a storage failure; it is not logged here for
// the same reason.
func uploadReadError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	// The transport's own answer (the edge cut an idle stream) as it is.
	var st interface{ GRPCStatus() *status.Status }
	if errors.As(err, &st) {
		return st.GRPCStatus().Err()
	}
	return fmt.Errorf("read upload body: %w", err)
}

// readErrs remembers the error of the reader it wraps, so that a failed copy
// can be blamed on the body or on storage.
type readErrs struct {
	r   io.Reader
	err error
}

func (e *readErrs) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		e.err = err
	}
	return n, err
}

// discardWrite ends the write of a refused upload and deletes what it
// stored. While the request's context lives the write is finished, not
// cancelled, and what it made is then deleted: cancelling an s3:// multipart
// upload leaves part uploads the server may still be storing, and a part
// stored after the abort keeps an unfinished upload, unseen by any listing
// of objects (S3's documentation for AbortMultipartUpload says an abort may
// have to be repeated for that). Finishing returns once every part has its
// answer. The object it makes has a new key no record names, and is gone
// before the refusal is answered. A write that cannot be finished (the
// client is gone, storage failed) is aborted.
func (s *Service) discardWrite(ctx context.Context, w *blob.Writer, cancel context.CancelFunc, mpu *s3Upload, key string, attrs []slog.Attr) {
	if ctx.Err() != nil {
		cancel()
	}
	if err := mpu.abort(ctx, s.bucket, w.Close()); err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "partial upload not removed",
			append(attrs, slog.String("key", key), slog.String("error", err.Error()))...)
	}
	s.removePartial(ctx, key, attrs)
}

// removePartial deletes what an aborted upload may have left.
func (s *Service) removePartial(ctx context.Context, key string, attrs []slog.Attr) {
	// The request context may be the reason the upload stopped.
	ctx = context.WithoutCancel(ctx)
	if err := s.deleteBlob(ctx, key); err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "partial upload not removed",
			append(attrs, slog.String("key", key), slog.String("error", err.Error()))...)
	}
}

// deleteBlob deletes key; a key that is already gone is not an error.
func (s *Service) deleteBlob(ctx context.Context, key string) error {
	if err := s.bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return err
	}
	return nil
}

// OpenFile opens a stored file of the calling account. It returns
// ErrNotFound for a missing file and for another account's; other errors are
// gRPC status errors. The caller closes the reader.
func (s *Service) OpenFile(ctx context.Context, id string) (job.File, io.ReadCloser, error) {
	acct, err := account(ctx)
	if err != nil {
		return job.File{}, nil, err
	}
	if !PossibleID(id) {
		return job.File{}, nil, ErrNotFound
	}
	f, err := s.store.GetFile(ctx, acct, id)
	if errors.Is(err, store.ErrNotFound) {
		return job.File{}, nil, ErrNotFound
	}
	if err != nil {
		return job.File{}, nil, s.internal(ctx, "OpenFile", err, slog.String("file_id", id))
	}
	r, err := s.bucket.NewReader(ctx, f.Key, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			// Recorded but not in storage: say so to the operator, and to the
			// client what it can act on.
			s.log.LogAttrs(ctx, slog.LevelError, "stored file missing from storage",
				slog.String("account_id", acct), slog.String("file_id", id), slog.String("key", f.Key))
			return job.File{}, nil, ErrNotFound
		}
		return job.File{}, nil, s.internal(ctx, "OpenFile", fmt.Errorf("open %s: %w", f.Key, err), slog.String("file_id", id))
	}
	return f, r, nil
}

// deleteTimeout bounds the deletion of one upload, which runs to its end
// even when the client goes away: stopping between the bytes and the record
// would leave a record naming bytes that are gone.
const deleteTimeout = 30 * time.Second

// DeleteFile deletes an upload of the calling account: its stored bytes
// first, then its record, so that a failure in between leaves a record that
// a retried delete finds and finishes, never bytes that nothing names. Jobs
// that read the upload keep their own copies. A job's copy is refused: it
// belongs to its job, whose files and rows name it, and goes with
// DeleteJob.
func (s *Service) DeleteFile(ctx context.Context, req *docjobsv1.DeleteFileRequest) (*emptypb.Empty, error) {
	acct, err := account(ctx)
	if err != nil {
		return nil, err
	}
	id := req.GetId()
	if !PossibleID(id) {
		return nil, status.Error(codes.NotFound, "file not found")
	}
	fileAttr := slog.String("file_id", id)
	f, err := s.store.GetFile(ctx, acct, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, status.Error(codes.NotFound, "file not found")
	}
	if err != nil {
		return nil, s.internal(ctx, "DeleteFile", fmt.Errorf("look up file: %w", err), fileAttr)
	}
	if f.JobID != "" {
		return nil, status.Errorf(codes.FailedPrecondition,
			"file is a stored copy of job %s and is deleted with its job", f.JobID)
	}

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	if err := s.deleteBlob(ctx, f.Key); err != nil {
		return nil, s.internal(ctx, "DeleteFile", fmt.Errorf("delete %s: %w", f.Key, err), fileAttr)
	}
	err = s.store.DeleteUpload(ctx, acct, id)
	if errors.Is(err, store.ErrNotFound) {
		// A concurrent delete of the same upload got there first.
		return nil, status.Error(codes.NotFound, "file not found")
	}
	if err != nil {
		return nil, s.internal(ctx, "DeleteFile", fmt.Errorf("delete record: %w", err), fileAttr)
	}
	if err := fetch.RemoveUploadFolder(s.cfg.StorageDir, f.Key); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "empty upload folder not removed", slog.String("account_id", acct), fileAttr, slog.Any("err", err))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "file deleted", slog.String("account_id", acct), fileAttr, slog.Int64("bytes", f.Size))
	return &emptypb.Empty{}, nil
}

// UploadFile is the gRPC upload. The content arrives in pieces, one per
// message, and goes to storage as it comes, as the REST upload's body does:
// the same limit applies and no message or buffer holds the whole file.
func (s *Service) UploadFile(stream grpc.ClientStreamingServer[docjobsv1.UploadFileRequest, docjobsv1.UploadFileResponse]) error {
	ctx := stream.Context()
	if _, err := account(ctx); err != nil {
		return err
	}
	first, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return invalid("name", "the upload stream sent no message")
	}
	if err != nil {
		return uploadReadError(err)
	}
	// The stream's own deadline: empty messages keep it open without a
	// read of StoreUpload's returning, so it checks the limit itself.
	body := &uploadStream{stream: stream, piece: first.GetContent(), deadline: time.Now().Add(uploadTimeLimit)}
	f, u, err := s.StoreUpload(ctx, first.GetName(), body)
	var withHTTP *runtime.HTTPStatusError
	if errors.As(err, &withHTTP) {
		return withHTTP.Err // the REST answer's status, without its HTTP code
	}
	if errors.Is(err, ErrTooLarge) {
		// REST's answer (413): RESOURCE_EXHAUSTED, as grpc-go also says of a
		// message over its limit.
		return status.Errorf(codes.ResourceExhausted, "file exceeds the upload limit of %d bytes", s.cfg.UploadMaxBytes)
	}
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return err // the caller's mistake, or the stream broke
		}
		return s.internal(ctx, "UploadFile", err)
	}
	return stream.SendAndClose(&docjobsv1.UploadFileResponse{Url: u, Name: f.Name, SizeBytes: f.Size})
}

// uploadStream reads the content pieces of an upload stream in order,
// until deadline: messages without content are skipped, and without the
// deadline a client sending nothing else kept the upload open for ever
// (each message resets the idle cut).
type uploadStream struct {
	stream   grpc.ClientStreamingServer[docjobsv1.UploadFileRequest, docjobsv1.UploadFileResponse]
	piece    []byte
	deadline time.Time
}

func (u *uploadStream) Read(p []byte) (int, error) {
	for len(u.piece) == 0 {
		if !time.Now().Before(u.deadline) {
			return 0, errUploadTimeLimit
		}
		msg, err := u.stream.Recv()
		if err != nil {
			return 0, err // io.EOF ends the file
		}
		u.piece = msg.GetContent()
	}
	n := copy(p, u.piece)
	u.piece = u.piece[n:]
	return n, nil
}

// downloadPiece is the most content one GetFile message carries.
const downloadPiece = 1 << 20

// GetFile is the gRPC download. The file streams in pieces of at most
// downloadPiece bytes, the first message carrying its content type, so no
// message or buffer holds the whole file (the upload is streamed for the
// same reason) and files of any size pass grpc's default 4 MiB message
// limit. An empty file is one message with the content type only.
func (s *Service) GetFile(req *docjobsv1.GetFileRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	f, r, err := s.OpenFile(ctx, req.GetId())
	if errors.Is(err, ErrNotFound) {
		return status.Error(codes.NotFound, "file not found")
	}
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	ct := f.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	for first := true; ; first = false {
		// A new buffer each time: grpc may keep a sent message a while.
		buf := make([]byte, downloadPiece)
		n, err := io.ReadFull(r, buf)
		if n > 0 || first {
			msg := &httpbody.HttpBody{Data: buf[:n]}
			if first {
				msg.ContentType = ct
			}
			if err := stream.Send(msg); err != nil {
				return err // the client went away; grpc has its status
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return s.internal(ctx, "GetFile", fmt.Errorf("read %s: %w", f.Key, err), slog.String("file_id", f.ID))
		}
	}
}
