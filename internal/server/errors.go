package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// This file is the one place where errors become what a client sees. Every
// path (REST through grpc-gateway, gRPC, upload, download, routing) goes
// through clientStatus, so a plain Go error can never reach a client: it
// becomes Internal "internal error (id=…)" and the id is logged with the cause.

// clientStatus maps err to the status a client may see. Status errors pass
// through (except Unknown, which is what a stray plain error turns into);
// the domain's sentinel errors get their codes; anything else is logged
// under a fresh error id and hidden.
func (s *Server) clientStatus(ctx context.Context, err error) *status.Status {
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return st
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, "deadline exceeded")
	case errors.Is(err, job.ErrNotFound):
		return status.New(codes.NotFound, job.ErrNotFound.Error())
	case errors.Is(err, job.ErrIdempotencyMismatch):
		return status.New(codes.InvalidArgument, job.ErrIdempotencyMismatch.Error())
	case errors.Is(err, job.ErrTerminal):
		return status.New(codes.FailedPrecondition, job.ErrTerminal.Error())
	case errors.Is(err, auth.ErrUnavailable):
		return s.unavailable(ctx, err, auth.ErrUnavailable.Error())
	case errors.Is(err, store.ErrUnavailable):
		return s.unavailable(ctx, err, "the database could not be reached")
	}
	return s.internal(ctx, err)
}

// unavailableRetryAfter is the Retry-After of an UNAVAILABLE answer: long
// enough that clients retrying together do not hammer a database coming
// back, short against a restart or a failover.
const unavailableRetryAfter = 5 * time.Second

// unavailable logs err under a new error id, as internal does, and returns
// UNAVAILABLE (503) with what failed, the id and a RetryInfo (REST's
// Retry-After): the request may well succeed later, and a client told
// UNAVAILABLE retries where one told 401 or 500 gives up.
func (s *Server) unavailable(ctx context.Context, err error, what string) *status.Status {
	id := newErrorID()
	attrs := []slog.Attr{slog.String("error_id", id), slog.String("error", err.Error())}
	attrs = append(attrs, requestAttrs(ctx)...)
	s.log.LogAttrs(ctx, slog.LevelError, "unavailable", attrs...)
	st := status.New(codes.Unavailable, what+"; retry later (id="+id+")")
	withRetry, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(unavailableRetryAfter)})
	if derr != nil {
		return st // RetryInfo always marshals; the message is what matters
	}
	return withRetry
}

// internal logs err under a new error id and returns the status that carries
// only that id.
func (s *Server) internal(ctx context.Context, err error, extra ...slog.Attr) *status.Status {
	id := newErrorID()
	attrs := []slog.Attr{slog.String("error_id", id), slog.String("error", err.Error())}
	attrs = append(attrs, requestAttrs(ctx)...)
	attrs = append(attrs, extra...)
	s.log.LogAttrs(ctx, slog.LevelError, "internal error", attrs...)
	return status.New(codes.Internal, "internal error (id="+id+")")
}

func newErrorID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// httpStatus is the HTTP status of a gRPC code, after AIP-193.
// FailedPrecondition is 409, not 400: the request was well formed but the
// resource is in the wrong state (cancelling a finished job), which a client
// handles differently from a bad argument, and 409 says exactly that.
func httpStatus(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.Canceled:
		return 499 // client closed request; there is no standard name
	case codes.InvalidArgument, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted, codes.FailedPrecondition:
		return http.StatusConflict
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError // Unknown, Internal, DataLoss
}

// statusJSON is google.rpc.Status as JSON. Details are always present on the
// JSON endpoints (an empty array when there are none).
type statusJSON struct {
	Code    codes.Code        `json:"code"`
	Message string            `json:"message"`
	Details []json.RawMessage `json:"details"`
}

// uploadErrorJSON is the upload endpoint's error body: the spec gives it as
// {code, message} with no details.
type uploadErrorJSON struct {
	Code    codes.Code `json:"code"`
	Message string     `json:"message"`
}

// writeError answers err on a JSON endpoint. A *runtime.HTTPStatusError
// chooses the HTTP status itself (413 for an oversized body, 405 from
// routing); otherwise it follows from the code.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st, code := s.statusAndHTTP(r.Context(), err)
	body := statusJSON{Code: st.Code(), Message: st.Message(), Details: []json.RawMessage{}}
	for _, d := range st.Proto().GetDetails() {
		b, merr := protojson.Marshal(d)
		if merr != nil {
			continue // a detail type this binary cannot name is dropped, not leaked raw
		}
		body.Details = append(body.Details, b)
	}
	writeStatusHeaders(w, st)
	writeJSON(w, code, body)
}

// writeUploadError answers err on the upload endpoint, without details.
func (s *Server) writeUploadError(w http.ResponseWriter, r *http.Request, err error) {
	st, code := s.statusAndHTTP(r.Context(), err)
	writeStatusHeaders(w, st)
	writeJSON(w, code, uploadErrorJSON{Code: st.Code(), Message: st.Message()})
}

func (s *Server) statusAndHTTP(ctx context.Context, err error) (*status.Status, int) {
	var withHTTP *runtime.HTTPStatusError
	if errors.As(err, &withHTTP) {
		var malformed runtime.MalformedSequenceError
		if errors.As(withHTTP.Err, &malformed) {
			return status.New(codes.InvalidArgument, "malformed escape sequence in the request path"), http.StatusBadRequest
		}
		return s.clientStatus(ctx, withHTTP.Err), withHTTP.HTTPStatus
	}
	st := s.clientStatus(ctx, err)
	return st, httpStatus(st.Code())
}

func writeStatusHeaders(w http.ResponseWriter, st *status.Status) {
	h := w.Header()
	h.Del("Trailer")
	if st.Code() == codes.Unauthenticated {
		h.Set("WWW-Authenticate", `Bearer realm="docjobs"`)
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			secs := math.Ceil(ri.GetRetryDelay().AsDuration().Seconds())
			h.Set("Retry-After", strconv.Itoa(max(int(secs), 1)))
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own plain structs are passed here; this cannot happen.
		b = []byte(`{"code":13,"message":"internal error"}`)
		code = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// gatewayError is grpc-gateway's error handler: everything the gateway or
// the service returns on a REST call ends here.
func (s *Server) gatewayError(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	s.writeError(w, r, err)
}

// routingError answers requests under /v1/ that match no REST route. The
// method table answers wrong methods on known paths before the gateway sees
// them; a 405 here still names what the path allows when it can.
func (s *Server) routingError(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, code int) {
	switch code {
	case http.StatusMethodNotAllowed:
		if p := s.methods.match(r.URL.Path); p != nil {
			w.Header().Set("Allow", p.allow())
		}
		s.writeError(w, r, errMethodNotAllowed(r))
	case http.StatusBadRequest:
		s.writeError(w, r, status.Error(codes.InvalidArgument, "malformed request path"))
	default:
		s.notFound(w, r)
	}
}

// notFound answers a request no route matches.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	setRoute(r.Context(), routeUnmatched)
	s.writeError(w, r, status.Errorf(codes.NotFound, "no route for %s %s", r.Method, r.URL.Path))
}

// The not-found answers of the routes this package serves itself, worded as
// the service's own: each names what was not found.
var (
	errJobNotFound  = status.Error(codes.NotFound, "job not found")
	errFileNotFound = status.Error(codes.NotFound, "file not found")
)

// errBodyTooLarge is the 413 answer for a JSON body above the limit.
func errBodyTooLarge(limit int64) error {
	return &runtime.HTTPStatusError{
		HTTPStatus: http.StatusRequestEntityTooLarge,
		Err:        status.Error(codes.ResourceExhausted, fmt.Sprintf("request body exceeds the limit of %d bytes", limit)),
	}
}
