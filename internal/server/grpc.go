package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// newGRPC builds the gRPC server. Interceptors run outermost first: observe
// (logs, metrics), recover (a panic becomes Internal with an id), auth, the
// answer to a request message that did not decode (codec.go), and error
// mapping, so what observe counts is what the client got. The edge
// (grpcedge.go) authenticates a call before grpc-go reads its message; the
// auth interceptors then only pass the account on.
func (s *Server) newGRPC(svc docjobsv1.JobServiceServer) *grpc.Server {
	s.codec = newRequestCodec()
	gs := grpc.NewServer(
		grpc.ForceServerCodecV2(s.codec),
		grpc.MaxRecvMsgSize(grpcMaxRequestBytes),
		grpc.ChainUnaryInterceptor(s.observeUnary, s.recoverUnary, s.authUnary, s.decodedUnary, s.warnUnary, s.mapErrorsUnary),
		// UploadFile, the one streaming method, gets the same treatment.
		grpc.ChainStreamInterceptor(s.observeStream, s.recoverStream, s.authStream, s.mapErrorsStream, s.decodedStream, s.idleStream),
	)
	docjobsv1.RegisterJobServiceServer(gs, svc)
	// The standard health service (for gRPC probes and load balancers) and
	// server reflection (for grpcurl and the like); neither needs a key.
	grpc_health_v1.RegisterHealthServer(gs, healthServer{s: s})
	reflection.Register(gs)
	return gs
}

// needsKey reports whether a method is one of the API's, which need an API
// key; the health and reflection services do not.
func needsKey(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, jobServicePrefix)
}

// healthWatchInterval is how often Health.Watch checks readiness.
const healthWatchInterval = 5 * time.Second

// healthServer answers grpc.health.v1.Health with the check /readyz makes:
// SERVING when /readyz would answer ok. It knows the whole server ("") and
// docjobs.v1.JobService.
type healthServer struct {
	grpc_health_v1.UnimplementedHealthServer
	s *Server
}

func (h healthServer) known(service string) bool {
	return service == "" || service == docjobsv1.JobService_ServiceDesc.ServiceName
}

func (h healthServer) status(ctx context.Context) grpc_health_v1.HealthCheckResponse_ServingStatus {
	if h.s.checkReady(ctx) != nil {
		return grpc_health_v1.HealthCheckResponse_NOT_SERVING
	}
	return grpc_health_v1.HealthCheckResponse_SERVING
}

func (h healthServer) Check(ctx context.Context, req *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	if !h.known(req.GetService()) {
		return nil, status.Error(codes.NotFound, "unknown service")
	}
	return &grpc_health_v1.HealthCheckResponse{Status: h.status(ctx)}, nil
}

// Watch sends the status at once and then whenever it changes, checking
// every healthWatchInterval; an unknown service is SERVICE_UNKNOWN, as the
// health protocol asks. When the server shuts down it sends NOT_SERVING and
// ends with UNAVAILABLE: a watcher learns at once that the process drains,
// and an open watch does not hold the shutdown for ShutdownTimeout.
//
// Only whether the service is known is kept, not the request: a watch may
// last as long as its client, and the name it asks for can be 64 KiB.
func (h healthServer) Watch(req *grpc_health_v1.HealthCheckRequest, stream grpc.ServerStreamingServer[grpc_health_v1.HealthCheckResponse]) error {
	known := h.known(req.GetService())
	ctx := stream.Context()
	last := grpc_health_v1.HealthCheckResponse_ServingStatus(-1)
	tick := time.NewTicker(healthWatchInterval)
	defer tick.Stop()
	for {
		st := grpc_health_v1.HealthCheckResponse_SERVICE_UNKNOWN
		if known {
			st = h.status(ctx)
		}
		if st != last {
			if err := stream.Send(&grpc_health_v1.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-h.s.stopping.Done():
			if last != grpc_health_v1.HealthCheckResponse_NOT_SERVING && last != grpc_health_v1.HealthCheckResponse_SERVICE_UNKNOWN {
				_ = stream.Send(&grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_NOT_SERVING})
			}
			return errShuttingDown
		case <-tick.C:
		}
	}
}

// errShuttingDown ends the streams that would otherwise last until their
// client leaves.
var errShuttingDown = status.Error(codes.Unavailable, "the server is shutting down")

func (s *Server) observeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	ctx = observedCall(ctx, info.FullMethod)
	resp, err := handler(ctx, req)
	s.recordGRPC(ctx, info.FullMethod, start, err)
	return resp, err
}

func (s *Server) observeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	ctx := observedCall(ss.Context(), info.FullMethod)
	err := handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	s.recordGRPC(ctx, info.FullMethod, start, err)
	return err
}

// observedCall returns ctx with the request info the log line reads (the
// edge's, which knows the account, when the edge saw the call) and tells
// the edge that the interceptors count the call.
func observedCall(ctx context.Context, fullMethod string) context.Context {
	if call := callFrom(ctx); call != nil {
		call.recorded.Store(true)
	}
	if infoFrom(ctx) != nil {
		return ctx
	}
	return withReqInfo(ctx, &reqInfo{route: fullMethod, method: fullMethod})
}

// recordGRPC counts, times and logs one finished call, unary or streaming.
// extra attributes go to the log line only.
func (s *Server) recordGRPC(ctx context.Context, method string, start time.Time, err error, extra ...slog.Attr) {
	code := status.Code(err)
	d := time.Since(start)
	s.metrics.grpcRequests.WithLabelValues(method, code.String()).Inc()
	s.metrics.grpcDuration.WithLabelValues(method).Observe(d.Seconds())
	attrs := append(requestAttrs(ctx), slog.String("code", code.String()), slog.Duration("duration", d))
	attrs = append(attrs, extra...)
	s.log.LogAttrs(ctx, slog.LevelInfo, "grpc request", attrs...)
}

func (s *Server) recoverStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = s.internal(ss.Context(), panicError{p}, stackAttr()).Err()
		}
	}()
	return handler(srv, ss)
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !needsKey(info.FullMethod) || edgeAuthenticated(ss.Context()) {
		return handler(srv, ss)
	}
	ctx, err := s.authenticateGRPC(ss.Context())
	if err != nil {
		return err
	}
	return handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
}

// mapErrorsStream also names why a stream's send failed: grpc-go's
// ServeHTTP transport fails every send after the HTTP/2 stream ended with
// UNAVAILABLE "transport is closing", a code alerting reads as a server
// fault, whether the client cancelled, its deadline passed or the edge cut
// an answer nobody read.
//
// A handler can also return nil after its last Send while the stream is
// already gone: under ServeHTTP a Send queues the message and returns
// before the client has it, so a download whose client's deadline passed
// meanwhile ended nil. The call did not end OK for the client, whose
// status it is that is recorded.
func (s *Server) mapErrorsStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	err := handler(srv, ss)
	ctx := ss.Context()
	if err == nil {
		if ctx.Err() != nil {
			return endedStatus(ctx).Err()
		}
		return nil
	}
	if status.Code(err) == codes.Unavailable && ctx.Err() != nil {
		if call := callFrom(ctx); call != nil && call.answerCut() {
			s.logAnswerCut(ctx, call)
			return s.answerCutStatus(call).Err()
		}
		return endedStatus(ctx).Err()
	}
	return s.clientStatus(ctx, err).Err()
}

// deadlineSlack is how close to a call's deadline a cancellation counts as
// the deadline passing (endedStatus).
const deadlineSlack = time.Second

// endedStatus is the status of a call whose context ended. When a client's
// deadline passes, the client resets the stream, and the server's copy of
// the deadline (grpc-timeout, counted from when the headers arrived, so a
// little later) passes at about the same time: a reset that arrives first
// still means DEADLINE_EXCEEDED, which is what the client saw.
func endedStatus(ctx context.Context) *status.Status {
	err := ctx.Err()
	if dl, ok := ctx.Deadline(); ok && errors.Is(err, context.Canceled) && time.Until(dl) < deadlineSlack {
		err = context.DeadlineExceeded
	}
	return status.FromContextError(err)
}

// idleStream gives client streams REST's idle rule: a receive that waits
// more than IOIdleTimeout for the client's next message ends the stream
// with DEADLINE_EXCEEDED (the service then removes what it stored of a
// partial upload). A stream that keeps moving may take as long as it needs.
// Reflection streams, which need no key, get the rule too, and end at
// shutdown instead of holding it; an upload in progress is let finish.
func (s *Server) idleStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !info.IsClientStream {
		return handler(srv, ss)
	}
	idle := &idleRecvStream{ServerStream: ss, timeout: s.cfg.IOIdleTimeout, idle: s.idleStatus(), call: callFrom(ss.Context())}
	if !needsKey(info.FullMethod) {
		idle.idle, idle.stop = status.Newf(codes.DeadlineExceeded, "the stream sent nothing for %s", s.cfg.IOIdleTimeout), s.stopping.Done()
	}
	return handler(srv, idle)
}

// jobServicePrefix starts the full method names of docjobs.v1.JobService.
var jobServicePrefix = "/" + docjobsv1.JobService_ServiceDesc.ServiceName + "/"

type idleRecvStream struct {
	grpc.ServerStream
	timeout time.Duration
	idle    *status.Status
	stop    <-chan struct{} // nil: the stream is not ended at shutdown
	call    *grpcCall       // the edge's record (nil: none)
}

// RecvMsg waits for the next message at most timeout. A receive given up
// on stays blocked until the handler returns and grpc ends the stream, and
// then returns; only one receive is ever pending, as grpc requires.
func (s *idleRecvStream) RecvMsg(m any) error {
	var refused <-chan struct{} // nil: none can come
	if s.call != nil {
		refused = s.call.refusedCh
	}
	select {
	case <-refused:
		return s.call.refused.Load().Err() // the edge's refusal of the next message
	default:
	}
	done := make(chan error, 1)
	go func() { done <- s.ServerStream.RecvMsg(m) }()
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-refused:
		return s.call.refused.Load().Err()
	case <-t.C:
		return s.idle.Err()
	case <-s.stop:
		return errShuttingDown
	}
}

// ctxStream is a server stream whose handler sees ctx, as a unary handler
// sees the context its interceptors built.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c *ctxStream) Context() context.Context { return c.ctx }

func (s *Server) recoverUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, s.internal(ctx, panicError{p}, stackAttr()).Err()
		}
	}()
	return handler(ctx, req)
}

// authUnary reads the bearer key from the authorization metadata, as the
// REST side reads the Authorization header.
func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !needsKey(info.FullMethod) || edgeAuthenticated(ctx) {
		return handler(ctx, req)
	}
	ctx, err := s.authenticateGRPC(ctx)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// edgeAuthenticated reports whether the edge authenticated the call of ctx
// (and counted it against the account's rate) before grpc-go saw it; ctx
// then carries the account.
func edgeAuthenticated(ctx context.Context) bool {
	call := callFrom(ctx)
	return call != nil && call.authenticated
}

// authenticateGRPC returns ctx with the account of the call's bearer key,
// after counting the call against the account's request rate (a stream
// counts once, when opened).
func (s *Server) authenticateGRPC(ctx context.Context) (context.Context, error) {
	var header string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("authorization"); len(v) > 0 {
			header = v[0]
		}
	}
	return s.authenticateKey(ctx, header)
}

// authenticateKey is authenticateGRPC given the authorization header.
func (s *Server) authenticateKey(ctx context.Context, header string) (context.Context, error) {
	account, err := s.deps.Auth.Authenticate(ctx, header)
	if err != nil {
		return nil, s.authFailure(ctx, err)
	}
	ctx = withAccount(ctx, account)
	if err := s.limitAccount(account); err != nil {
		return nil, err
	}
	return ctx, nil
}

// GRPCWarningHeader is the response header (metadata) that names the
// request fields the service ignored, as WarningHeader does over REST and
// with the same value.
const GRPCWarningHeader = "docjobs-warning"

// warnUnary sets the docjobs-warning header for what the service is about
// to ignore in the decoded request, before the handler runs, so that an
// error answer carries it too, as over REST.
func (s *Server) warnUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if msg, ok := req.(proto.Message); ok {
		if names := ignoredInMessage(msg); len(names) > 0 {
			_ = grpc.SetHeader(ctx, metadata.Pairs(GRPCWarningHeader, warningHeader(names, 0)))
		}
	}
	return handler(ctx, req)
}

func (s *Server) mapErrorsUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		return nil, s.clientStatus(ctx, err).Err()
	}
	return resp, nil
}
