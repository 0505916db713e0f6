package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/docjobs/docjobs/internal/auth"
)

// Route labels for requests without a route pattern. Labels are always
// patterns (/v1/jobs/{id}), never raw paths, so metric series stay bounded.
const (
	routeUnmatched = "unmatched"
	routeUnknown   = "unknown"
)

// reqInfo is filled in while a request is handled and read by the logging
// and metrics wrapper when it ends: handlers deeper down learn the route
// pattern and the account, the wrapper outside them does not.
type reqInfo struct {
	route   string
	account string
	method  string // HTTP method, or the gRPC full method name
}

type reqInfoKey struct{}

func withReqInfo(ctx context.Context, info *reqInfo) context.Context {
	return context.WithValue(ctx, reqInfoKey{}, info)
}

func infoFrom(ctx context.Context) *reqInfo {
	info, _ := ctx.Value(reqInfoKey{}).(*reqInfo)
	return info
}

func setRoute(ctx context.Context, route string) {
	if info := infoFrom(ctx); info != nil {
		info.route = route
	}
}

// requestAttrs are the log attributes of the request in ctx: never headers,
// bodies or keys.
func requestAttrs(ctx context.Context) []slog.Attr {
	info := infoFrom(ctx)
	if info == nil {
		return nil
	}
	attrs := []slog.Attr{slog.String("method", info.method)}
	if info.route != info.method { // gRPC: the full method is the route
		attrs = append(attrs, slog.String("route", info.route))
	}
	if info.account != "" {
		attrs = append(attrs, slog.String("account_id", info.account))
	}
	return attrs
}

// statusWriter records the status code for logs and metrics. Unwrap lets
// http.ResponseController reach the connection for per-handler deadlines.
type statusWriter struct {
	http.ResponseWriter
	code    int
	written bool
	// beforeAnswer, if set, runs once before the answer's head is written.
	beforeAnswer func()
}

func (w *statusWriter) answering() {
	if f := w.beforeAnswer; f != nil {
		w.beforeAnswer = nil
		f()
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.written && code >= 200 {
		w.answering()
		w.code, w.written = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.answering()
		w.code, w.written = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if !w.written {
		w.answering()
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// quietRoutes are polled by orchestrators and scrapers; they log at debug.
var quietRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// observe logs and counts every HTTP request, and turns a panic into an
// internal error with an id instead of a dropped connection.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqInfo{route: routeUnknown, method: r.Method}
		r = r.WithContext(withReqInfo(r.Context(), info))
		sw := &statusWriter{ResponseWriter: w}
		if r.ProtoMajor == 1 && r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			body := &touchedBody{ReadCloser: r.Body}
			r.Body = body
			sw.beforeAnswer = func() { boundUnread(w, body) }
		}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				st := s.internal(r.Context(), panicError{p}, stackAttr())
				if !sw.written {
					// In the shape of the route's other errors: the
					// upload's have no details (spec).
					answer := s.writeError
					if info.route == uploadRoute {
						answer = s.writeUploadError
					}
					answer(sw, r, st.Err())
				}
			}
			code := sw.code
			if !sw.written {
				code = http.StatusOK
			}
			d := time.Since(start)
			s.metrics.observeHTTP(r.Method, info.route, code, d)
			level := slog.LevelInfo
			if quietRoutes[info.route] {
				level = slog.LevelDebug
			}
			attrs := append(requestAttrs(r.Context()),
				slog.Int("status", code),
				slog.Duration("duration", d),
			)
			s.log.LogAttrs(r.Context(), level, "http request", attrs...)
		}()
		next.ServeHTTP(sw, r)
	})
}

// touchedBody records whether a handler read from the request body.
type touchedBody struct {
	io.ReadCloser
	touched atomic.Bool
}

func (b *touchedBody) Read(p []byte) (int, error) {
	b.touched.Store(true)
	return b.ReadCloser.Read(p)
}

// unreadBodyWait is how long an HTTP/1 body that the handler answered
// without reading may take to arrive, so that net/http can read it out and
// keep the connection. A client that sends its body with its request has
// it arrive within a round trip.
const unreadBodyWait = time.Second

// boundUnread bounds net/http's reading out of a request body the handler
// answered without reading (a 401 or 429, /healthz, a GET with a body). It
// reads the body to keep the connection, before writing the answer's head
// and again after the handler, with no read deadline of its own: a client
// without a key that declared a body and sent none held its connection,
// busy, for as long as it liked, and no answer came. Now a body that is not
// there within unreadBodyWait is given up on, and net/http answers and
// closes the connection. Handlers that read a body set their own deadlines.
func boundUnread(w http.ResponseWriter, body *touchedBody) {
	if body.touched.Load() {
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyWait))
}

type panicError struct{ v any }

func (p panicError) Error() string { return fmt.Sprintf("panic: %v", p.v) }

func stackAttr() slog.Attr { return slog.String("stack", string(debug.Stack())) }

// errUnauthenticated is the answer to a missing, malformed or unknown key.
var errUnauthenticated = status.Error(codes.Unauthenticated, auth.ErrUnauthenticated.Error())

// authFailure is the answer to a key Authenticate did not accept: 401 for
// a missing, malformed or unknown key; a key that could not be looked up
// (auth.ErrUnavailable) goes through clientStatus, which logs the cause
// and answers UNAVAILABLE with a Retry-After.
func (s *Server) authFailure(ctx context.Context, err error) error {
	if errors.Is(err, auth.ErrUnauthenticated) {
		return errUnauthenticated
	}
	return s.clientStatus(ctx, err).Err()
}

// withAccount is auth.WithAccount that also tells the request log.
func withAccount(ctx context.Context, account string) context.Context {
	if info := infoFrom(ctx); info != nil {
		info.account = account
	}
	return auth.WithAccount(ctx, account)
}

// authenticate puts the account of the bearer key into the request context,
// or answers 401 through answer; an account over its request rate gets 429
// through answer. A request without a valid key counts against no account.
func (s *Server) authenticate(next http.Handler, answer func(http.ResponseWriter, *http.Request, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		account, err := s.deps.Auth.Authenticate(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			answer(w, r, s.authFailure(r.Context(), err))
			return
		}
		r = r.WithContext(withAccount(r.Context(), account))
		if err := s.limitAccount(account); err != nil {
			answer(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// routed records the ServeMux pattern of a handler as its route label.
func routed(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setRoute(r.Context(), route)
		next.ServeHTTP(w, r)
	})
}
