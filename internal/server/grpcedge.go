package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// This file is what the edge does with a gRPC call before grpc-go sees it.
//
// grpc-go reads and decodes a request message before any interceptor runs,
// and sets no limit on how long the message may take to arrive. Left to
// it, a caller without a key could hold a stream open for ever and make the
// server decode 4 MiB per call at no cost to any account, and a message
// above the receive limit would be refused with grpc-go's wording, before
// any interceptor could log or count it. So, as the REST side does:
//
//   - a JobService call is authenticated and counted against its
//     account's request rate from its headers, before one byte of its
//     message is read; a refusal is a trailers-only answer with the code,
//     message and details the interceptors used to give;
//   - the request of a method whose client sends one message (every method
//     but the client-streaming ones) is read here, whole, within
//     JSONReadTimeout, and refused past grpcMaxRequestBytes, then handed
//     to grpc-go from memory;
//   - the answer of a JobService call moving no byte for IOIdleTimeout is
//     cut, as a REST download is.
//
// grpc.InTapHandle would see a call's method and metadata before its
// stream is created, but grpc-go runs tap handles only in its own HTTP/2
// transport, not under ServeHTTP, which is how this server serves gRPC
// (one listener and one graceful shutdown for both transports).

// grpcMaxRequestBytes is the largest request message the gRPC side takes:
// grpc-go's default receive limit, set explicitly so that the edge's own
// check and grpc-go's agree. It equals DefaultMaxJSONBodyBytes, so both
// transports take requests of the same size.
const grpcMaxRequestBytes = 4 << 20

// grpcMaxKeylessRequestBytes bounds the request of a method that needs no
// key (health checks), which no account's rate limit covers: its message
// is a service name.
const grpcMaxKeylessRequestBytes = 64 << 10

// GRPCMaxAnswerBytes is the largest gRPC answer every client can receive:
// grpc-go's (and most other implementations') default receive limit. An
// answer built whole, such as GetJobResult's, is bounded by it
// (api.Config.MaxResultMessageBytes), so that a default client gets the
// service's message pointing to the streamed REST result rather than its
// library's "received message larger than max".
const GRPCMaxAnswerBytes = 4 << 20

// grpcFrameHeader is the length-prefixed message framing of gRPC over
// HTTP/2: one flag byte (compressed or not), then a 4-byte big-endian
// length.
const grpcFrameHeader = 5

// grpcMethod is what the edge needs to know of a served method.
type grpcMethod struct {
	clientStreams bool // the client may send more than one message
}

// grpcMethodTable lists the full method names gs serves.
func grpcMethodTable(gs *grpc.Server) map[string]grpcMethod {
	methods := map[string]grpcMethod{}
	for service, info := range gs.GetServiceInfo() {
		for _, m := range info.Methods {
			methods["/"+service+"/"+m.Name] = grpcMethod{clientStreams: m.IsClientStream}
		}
	}
	return methods
}

// grpcCall is the edge's record of one gRPC call, which the interceptors
// find in their context.
type grpcCall struct {
	// authenticated reports that the edge authenticated the call and
	// counted it against its account's rate; set before grpc-go sees it.
	authenticated bool
	// recorded is set once the interceptors logged and counted the call.
	recorded atomic.Bool
	// idleDeadline is the write deadline the edge last set on the answer,
	// in Unix nanoseconds (0: none).
	idleDeadline atomic.Int64
	// cutLogged is set once an answer cut by the idle rule was logged.
	cutLogged atomic.Bool
}

// answerCut reports whether the answer's idle write deadline has passed,
// which resets the HTTP/2 stream.
func (c *grpcCall) answerCut() bool {
	d := c.idleDeadline.Load()
	return d != 0 && time.Now().UnixNano() >= d
}

type grpcCallKey struct{}

func callFrom(ctx context.Context) *grpcCall {
	c, _ := ctx.Value(grpcCallKey{}).(*grpcCall)
	return c
}

// serveGRPC serves one gRPC call (an HTTP/2 request of content type
// application/grpc).
func (s *Server) serveGRPC(w http.ResponseWriter, r *http.Request) {
	method, known := s.grpcMethods[r.URL.Path]
	if !known || r.Method != http.MethodPost {
		// grpc-go answers UNIMPLEMENTED (or 405) without reading the body.
		// Unknown names are not counted: they would be unbounded labels.
		s.grpc.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	fullMethod := r.URL.Path
	call := &grpcCall{}
	ctx := withReqInfo(r.Context(), &reqInfo{route: fullMethod, method: fullMethod})
	ctx = context.WithValue(ctx, grpcCallKey{}, call)
	refuse := func(ctx context.Context, err error) {
		writeTrailersOnly(w, r, status.Convert(err))
		s.recordGRPC(ctx, fullMethod, start, err)
	}
	if needsKey(fullMethod) {
		// The header grpc-go would hand the interceptors as metadata.
		actx, err := s.authenticateKey(ctx, r.Header.Get("Authorization"))
		if err != nil {
			refuse(ctx, err)
			return
		}
		ctx = actx
		call.authenticated = true
	}
	r = r.WithContext(ctx)
	if !method.clientStreams {
		body, err := s.readGRPCRequest(w, r)
		if err != nil {
			refuse(ctx, err)
			return
		}
		r.Body = body
	}
	if needsKey(fullMethod) {
		// Health.Watch and reflection are left out: a watcher legitimately
		// waits minutes between two answers, and a deadline once set on an
		// HTTP/2 stream fires even when no write is pending.
		w = &idleAnswerWriter{ResponseWriter: w, call: call,
			idle: newIdleDeadline(http.NewResponseController(w).SetWriteDeadline, s.cfg.IOIdleTimeout)}
	}
	s.grpc.ServeHTTP(w, r)
	if call.answerCut() { // a unary answer, which the interceptors logged as sent
		s.logAnswerCut(ctx, call)
	}
	if call.recorded.Load() {
		return
	}
	// grpc-go answered before any interceptor ran (a message it could not
	// decompress, a cardinality violation) or the client left first.
	err := statusFromTrailers(w.Header())
	if err == nil && r.Context().Err() != nil {
		err = status.FromContextError(r.Context().Err()).Err()
	}
	s.recordGRPC(ctx, fullMethod, start, err)
}

// readGRPCRequest reads the one request message of a call, then the end of
// the request stream, within JSONReadTimeout, and returns a body grpc-go
// reads the same bytes from. A message above grpcMaxRequestBytes
// (grpcMaxKeylessRequestBytes for a method that needs no key) is refused
// from its length prefix, before it is read.
func (s *Server) readGRPCRequest(w http.ResponseWriter, r *http.Request) (io.ReadCloser, error) {
	limit := uint32(grpcMaxRequestBytes)
	if !needsKey(r.URL.Path) {
		limit = grpcMaxKeylessRequestBytes
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.JSONReadTimeout))
	// A request that has not arrived when the server starts shutting down
	// is not waited for: it would hold the shutdown for JSONReadTimeout,
	// as long as ShutdownTimeout by default. Nothing of it ran yet, so the
	// client may retry it elsewhere.
	fired := make(chan struct{})
	stop := context.AfterFunc(s.stopping, func() {
		defer close(fired)
		_ = rc.SetReadDeadline(time.Now())
	})
	defer func() {
		if stop() {
			_ = rc.SetReadDeadline(time.Time{}) // the request is read; the answer may take its time
		} else {
			<-fired // w must not be used once the handler returned
		}
	}()

	var buf bytes.Buffer
	readErr := func(err error) error {
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded) && s.stopping.Err() != nil:
			return errShuttingDown
		case errors.Is(err, os.ErrDeadlineExceeded):
			return status.Errorf(codes.DeadlineExceeded, "the request message did not arrive within %s", s.cfg.JSONReadTimeout)
		case r.Context().Err() != nil: // the client reset the stream
			return status.FromContextError(r.Context().Err()).Err()
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			return status.Error(codes.InvalidArgument, "the request message ended before its length")
		}
		return status.Error(codes.InvalidArgument, "reading the request message failed")
	}
	head := make([]byte, grpcFrameHeader)
	if n, err := io.ReadFull(r.Body, head); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			// No message at all: grpc-go answers that as it always has.
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		return nil, readErr(err)
	}
	size := binary.BigEndian.Uint32(head[1:])
	if size > limit {
		return nil, status.Errorf(codes.ResourceExhausted, "request message exceeds the limit of %d bytes", limit)
	}
	buf.Grow(grpcFrameHeader + min(int(size), 64<<10)) // grows as bytes arrive, not as the prefix claims
	buf.Write(head)
	if _, err := io.CopyN(&buf, r.Body, int64(size)); err != nil {
		return nil, readErr(err)
	}
	var one [1]byte
	switch n, err := io.ReadFull(r.Body, one[:]); {
	case n > 0:
		return nil, status.Error(codes.InvalidArgument, "the method takes one request message; another followed it")
	case !errors.Is(err, io.EOF):
		return nil, readErr(err)
	}
	return &drainingBody{b: buf.Bytes()}, nil
}

// drainingBody hands out b once and lets it go at the end, so that the
// request's copy is not kept while the call runs.
type drainingBody struct{ b []byte }

func (d *drainingBody) Read(p []byte) (int, error) {
	if len(d.b) == 0 {
		d.b = nil
		return 0, io.EOF
	}
	n := copy(p, d.b)
	d.b = d.b[n:]
	return n, nil
}

func (d *drainingBody) Close() error { d.b = nil; return nil }

// writeTrailersOnly answers a gRPC call with st and no message: the HTTP/2
// response is one HEADERS frame that carries the status, as grpc-go's own
// transport answers a call refused before its handler.
func writeTrailersOnly(w http.ResponseWriter, r *http.Request, st *status.Status) {
	h := w.Header()
	h.Set("Content-Type", r.Header.Get("Content-Type"))
	h.Set("Grpc-Status", strconv.Itoa(int(st.Code())))
	if m := st.Message(); m != "" {
		h.Set("Grpc-Message", encodeGRPCMessage(m))
	}
	if p := st.Proto(); len(p.GetDetails()) > 0 {
		if b, err := proto.Marshal(p); err == nil {
			h.Set("Grpc-Status-Details-Bin", base64.RawStdEncoding.EncodeToString(b))
		}
	}
	w.WriteHeader(http.StatusOK)
}

// encodeGRPCMessage percent-encodes what the gRPC over HTTP/2 protocol
// does not allow in grpc-message: bytes outside printable ASCII, and %.
func encodeGRPCMessage(msg string) string {
	var b []byte
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c >= ' ' && c <= '~' && c != '%' {
			b = append(b, c)
			continue
		}
		b = fmt.Appendf(b, "%%%02X", c)
	}
	return string(b)
}

// statusFromTrailers is the status grpc-go wrote into h (nil for OK or
// none).
func statusFromTrailers(h http.Header) error {
	v := h.Get("Grpc-Status")
	if v == "" {
		v = h.Get(http.TrailerPrefix + "Grpc-Status")
	}
	code, err := strconv.Atoi(v)
	if err != nil || code == int(codes.OK) {
		return nil
	}
	return status.Error(codes.Code(code), "")
}

// idleAnswerWriter gives a gRPC answer REST's download rule: a write that
// moves no byte for IOIdleTimeout resets the stream. A long message is
// written in pieces, each of which moves the deadline, so that a slow
// client that keeps reading is not cut.
type idleAnswerWriter struct {
	http.ResponseWriter
	call *grpcCall
	idle *idleDeadline
}

// idleWritePiece is the most one write moves before the deadline is moved
// again: io.Copy's buffer, as on REST downloads.
const idleWritePiece = 32 << 10

func (w *idleAnswerWriter) extend() {
	// A deadline that passed has reset the stream; grpc-go may still
	// write and flush into it, which must not make the cut look undone.
	if w.call.answerCut() {
		return
	}
	if w.idle.extend() {
		w.call.idleDeadline.Store(w.idle.last.Add(w.idle.timeout).UnixNano())
	}
}

func (w *idleAnswerWriter) Write(p []byte) (int, error) {
	var n int
	for len(p) > 0 {
		w.extend()
		k, err := w.ResponseWriter.Write(p[:min(len(p), idleWritePiece)])
		n += k
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

func (w *idleAnswerWriter) Flush() {
	w.extend()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *idleAnswerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// answerIdleStatus is what an answer cut by the idle rule is logged and
// counted as (the client, which stopped reading, sees the stream reset).
func (s *Server) answerIdleStatus() *status.Status {
	return status.Newf(codes.DeadlineExceeded, "the client read nothing of the answer for %s", s.cfg.IOIdleTimeout)
}

// logAnswerCut logs, once, an answer cut by the idle rule.
func (s *Server) logAnswerCut(ctx context.Context, call *grpcCall) {
	if call.cutLogged.Swap(true) {
		return
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "grpc answer cut", append(requestAttrs(ctx),
		slog.String("error", s.answerIdleStatus().Message()))...)
}
