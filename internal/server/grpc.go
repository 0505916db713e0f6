package server

import (
	"context"
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
// mapping, so what observe counts is what the client got.
func (s *Server) newGRPC(svc docjobsv1.JobServiceServer) *grpc.Server {
	s.codec = newRequestCodec()
	gs := grpc.NewServer(
		grpc.ForceServerCodecV2(s.codec),
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
// health protocol asks.
func (h healthServer) Watch(req *grpc_health_v1.HealthCheckRequest, stream grpc.ServerStreamingServer[grpc_health_v1.HealthCheckResponse]) error {
	ctx := stream.Context()
	last := grpc_health_v1.HealthCheckResponse_ServingStatus(-1)
	tick := time.NewTicker(healthWatchInterval)
	defer tick.Stop()
	for {
		st := grpc_health_v1.HealthCheckResponse_SERVICE_UNKNOWN
		if h.known(req.GetService()) {
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
		case <-tick.C:
		}
	}
}

func (s *Server) observeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	ri := &reqInfo{route: info.FullMethod, method: info.FullMethod}
	ctx = withReqInfo(ctx, ri)
	resp, err := handler(ctx, req)
	s.recordGRPC(ctx, info.FullMethod, start, err)
	return resp, err
}

func (s *Server) observeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	ri := &reqInfo{route: info.FullMethod, method: info.FullMethod}
	ctx := withReqInfo(ss.Context(), ri)
	err := handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	s.recordGRPC(ctx, info.FullMethod, start, err)
	return err
}

// recordGRPC counts, times and logs one finished call, unary or streaming.
func (s *Server) recordGRPC(ctx context.Context, method string, start time.Time, err error) {
	code := status.Code(err)
	d := time.Since(start)
	s.metrics.grpcRequests.WithLabelValues(method, code.String()).Inc()
	s.metrics.grpcDuration.WithLabelValues(method).Observe(d.Seconds())
	attrs := append(requestAttrs(ctx), slog.String("code", code.String()), slog.Duration("duration", d))
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
	if !needsKey(info.FullMethod) {
		return handler(srv, ss)
	}
	ctx, err := s.authenticateGRPC(ss.Context())
	if err != nil {
		return err
	}
	return handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
}

func (s *Server) mapErrorsStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := handler(srv, ss); err != nil {
		return s.clientStatus(ss.Context(), err).Err()
	}
	return nil
}

// idleStream gives the service's streams REST's idle rule: a receive that
// waits more than IOIdleTimeout for the client's next message ends the
// stream with DEADLINE_EXCEEDED (the service then removes what it stored of
// a partial upload). A stream that keeps moving may take as long as it needs.
func (s *Server) idleStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !strings.HasPrefix(info.FullMethod, jobServicePrefix) {
		return handler(srv, ss)
	}
	return handler(srv, &idleRecvStream{ServerStream: ss, timeout: s.cfg.IOIdleTimeout, idle: s.idleStatus()})
}

// jobServicePrefix starts the full method names of docjobs.v1.JobService.
var jobServicePrefix = "/" + docjobsv1.JobService_ServiceDesc.ServiceName + "/"

type idleRecvStream struct {
	grpc.ServerStream
	timeout time.Duration
	idle    *status.Status
}

// RecvMsg waits for the next message at most timeout. A receive given up
// on stays blocked until the handler returns and grpc ends the stream, and
// then returns; only one receive is ever pending, as grpc requires.
func (s *idleRecvStream) RecvMsg(m any) error {
	done := make(chan error, 1)
	go func() { done <- s.ServerStream.RecvMsg(m) }()
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return s.idle.Err()
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
	if !needsKey(info.FullMethod) {
		return handler(ctx, req)
	}
	ctx, err := s.authenticateGRPC(ctx)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
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
	account, err := s.deps.Auth.Authenticate(ctx, header)
	if err != nil {
		return nil, errUnauthenticated
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
