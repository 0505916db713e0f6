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
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
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
//     cut, as a REST download is, and so is a write of a keyless answer
//     (health, reflection), which also gets a second at shutdown;
//   - the messages of a keyless client stream (reflection) are bounded
//     as a health check's, from each length prefix;
//   - the keyless streams open at once are bounded in number: server
//     reflection per process, Health.Watch per connection;
//   - what grpc-go would refuse from the headers (content type,
//     grpc-timeout, -bin metadata) is refused before the key is looked at.
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
	serverStreams bool // the server may send more than one message
}

// grpcMethodTable lists the full method names gs serves.
func grpcMethodTable(gs *grpc.Server) map[string]grpcMethod {
	methods := map[string]grpcMethod{}
	for service, info := range gs.GetServiceInfo() {
		for _, m := range info.Methods {
			methods["/"+service+"/"+m.Name] = grpcMethod{clientStreams: m.IsClientStream, serverStreams: m.IsServerStream}
		}
	}
	return methods
}

// maxKeylessStreams bounds the streams that need no key, other than
// Health.Watch, that the process holds open at once: server reflection
// (v1 and v1alpha), whose stream lasts while its client keeps sending, and
// which, while its client reads nothing, holds the requests it sent (up to
// net/http's 1 MiB receive buffer) and the answers waiting on it: a few MB
// a stream. grpcurl and the like hold one stream for an invocation, and a
// refused one harms no traffic, so the bound is a small process-wide
// number, whatever the number of connections.
const maxKeylessStreams = 16

// maxWatchesPerConn bounds the Health.Watch streams one connection holds
// open at once. A watch lasts as long as its client (that is the
// protocol), and the clients that hold one, gRPC client-side health
// checking, open one per connection (subchannel) and take the server out
// of their rotation when it is refused (grpc-go: any error but
// UNIMPLEMENTED is TRANSIENT_FAILURE). So the bound is per connection: a
// process-wide one, which a caller without a key could fill, would let it
// take the server out of every such client's rotation; per connection, it
// fills its own. The process's total is MaxConnections times this (a
// watch takes about 60 KB: three goroutines and the HTTP/2 stream).
const maxWatchesPerConn = 4

// keylessSlots counts the streams that need no key open at once
// (maxKeylessStreams, maxWatchesPerConn).
type keylessSlots struct {
	mu      sync.Mutex
	streams int            // keyless streams but Health.Watch, process-wide
	watches map[string]int // Health.Watch streams by connection; no zero entries
}

// take takes a slot for a keyless stream of fullMethod on the connection
// whose peer address is conn (two open connections to one listener never
// share one), or refuses it with RESOURCE_EXHAUSTED. release frees the
// slot; it must be called once, when the stream ended.
func (k *keylessSlots) take(fullMethod, conn string) (release func(), err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if fullMethod == grpc_health_v1.Health_Watch_FullMethodName {
		if k.watches[conn] >= maxWatchesPerConn {
			return nil, status.Errorf(codes.ResourceExhausted,
				"this connection holds %d Health.Watch streams open, the most one connection may; end one or watch over another connection", maxWatchesPerConn)
		}
		if k.watches == nil {
			k.watches = map[string]int{}
		}
		k.watches[conn]++
		return func() {
			k.mu.Lock()
			defer k.mu.Unlock()
			if k.watches[conn]--; k.watches[conn] == 0 {
				delete(k.watches, conn)
			}
		}, nil
	}
	if k.streams >= maxKeylessStreams {
		return nil, status.Errorf(codes.ResourceExhausted,
			"the server holds %d streams that need no key (server reflection) open, the most it holds at once; retry when one ends", maxKeylessStreams)
	}
	k.streams++
	return func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.streams--
	}, nil
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
	// shutdownDeadline is set once the write deadline was set by the
	// shutdown's grace (keylessAnswerWriter) rather than the idle rule.
	shutdownDeadline atomic.Bool
	// refused is why the edge stopped handing grpc-go a client stream's
	// messages (frameLimitReader), set before refusedCh is closed; nil
	// refusedCh: the edge does not check the stream's messages.
	refused   atomic.Pointer[status.Status]
	refusedCh chan struct{}
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
	keyed := needsKey(fullMethod)
	call := &grpcCall{}
	ctx := withReqInfo(r.Context(), &reqInfo{route: fullMethod, method: fullMethod})
	ctx = context.WithValue(ctx, grpcCallKey{}, call)
	refuse := func(ctx context.Context, err error) {
		writeTrailersOnly(w, r, status.Convert(err))
		s.recordGRPC(ctx, fullMethod, start, err)
	}
	// What grpc-go would refuse from the headers alone is refused before
	// the key is looked at, so that the answer does not depend on the key
	// and nothing is charged to an account.
	if !grpcContentType(r.Header.Get("Content-Type")) {
		// grpc-go's own answer, 415 and no gRPC status: a caller that
		// does not speak gRPC (gRPC-Web, say) understands it best.
		aw := &statusWriter{ResponseWriter: w}
		s.grpc.ServeHTTP(aw, r)
		s.recordGRPC(ctx, fullMethod, start, plainHTTPStatus(aw.code), slog.Int("http_status", aw.code))
		return
	}
	timeout, hasTimeout, err := checkGRPCHeaders(r.Header)
	if err != nil {
		refuse(ctx, err)
		return
	}
	if !keyed && (method.clientStreams || method.serverStreams) {
		// A stream that needs no key can last as long as its client: their
		// number is bounded, from before its first message is read until
		// grpc-go is done with it, however it ended.
		release, err := s.keyless.take(fullMethod, r.RemoteAddr)
		if err != nil {
			refuse(ctx, err)
			return
		}
		defer release()
		// Nor does such a stream keep its connection from being closed
		// to make room at the connection cap (connlimit.go).
		defer holdKeyless(r.Context())()
	}
	// The client's deadline, as grpc-go counts it (from when the headers
	// arrived), for what the edge does before grpc-go has the call: the
	// wait for the request message, and telling a deadline from a cancel.
	var deadline time.Time
	ended := ctx // ends with the call, and at its deadline
	if hasTimeout {
		deadline = start.Add(timeout)
		var cancel context.CancelFunc
		ended, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	if keyed {
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
	switch {
	case !method.clientStreams:
		// A keyless call waiting for its message (a health check that
		// sends none) does not keep its connection from being closed to
		// make room either; once the message is here it is answered.
		held := func() {}
		if !keyed && !method.serverStreams {
			held = holdKeyless(r.Context())
		}
		body, err := s.readGRPCRequest(w, r, ended, deadline)
		held()
		if err != nil {
			refuse(ctx, err)
			return
		}
		r.Body = body
	case !keyed:
		// grpc-go reads the messages of a client stream itself, up to its
		// 4 MiB receive limit; a stream that needs no key (reflection) gets
		// the keyless bound on each message, from its length prefix.
		call.refusedCh = make(chan struct{})
		r.Body = &frameLimitReader{r: r.Body, limit: grpcMaxKeylessRequestBytes, call: call,
			encoding: r.Header.Get("Grpc-Encoding"), closed: make(chan struct{})}
	}
	var aw grpcAnswerWriter
	if keyed {
		aw = &idleAnswerWriter{statusWriter: statusWriter{ResponseWriter: w}, call: call,
			idle: newIdleDeadline(http.NewResponseController(w).SetWriteDeadline, s.cfg.IOIdleTimeout)}
	} else {
		kw := &keylessAnswerWriter{statusWriter: statusWriter{ResponseWriter: w}, call: call,
			set: http.NewResponseController(w).SetWriteDeadline, timeout: s.cfg.IOIdleTimeout}
		defer kw.endAtShutdown(s.stopping)()
		aw = kw
	}
	s.grpc.ServeHTTP(aw, r)
	if call.answerCut() { // a unary answer, which the interceptors logged as sent
		s.logAnswerCut(ctx, call)
	}
	if call.recorded.Load() {
		return
	}
	// grpc-go answered before any interceptor ran (a message it could not
	// decompress, a cardinality violation) or the client left first.
	err = statusFromTrailers(w.Header())
	var attrs []slog.Attr
	if code := aw.httpStatus(); err == nil && code != 0 && code != http.StatusOK {
		err, attrs = plainHTTPStatus(code), []slog.Attr{slog.Int("http_status", code)}
	}
	if err == nil && r.Context().Err() != nil {
		err = endedStatus(ended).Err()
	}
	s.recordGRPC(ctx, fullMethod, start, err, attrs...)
}

// grpcContentType reports whether grpc-go takes a call of content type ct:
// application/grpc, alone or followed by + or ; (grpcutil.ContentSubtype).
func grpcContentType(ct string) bool {
	rest, ok := strings.CutPrefix(ct, "application/grpc")
	return ok && (rest == "" || rest[0] == '+' || rest[0] == ';')
}

// checkGRPCHeaders refuses what grpc-go answers with a plain HTTP 400
// (counted as nothing a client can tell from a server fault): a malformed
// grpc-timeout, or a -bin header that is not base64. It returns the
// call's timeout, if it has one.
func checkGRPCHeaders(h http.Header) (timeout time.Duration, ok bool, err error) {
	if v := h.Get("Grpc-Timeout"); v != "" {
		if timeout, ok = parseGRPCTimeout(v); !ok {
			return 0, false, status.Errorf(codes.InvalidArgument, "malformed grpc-timeout %q", v)
		}
	}
	for k, vv := range h {
		k = strings.ToLower(k)
		// grpc-go skips the one reserved -bin header without decoding it.
		if !strings.HasSuffix(k, "-bin") || k == "grpc-status-details-bin" {
			continue
		}
		for _, v := range vv {
			enc := base64.StdEncoding
			if len(v)%4 != 0 {
				enc = base64.RawStdEncoding
			}
			if _, derr := enc.DecodeString(v); derr != nil {
				return 0, false, status.Errorf(codes.InvalidArgument, "malformed binary metadata in header %q", k)
			}
		}
	}
	return timeout, ok, nil
}

// parseGRPCTimeout reads a grpc-timeout value as grpc-go does: at most 8
// digits and a unit (H, M, S, m, u, n).
func parseGRPCTimeout(v string) (time.Duration, bool) {
	if len(v) < 2 || len(v) > 9 {
		return 0, false
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, false
	}
	n, err := strconv.ParseUint(v[:len(v)-1], 10, 64)
	if err != nil {
		return 0, false
	}
	// 99,999,999 hours would overflow a Duration: grpc-go clamps it.
	if unit == time.Hour && n > math.MaxInt64/uint64(time.Hour) {
		return math.MaxInt64, true
	}
	return unit * time.Duration(n), true
}

// plainHTTPStatus is what a gRPC client makes of an answer that carries an
// HTTP status and no gRPC status (the protocol's HTTP to gRPC mapping).
func plainHTTPStatus(code int) error {
	c := codes.Unknown
	switch code {
	case http.StatusBadRequest:
		c = codes.Internal
	case http.StatusUnauthorized:
		c = codes.Unauthenticated
	case http.StatusForbidden:
		c = codes.PermissionDenied
	case http.StatusNotFound:
		c = codes.Unimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		c = codes.Unavailable
	}
	return status.Errorf(c, "HTTP status %d", code)
}

// readGRPCRequest reads the one request message of a call, then the end of
// the request stream, within JSONReadTimeout and before the call's
// deadline (zero: none), and returns a body grpc-go reads the same bytes
// from. A message above grpcMaxRequestBytes (grpcMaxKeylessRequestBytes
// for a method that needs no key) is refused from its length prefix, before
// it is read. ended is the call's context with its deadline.
func (s *Server) readGRPCRequest(w http.ResponseWriter, r *http.Request, ended context.Context, deadline time.Time) (io.ReadCloser, error) {
	limit := uint32(grpcMaxRequestBytes)
	if !needsKey(r.URL.Path) {
		limit = grpcMaxKeylessRequestBytes
	}
	rc := http.NewResponseController(w)
	readBy := time.Now().Add(s.cfg.JSONReadTimeout)
	if !deadline.IsZero() && deadline.Before(readBy) {
		readBy = deadline
	}
	_ = rc.SetReadDeadline(readBy)
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
		case errors.Is(err, os.ErrDeadlineExceeded) && !deadline.IsZero() && !time.Now().Before(deadline):
			return status.FromContextError(context.DeadlineExceeded).Err()
		case errors.Is(err, os.ErrDeadlineExceeded):
			return status.Errorf(codes.DeadlineExceeded, "the request message did not arrive within %s", s.cfg.JSONReadTimeout)
		case r.Context().Err() != nil: // the client reset the stream, maybe at its deadline
			return endedStatus(ended).Err()
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
	if err := checkFrameHeader(head, limit, r.Header.Get("Grpc-Encoding")); err != nil {
		return nil, err.Err()
	}
	size := binary.BigEndian.Uint32(head[1:])
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
// request's copy is not kept while the call runs. grpc-go closes it while
// its reader may still be reading it (a call it answered before reading
// the whole message).
type drainingBody struct {
	mu sync.Mutex
	b  []byte
}

func (d *drainingBody) Read(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.b) == 0 {
		d.b = nil
		return 0, io.EOF
	}
	n := copy(p, d.b)
	d.b = d.b[n:]
	return n, nil
}

func (d *drainingBody) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.b = nil
	return nil
}

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

// grpcAnswerWriter is the writer grpc-go answers a call through.
type grpcAnswerWriter interface {
	http.ResponseWriter
	http.Flusher
	// httpStatus is the HTTP status written (0: none yet).
	httpStatus() int
}

// httpStatus is the HTTP status written (0: none yet): grpc-go answers
// some calls with a plain HTTP status and no gRPC status.
func (w *statusWriter) httpStatus() int { return w.code }

// idleAnswerWriter gives a gRPC answer REST's download rule: a write that
// moves no byte for IOIdleTimeout resets the stream. A long message is
// written in pieces, each of which moves the deadline, so that a slow
// client that keeps reading is not cut.
type idleAnswerWriter struct {
	statusWriter
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
		k, err := w.statusWriter.Write(p[:min(len(p), idleWritePiece)])
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
	w.statusWriter.Flush()
}

// keylessShutdownGrace is how long, once the server shuts down, a write of
// the answer of a call that needs no key may take: a client that reads
// gets its NOT_SERVING or UNAVAILABLE at once, and one that does not holds
// the shutdown no longer than this.
const keylessShutdownGrace = time.Second

// keylessAnswerWriter gives the answer of a call that needs no key (health,
// reflection) the idle rule of the others: a write or flush that moves
// nothing for IOIdleTimeout resets the stream. The deadline is set only
// while a write or flush is under way and cleared when it returns, because
// a deadline set on an HTTP/2 stream fires even when no write is pending,
// and a Health.Watch waits minutes between two answers. Without it, a
// reflection answer nobody read held its request, its answer and its
// goroutines until the client left, and the shutdown for ShutdownTimeout.
type keylessAnswerWriter struct {
	statusWriter
	call    *grpcCall
	set     func(time.Time) error // the stream's write deadline
	timeout time.Duration

	mu       sync.Mutex
	writing  bool
	stopping bool // the server shuts down: writes get keylessShutdownGrace
}

// arm sets the write deadline to dl; w.mu is held.
func (w *keylessAnswerWriter) arm(dl time.Time) {
	if w.stopping {
		w.call.shutdownDeadline.Store(true)
	}
	w.call.idleDeadline.Store(dl.UnixNano())
	_ = w.set(dl) // ErrNotSupported: the server's own timeouts still apply
}

// guard runs one write under the deadline.
func (w *keylessAnswerWriter) guard(write func()) {
	w.mu.Lock()
	w.writing = true
	if !w.call.answerCut() {
		d := w.timeout
		if w.stopping {
			d = min(d, keylessShutdownGrace)
		}
		w.arm(time.Now().Add(d))
	}
	w.mu.Unlock()
	write()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writing = false
	if !w.call.answerCut() {
		w.call.idleDeadline.Store(0)
		_ = w.set(time.Time{})
	}
}

func (w *keylessAnswerWriter) Write(p []byte) (int, error) {
	var n int
	for len(p) > 0 {
		var k int
		var err error
		w.guard(func() { k, err = w.statusWriter.Write(p[:min(len(p), idleWritePiece)]) })
		n += k
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

func (w *keylessAnswerWriter) Flush() { w.guard(w.statusWriter.Flush) }

// endAtShutdown gives the writes of the answer keylessShutdownGrace once
// stopping ends, a write under way included, so that a keyless stream
// whose client does not read does not hold the shutdown. The returned stop
// must be called before the handler returns.
func (w *keylessAnswerWriter) endAtShutdown(stopping context.Context) (stop func()) {
	fired := make(chan struct{})
	stopAfter := context.AfterFunc(stopping, func() {
		defer close(fired)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.stopping = true
		if !w.writing || w.call.answerCut() {
			return
		}
		if dl := time.Now().Add(keylessShutdownGrace); dl.UnixNano() < w.call.idleDeadline.Load() {
			w.arm(dl)
		}
	})
	return func() {
		if !stopAfter() {
			<-fired // w must not be used once the handler returned
		}
	}
}

// errFrameRefused ends the request stream grpc-go reads once the edge
// refused a message.
var errFrameRefused = errors.New("request message refused by the edge")

// frameLimitReader hands grpc-go the request stream of a client-streaming
// call, checking each message's 5-byte header before passing on a byte of
// it: a length above limit, or a flag grpc-go would answer INTERNAL,
// stops the stream. The refusal goes to call, whose stream interceptor
// (idleRecvStream) answers it; the read that found it waits until grpc-go
// closes the body, because grpc-go answers a read error itself, with
// UNAVAILABLE, before any handler or interceptor sees it.
type frameLimitReader struct {
	r        io.ReadCloser
	limit    uint32
	encoding string // the call's grpc-encoding
	call     *grpcCall
	closed   chan struct{}
	once     sync.Once

	head    [grpcFrameHeader]byte
	headIn  int    // bytes of head read
	headOut int    // bytes of head handed on
	left    uint32 // bytes of the current message not handed on yet
	err     error
}

func (f *frameLimitReader) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for f.headIn < grpcFrameHeader {
		n, err := f.r.Read(f.head[f.headIn:])
		f.headIn += n
		if f.headIn == grpcFrameHeader {
			break
		}
		if err != nil {
			return 0, err // grpc-go reads an end within a header as it would
		}
	}
	if f.headOut == 0 {
		if st := checkFrameHeader(f.head[:], f.limit, f.encoding); st != nil {
			f.call.refused.Store(st)
			close(f.call.refusedCh)
			f.err = errFrameRefused
			<-f.closed
			return 0, f.err
		}
		f.left = binary.BigEndian.Uint32(f.head[1:])
	}
	if f.headOut < grpcFrameHeader {
		n := copy(p, f.head[f.headOut:])
		f.headOut += n
		f.nextIfDone()
		return n, nil
	}
	n, err := f.r.Read(p[:min(uint32(len(p)), f.left)])
	f.left -= uint32(n)
	f.nextIfDone()
	return n, err
}

// nextIfDone starts on the next header once a message was handed on.
func (f *frameLimitReader) nextIfDone() {
	if f.headOut == grpcFrameHeader && f.left == 0 {
		f.headIn, f.headOut = 0, 0
	}
}

func (f *frameLimitReader) Close() error {
	f.once.Do(func() { close(f.closed) })
	return f.r.Close()
}

// checkFrameHeader refuses a request message from its header: a length
// above limit, or a flag grpc-go answers INTERNAL (a server fault, to
// alerting), although the client broke the protocol: compressed with no
// grpc-encoding, or a flag that is neither 0 nor 1. A message compressed
// with an encoding is grpc-go's to answer (UNIMPLEMENTED: it has no
// decompressor).
func checkFrameHeader(head []byte, limit uint32, encoding string) *status.Status {
	if size := binary.BigEndian.Uint32(head[1:]); size > limit {
		return status.Newf(codes.ResourceExhausted, "request message exceeds the limit of %d bytes", limit)
	}
	switch head[0] {
	case 0:
	case 1:
		if encoding == "" || encoding == "identity" {
			return status.New(codes.InvalidArgument, "the request message is marked compressed, but the call names no grpc-encoding")
		}
	default:
		return status.Newf(codes.InvalidArgument, "the request message has an unknown flag %d", head[0])
	}
	return nil
}

// answerCutStatus is what an answer cut by the idle rule, or by the
// shutdown's grace, is logged and counted as (the client, which stopped
// reading, sees the stream reset).
func (s *Server) answerCutStatus(call *grpcCall) *status.Status {
	if call.shutdownDeadline.Load() {
		return status.Newf(codes.Unavailable, "the server is shutting down and the client read nothing of the answer for %s", keylessShutdownGrace)
	}
	return status.Newf(codes.DeadlineExceeded, "the client read nothing of the answer for %s", s.cfg.IOIdleTimeout)
}

// logAnswerCut logs, once, an answer cut by the idle rule.
func (s *Server) logAnswerCut(ctx context.Context, call *grpcCall) {
	if call.cutLogged.Swap(true) {
		return
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "grpc answer cut", append(requestAttrs(ctx),
		slog.String("error", s.answerCutStatus(call).Message()))...)
}
