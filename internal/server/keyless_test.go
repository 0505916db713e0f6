package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
)

// heldStream is a keyless stream a test holds open.
type heldStream struct {
	cancel context.CancelFunc // resets the stream, as a client that gives up
	// finish ends the stream as a client that is done does (reflection:
	// CloseSend) and returns how it ended.
	finish func() error
	// recv waits for the stream's next answer or its end.
	recv func() error
}

// openReflection opens a server reflection stream (v1alpha when alpha) on
// conn under ctx and waits for the answer to a ListServices, after which
// the stream holds its slot; err is what refused it.
func openReflection(t *testing.T, ctx context.Context, conn *grpc.ClientConn, alpha bool) (heldStream, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var send func() error
	var h heldStream
	if alpha {
		s, err := grpc_reflection_v1alpha.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		send = func() error {
			return s.Send(&grpc_reflection_v1alpha.ServerReflectionRequest{MessageRequest: &grpc_reflection_v1alpha.ServerReflectionRequest_ListServices{}})
		}
		h.recv = func() error { _, err := s.Recv(); return err }
		h.finish = func() error { _ = s.CloseSend(); _, err := s.Recv(); return err }
	} else {
		s, err := grpc_reflection_v1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		send = func() error {
			return s.Send(&grpc_reflection_v1.ServerReflectionRequest{MessageRequest: &grpc_reflection_v1.ServerReflectionRequest_ListServices{}})
		}
		h.recv = func() error { _, err := s.Recv(); return err }
		h.finish = func() error { _ = s.CloseSend(); _, err := s.Recv(); return err }
	}
	h.cancel = cancel
	if err := send(); err != nil && !errors.Is(err, io.EOF) { // io.EOF: the status follows
		t.Fatal(err)
	}
	return h, h.recv()
}

// openWatch opens a Health.Watch on conn under ctx and waits for its first
// answer.
func openWatch(t *testing.T, ctx context.Context, conn *grpc.ClientConn) (heldStream, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	w, err := grpc_health_v1.NewHealthClient(conn).Watch(ctx, &grpc_health_v1.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	recv := func() error { _, err := w.Recv(); return err }
	return heldStream{cancel: cancel, recv: recv, finish: func() error { cancel(); return recv() }}, recv()
}

// wantRefused fails the test unless err is RESOURCE_EXHAUSTED msg.
func wantRefused(t *testing.T, err error, msg string) {
	t.Helper()
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || st.Message() != msg {
		t.Fatalf("got %v %q, want ResourceExhausted %q", st.Code(), st.Message(), msg)
	}
}

// reopens opens a stream until one is let in, as a client retrying after
// a refusal would: a slot is freed when the server is done with the ended
// stream, a moment after its client saw the end.
func reopens(t *testing.T, open func() (heldStream, error)) heldStream {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h, err := open()
		if err == nil {
			return h
		}
		if status.Code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("the slot of an ended stream was not freed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keylessHeld is the number of keyless streams the server counts: those
// of the process-wide bound, and the watches of every connection.
func keylessHeld(env *testEnv) (streams, watches int) {
	k := &env.srv.keyless
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range k.watches {
		watches += n
	}
	return k.streams, watches
}

var (
	tooManyReflection = fmt.Sprintf("the server holds %d streams that need no key (server reflection) open, the most it holds at once; retry when one ends", maxKeylessStreams)
	tooManyWatches    = fmt.Sprintf("this connection holds %d Health.Watch streams open, the most one connection may; end one or watch over another connection", maxWatchesPerConn)
)

func TestTheServerHoldsABoundedNumberOfReflectionStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // the streams' life
	defer cancel()
	env := startServer(t)
	_, connA, _ := grpcClient(t, env)
	_, connB, _ := grpcClient(t, env)
	_, connC, _ := grpcClient(t, env)

	// v1 and v1alpha, over two connections, share one process-wide bound.
	held := make([]heldStream, maxKeylessStreams)
	on := make([]*grpc.ClientConn, maxKeylessStreams)
	for i := range held {
		on[i] = connA
		if i%2 == 1 {
			on[i] = connB
		}
		h, err := openReflection(t, ctx, on[i], i%3 == 0)
		if err != nil {
			t.Fatalf("stream %d of %d: %v", i+1, maxKeylessStreams, err)
		}
		held[i] = h
	}
	t.Run("one more is refused at once, on any connection", func(t *testing.T) {
		_, err := openReflection(t, ctx, connC, false)
		wantRefused(t, err, tooManyReflection)
		_, err = openReflection(t, ctx, connA, true)
		wantRefused(t, err, tooManyReflection)
		if got := grpcCodes(t, env, reflectionMethod)[codes.ResourceExhausted.String()]; got != 1 {
			t.Errorf("reflection ResourceExhausted = %v, want 1", got)
		}
	})
	t.Run("health checks and watches are not counted against it", func(t *testing.T) {
		resp, err := grpc_health_v1.NewHealthClient(connC).Check(context.Background(), &grpc_health_v1.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
			t.Errorf("Check: %v, %v; want SERVING", resp, err)
		}
		w, err := openWatch(t, ctx, connC)
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		w.cancel()
	})
	t.Run("a stream its client ended frees its slot", func(t *testing.T) {
		if err := held[0].finish(); !errors.Is(err, io.EOF) {
			t.Fatalf("end: %v, want io.EOF", err)
		}
		held[0] = reopens(t, func() (heldStream, error) { return openReflection(t, ctx, connC, false) })
		on[0] = connC
		_, err := openReflection(t, ctx, connC, false)
		wantRefused(t, err, tooManyReflection)
	})
	t.Run("a stream its client reset frees its slot", func(t *testing.T) {
		held[1].cancel()
		held[1] = reopens(t, func() (heldStream, error) { return openReflection(t, ctx, connC, true) })
		on[1] = connC
		_, err := openReflection(t, ctx, connC, true)
		wantRefused(t, err, tooManyReflection)
	})
	t.Run("a closed connection frees its streams' slots", func(t *testing.T) {
		var onB int
		for _, c := range on {
			if c == connB {
				onB++
			}
		}
		_ = connB.Close()
		for range onB {
			reopens(t, func() (heldStream, error) { return openReflection(t, ctx, connC, false) })
		}
		_, err := openReflection(t, ctx, connC, false)
		wantRefused(t, err, tooManyReflection)
	})
}

// fillReflection opens as many reflection streams on conn as the server
// holds.
func fillReflection(t *testing.T, ctx context.Context, conn *grpc.ClientConn) []heldStream {
	t.Helper()
	held := make([]heldStream, maxKeylessStreams)
	for i := range held {
		h, err := openReflection(t, ctx, conn, false)
		if err != nil {
			t.Fatalf("stream %d: %v", i+1, err)
		}
		held[i] = h
	}
	return held
}

func TestAKeylessStreamCutOrEndedAtShutdownFreesItsSlot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // the streams' life
	defer cancel()

	t.Run("cut for sending nothing", func(t *testing.T) {
		env := startServer(t, func(c *Config, _ *Deps) { c.IOIdleTimeout = 300 * time.Millisecond })
		_, conn, _ := grpcClient(t, env)
		for _, h := range fillReflection(t, ctx, conn) {
			if err := h.recv(); status.Code(err) != codes.DeadlineExceeded {
				t.Fatalf("an idle stream ended %v, want DeadlineExceeded", err)
			}
		}
		for range maxKeylessStreams {
			reopens(t, func() (heldStream, error) { return openReflection(t, ctx, conn, false) })
		}
	})
	t.Run("ended at shutdown", func(t *testing.T) {
		env := startServer(t) // IOIdleTimeout 1m
		_, conn, _ := grpcClient(t, env)
		fillReflection(t, ctx, conn)
		_, err := openReflection(t, ctx, conn, false)
		wantRefused(t, err, tooManyReflection)
		for range maxWatchesPerConn {
			if _, err := openWatch(t, ctx, conn); err != nil {
				t.Fatal(err)
			}
		}
		if err := env.stop(); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if streams, watches := keylessHeld(env); streams != 0 || watches != 0 {
			t.Errorf("after shutdown %d stream and %d watch slots are held, want none", streams, watches)
		}
	})
}

func TestHealthWatchesAreBoundedPerConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // the streams' life
	defer cancel()
	env := startServer(t)
	_, connA, _ := grpcClient(t, env)
	_, connB, _ := grpcClient(t, env)

	held := make([]heldStream, maxWatchesPerConn)
	for i := range held {
		h, err := openWatch(t, ctx, connA)
		if err != nil {
			t.Fatalf("watch %d of %d: %v", i+1, maxWatchesPerConn, err)
		}
		held[i] = h
	}
	t.Run("one more on the connection is refused", func(t *testing.T) {
		_, err := openWatch(t, ctx, connA)
		wantRefused(t, err, tooManyWatches)
	})
	t.Run("another connection's are its own", func(t *testing.T) {
		for i := range maxWatchesPerConn {
			if _, err := openWatch(t, ctx, connB); err != nil {
				t.Fatalf("watch %d on another connection: %v", i+1, err)
			}
		}
		_, err := openWatch(t, ctx, connB)
		wantRefused(t, err, tooManyWatches)
	})
	t.Run("a watch its client ended frees its slot", func(t *testing.T) {
		_ = held[0].finish()
		held[0] = reopens(t, func() (heldStream, error) { return openWatch(t, ctx, connA) })
		_, err := openWatch(t, ctx, connA)
		wantRefused(t, err, tooManyWatches)
	})
	t.Run("a closed connection leaves nothing counted", func(t *testing.T) {
		_ = connA.Close()
		_ = connB.Close()
		deadline := time.Now().Add(5 * time.Second)
		for {
			env.srv.keyless.mu.Lock()
			left := len(env.srv.keyless.watches)
			env.srv.keyless.mu.Unlock()
			if left == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d connections still counted after they closed", left)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// sentStream is a Health.Watch stream that hands its answers to sent.
type sentStream struct {
	grpc.ServerStream
	ctx  context.Context
	sent chan *grpc_health_v1.HealthCheckResponse
}

func (s *sentStream) Context() context.Context { return s.ctx }

func (s *sentStream) Send(r *grpc_health_v1.HealthCheckResponse) error {
	s.sent <- r
	return nil
}

func TestAHealthWatchDoesNotKeepItsRequest(t *testing.T) {
	// A watch lasts as long as its client, and the service name it asks
	// for can be 64 KiB.
	stopping, stop := context.WithCancel(context.Background())
	defer stop()
	h := healthServer{s: &Server{stopping: stopping}}
	stream := &sentStream{ctx: context.Background(), sent: make(chan *grpc_health_v1.HealthCheckResponse, 2)}
	req := &grpc_health_v1.HealthCheckRequest{Service: strings.Repeat("x", 60_000)}
	kept := weak.Make(req)
	done := make(chan error, 1)
	go func(req *grpc_health_v1.HealthCheckRequest) { done <- h.Watch(req, stream) }(req)
	req = nil
	if first := <-stream.sent; first.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVICE_UNKNOWN {
		t.Fatalf("first answer %v, want SERVICE_UNKNOWN", first.GetStatus())
	}
	runtime.GC()
	if kept.Value() != nil {
		t.Error("the watch keeps its request while it waits")
	}
	stop()
	if err := <-done; status.Code(err) != codes.Unavailable {
		t.Errorf("watch end at shutdown: %v, want Unavailable", err)
	}
}

// poolCaps is a BufferPool that records the capacity of every buffer it
// hands out.
type poolCaps struct {
	mem.BufferPool
	caps []int
}

func (p *poolCaps) Get(n int) *[]byte {
	b := p.BufferPool.Get(n)
	p.caps = append(p.caps, cap(*b))
	return b
}

func TestTheCodecsBuffersFitTheirMessage(t *testing.T) {
	// grpc-go's codec took a 1 MiB buffer for any message above 32 KiB.
	for _, size := range []int{33 << 10, 60_000, 100_000, 600_000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			c := newRequestCodec()
			pool := &poolCaps{BufferPool: c.pool}
			c.pool = pool
			msg := &grpc_health_v1.HealthCheckRequest{Service: strings.Repeat("x", size)}
			data, err := c.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			if data.Len() < size {
				t.Fatalf("encoded %d bytes, want at least %d", data.Len(), size)
			}
			// Decoded from pieces, as grpc-go receives a message (16 KiB
			// frames), which the codec joins in one buffer.
			b := data.Materialize()
			data.Free()
			var pieces mem.BufferSlice
			for len(b) > 0 {
				n := min(len(b), 16<<10)
				pieces = append(pieces, mem.SliceBuffer(b[:n]))
				b = b[n:]
			}
			var got grpc_health_v1.HealthCheckRequest
			if err := c.Unmarshal(pieces, &got); err != nil || got.GetService() != msg.GetService() {
				t.Fatalf("decoded %d bytes of service name, %v; want %d", len(got.GetService()), err, size)
			}
			if len(pool.caps) != 2 {
				t.Fatalf("%d buffers taken from the pool, want 2 (encode, decode)", len(pool.caps))
			}
			for _, n := range pool.caps {
				if n > 2*(size+8) {
					t.Errorf("a buffer of %d bytes for a message of %d", n, size)
				}
			}
		})
	}
}
